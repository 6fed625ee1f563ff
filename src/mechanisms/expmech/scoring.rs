//! Scores (utilities) of the net points: the public [`Scorer`] (linear or kernel sum) and the
//! per-chunk [`ChunkScorer`] that scores a chunk's candidates block by block in canonical order
//! (linear windows of [`ROW_BLOCK`] points, kernel blocks of [`KERNEL_BLOCK`] rows).

use ndarray::{ArrayView1, ArrayView2};

use super::net::{sq, BallNet, Chunk, Odo};
use super::{KERNEL_BLOCK, ROW_BLOCK};
use crate::error::{DpError, DpResult};
use crate::kernels::evaluation::{kernel_predict, Kernel};

// ------------------------------------------------------------------------------------------------
// Scorers
// ------------------------------------------------------------------------------------------------

/// The score whose absolute value, times `κ`, is the exponent of the mechanism.
#[derive(Debug, Clone)]
pub enum Scorer<'a> {
    /// `score(z) = <z, u>` (`u` has length `d`): the linear kernel with `w_t − w*` collapsed to a
    /// `d`-vector.
    Linear { u: ArrayView1<'a, f64> },
    /// `score(z) = Σ_j coef_j K(z, points_j)` (`points` is `n × d`, `coef` has length `n`; `n = 0`
    /// gives the zero score).
    KernelSum {
        kernel: Kernel,
        points: ArrayView2<'a, f64>,
        coef: ArrayView1<'a, f64>,
    },
}

impl Scorer<'_> {
    /// Check shapes against the net's dimension and finiteness; errors name `u`, `points`,
    /// `coef` or the kernel parameter.
    pub fn validate(&self, d: usize) -> DpResult<()> {
        match self {
            Scorer::Linear { u } => {
                if u.len() != d {
                    return Err(DpError::invalid(
                        "u",
                        format!("must have length d = {d}, got {}", u.len()),
                    ));
                }
                if !u.iter().all(|v| v.is_finite()) {
                    return Err(DpError::invalid("u", "contains NaN or infinite values"));
                }
            }
            Scorer::KernelSum {
                kernel,
                points,
                coef,
            } => {
                kernel.validate()?;
                if points.ncols() != d {
                    return Err(DpError::invalid(
                        "points",
                        format!("must have d = {d} columns, got shape {:?}", points.shape()),
                    ));
                }
                if coef.len() != points.nrows() {
                    return Err(DpError::invalid(
                        "coef",
                        format!(
                            "must have length {} (the number of rows of points), got {}",
                            points.nrows(),
                            coef.len()
                        ),
                    ));
                }
                if !points.iter().all(|v| v.is_finite()) {
                    return Err(DpError::invalid(
                        "points",
                        "contains NaN or infinite values",
                    ));
                }
                if !coef.iter().all(|v| v.is_finite()) {
                    return Err(DpError::invalid("coef", "contains NaN or infinite values"));
                }
            }
        }
        Ok(())
    }
}

/// A block of scored candidates, in canonical order.
pub(super) enum Block<'b> {
    /// A run of one row: last coordinates `c0, c0 + 1, …` under `prefix`.
    Run {
        prefix: &'b [i64],
        c0: i64,
        scores: &'b [f64],
    },
    /// Arbitrary points (`coords` is `n × d`, row-major).
    Points {
        d: usize,
        coords: &'b [i64],
        scores: &'b [f64],
    },
}

impl Block<'_> {
    #[inline(always)]
    pub(super) fn scores(&self) -> &[f64] {
        match self {
            Block::Run { scores, .. } | Block::Points { scores, .. } => scores,
        }
    }

    /// Integer coordinates of the `l`-th candidate.
    pub(super) fn coords(&self, l: usize) -> Vec<i64> {
        match self {
            Block::Run { prefix, c0, .. } => {
                let mut v = prefix.to_vec();
                v.push(c0 + l as i64);
                v
            }
            Block::Points { d, coords, .. } => coords[l * d..(l + 1) * d].to_vec(),
        }
    }
}

/// Scores every point of a chunk, block by block, in canonical order.
pub(super) struct ChunkScorer<'s, 'a> {
    pub(super) net: &'s BallNet,
    pub(super) scorer: &'s Scorer<'a>,
    /// Linear: `u` as a contiguous vector.
    pub(super) u: Vec<f64>,
    /// Kernel: block buffers.
    blk_coords: Vec<i64>,
    blk_points: Vec<f64>,
    pub(super) odo: Odo,
}

impl<'s, 'a> ChunkScorer<'s, 'a> {
    pub(super) fn new(net: &'s BallNet, scorer: &'s Scorer<'a>) -> Self {
        let (u, blk) = match scorer {
            Scorer::Linear { u } => (u.iter().copied().collect(), 0),
            Scorer::KernelSum { .. } => (Vec::new(), KERNEL_BLOCK * net.d),
        };
        ChunkScorer {
            net,
            scorer,
            u,
            blk_coords: Vec::with_capacity(blk),
            blk_points: Vec::with_capacity(blk),
            odo: net.odo(),
        }
    }

    /// Call `f` on consecutive blocks covering the chunk in canonical order (linear: runs of at
    /// most [`ROW_BLOCK`] points of one row, all interior or all projected; kernel: at most
    /// [`KERNEL_BLOCK`] points). The block structure depends on the chunk only.
    #[inline(always)]
    pub(super) fn visit_blocks<F: FnMut(Block<'_>)>(&mut self, ch: &Chunk, mut f: F) {
        let net = self.net;
        match self.scorer {
            Scorer::Linear { .. } => {
                let u = &self.u[..];
                let (h, d) = (net.h, net.d);
                let ud = u[d - 1];
                let mut buf = [0.0f64; ROW_BLOCK];
                net.for_each_row(ch, &mut self.odo, |prefix, s, lo, hi| {
                    let row = LinearRow::new(prefix, u, h, ud);
                    let (ilo, ihi) = net.interior_range(s, lo, hi);
                    let mut c0 = lo;
                    while c0 <= hi {
                        let len = linear_window(net, &row, s, c0, hi, ilo, ihi, &mut buf);
                        f(Block::Run {
                            prefix,
                            c0,
                            scores: &buf[..len],
                        });
                        c0 += len as i64;
                    }
                });
            }
            Scorer::KernelSum {
                kernel,
                points,
                coef,
            } => {
                let d = net.d;
                let mut bc = std::mem::take(&mut self.blk_coords);
                let mut bp = std::mem::take(&mut self.blk_points);
                bc.clear();
                bp.clear();
                net.for_each_row(ch, &mut self.odo, |prefix, s, lo, hi| {
                    for c in lo..=hi {
                        let fac = net.factor(s + sq(c));
                        for &pc in prefix {
                            bc.push(pc);
                            bp.push((pc as f64 * net.h) * fac);
                        }
                        bc.push(c);
                        bp.push((c as f64 * net.h) * fac);
                        if bc.len() == KERNEL_BLOCK * d {
                            kernel_block(d, kernel, *points, *coef, &mut bc, &mut bp, &mut f);
                        }
                    }
                });
                kernel_block(d, kernel, *points, *coef, &mut bc, &mut bp, &mut f);
                self.blk_coords = bc;
                self.blk_points = bp;
            }
        }
    }
}

/// Per-row constants of the linear scorer: `score = base + (c·h)·u_d` (times the projection
/// factor for projected points).
pub(super) struct LinearRow {
    base: f64,
    h: f64,
    ud: f64,
}

impl LinearRow {
    #[inline(always)]
    pub(super) fn new(prefix: &[i64], u: &[f64], h: f64, ud: f64) -> Self {
        let mut base = 0.0;
        for (&c, &uj) in prefix.iter().zip(u) {
            base += (c as f64 * h) * uj;
        }
        LinearRow { base, h, ud }
    }
}

/// Scores of the window `c0 ..= min(hi, c0 + ROW_BLOCK − 1)` of a row segment whose interior part
/// is `[ilo, ihi]`, written to `buf`; returns the window length. The window is cut into its
/// projected / interior / projected parts (no square root for interior points).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn linear_window(
    net: &BallNet,
    row: &LinearRow,
    s: u128,
    c0: i64,
    hi: i64,
    ilo: i64,
    ihi: i64,
    buf: &mut [f64; ROW_BLOCK],
) -> usize {
    let len = ((hi - c0) as u64 + 1).min(ROW_BLOCK as u64) as usize;
    let c1 = c0 + len as i64 - 1;
    let (a, b) = (ilo.max(c0), ihi.min(c1));
    if a > b {
        linear_scores(net, row, s, c0, true, &mut buf[..len]);
    } else {
        let (i0, i1) = ((a - c0) as usize, (b - c0) as usize + 1);
        linear_scores(net, row, s, c0, true, &mut buf[..i0]);
        linear_scores(net, row, s, a, false, &mut buf[i0..i1]);
        linear_scores(net, row, s, b + 1, true, &mut buf[i1..len]);
    }
    len
}

/// Linear scores of the run `c0, c0 + 1, …` (`out.len()` points) of a row with prefix sum
/// `s_row`: all interior (one multiply-add each) or all projected (one square root and one
/// division more). Written as straight loops over `f64` lanes so that LLVM vectorises them;
/// `c0 + l` is exact in `f64` (`|c| ≤ 2⁵⁰`), and so is `‖i‖²` when `T < 2⁵³`, so the values
/// are the same as those of [`BallNet::factor`] on the integer `‖i‖²`.
#[inline(always)]
fn linear_scores(
    net: &BallNet,
    row: &LinearRow,
    s_row: u128,
    c0: i64,
    boundary: bool,
    out: &mut [f64],
) {
    let cf0 = c0 as f64;
    let (base, h, ud) = (row.base, row.h, row.ud);
    if !boundary {
        for (l, o) in out.iter_mut().enumerate() {
            let cf = cf0 + l as f64;
            *o = base + (cf * h) * ud;
        }
    } else if net.t < (1u128 << 53) {
        let sf = s_row as u64 as f64;
        for (l, o) in out.iter_mut().enumerate() {
            let cf = cf0 + l as f64;
            *o = (base + (cf * h) * ud) * net.factor_outside(sf + cf * cf);
        }
    } else {
        for (l, o) in out.iter_mut().enumerate() {
            let c = c0 + l as i64;
            *o = (base + (c as f64 * h) * ud) * net.factor(s_row + sq(c));
        }
    }
}

/// Score the buffered block of points with the fused kernel engine, report it, clear the block.
fn kernel_block<F: FnMut(Block<'_>)>(
    d: usize,
    kernel: &Kernel,
    points: ArrayView2<'_, f64>,
    coef: ArrayView1<'_, f64>,
    bc: &mut Vec<i64>,
    bp: &mut Vec<f64>,
    f: &mut F,
) {
    let n = bc.len() / d;
    if n == 0 {
        return;
    }
    let z = ArrayView2::from_shape((n, d), &bp[..]).expect("block shape");
    let sc = kernel_predict(z, points, coef, kernel);
    f(Block::Points {
        d,
        coords: bc,
        scores: sc.as_slice().expect("contiguous"),
    });
    bc.clear();
    bp.clear();
}
