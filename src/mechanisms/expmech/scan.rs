//! The scan: the running Gumbel-max ([`Gumbel`]: skip test in blocks of 8, arg-max of the keys),
//! the scan of one chunk ([`scan_chunk`]: score, check the exponent bound, Gumbel-max; AVX2 and
//! baseline builds) and the wave map that runs chunks in parallel ([`map_wave`]).

use rayon::prelude::*;

use super::gumbel::{gumbel_eval, skip_index, SkipTable, Streams};
use super::net::{BallNet, Chunk};
use super::scoring::{linear_window, Block, ChunkScorer, LinearRow, Scorer};
use super::{KERNEL_BLOCK, ROW_BLOCK};

/// Candidates tested per branch-free block.
const SCAN_BLOCK: usize = 8;

/// Running Gumbel-max over the candidates of one chunk (or one [`sample_many`] sample).
///
/// [`sample_many`]: super::sample_many
pub(super) struct Gumbel<'t> {
    pub(super) best_key: f64,
    pub(super) skip: bool,
    pub(super) table: &'t SkipTable,
    /// Number of candidates offered so far (the next candidate's number `j`).
    pub(super) j: u64,
}

impl Gumbel<'_> {
    /// Offer the candidates with exponents `a` in order; returns the position in `a` of the last
    /// one that became the new best (key strictly larger than the running best), if any. Blocks
    /// of 8 candidates are tested without branches; only a block with a possible winner is
    /// re-walked candidate by candidate, with the running best updated in order (so the result
    /// is the same as testing one by one).
    #[inline(always)]
    pub(super) fn scan(&mut self, st: &mut Streams, a: &[f64]) -> Option<usize> {
        let mut last = None;
        let mut blocks = a.chunks_exact(SCAN_BLOCK);
        let mut i = 0;
        for blk in blocks.by_ref() {
            st.ensure(SCAN_BLOCK);
            let mut x = [0u16; SCAN_BLOCK];
            x.copy_from_slice(&st.buf[st.pos..st.pos + SCAN_BLOCK]);
            st.pos += SCAN_BLOCK;
            let mut hit = !self.skip;
            for l in 0..SCAN_BLOCK {
                hit |= !(blk[l] + self.table[skip_index(x[l])] < self.best_key);
            }
            if hit {
                for l in 0..SCAN_BLOCK {
                    if self.test(st, blk[l], x[l], self.j + l as u64) {
                        last = Some(i + l);
                    }
                }
            }
            self.j += SCAN_BLOCK as u64;
            i += SCAN_BLOCK;
        }
        for &v in blocks.remainder() {
            let x = st.next_lane();
            if self.test(st, v, x, self.j) {
                last = Some(i);
            }
            self.j += 1;
            i += 1;
        }
        last
    }

    /// Skip test, then (if not skipped) evaluation of candidate `j`.
    #[inline(always)]
    fn test(&mut self, st: &mut Streams, a: f64, x: u16, j: u64) -> bool {
        if self.skip && a + self.table[skip_index(x)] < self.best_key {
            return false;
        }
        self.evaluate(st, a, x, j)
    }

    #[inline(never)]
    fn evaluate(&mut self, st: &mut Streams, a: f64, x: u16, j: u64) -> bool {
        let key = a + gumbel_eval(x, j, st);
        if key > self.best_key {
            self.best_key = key;
            true
        } else {
            false
        }
    }
}

/// `f` on every chunk of a wave, results in chunk order. Linear scorer: chunks in parallel.
/// Kernel sums: chunks one after the other on the calling thread, each block scored by the
/// parallel [`kernel_predict`] (4096-row blocks keep both threads busy; running the parallel
/// engine inside a parallel chunk loop would only add scheduling and scratch-allocation overhead).
///
/// [`kernel_predict`]: crate::kernels::evaluation::kernel_predict
pub(super) fn map_wave<T: Send>(
    net: &BallNet,
    scorer: &Scorer<'_>,
    wave: &[Chunk],
    f: impl Fn(&mut ChunkScorer<'_, '_>, &Chunk) -> T + Sync,
) -> Vec<T> {
    match scorer {
        Scorer::Linear { .. } => wave
            .par_iter()
            .map_init(|| ChunkScorer::new(net, scorer), |cs, ch| f(cs, ch))
            .collect(),
        Scorer::KernelSum { .. } => {
            let mut cs = ChunkScorer::new(net, scorer);
            wave.iter().map(|ch| f(&mut cs, ch)).collect()
        }
    }
}

/// Best candidate of a chunk.
pub(super) struct ChunkBest {
    pub(super) key: f64,
    pub(super) coords: Vec<i64>,
    pub(super) score: f64,
}

pub(super) struct ChunkOut {
    pub(super) n: u64,
    pub(super) best: Option<ChunkBest>,
    pub(super) violation: Option<(f64, Vec<i64>)>,
}

/// Scan one chunk: score its candidates, check the exponent bound, run the Gumbel-max over its
/// streams. Compiled twice — for AVX2 (+ LZCNT) and for the baseline — and dispatched on the CPU;
/// both builds perform the same IEEE operations (Rust never contracts `a·b + c` into an FMA), so
/// they return identical results.
#[allow(clippy::too_many_arguments)]
pub(super) fn scan_chunk(
    cs: &mut ChunkScorer<'_, '_>,
    ch: &Chunk,
    kappa: f64,
    exponent_bound: f64,
    key: &[u8; 32],
    threshold: f64,
    table: &SkipTable,
    skip: bool,
) -> ChunkOut {
    #[cfg(target_arch = "x86_64")]
    {
        #[target_feature(enable = "avx2,lzcnt")]
        #[allow(clippy::too_many_arguments)]
        unsafe fn avx2(
            cs: &mut ChunkScorer<'_, '_>,
            ch: &Chunk,
            kappa: f64,
            exponent_bound: f64,
            key: &[u8; 32],
            threshold: f64,
            table: &SkipTable,
            skip: bool,
        ) -> ChunkOut {
            scan_chunk_impl(cs, ch, kappa, exponent_bound, key, threshold, table, skip)
        }
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("lzcnt") {
            // SAFETY: the CPU supports AVX2 and LZCNT (checked just above).
            return unsafe { avx2(cs, ch, kappa, exponent_bound, key, threshold, table, skip) };
        }
    }
    scan_chunk_impl(cs, ch, kappa, exponent_bound, key, threshold, table, skip)
}

#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn scan_chunk_impl(
    cs: &mut ChunkScorer<'_, '_>,
    ch: &Chunk,
    kappa: f64,
    exponent_bound: f64,
    key: &[u8; 32],
    threshold: f64,
    table: &SkipTable,
    skip: bool,
) -> ChunkOut {
    let mut sc = ChunkScan {
        st: Streams::new(key, ch.id),
        g: Gumbel {
            best_key: threshold,
            skip,
            table,
            j: 0,
        },
        kappa,
        exponent_bound,
        n: 0,
        best: None,
        violation: None,
    };
    match cs.scorer {
        Scorer::Linear { .. } => {
            // the hot path, written as plain loops (no closures) so that all of it is compiled
            // into the AVX2 build of the caller
            let net = cs.net;
            let u = &cs.u[..];
            let (h, ud) = (net.h, u[net.d - 1]);
            let mut buf = [0.0f64; ROW_BLOCK];
            let mut abuf = [0.0f64; ROW_BLOCK];
            let mut rows = net.rows(ch, &mut cs.odo);
            while let Some((s, lo, hi)) = rows.next_row() {
                let prefix = rows.prefix();
                let row = LinearRow::new(prefix, u, h, ud);
                let (ilo, ihi) = net.interior_range(s, lo, hi);
                let mut c0 = lo;
                while c0 <= hi {
                    let len = linear_window(net, &row, s, c0, hi, ilo, ihi, &mut buf);
                    sc.block(
                        &Block::Run {
                            prefix,
                            c0,
                            scores: &buf[..len],
                        },
                        &mut abuf[..len],
                    );
                    c0 += len as i64;
                }
            }
        }
        Scorer::KernelSum { .. } => {
            let mut abuf = vec![0.0f64; KERNEL_BLOCK];
            cs.visit_blocks(ch, |blk| {
                let len = blk.scores().len();
                sc.block(&blk, &mut abuf[..len]);
            });
        }
    }
    ChunkOut {
        n: sc.n,
        violation: sc.violation,
        best: sc.best.map(|(coords, score)| ChunkBest {
            key: sc.g.best_key,
            coords,
            score,
        }),
    }
}

/// State of the scan of one chunk.
struct ChunkScan<'t> {
    st: Streams,
    g: Gumbel<'t>,
    kappa: f64,
    exponent_bound: f64,
    n: u64,
    best: Option<(Vec<i64>, f64)>,
    violation: Option<(f64, Vec<i64>)>,
}

impl ChunkScan<'_> {
    /// Exponents of a block (`a` has the block's length), bound check, Gumbel-max.
    #[inline(always)]
    fn block(&mut self, blk: &Block<'_>, a: &mut [f64]) {
        let sc = blk.scores();
        let mut bad = false;
        for (ai, &v) in a.iter_mut().zip(sc) {
            let e = self.kappa * v.abs();
            *ai = e;
            bad |= !(e <= self.exponent_bound);
        }
        self.n += sc.len() as u64;
        if bad && self.violation.is_none() {
            let l = a
                .iter()
                .position(|&e| !(e <= self.exponent_bound))
                .expect("a violation");
            self.violation = Some((a[l], blk.coords(l)));
        }
        if let Some(l) = self.g.scan(&mut self.st, a) {
            self.best = Some((blk.coords(l), sc[l]));
        }
    }
}
