//! PINP — private interactive non-linear prediction (Jain & Thakurta 2013, Algorithm 1).
//!
//! This module is the query loop only. The calibration (`B`, `ε0`, grid exponent, rational
//! discrete-Laplace scale, `σ`, `η`) and its proof sketch live in the Python layer
//! (`dpcore.kernel_learning.pinp`), which passes the finished numbers in a [`PinpConfig`].
//!
//! For each query `z_t`, in order, while `counter < B` and fewer than `T` queries were answered:
//!
//! ```text
//! f_t  = <w*, φ(z_t)> = Σ_i μ_i K(z_t, x_i)                  (fused kernel_predict, whole batch)
//! â_t  = (round(f_t / g) + Y_t) · g,   Y_t ~ exact discrete Laplace(τ) on ℤ,  g = 2^k
//! c_t  = Σ_{τ<t} α_τ K(z_t, z_τ)                               (update points so far)
//! d̂_t = â_t − c_t
//! |d̂_t| > σ :  α_t = η·sign(d̂_t), store z_t, counter += 1, answer â_t
//! otherwise  :  answer c_t
//! ```
//!
//! Privacy assumptions named here (proved in `dpcore.kernel_learning.pinp`): `f_t` has sensitivity ≤ `S_eff` for
//! every query in the declared domain; snapping to the grid adds ≤ one grid unit to the integer
//! sensitivity; `Y_t` is exact (no floating-point Laplace); everything after `â_t` (the decision,
//! `α_t`, the answer) is a deterministic function of `â_t` and public data (queries and past
//! outputs). The generator is the caller's ChaCha20 stream.
//!
//! Cost: the batch's `f` is one fused, parallel [`kernel_predict`](crate::kernels::evaluation::kernel_predict). The cross term `c_t` over the
//! update points that exist when a chunk of [`CHUNK`] queries starts is one more fused
//! `kernel_predict` (parallel); only the updates made inside the chunk are summed sequentially
//! (direct [`Kernel::eval`]). Nothing of size `m × n` is materialised.
//!
//! Interruption: [`answer_batch_cancellable`] polls a [`Cancel`] flag inside both fused predictions
//! (per kernel block) and before every chunk. An interrupted batch returns
//! [`DpError::Interrupted`] with the state exactly as it was before the call (update points,
//! `α`s and `n_answered` restored): its answers are never returned, so nothing of it counts as
//! answered. The session's generator is *not* rewound — the noise already drawn for the discarded
//! queries is never reused, and the generator is not part of the persisted state.

use ndarray::{s, Array2, ArrayView1, ArrayView2};
use rayon::prelude::*;

use crate::cancel::Cancel;
use crate::error::{DpError, DpResult};
use crate::kernels::evaluation::{kernel_predict_cancellable, Kernel};
use crate::mechanisms::noise::grid::{snap, unsnap, DiscreteNoise};
use crate::mechanisms::noise::rng::{rng_from_seed, DpRng};

/// Queries per chunk of the sequential loop (see module docs).
pub const CHUNK: usize = 256;

/// Calibrated constants of one PINP session (all computed by the caller).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PinpConfig {
    pub kernel: Kernel,
    /// `k` in the grid `g = 2^k` the exact prediction is snapped to.
    pub grid_exponent: i32,
    /// Exact discrete noise in grid units (discrete Laplace with scale `τ`).
    pub noise: DiscreteNoise,
    /// Update threshold `σ`.
    pub sigma: f64,
    /// Step size `η`.
    pub eta: f64,
    /// `B`: the session answers nothing once `B` updates were made.
    pub max_updates: u64,
    /// `T`: the session answers at most `T` queries in total.
    pub max_queries: u64,
}

impl PinpConfig {
    /// Check the constants are usable (positive, finite, a valid noise parameter).
    pub fn validate(&self) -> DpResult<()> {
        self.kernel.validate()?;
        self.noise.validate()?;
        if !matches!(self.noise, DiscreteNoise::Laplace { .. }) {
            return Err(DpError::invalid(
                "noise",
                "PINP uses discrete Laplace noise",
            ));
        }
        if !(self.sigma.is_finite() && self.sigma > 0.0) {
            return Err(DpError::invalid(
                "sigma",
                format!("must be finite and > 0, got {:?}", self.sigma),
            ));
        }
        if !(self.eta.is_finite() && self.eta > 0.0) {
            return Err(DpError::invalid(
                "eta",
                format!("must be finite and > 0, got {:?}", self.eta),
            ));
        }
        if self.max_updates == 0 {
            return Err(DpError::invalid("max_updates", "must be >= 1"));
        }
        if self.max_queries == 0 {
            return Err(DpError::invalid("max_queries", "must be >= 1"));
        }
        Ok(())
    }
}

/// Mutable state of a session: the update points `z_τ` (row-major, `dim` columns), their
/// `α_τ = ±η`, and the number of queries answered so far. `counter = alphas.len()`.
#[derive(Debug, Clone, PartialEq)]
pub struct PinpState {
    pub dim: usize,
    pub points: Vec<f64>,
    pub alphas: Vec<f64>,
    pub n_answered: u64,
}

impl PinpState {
    /// Empty state for `dim`-dimensional queries.
    pub fn new(dim: usize) -> Self {
        PinpState {
            dim,
            points: Vec::new(),
            alphas: Vec::new(),
            n_answered: 0,
        }
    }

    /// Restore a persisted state (`points`: `n_updates × dim`).
    pub fn restore(
        points: ArrayView2<'_, f64>,
        alphas: ArrayView1<'_, f64>,
        n_answered: u64,
    ) -> DpResult<Self> {
        if points.nrows() != alphas.len() {
            return Err(DpError::invalid(
                "alphas",
                format!(
                    "has {} entries for {} update points",
                    alphas.len(),
                    points.nrows()
                ),
            ));
        }
        if (n_answered as u128) < alphas.len() as u128 {
            return Err(DpError::invalid(
                "n_answered",
                "is smaller than the number of updates",
            ));
        }
        if !points.iter().chain(alphas.iter()).all(|v| v.is_finite()) {
            return Err(DpError::invalid(
                "points",
                "contains NaN or infinite values",
            ));
        }
        Ok(PinpState {
            dim: points.ncols(),
            points: points.iter().copied().collect(),
            alphas: alphas.to_vec(),
            n_answered,
        })
    }

    /// Number of updates made (`counter`).
    pub fn n_updates(&self) -> u64 {
        self.alphas.len() as u64
    }

    /// The update points as an `n_updates × dim` view.
    pub fn points_view(&self) -> ArrayView2<'_, f64> {
        ArrayView2::from_shape((self.alphas.len(), self.dim), &self.points).expect("state shape")
    }
}

/// Why [`answer_batch`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// Every query of the batch was answered and the session can answer more.
    Completed,
    /// `T` queries have now been answered (the rest of the batch, if any, was refused).
    QueryLimit,
    /// The `B`-th update was made (the rest of the batch, if any, was refused).
    UpdateLimit,
}

impl Stop {
    pub fn as_str(&self) -> &'static str {
        match self {
            Stop::Completed => "completed",
            Stop::QueryLimit => "queries",
            Stop::UpdateLimit => "updates",
        }
    }
}

/// Output of [`answer_batch`]: one entry per answered query (a prefix of the batch).
#[derive(Debug, Clone, PartialEq)]
pub struct BatchOutput {
    pub answers: Vec<f64>,
    /// The integer noise draws `Y_t` (grid units) — debugging / oracle tests only: together with
    /// the answers they reveal the exact predictions, so they must never reach a data user.
    pub noise: Vec<i64>,
    /// `sign(α_t)` (`0` for no update).
    pub updates: Vec<i8>,
    pub stop: Stop,
}

/// One round of Algorithm 1 given `f_t` and the cross term `c_t`: returns
/// `(answer, Y_t, sign of α_t)`.
#[inline]
fn round_step(cfg: &PinpConfig, f_t: f64, c_t: f64, rng: &mut DpRng) -> DpResult<(f64, i128, i8)> {
    let k = snap(f_t, cfg.grid_exponent)?;
    let y = cfg.noise.sample(rng);
    let a_hat = unsnap(k.saturating_add(y), cfg.grid_exponent);
    let d_hat = a_hat - c_t;
    if d_hat.abs() > cfg.sigma {
        Ok((a_hat, y, if d_hat > 0.0 { 1 } else { -1 }))
    } else {
        Ok((c_t, y, 0))
    }
}

fn clamp_i64(y: i128) -> i64 {
    y.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Answer the queries `z` in order (Algorithm 1) against `w* = Σ μ_i φ(x_i)`, updating `state`.
///
/// Processes queries until the batch ends, `T` queries have been answered, or the `B`-th update
/// is made; returns the answers produced (a prefix of the batch) and the reason it stopped. If
/// the session is already exhausted, nothing is sampled and the answer list is empty.
///
/// # Errors
/// Shape mismatches, or a prediction too large for the grid (nothing is answered then; `state`
/// is unchanged, since the snapping of the whole batch is checked first).
pub fn answer_batch(
    cfg: &PinpConfig,
    state: &mut PinpState,
    z: ArrayView2<'_, f64>,
    support: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    rng: &mut DpRng,
) -> DpResult<BatchOutput> {
    answer_batch_cancellable(cfg, state, z, support, mu, rng, Cancel::never())
}

/// [`answer_batch`] polling `cancel` (see the module docs).
///
/// # Errors
/// As [`answer_batch`], and [`DpError::Interrupted`] once `cancel` is set: `state` is then
/// restored to what it was before the call (the generator is not rewound).
pub fn answer_batch_cancellable(
    cfg: &PinpConfig,
    state: &mut PinpState,
    z: ArrayView2<'_, f64>,
    support: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<BatchOutput> {
    let (n_points, n_alphas, n_answered) =
        (state.points.len(), state.alphas.len(), state.n_answered);
    let res = answer_batch_impl(cfg, state, z, support, mu, rng, cancel);
    if res.is_err() {
        // Interrupted (or failed) batches leave no trace in the state: nothing was returned.
        state.points.truncate(n_points);
        state.alphas.truncate(n_alphas);
        state.n_answered = n_answered;
    }
    res
}

fn answer_batch_impl(
    cfg: &PinpConfig,
    state: &mut PinpState,
    z: ArrayView2<'_, f64>,
    support: ArrayView2<'_, f64>,
    mu: ArrayView1<'_, f64>,
    rng: &mut DpRng,
    cancel: &Cancel,
) -> DpResult<BatchOutput> {
    if z.ncols() != state.dim || support.ncols() != state.dim {
        return Err(DpError::invalid(
            "Z",
            format!(
                "has {} features, the session expects {}",
                z.ncols(),
                state.dim
            ),
        ));
    }
    if mu.len() != support.nrows() {
        return Err(DpError::invalid(
            "mu",
            "length differs from the number of support points",
        ));
    }
    let mut out = BatchOutput {
        answers: Vec::new(),
        noise: Vec::new(),
        updates: Vec::new(),
        stop: Stop::Completed,
    };
    if state.n_updates() >= cfg.max_updates {
        out.stop = Stop::UpdateLimit;
        return Ok(out);
    }
    let remaining = cfg.max_queries.saturating_sub(state.n_answered);
    if remaining == 0 {
        out.stop = Stop::QueryLimit;
        return Ok(out);
    }
    let m = z
        .nrows()
        .min(usize::try_from(remaining).unwrap_or(usize::MAX));
    if m == 0 {
        return Ok(out);
    }
    let z = z.slice(s![..m, ..]);
    let exact = kernel_predict_cancellable(z, support, mu, &cfg.kernel, cancel)?;
    for &f in exact.iter() {
        snap(f, cfg.grid_exponent)?; // fail before any noise is drawn or state changes
    }
    out.answers.reserve(m);
    out.noise.reserve(m);
    out.updates.reserve(m);
    let mut start = 0;
    'chunks: while start < m {
        cancel.check()?;
        let end = (start + CHUNK).min(m);
        let zc = z.slice(s![start..end, ..]);
        let n_before = state.alphas.len();
        let pre = if n_before > 0 {
            let av = ArrayView1::from(&state.alphas[..]);
            Some(kernel_predict_cancellable(
                zc,
                state.points_view(),
                av,
                &cfg.kernel,
                cancel,
            )?)
        } else {
            None
        };
        for (i, zt) in zc.outer_iter().enumerate() {
            let mut c = pre.as_ref().map_or(0.0, |p| p[i]);
            for j in n_before..state.alphas.len() {
                let pj = ArrayView1::from(&state.points[j * state.dim..(j + 1) * state.dim]);
                c += state.alphas[j] * cfg.kernel.eval(zt, pj);
            }
            let (ans, y, sgn) = round_step(cfg, exact[start + i], c, rng)?;
            out.answers.push(ans);
            out.noise.push(clamp_i64(y));
            out.updates.push(sgn);
            state.n_answered += 1;
            if sgn != 0 {
                state.points.extend(zt.iter().copied());
                state.alphas.push(f64::from(sgn) * cfg.eta);
                if state.n_updates() >= cfg.max_updates {
                    out.stop = Stop::UpdateLimit;
                    break 'chunks;
                }
            }
        }
        start = end;
    }
    if out.stop == Stop::Completed && state.n_answered >= cfg.max_queries {
        out.stop = Stop::QueryLimit;
    }
    Ok(out)
}

/// Run one independent fresh session per seed on the same queries, from precomputed exact
/// predictions `exact[t] = <w*, φ(z_t)>` and the query Gram matrix `gram[t, τ] = K(z_t, z_τ)`.
/// Row `s` is what `answer_batch` returns for a fresh session with generator
/// `rng_from_seed(Some(seeds[s]))` (up to the summation order of the cross term); queries the
/// session refuses are `NaN`. For empirical privacy audits only: it samples the mechanism many
/// times on the same data, which a deployed session must never do.
pub fn sample_sessions(
    cfg: &PinpConfig,
    exact: ArrayView1<'_, f64>,
    gram: ArrayView2<'_, f64>,
    seeds: &[u64],
) -> DpResult<Array2<f64>> {
    sample_sessions_cancellable(cfg, exact, gram, seeds, Cancel::never())
}

/// [`sample_sessions`] polling `cancel` every [`CHUNK`] queries of every session.
///
/// # Errors
/// As [`sample_sessions`], and [`DpError::Interrupted`] once `cancel` is set.
pub fn sample_sessions_cancellable(
    cfg: &PinpConfig,
    exact: ArrayView1<'_, f64>,
    gram: ArrayView2<'_, f64>,
    seeds: &[u64],
    cancel: &Cancel,
) -> DpResult<Array2<f64>> {
    cfg.validate()?;
    let m = exact.len();
    if gram.nrows() != m || gram.ncols() != m {
        return Err(DpError::invalid(
            "gram",
            format!("must be {m} x {m}, got {:?}", gram.shape()),
        ));
    }
    for &f in exact.iter() {
        snap(f, cfg.grid_exponent)?;
    }
    let mut out = Array2::from_elem((seeds.len(), m), f64::NAN);
    out.outer_iter_mut()
        .into_par_iter()
        .zip(seeds.par_iter())
        .try_for_each(|(mut row, &seed)| -> DpResult<()> {
            let mut rng = rng_from_seed(Some(seed));
            let mut upd: Vec<(usize, f64)> = Vec::new();
            let limit = m.min(usize::try_from(cfg.max_queries).unwrap_or(usize::MAX));
            for t in 0..limit {
                if t % CHUNK == 0 {
                    cancel.check()?;
                }
                let c: f64 = upd.iter().map(|&(j, a)| a * gram[[t, j]]).sum();
                let (ans, _, sgn) = round_step(cfg, exact[t], c, &mut rng)?;
                row[t] = ans;
                if sgn != 0 {
                    upd.push((t, f64::from(sgn) * cfg.eta));
                    if upd.len() as u64 >= cfg.max_updates {
                        break;
                    }
                }
            }
            Ok(())
        })?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::{array, Array1};

    fn cfg(max_updates: u64, max_queries: u64) -> PinpConfig {
        PinpConfig {
            kernel: Kernel::rbf(0.5).unwrap(),
            grid_exponent: -30,
            noise: DiscreteNoise::Laplace {
                num: 1 << 20,
                den: 1,
            }, // scale 2^-10 real units
            sigma: 0.02,
            eta: 0.25,
            max_updates,
            max_queries,
        }
    }

    fn data() -> (Array2<f64>, Array1<f64>, Array2<f64>) {
        let x = array![[0.1, 0.2], [-0.3, 0.4], [0.5, -0.1]];
        let mu = array![1.0, -0.5, 0.8];
        let z = Array2::from_shape_fn((40, 2), |(i, j)| ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.5);
        (x, mu, z)
    }

    /// Plain transcription of Algorithm 1 with the same noise draws.
    fn oracle(
        c: &PinpConfig,
        z: &Array2<f64>,
        x: &Array2<f64>,
        mu: &Array1<f64>,
        noise: &[i64],
    ) -> Vec<f64> {
        let mut pts: Vec<usize> = Vec::new();
        let mut al: Vec<f64> = Vec::new();
        let mut out = Vec::new();
        for (t, y) in noise.iter().enumerate() {
            let f: f64 = (0..x.nrows())
                .map(|i| mu[i] * c.kernel.eval(z.row(t), x.row(i)))
                .sum();
            let a = unsnap(
                snap(f, c.grid_exponent).unwrap() + *y as i128,
                c.grid_exponent,
            );
            let cross: f64 = pts
                .iter()
                .zip(&al)
                .map(|(&p, a)| a * c.kernel.eval(z.row(t), z.row(p)))
                .sum();
            if (a - cross).abs() > c.sigma {
                pts.push(t);
                al.push(c.eta * (a - cross).signum());
                out.push(a);
            } else {
                out.push(cross);
            }
        }
        out
    }

    #[test]
    fn an_interrupted_batch_leaves_the_state_unchanged() {
        let (x, mu, _) = data();
        let z = Array2::from_shape_fn((3 * CHUNK, 2), |(i, j)| {
            ((i * 7 + j * 3) % 11) as f64 / 11.0 - 0.5
        });
        let c = cfg(100_000, 100_000);
        let mut st = PinpState::new(2);
        let mut rng = rng_from_seed(Some(7));
        answer_batch(
            &c,
            &mut st,
            z.slice(s![..40, ..]),
            x.view(),
            mu.view(),
            &mut rng,
        )
        .unwrap();
        assert!(st.n_updates() > 0);
        let before = st.clone();
        // polls: the batch's prediction (one per query tile), then per chunk its start and its
        // cross-term prediction — the flag trips after chunk 0 has updated the state
        for polls in [1u64, 13, 18, 22] {
            let stop = Cancel::after(polls);
            let r = answer_batch_cancellable(
                &c,
                &mut st,
                z.view(),
                x.view(),
                mu.view(),
                &mut rng,
                &stop,
            );
            assert_eq!(r, Err(DpError::Interrupted), "polls = {polls}");
            assert_eq!(st, before, "polls = {polls}");
        }
        let out = answer_batch_cancellable(
            &c,
            &mut st,
            z.view(),
            x.view(),
            mu.view(),
            &mut rng,
            &Cancel::new(),
        )
        .unwrap();
        assert_eq!(out.answers.len(), 3 * CHUNK);
        assert_eq!(st.n_answered, before.n_answered + 3 * CHUNK as u64);
    }

    #[test]
    fn matches_the_transcription_and_splits_batches_consistently() {
        let (x, mu, z) = data();
        let c = cfg(1000, 1000);
        let mut st = PinpState::new(2);
        let mut rng = rng_from_seed(Some(3));
        let out = answer_batch(&c, &mut st, z.view(), x.view(), mu.view(), &mut rng).unwrap();
        assert_eq!(out.answers.len(), 40);
        assert!(st.n_updates() > 0 && st.n_updates() < 40);
        let want = oracle(&c, &z, &x, &mu, &out.noise);
        for (a, b) in out.answers.iter().zip(&want) {
            assert!((a - b).abs() < 1e-12, "{a} vs {b}");
        }
        // Same generator, batch split in two: same answers.
        let mut st2 = PinpState::new(2);
        let mut rng2 = rng_from_seed(Some(3));
        let a = answer_batch(
            &c,
            &mut st2,
            z.slice(s![..17, ..]),
            x.view(),
            mu.view(),
            &mut rng2,
        )
        .unwrap();
        let b = answer_batch(
            &c,
            &mut st2,
            z.slice(s![17.., ..]),
            x.view(),
            mu.view(),
            &mut rng2,
        )
        .unwrap();
        let joined: Vec<f64> = a.answers.iter().chain(&b.answers).copied().collect();
        for (p, q) in joined.iter().zip(&out.answers) {
            assert!((p - q).abs() < 1e-12);
        }
        assert_eq!(st2.n_updates(), st.n_updates());
    }

    #[test]
    fn stops_at_the_update_and_query_limits() {
        let (x, mu, z) = data();
        let c = cfg(2, 1000);
        let mut st = PinpState::new(2);
        let mut rng = rng_from_seed(Some(3));
        let out = answer_batch(&c, &mut st, z.view(), x.view(), mu.view(), &mut rng).unwrap();
        assert_eq!(out.stop, Stop::UpdateLimit);
        assert_eq!(st.n_updates(), 2);
        assert!(*out.updates.last().unwrap() != 0);
        let again = answer_batch(&c, &mut st, z.view(), x.view(), mu.view(), &mut rng).unwrap();
        assert!(again.answers.is_empty());
        assert_eq!(again.stop, Stop::UpdateLimit);

        let c = cfg(1000, 5);
        let mut st = PinpState::new(2);
        let out = answer_batch(&c, &mut st, z.view(), x.view(), mu.view(), &mut rng).unwrap();
        assert_eq!((out.answers.len(), out.stop), (5, Stop::QueryLimit));
        let again = answer_batch(&c, &mut st, z.view(), x.view(), mu.view(), &mut rng).unwrap();
        assert!(again.answers.is_empty());
    }

    #[test]
    fn a_set_cancel_flag_interrupts_the_session_sampler() {
        let (x, mu, z) = data();
        let c = cfg(1000, 1000);
        let exact =
            crate::kernels::evaluation::kernel_predict(z.view(), x.view(), mu.view(), &c.kernel);
        let gram = crate::kernels::evaluation::gram_matrix(z.view(), &c.kernel).unwrap();
        let stop = Cancel::new();
        stop.cancel();
        let r = sample_sessions_cancellable(&c, exact.view(), gram.view(), &[11, 12], &stop);
        assert_eq!(r, Err(DpError::Interrupted));
    }

    #[test]
    fn session_sampler_reproduces_a_session() {
        let (x, mu, z) = data();
        let c = cfg(1000, 1000);
        let exact =
            crate::kernels::evaluation::kernel_predict(z.view(), x.view(), mu.view(), &c.kernel);
        let gram = crate::kernels::evaluation::gram_matrix(z.view(), &c.kernel).unwrap();
        let rows = sample_sessions(&c, exact.view(), gram.view(), &[11, 12]).unwrap();
        for (r, seed) in [11u64, 12].iter().enumerate() {
            let mut st = PinpState::new(2);
            let out = answer_batch(
                &c,
                &mut st,
                z.view(),
                x.view(),
                mu.view(),
                &mut rng_from_seed(Some(*seed)),
            )
            .unwrap();
            for (a, b) in out.answers.iter().zip(rows.row(r).iter()) {
                assert!((a - b).abs() < 1e-12);
            }
        }
    }

    #[test]
    fn restore_round_trips() {
        let (x, mu, z) = data();
        let c = cfg(1000, 1000);
        let mut st = PinpState::new(2);
        answer_batch(
            &c,
            &mut st,
            z.view(),
            x.view(),
            mu.view(),
            &mut rng_from_seed(Some(1)),
        )
        .unwrap();
        let back = PinpState::restore(
            st.points_view(),
            ArrayView1::from(&st.alphas[..]),
            st.n_answered,
        )
        .unwrap();
        assert_eq!(back, st);
        assert!(PinpState::restore(st.points_view(), ArrayView1::from(&st.alphas[..]), 0).is_err());
    }
}
