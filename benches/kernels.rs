//! Criterion benchmarks of the kernel engine: `cargo bench --bench kernels`.
//!
//! Sizes are moderate (m = n = 2000, d = 54) and sampling is short so the whole run takes well
//! under a minute. Thread count: rayon's default (set `RAYON_NUM_THREADS` to pin it).

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use dpcore::cancel::Cancel;
use dpcore::kernels::evaluation::{
    kernel_matrix, kernel_matvecs_cancellable, kernel_matvecs_sym_cancellable, kernel_predict, Kernel,
};
use dpcore::numerics::exp_fast_slice;
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

const M: usize = 2000;
const N: usize = 2000;
const D: usize = 54;

fn kernels() -> [(&'static str, Kernel); 3] {
    let gamma = 1.0 / D as f64;
    [
        ("linear", Kernel::linear()),
        ("poly", Kernel::poly(gamma, 3, 1.0).unwrap()),
        ("rbf", Kernel::rbf(gamma).unwrap()),
    ]
}

fn bench_predict(c: &mut Criterion) {
    let z = Array2::from_shape_vec((M, D), uniform(M * D, 1)).unwrap();
    let x = Array2::from_shape_vec((N, D), uniform(N * D, 2)).unwrap();
    let mu = Array1::from_vec(uniform(N, 3));
    let mut g = c.benchmark_group("kernel_predict_2000x2000x54");
    g.throughput(Throughput::Elements((M * N) as u64));
    for (name, k) in kernels() {
        g.bench_with_input(BenchmarkId::from_parameter(name), &k, |b, k| {
            b.iter(|| {
                kernel_predict(
                    black_box(z.view()),
                    black_box(x.view()),
                    black_box(mu.view()),
                    k,
                )
            })
        });
    }
    g.finish();

    // one query against a large support set (the PINP access pattern)
    let x_big = Array2::from_shape_vec((100_000, D), uniform(100_000 * D, 4)).unwrap();
    let mu_big = Array1::from_vec(uniform(100_000, 5));
    let z1 = z.slice(ndarray::s![..1, ..]);
    let mut g = c.benchmark_group("kernel_predict_1x100000x54");
    g.throughput(Throughput::Elements(100_000));
    let (_, rbf) = kernels()[2];
    g.bench_function("rbf", |b| {
        b.iter(|| {
            kernel_predict(
                black_box(z1),
                black_box(x_big.view()),
                black_box(mu_big.view()),
                &rbf,
            )
        })
    });
    g.finish();
}

fn bench_matrix(c: &mut Criterion) {
    let a = Array2::from_shape_vec((M, D), uniform(M * D, 6)).unwrap();
    let b = Array2::from_shape_vec((N, D), uniform(N * D, 7)).unwrap();
    let mut g = c.benchmark_group("kernel_matrix_2000x2000x54");
    g.throughput(Throughput::Elements((M * N) as u64));
    for (name, k) in kernels() {
        g.bench_with_input(BenchmarkId::from_parameter(name), &k, |bch, k| {
            bch.iter(|| kernel_matrix(black_box(a.view()), black_box(b.view()), k))
        });
    }
    g.finish();
}

/// The certificate's pass `K(X, X) v` for 10 vectors: the engine (every entry) vs the symmetric
/// pass (the lower triangle's tiles, used twice), n = 3000 on 784 dense columns (issue 26).
fn bench_symmetric_matvecs(c: &mut Criterion) {
    const NS: usize = 3000;
    const DS: usize = 784;
    let scale = 1.0 / (DS as f64).sqrt();
    let x = Array2::from_shape_vec((NS, DS), uniform(NS * DS, 9).iter().map(|v| v * scale).collect()).unwrap();
    let vs: Vec<Vec<f64>> = (0..10).map(|k| uniform(NS, 20 + k)).collect();
    let refs: Vec<&[f64]> = vs.iter().map(|v| &v[..]).collect();
    let mut g = c.benchmark_group("matvecs_3000x784_10_vectors");
    g.throughput(Throughput::Elements((NS * NS) as u64));
    for (name, k) in [("poly", Kernel::poly(1.0, 3, 1.0).unwrap()), ("rbf", Kernel::rbf(1.0).unwrap())] {
        g.bench_with_input(BenchmarkId::new("engine", name), &k, |bch, k| {
            bch.iter(|| kernel_matvecs_cancellable(black_box(x.view()), x.view(), &refs, k, Cancel::never()))
        });
        g.bench_with_input(BenchmarkId::new("symmetric", name), &k, |bch, k| {
            bch.iter(|| kernel_matvecs_sym_cancellable(black_box(x.view()), &refs, k, Cancel::never()))
        });
    }
    g.finish();
}

fn bench_exp(c: &mut Criterion) {
    let src: Vec<f64> = uniform(1 << 16, 8)
        .iter()
        .map(|v| 20.0 * (v - 1.0))
        .collect();
    let mut buf = src.clone();
    let mut g = c.benchmark_group("exp_65536");
    g.throughput(Throughput::Elements(src.len() as u64));
    g.bench_function("exp_fast_slice", |b| {
        b.iter(|| {
            buf.copy_from_slice(&src);
            exp_fast_slice(black_box(&mut buf));
        })
    });
    g.bench_function("std_exp", |b| {
        b.iter(|| {
            buf.copy_from_slice(&src);
            for v in black_box(&mut buf).iter_mut() {
                *v = v.exp();
            }
        })
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_millis(1500))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_predict, bench_matrix, bench_symmetric_matvecs, bench_exp
}
criterion_main!(benches);
