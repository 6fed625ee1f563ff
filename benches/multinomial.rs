//! Criterion benchmarks of exact multinomial sampling: `cargo bench --bench multinomial`.
//!
//! `multinomial_counts` and `multinomial_draws` on a probability vector of P = 10⁷ entries
//! (uniform random weights, normalised), m ∈ {10², 10⁶} draws; one call validates and quantises
//! `p` (one pass), draws and sorts the m uniforms, and merges them against the prefix sums (a
//! second, partial pass). Throughput is reported in entries of `p` per second. Thread count:
//! rayon's default (set `RAYON_NUM_THREADS` to pin it).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dpcore::mechanisms::multinomial::{multinomial_counts, multinomial_draws, DEFAULT_SUM_TOL};
use dpcore::mechanisms::noise::rng_from_seed;
use ndarray::Array1;

/// Deterministic uniform weights in (0, 1] (xorshift64*), normalised to sum 1.
fn probabilities(n: usize, seed: u64) -> Array1<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let w: Vec<f64> = (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            ((s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) + 1) as f64 / (1u64 << 53) as f64
        })
        .collect();
    let total: f64 = w.iter().sum();
    Array1::from_vec(w) / total
}

fn bench_multinomial(c: &mut Criterion) {
    let n = 10_000_000usize;
    let p = probabilities(n, 1);
    let mut g = c.benchmark_group("multinomial_P1e7");
    g.sample_size(10)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_secs(1));
    g.throughput(Throughput::Elements(n as u64));
    for &m in &[100usize, 1_000_000] {
        g.bench_with_input(BenchmarkId::new("counts", m), &m, |b, &m| {
            let mut rng = rng_from_seed(Some(1));
            b.iter(|| {
                multinomial_counts(black_box(p.view()), m, DEFAULT_SUM_TOL, &mut rng).unwrap()
            })
        });
        g.bench_with_input(BenchmarkId::new("draws_shuffled", m), &m, |b, &m| {
            let mut rng = rng_from_seed(Some(2));
            b.iter(|| {
                multinomial_draws(black_box(p.view()), m, true, DEFAULT_SUM_TOL, &mut rng).unwrap()
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench_multinomial);
criterion_main!(benches);
