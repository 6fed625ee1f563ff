//! The ν-net of the ball: [`BallNet`] (construction, exact and estimated counts, points, snapping),
//! the integer helpers behind its exact membership test, the odometer enumeration of index
//! vectors in canonical order and the [`Chunk`]s that cut the index space for the scan (see the
//! parent module's docs: "The net").

use ndarray::{Array1, Array2};
use rayon::prelude::*;

use super::{CHUNK_TARGET, WAVE_CHUNKS};
use crate::error::{DpError, DpResult};
use crate::fp::{
    BALL_PROJ_SHRINK as PROJ_SHRINK, NET_INNER_SLACK as T_IN_SLACK, NET_SPACING_SHRINK as H_SHRINK,
    NET_THRESHOLD_SLACK as T_SLACK,
};

/// `((r+ν)/h)²` above this is refused before any integer conversion.
const MAX_RHO_SQ: f64 = 1.2676506002282294e30; // 2^100

// ------------------------------------------------------------------------------------------------
// Integer helpers
// ------------------------------------------------------------------------------------------------

/// `⌊√x⌋`, exact (float estimate corrected with integer arithmetic). `x < 2^102`.
#[inline]
pub(super) fn isqrt(x: u128) -> u64 {
    if x < 1 << 52 {
        // exact: x is exact in f64 and a correctly rounded sqrt below 2^26 cannot round up
        // across an integer (checked against the integer correction in the tests)
        return (x as u64 as f64).sqrt() as u64;
    }
    let mut r = (x as f64).sqrt() as u128;
    while r * r > x {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= x {
        r += 1;
    }
    r as u64
}

#[inline(always)]
pub(super) fn sq(c: i64) -> u128 {
    let a = c.unsigned_abs() as u128;
    a * a
}

/// `ln` of the volume of the unit ball in `ℝ^j` (recursion `V_j = V_{j−2}·2π/j`).
fn ln_unit_ball_volume(j: usize) -> f64 {
    let mut v = if j % 2 == 0 { 0.0 } else { 2f64.ln() };
    let mut i = if j % 2 == 0 { 2 } else { 3 };
    while i <= j {
        v += (2.0 * std::f64::consts::PI / i as f64).ln();
        i += 2;
    }
    v
}

/// `V_j·R^j` by products only (deterministic IEEE operations, no libm), saturating at 1e300.
fn ball_points_estimate(j: usize, radius: f64) -> f64 {
    let mut v = [1.0f64, 2.0];
    let mut out = 1.0f64;
    for i in 1..=j {
        let vi = if i == 1 {
            2.0
        } else {
            let prev = v[i % 2];
            prev * 2.0 * std::f64::consts::PI / i as f64
        };
        v[i % 2] = vi;
        let mut p = vi;
        for _ in 0..i {
            p *= radius;
            if p > 1e300 {
                p = 1e300;
            }
        }
        out = p;
    }
    out
}

// ------------------------------------------------------------------------------------------------
// The net
// ------------------------------------------------------------------------------------------------

/// The ν-net of the ball of radius `r` in `ℝ^d` (see the module docs for the construction, the
/// covering proof, the canonical order and the chunks).
#[derive(Debug, Clone)]
pub struct BallNet {
    pub(super) d: usize,
    nu: f64,
    radius: f64,
    pub(super) h: f64,
    /// Kept index vectors: `‖i‖² ≤ t`.
    pub(super) t: u128,
    /// Not projected: `‖i‖² ≤ t_in`.
    t_in: u128,
    half: u64,
    /// `(2·half + 1)^j` for `j = 0..d`.
    box_pows: Vec<u128>,
    /// Chunk depth `p` (`0 ≤ p ≤ d − 1`) and width `U`.
    depth: usize,
    width: u64,
}

/// Exact counts returned by [`BallNet::count_limited`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetCount {
    /// Number of net points (index vectors).
    pub points: u64,
    /// Number of rows (values of the first `d − 1` coordinates).
    pub rows: u64,
}

/// A chunk of the index space (see the module docs).
#[derive(Debug, Clone)]
pub(super) struct Chunk {
    /// The fixed first `p` coordinates.
    prefix: Vec<i64>,
    /// `Σ prefix²`.
    s: u128,
    /// Range `a..=b` of coordinate `p`.
    a: i64,
    b: i64,
    /// Position of the first index vector in the bounding box (the ChaCha stream number).
    pub(super) id: u64,
}

/// Odometer state over index vectors (coordinates, partial sums of squares, per-level limits).
pub(super) struct Odo {
    c: Vec<i64>,
    /// `s[j] = Σ_{i<j} c_i²`.
    s: Vec<u128>,
    lim: Vec<i64>,
}

impl BallNet {
    /// Build the net; errors name the parameter (`d`, `nu`, `radius`).
    ///
    /// # Errors
    /// `d = 0`; `nu` or `radius` not finite or `≤ 0`; a net whose bounding index box
    /// `(2·half + 1)^d` exceeds `2⁶³ − 1` (reported against `nu`: too fine for `radius` and `d`).
    pub fn new(d: usize, nu: f64, radius: f64) -> DpResult<Self> {
        if d == 0 {
            return Err(DpError::invalid("d", "must be >= 1, got 0"));
        }
        if !(nu.is_finite() && nu > 0.0) {
            return Err(DpError::invalid(
                "nu",
                format!("must be finite and > 0, got {nu:?}"),
            ));
        }
        if !(radius.is_finite() && radius > 0.0) {
            return Err(DpError::invalid(
                "radius",
                format!("must be finite and > 0, got {radius:?}"),
            ));
        }
        let h = 2.0 * nu / (d as f64).sqrt() * H_SHRINK;
        let rho = (radius + nu) / h;
        let rho_sq = rho * rho;
        if !(h.is_normal() && rho_sq.is_finite() && rho_sq <= MAX_RHO_SQ) {
            return Err(DpError::invalid(
                "nu",
                format!(
                    "nu = {nu} is too small for radius = {radius} and d = {d}: the net's index \
                     space overflows (((radius + nu)/h)^2 = {rho_sq:e} with h = 2 nu/sqrt(d))"
                ),
            ));
        }
        let t = (rho_sq * T_SLACK).floor() as u128;
        let rin = radius / h;
        let t_in = ((rin * rin * T_IN_SLACK).floor() as u128).min(t);
        let half = isqrt(t);
        let base = 2 * half as u128 + 1;
        let mut box_pows = Vec::with_capacity(d + 1);
        let mut p: u128 = 1;
        box_pows.push(p);
        for _ in 0..d {
            p = match p.checked_mul(base) {
                Some(v) if v <= i64::MAX as u128 => v,
                _ => {
                    return Err(DpError::invalid(
                        "nu",
                        format!(
                            "nu = {nu} is too small for radius = {radius} and d = {d}: the \
                             bounding index box (2*half + 1)^d with half = {half} exceeds 2^63 - 1"
                        ),
                    ))
                }
            };
            box_pows.push(p);
        }
        let mut net = BallNet {
            d,
            nu,
            radius,
            h,
            t,
            t_in,
            half,
            box_pows,
            depth: 0,
            width: 1,
        };
        net.plan_chunks();
        Ok(net)
    }

    /// Choose the chunk depth `p` and width `U` from `(d, T)` only: the largest `p` whose full
    /// slabs hold at least [`CHUNK_TARGET`] points (estimated), and `U` units of coordinate `p`.
    fn plan_chunks(&mut self) {
        let d = self.d;
        let rad = (self.t as f64).sqrt() + 0.5;
        let target = CHUNK_TARGET as f64;
        let mut depth = 0;
        for p in (0..d).rev() {
            if ball_points_estimate(d - p, rad) >= target {
                depth = p;
                break;
            }
        }
        let per_unit = ball_points_estimate(d - depth - 1, rad).max(1.0);
        let extent = 2 * self.half + 1;
        let width = ((target / per_unit).floor() as u64).clamp(1, extent);
        self.depth = depth;
        self.width = width;
    }

    /// Dimension `d`.
    pub fn dim(&self) -> usize {
        self.d
    }
    /// Covering radius `ν`.
    pub fn nu(&self) -> f64 {
        self.nu
    }
    /// Ball radius `r`.
    pub fn radius(&self) -> f64 {
        self.radius
    }
    /// Grid spacing `h = (2ν/√d)(1 − 2⁻³²)`.
    pub fn spacing(&self) -> f64 {
        self.h
    }
    /// `half = ⌊√T⌋`: every integer coordinate satisfies `|i_j| ≤ half`.
    pub fn half(&self) -> u64 {
        self.half
    }
    /// `T`: the index vector `i` is in the net iff `‖i‖² ≤ T`.
    pub fn threshold(&self) -> u128 {
        self.t
    }
    /// Size `(2·half + 1)^d` of the bounding index box (`≤ 2⁶³ − 1`).
    pub fn box_size(&self) -> u64 {
        self.box_pows[self.d] as u64
    }

    /// Volume estimate of the number of net points, `V_d·T^{d/2}` (`+inf` if it overflows).
    pub fn estimate(&self) -> f64 {
        let ln = ln_unit_ball_volume(self.d) + 0.5 * self.d as f64 * (self.t.max(1) as f64).ln();
        ln.exp().max(1.0)
    }

    /// Volume estimate of the number of rows, `V_{d−1}·T^{(d−1)/2}` (1 for `d = 1`).
    pub fn estimate_rows(&self) -> f64 {
        let j = self.d - 1;
        let ln = ln_unit_ball_volume(j) + 0.5 * j as f64 * (self.t.max(1) as f64).ln();
        ln.exp().max(1.0)
    }

    /// Whether the integer vector `coords` indexes a net point (`‖i‖² ≤ T`).
    pub fn contains(&self, coords: &[i64]) -> bool {
        coords.len() == self.d && coords.iter().map(|&c| sq(c)).sum::<u128>() <= self.t
    }

    /// Projection factor `f` for `‖i‖² = sqn` (1 inside, `min(1, r/‖g‖·(1 − 2⁻⁴⁸))` outside).
    #[inline]
    pub(super) fn factor(&self, sqn: u128) -> f64 {
        if sqn <= self.t_in {
            1.0
        } else {
            let x = if sqn <= u64::MAX as u128 {
                sqn as u64 as f64
            } else {
                sqn as f64
            };
            self.factor_outside(x)
        }
    }

    /// The projection factor of a point with `‖i‖² = sqf > T_in` (given as a float).
    #[inline(always)]
    pub(super) fn factor_outside(&self, sqf: f64) -> f64 {
        let f = self.radius / (self.h * sqf.sqrt()) * PROJ_SHRINK;
        if f < 1.0 {
            f
        } else {
            1.0
        }
    }

    /// The net point of the index vector `coords` (written into `out`).
    ///
    /// # Panics
    /// If the lengths differ from `d`.
    pub fn point_into(&self, coords: &[i64], out: &mut [f64]) {
        assert!(coords.len() == self.d && out.len() == self.d);
        let f = self.factor(coords.iter().map(|&c| sq(c)).sum());
        for (o, &c) in out.iter_mut().zip(coords) {
            *o = (c as f64 * self.h) * f;
        }
    }

    /// Snap a point `z` of the ball to the net: the nearest grid vector `i = round(z/h)` and its
    /// net point (projected into the ball as every net point is). For `‖z‖ ≤ radius` the grid
    /// vector lies within the net's threshold (`‖i h‖ ≤ radius + h√d/2 < radius + ν`).
    ///
    /// # Errors
    /// `z` of the wrong length or with a non-finite coordinate, or a coordinate whose grid index
    /// does not fit in `i64` (all named `z`).
    pub fn snap(&self, z: &[f64]) -> DpResult<(Vec<i64>, Array1<f64>)> {
        if z.len() != self.d {
            return Err(DpError::invalid(
                "z",
                format!("must have length d = {}, got {}", self.d, z.len()),
            ));
        }
        let mut coords = Vec::with_capacity(self.d);
        for &v in z {
            let c = (v / self.h).round();
            if !(c.is_finite() && c.abs() < 2f64.powi(62)) {
                return Err(DpError::invalid(
                    "z",
                    format!("coordinate {v:e} is not a finite point of the ball"),
                ));
            }
            coords.push(c as i64);
        }
        let point = self.point(&coords);
        Ok((coords, point))
    }

    /// The net point of the index vector `coords`.
    pub fn point(&self, coords: &[i64]) -> Array1<f64> {
        let mut out = Array1::zeros(self.d);
        self.point_into(coords, out.as_slice_mut().expect("contiguous"));
        out
    }

    // ---- enumeration ----

    pub(super) fn odo(&self) -> Odo {
        Odo {
            c: vec![0; self.d],
            s: vec![0; self.d + 1],
            lim: vec![0; self.d],
        }
    }

    /// Set coordinates `from..to` to their lexicographically first admissible values.
    #[inline]
    fn odo_first(&self, o: &mut Odo, from: usize, to: usize) {
        for i in from..to {
            let l = isqrt(self.t - o.s[i]) as i64;
            o.lim[i] = l;
            o.c[i] = -l;
            o.s[i + 1] = o.s[i] + sq(l);
        }
    }

    /// Advance coordinates `from..to` to the next admissible values; `false` when exhausted.
    #[inline]
    fn odo_next(&self, o: &mut Odo, from: usize, to: usize) -> bool {
        let mut j = to;
        while j > from {
            j -= 1;
            if o.c[j] < o.lim[j] {
                o.c[j] += 1;
                o.s[j + 1] = o.s[j] + sq(o.c[j]);
                self.odo_first(o, j + 1, to);
                return true;
            }
        }
        false
    }

    /// Chunks in canonical order.
    pub(super) fn chunks(&self) -> ChunkIter<'_> {
        ChunkIter {
            net: self,
            odo: self.odo(),
            started: false,
            done: false,
            a: 0,
            lim: -1,
        }
    }

    /// The row segments of a chunk, in canonical order.
    #[inline(always)]
    pub(super) fn rows<'o>(&self, ch: &Chunk, o: &'o mut Odo) -> Rows<'_, 'o> {
        let p = self.depth;
        o.c[..p].copy_from_slice(&ch.prefix);
        o.s[p] = ch.s;
        Rows {
            net: self,
            o,
            cp: ch.a,
            b: ch.b,
            fresh: true,
            done: false,
        }
    }

    /// Call `f(row_prefix, Σ row_prefix², lo, hi)` for every row segment of the chunk, in order.
    #[inline(always)]
    pub(super) fn for_each_row(
        &self,
        ch: &Chunk,
        o: &mut Odo,
        mut f: impl FnMut(&[i64], u128, i64, i64),
    ) {
        let mut rows = self.rows(ch, o);
        while let Some((s, lo, hi)) = rows.next_row() {
            f(rows.prefix(), s, lo, hi);
        }
    }

    /// The interior part `[ilo, ihi]` (no projection) of the row segment `[lo, hi]` with prefix
    /// sum `s`; `ilo > ihi` when empty.
    #[inline(always)]
    pub(super) fn interior_range(&self, s: u128, lo: i64, hi: i64) -> (i64, i64) {
        match self.interior(s) {
            Some(l) if lo.max(-l) <= hi.min(l) => (lo.max(-l), hi.min(l)),
            _ => (hi + 1, hi),
        }
    }

    /// Interior range `[-l, l]` of a row with prefix sum `s` (empty: `None`).
    #[inline(always)]
    fn interior(&self, s: u128) -> Option<i64> {
        if s <= self.t_in {
            Some(isqrt(self.t_in - s) as i64)
        } else {
            None
        }
    }

    /// Exact number of net points (sum of the row ranges, in parallel).
    pub fn count(&self) -> u64 {
        self.count_limited(u64::MAX).expect("no row limit").points
    }

    /// Exact point and row counts, walking at most about `max_rows` rows.
    ///
    /// # Errors
    /// Names `max_rows` once more than `max_rows` rows have been walked (checked between waves of
    /// chunks, so the work done is bounded by `max_rows` plus one wave).
    pub fn count_limited(&self, max_rows: u64) -> DpResult<NetCount> {
        let mut it = self.chunks();
        let mut total = NetCount { points: 0, rows: 0 };
        loop {
            let wave: Vec<Chunk> = it.by_ref().take(WAVE_CHUNKS).collect();
            if wave.is_empty() {
                return Ok(total);
            }
            let parts: Vec<NetCount> = wave
                .par_iter()
                .map(|ch| {
                    let mut o = self.odo();
                    let mut n = NetCount { points: 0, rows: 0 };
                    self.for_each_row(ch, &mut o, |_, _, lo, hi| {
                        n.points += (hi - lo) as u64 + 1;
                        n.rows += 1;
                    });
                    n
                })
                .collect();
            for p in parts {
                total.points += p.points;
                total.rows += p.rows;
            }
            if total.rows > max_rows {
                return Err(DpError::invalid(
                    "max_rows",
                    format!(
                        "the net has more than {max_rows} rows (estimate {:.3e} rows, {:.3e} \
                         points); raise the limit or use the estimate",
                        self.estimate_rows(),
                        self.estimate()
                    ),
                ));
            }
        }
    }

    /// Materialise the net in canonical order: integer coordinates (`n × d`) and net points
    /// (`n × d`). For tests and small nets only.
    ///
    /// # Errors
    /// Names `max_points` if the net has more points.
    pub fn points(&self, max_points: u64) -> DpResult<(Array2<i64>, Array2<f64>)> {
        let too_many = || {
            DpError::invalid(
                "max_points",
                format!(
                    "the net has more than {max_points} points (estimate {:.3e}); it is only \
                     materialised for small nets",
                    self.estimate()
                ),
            )
        };
        if self.estimate() > 2.0 * max_points as f64 + 1e6 {
            return Err(too_many());
        }
        let d = self.d;
        let mut coords: Vec<i64> = Vec::new();
        let mut pts: Vec<f64> = Vec::new();
        let mut n: u64 = 0;
        let mut o = self.odo();
        for ch in self.chunks() {
            let mut over = false;
            self.for_each_row(&ch, &mut o, |prefix, s, lo, hi| {
                if over {
                    return;
                }
                n += (hi - lo) as u64 + 1;
                if n > max_points {
                    over = true;
                    return;
                }
                for c in lo..=hi {
                    let f = self.factor(s + sq(c));
                    for &pc in prefix {
                        coords.push(pc);
                        pts.push((pc as f64 * self.h) * f);
                    }
                    coords.push(c);
                    pts.push((c as f64 * self.h) * f);
                }
            });
            if over {
                return Err(too_many());
            }
        }
        let n = n as usize;
        Ok((
            Array2::from_shape_vec((n, d), coords).expect("shape"),
            Array2::from_shape_vec((n, d), pts).expect("shape"),
        ))
    }
}

/// The row segments of one chunk (a lending iterator over the odometer state).
pub(super) struct Rows<'n, 'o> {
    net: &'n BallNet,
    o: &'o mut Odo,
    /// Current value of coordinate `p` and its last value.
    cp: i64,
    b: i64,
    fresh: bool,
    done: bool,
}

impl Rows<'_, '_> {
    /// The next row segment `(Σ prefix², lo, hi)`; its prefix is [`Rows::prefix`].
    #[inline(always)]
    pub(super) fn next_row(&mut self) -> Option<(u128, i64, i64)> {
        let net = self.net;
        let (d, p) = (net.d, net.depth);
        if self.done {
            return None;
        }
        if p == d - 1 {
            // the chunk is one segment of one row
            self.done = true;
            return Some((self.o.s[p], self.cp, self.b));
        }
        if self.fresh {
            self.fresh = false;
            self.o.c[p] = self.cp;
            self.o.s[p + 1] = self.o.s[p] + sq(self.cp);
            net.odo_first(self.o, p + 1, d - 1);
        } else if !net.odo_next(self.o, p + 1, d - 1) {
            if self.cp >= self.b {
                self.done = true;
                return None;
            }
            self.cp += 1;
            self.o.c[p] = self.cp;
            self.o.s[p + 1] = self.o.s[p] + sq(self.cp);
            net.odo_first(self.o, p + 1, d - 1);
        }
        let s_row = self.o.s[d - 1];
        let l = isqrt(net.t - s_row) as i64;
        Some((s_row, -l, l))
    }

    #[inline(always)]
    pub(super) fn prefix(&self) -> &[i64] {
        &self.o.c[..self.net.d - 1]
    }
}

/// Lazy enumeration of the chunks in canonical order.
pub(super) struct ChunkIter<'n> {
    net: &'n BallNet,
    odo: Odo,
    started: bool,
    done: bool,
    /// Next start of coordinate `p` and its limit under the current prefix.
    a: i64,
    lim: i64,
}

impl Iterator for ChunkIter<'_> {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if self.done {
            return None;
        }
        let net = self.net;
        let p = net.depth;
        if !self.started {
            self.started = true;
            net.odo_first(&mut self.odo, 0, p);
            self.lim = isqrt(net.t - self.odo.s[p]) as i64;
            self.a = -self.lim;
        } else if self.a > self.lim {
            if !net.odo_next(&mut self.odo, 0, p) {
                self.done = true;
                return None;
            }
            self.lim = isqrt(net.t - self.odo.s[p]) as i64;
            self.a = -self.lim;
        }
        let a = self.a;
        let b = (a as i128 + net.width as i128 - 1).min(self.lim as i128) as i64;
        self.a = b + 1;
        let half = net.half as i128;
        let d = net.d;
        let mut id: u128 = 0;
        for (j, &c) in self.odo.c[..p].iter().enumerate() {
            id += (c as i128 + half) as u128 * net.box_pows[d - 1 - j];
        }
        id += (a as i128 + half) as u128 * net.box_pows[d - 1 - p];
        Some(Chunk {
            prefix: self.odo.c[..p].to_vec(),
            s: self.odo.s[p],
            a,
            b,
            id: id as u64,
        })
    }
}
