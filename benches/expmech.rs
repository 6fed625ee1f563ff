//! Criterion benchmarks of the streaming exponential mechanism: `cargo bench --bench expmech`.
//!
//! Throughput is reported in candidates (net points) per second: one `sample` call scores and
//! Gumbel-tests every point of the net. Linear scorer in d ∈ {2, 4, 6} on nets of ≈ 10⁷ points,
//! for a sharp (κ·max|score| = 50) and a flat (= 1) mechanism; kernel-sum scorer (RBF, 100
//! support points) in d = 3 on ≈ 2·10⁵ points. Thread count: rayon's default (set
//! `RAYON_NUM_THREADS` to pin it).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dpcore::kernels::evaluation::Kernel;
use dpcore::mechanisms::expmech::{sample, BallNet, Scorer};
use dpcore::mechanisms::noise::rng_from_seed;
use ndarray::{Array1, Array2};

/// Deterministic uniform values in [-1, 1) (xorshift64*).
fn uniform(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            ((s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn unit(d: usize, seed: u64) -> Array1<f64> {
    let u = Array1::from_vec(uniform(d, seed));
    let n = u.dot(&u).sqrt();
    u / n
}

fn bench_linear(c: &mut Criterion) {
    let mut g = c.benchmark_group("em_sample_linear");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    for &(d, nu) in &[(2usize, 4.0e-4), (4, 0.027), (6, 0.12)] {
        let net = BallNet::new(d, nu, 1.0).unwrap();
        let n = net.count();
        let u = unit(d, 1);
        g.throughput(Throughput::Elements(n));
        for (label, kappa) in [("sharp", 50.0), ("flat", 1.0)] {
            let id = BenchmarkId::new(format!("d{d}_{label}"), n);
            g.bench_with_input(id, &kappa, |b, &kappa| {
                let mut rng = rng_from_seed(Some(1));
                let sc = Scorer::Linear { u: u.view() };
                b.iter(|| {
                    sample(
                        black_box(&net),
                        &sc,
                        kappa,
                        kappa * 1.01,
                        &mut rng,
                        &mut |_| true,
                    )
                    .unwrap()
                    .unwrap()
                })
            });
        }
    }
    g.finish();
}

fn bench_kernel(c: &mut Criterion) {
    let mut g = c.benchmark_group("em_sample_kernel_rbf_100");
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    let d = 3;
    let net = BallNet::new(d, 0.03, 1.0).unwrap();
    let n = net.count();
    let pts = Array2::from_shape_vec((100, d), uniform(100 * d, 2)).unwrap() * 0.5;
    let coef = Array1::from_vec(uniform(100, 3)) * 0.1;
    let kernel = Kernel::rbf(1.0).unwrap();
    g.throughput(Throughput::Elements(n));
    g.bench_function(BenchmarkId::new("d3", n), |b| {
        let mut rng = rng_from_seed(Some(1));
        let sc = Scorer::KernelSum {
            kernel,
            points: pts.view(),
            coef: coef.view(),
        };
        // |score| <= sum |coef| <= 10; kappa = 5 gives exponents up to 50
        b.iter(|| {
            sample(&net, &sc, 5.0, 50.0, &mut rng, &mut |_| true)
                .unwrap()
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, bench_linear, bench_kernel);
criterion_main!(benches);
