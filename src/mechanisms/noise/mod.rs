//! Randomness and floating-point-safe noise.
//!
//! * [`rng`] — ChaCha20 generators: OS-seeded by default, reproducible from an explicit `u64` seed
//!   (research and tests only), and independent per-chunk streams for parallel code.
//! * [`exact`] — exact samplers on the integers using only integer arithmetic and uniform random
//!   bits: `Bernoulli(exp(-γ))` for rational γ, the discrete Laplace and the discrete Gaussian
//!   (Canonne, Kamath & Steinke, *The Discrete Gaussian for Differential Privacy*, NeurIPS 2020,
//!   Algorithms 1–3).
//! * [`grid`] — the released-noise mechanisms: the input is snapped to a power-of-two grid
//!   `g = 2^k` and exact discrete noise (in units of `g`) is added, so the released value is an
//!   exact multiple of `g`. No floating-point inverse-CDF or Box–Muller sample ever reaches a
//!   released value (Mironov, CCS 2012). The calibration (choice of `k`, integer sensitivity after
//!   snapping, rational noise scale) is done by the Python layer (`dpcore.mechanisms.noise`), which documents
//!   the granularity and the sensitivity inflation `Δ → Δ + (rounding slack)` it accounts for.
//! * [`karney`] — the analytic-Gaussian release: the continuous Gaussian mechanism `x + σZ`
//!   rounded to a power-of-two grid, with `Z` drawn exactly by Karney's algorithm N (ACM TOMS 2016)
//!   as a lazy binary expansion and the grid cell decided by exact integer comparisons, so the
//!   grid index has exactly its true law `Φ(((j+½)g − x)/σ) − Φ(((j−½)g − x)/σ)`.
//! * [`coupled`] — float noise vectors (Gaussian, Gamma-norm) coupled to exact continuous ones
//!   with a proven bound on `||b_float − b_exact||`, for noise that enters a computation (objective
//!   perturbation) before an exact release covers the residual.
//! * [`continuous`] — floating-point helper draws that are *not* released directly: Gamma-norm
//!   vectors with uniform direction, Gumbel and exponential variates (selection / internal use).

pub mod continuous;
pub mod coupled;
pub mod exact;
pub mod grid;
pub mod karney;
pub mod rng;

pub use rng::{derive_streams, rng_from_seed, DpRng};
