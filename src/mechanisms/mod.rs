//! Privacy mechanisms: the randomness and the samplers every private release is built from
//! (Python: `dpcore.mechanisms`).
//!
//! * [`noise`] — ChaCha randomness and floating-point-safe noise: exact discrete Laplace /
//!   discrete Gaussian on power-of-two grids, the analytic-Gaussian release, coupled float noise
//!   (`dpcore.mechanisms.noise`).
//! * [`expmech`] — the exponential mechanism over a ν-net of a ball, streamed with Gumbel-max
//!   (`dpcore.mechanisms.exponential`).
//! * [`multinomial`] — exact multinomial sampling from a probability vector
//!   (`dpcore.mechanisms.multinomial`).

pub mod expmech;
pub mod multinomial;
pub mod noise;
