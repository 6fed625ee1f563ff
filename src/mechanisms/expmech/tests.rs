//! Unit tests of the exponential mechanism: net enumeration and covering, chunks, the Gumbel keys
//! and skip table, agreement with the exact mechanism, determinism, bounds and the hook.

use super::gumbel::{
    gumbel_eval, gumbel_from_parts, skip_index, skip_table, Streams, K_DIRECT_MAX,
};
use super::net::isqrt;
use super::*;
use crate::kernels::evaluation::Kernel;
use crate::mechanisms::noise::rng_from_seed;
use crate::test_util::uniform;
use ndarray::{array, Array2};

fn never_stop() -> impl FnMut(&Progress) -> bool {
    |_| true
}

/// Brute-force enumeration of the net's index vectors in lexicographic order.
fn brute(net: &BallNet) -> Vec<Vec<i64>> {
    let d = net.dim();
    let hf = net.half() as i64;
    let mut out = Vec::new();
    let mut c = vec![-hf; d];
    loop {
        if net.contains(&c) {
            out.push(c.clone());
        }
        let mut j = d;
        loop {
            if j == 0 {
                return out;
            }
            j -= 1;
            if c[j] < hf {
                c[j] += 1;
                for x in c.iter_mut().skip(j + 1) {
                    *x = -hf;
                }
                break;
            }
        }
    }
}

#[test]
fn isqrt_is_exact() {
    for x in 0u128..5000 {
        let r = isqrt(x) as u128;
        assert!(r * r <= x && (r + 1) * (r + 1) > x);
    }
    // the f64 fast path around every square below 2^52 (sampled) and at its upper end
    let mut q: u128 = 1;
    while q * q < 1 << 52 {
        for x in [q * q - 1, q * q, q * q + 1] {
            let r = isqrt(x) as u128;
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
        q += 1 + q / 1000;
    }
    for q in [(1u128 << 26) - 1, 1 << 26] {
        for x in [q * q - 1, q * q, q * q + 1] {
            let r = isqrt(x) as u128;
            assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
        }
    }
    for &x in &[
        (1u128 << 100) - 1,
        1u128 << 100,
        (1u128 << 62) + 12345,
        u64::MAX as u128,
    ] {
        let r = isqrt(x) as u128;
        assert!(r * r <= x && (r + 1) * (r + 1) > x, "{x}");
    }
}

#[test]
fn validation_names_parameters() {
    let msg = |r: DpResult<BallNet>| r.unwrap_err().to_string();
    assert!(msg(BallNet::new(0, 0.1, 1.0)).starts_with("d"));
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
        assert!(msg(BallNet::new(2, bad, 1.0)).starts_with("nu"));
        assert!(msg(BallNet::new(2, 0.1, bad)).starts_with("radius"));
    }
    assert!(msg(BallNet::new(3, 1e-12, 1.0)).starts_with("nu"));
    assert!(msg(BallNet::new(1, 1e-300, 1e300)).starts_with("nu"));
    assert!(msg(BallNet::new(40, 0.01, 1.0)).starts_with("nu"));
    // a single point (the origin) in high dimension is fine
    let n = BallNet::new(3, 100.0, 1.0).unwrap();
    assert_eq!(n.count(), 1);
    assert_eq!(n.points(10).unwrap().1, Array2::<f64>::zeros((1, 3)));
    let net = BallNet::new(2, 0.3, 1.0).unwrap();
    let u = array![1.0, 2.0, 3.0];
    let sc = Scorer::Linear { u: u.view() };
    let mut rng = rng_from_seed(Some(1));
    let e = |k: f64, b: f64, sc: &Scorer<'_>, rng: &mut DpRng| {
        sample(&net, sc, k, b, rng, &mut never_stop())
            .unwrap_err()
            .to_string()
    };
    assert!(e(1.0, 10.0, &sc, &mut rng).starts_with("u"));
    let u2 = array![1.0, 2.0];
    let sc2 = Scorer::Linear { u: u2.view() };
    assert!(e(f64::NAN, 10.0, &sc2, &mut rng).starts_with("kappa"));
    assert!(e(-1.0, 10.0, &sc2, &mut rng).starts_with("kappa"));
    assert!(e(1.0, -1.0, &sc2, &mut rng).starts_with("exponent_bound"));
    assert!(e(1.0, 2e12, &sc2, &mut rng).starts_with("exponent_bound"));
    assert!(e(1.0, f64::INFINITY, &sc2, &mut rng).starts_with("exponent_bound"));
    let p = Array2::<f64>::zeros((3, 3));
    let c = Array1::<f64>::zeros(3);
    let ks = Scorer::KernelSum {
        kernel: Kernel::rbf(1.0).unwrap(),
        points: p.view(),
        coef: c.view(),
    };
    assert!(e(1.0, 1.0, &ks, &mut rng).starts_with("points"));
    let p = Array2::<f64>::zeros((3, 2));
    let c = Array1::<f64>::zeros(2);
    let ks = Scorer::KernelSum {
        kernel: Kernel::rbf(1.0).unwrap(),
        points: p.view(),
        coef: c.view(),
    };
    assert!(e(1.0, 1.0, &ks, &mut rng).starts_with("coef"));
    let c3 = Array1::<f64>::zeros(3);
    let ks = Scorer::KernelSum {
        kernel: Kernel::from(crate::kernels::evaluation::KernelKind::Rbf { gamma: -1.0 }),
        points: p.view(),
        coef: c3.view(),
    };
    assert!(e(1.0, 1.0, &ks, &mut rng).starts_with("gamma"));
}

#[test]
fn enumeration_matches_brute_force_and_counts() {
    for &(d, nu, r) in &[
        (1, 0.3, 1.0),
        (1, 0.01, 2.0),
        (2, 0.2, 1.0),
        (2, 0.05, 1.0),
        (3, 0.25, 1.0),
        (3, 0.1, 0.5),
        (4, 0.3, 1.0),
        (5, 0.5, 1.0),
        (2, 5.0, 1.0),
    ] {
        let net = BallNet::new(d, nu, r).unwrap();
        let want = brute(&net);
        let (coords, pts) = net.points(1 << 22).unwrap();
        assert_eq!(coords.nrows(), want.len(), "d={d} nu={nu}");
        for (row, w) in coords.rows().into_iter().zip(&want) {
            assert_eq!(row.to_vec(), *w);
        }
        assert_eq!(net.count(), want.len() as u64);
        let nc = net.count_limited(u64::MAX).unwrap();
        assert_eq!(nc.points, want.len() as u64);
        let est = net.estimate();
        assert!(est > 0.3 * want.len() as f64 && est < 3.0 * want.len() as f64 + 10.0);
        // every net point is in the ball and is the projection of its grid point
        for (c, p) in coords.rows().into_iter().zip(pts.rows()) {
            let n2: f64 = p.iter().map(|v| v * v).sum();
            assert!(n2.sqrt() <= r, "point outside the ball: {n2}");
            assert_eq!(net.point(c.as_slice().unwrap()), p.to_owned());
        }
        assert_eq!(net.count_limited(nc.rows).unwrap(), nc);
        assert!(net
            .count_limited(nc.rows - 1)
            .unwrap_err()
            .to_string()
            .starts_with("max_rows"));
    }
    let net = BallNet::new(3, 0.01, 1.0).unwrap();
    assert!(net
        .points(1000)
        .unwrap_err()
        .to_string()
        .starts_with("max_points"));
}

#[test]
fn chunks_partition_the_net_in_order() {
    for &(d, nu, r) in &[
        (1, 1e-4, 1.0),
        (2, 1e-3, 1.0),
        (3, 0.02, 1.0),
        (4, 0.1, 1.0),
        (6, 0.3, 1.0),
    ] {
        let net = BallNet::new(d, nu, r).unwrap();
        let mut ids = Vec::new();
        let mut total = 0u64;
        let mut o = net.odo();
        let mut prev: Option<Vec<i64>> = None;
        for ch in net.chunks() {
            ids.push(ch.id);
            let mut size = 0;
            net.for_each_row(&ch, &mut o, |prefix, _, lo, hi| {
                size += (hi - lo + 1) as u64;
                let mut first = prefix.to_vec();
                first.push(lo);
                if let Some(p) = &prev {
                    assert!(*p < first, "rows out of order");
                }
                let mut last = prefix.to_vec();
                last.push(hi);
                prev = Some(last);
            });
            assert!(
                size >= 1 && size <= 4 * CHUNK_TARGET as u64,
                "chunk size {size}"
            );
            total += size;
        }
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "ids increase");
        assert_eq!(total, net.count());
        assert!(ids.iter().all(|&i| i < net.box_size()));
    }
}

/// Covering: random points of the ball (incl. the sphere) are within ν of a net point.
#[test]
fn covering_property() {
    for d in 1..=4usize {
        for &(nu, r) in &[(0.3, 1.0), (0.17, 0.8), (0.5, 2.0)] {
            let net = BallNet::new(d, nu, r).unwrap();
            let (_, pts) = net.points(1 << 20).unwrap();
            let dirs = uniform(400 * d, -1.0, 1.0, 7 + d as u64);
            let rads = uniform(400, -1.0, 1.0, 11 + d as u64);
            for i in 0..400 {
                let v = &dirs[i * d..(i + 1) * d];
                let nv = v.iter().map(|x| x * x).sum::<f64>().sqrt().max(1e-12);
                let rad = if i % 4 == 0 {
                    r
                } else {
                    r * (rads[i] * 0.5 + 0.5).powf(1.0 / d as f64)
                };
                let x: Vec<f64> = v.iter().map(|t| t / nv * rad).collect();
                let best = pts
                    .rows()
                    .into_iter()
                    .map(|p| {
                        p.iter()
                            .zip(&x)
                            .map(|(a, b)| (a - b) * (a - b))
                            .sum::<f64>()
                    })
                    .fold(f64::INFINITY, f64::min)
                    .sqrt();
                assert!(best <= nu, "d={d} nu={nu}: distance {best}");
            }
        }
    }
}

#[test]
fn key_error_bound_formula() {
    assert_eq!(
        key_error_bound(0.0),
        2f64.powi(-48) + 746.0 * 2f64.powi(-50)
    );
    assert!(key_error_bound(1e12) < 5e-4);
}

/// The skip table bounds the computed G for every lane (exhaustively), at random and at the
/// extreme mantissas.
#[test]
fn skip_table_bounds_gumbel() {
    let t = skip_table();
    let mut st = Streams::new(&[3; 32], 0);
    for x in 0..=u16::MAX {
        let idx = skip_index(x);
        let k = (idx % 16) as u64;
        assert_eq!(idx / 16, usize::from(x >> 15));
        let geo = x & 0x7FFF;
        assert_eq!(geo == 0, k == 15);
        if geo != 0 {
            assert!(geo >= 1 << (14 - k) && u32::from(geo) < 1u32 << (15 - k));
        }
        let g = gumbel_eval(x, u64::from(x), &mut st);
        assert!(
            g.is_finite() && g <= t[idx],
            "x={x:#x}: G={g} > bound {}",
            t[idx]
        );
        if k < 15 {
            for m in [0u64, (1 << 51) - 1] {
                let g = gumbel_from_parts(x >> 15 == 1, k, m);
                assert!(g <= t[idx], "x={x:#x} m={m}: G={g} > bound {}", t[idx]);
            }
        }
    }
}

/// G is standard Gumbel: Kolmogorov–Smirnov at α = 1e-6, plus the relative accuracy of E
/// against the uniform it came from.
#[test]
fn gumbel_lanes_are_gumbel() {
    let mut st = Streams::new(&[5; 32], 1);
    let n = 400_000;
    let mut g: Vec<f64> = (0..n)
        .map(|j| {
            let x = st.next_lane();
            gumbel_eval(x, j as u64, &mut st)
        })
        .collect();
    g.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let mut dmax: f64 = 0.0;
    for (i, &x) in g.iter().enumerate() {
        let cdf = (-(-x).exp()).exp();
        dmax = dmax
            .max((cdf - i as f64 / n as f64).abs())
            .max((cdf - (i + 1) as f64 / n as f64).abs());
    }
    let crit = ((2.0f64 / 1e-6).ln() / (2.0 * n as f64)).sqrt();
    assert!(dmax < crit, "KS {dmax} >= {crit}");
    // relative accuracy: exp(-G) = E, and W = 1 - e^{-E} (branch A) / V = e^{-E} (branch B)
    for &(b, k, m) in &[
        (0u64, 0u64, 0u64),
        (0, 5, 777),
        (0, 11, (1 << 51) - 1),
        (1, 0, 3),
        (1, 7, 99),
        (0, 40, 5),
        (1, 900, 5),
        (0, 900, 5),
    ] {
        let f = (m as f64 + 0.5) / (1u64 << 51) as f64;
        let half_u = (1.0 + f) * 2f64.powi(-(k as i32) - 2);
        let gv = gumbel_from_parts(b == 1, k, m);
        let e = (-gv).exp();
        let back = if b == 1 { (-e).exp() } else { -(-e).exp_m1() };
        let rel = ((back - half_u) / half_u).abs();
        let tol = if b == 1 { 1e-13 * (1.0 + e) } else { 1e-13 };
        assert!(rel < tol, "b={b} k={k}: rel {rel}");
    }
    // the log-domain path joins the direct one continuously
    for b in [false, true] {
        let lo = gumbel_from_parts(b, K_DIRECT_MAX, 1 << 50);
        let hi = gumbel_from_parts(b, K_DIRECT_MAX + 1, 1 << 50);
        let f = ((1u64 << 50) as f64 + 0.5) / (1u64 << 51) as f64;
        let e = |k: u64| (k + 2) as f64 * std::f64::consts::LN_2 - f.ln_1p();
        let step = if b {
            (e(K_DIRECT_MAX + 1) / e(K_DIRECT_MAX)).ln()
        } else {
            std::f64::consts::LN_2
        };
        assert!(((lo - hi).abs() - step).abs() < 1e-9, "{b}: {lo} {hi}");
    }
}

fn chi_square_threshold(dof: usize) -> f64 {
    // Wilson–Hilferty upper 1e-6 quantile (z = 4.7534), plus a 5% margin.
    let k = dof as f64;
    let z = 4.753_424_3;
    1.05 * k * (1.0 - 2.0 / (9.0 * k) + z * (2.0 / (9.0 * k)).sqrt()).powi(3)
}

/// Pearson chi-square of observed counts against probabilities, merging cells with expected
/// count < 5 (in ascending order of expectation).
fn chi_square(counts: &[u64], logp: &[f64]) -> (f64, usize) {
    let n: u64 = counts.iter().sum();
    let mut cells: Vec<(f64, f64)> = logp
        .iter()
        .zip(counts)
        .map(|(&lp, &c)| (lp.exp() * n as f64, c as f64))
        .collect();
    cells.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    let mut merged: Vec<(f64, f64)> = Vec::new();
    let (mut e, mut o) = (0.0, 0.0);
    for (ce, co) in cells {
        e += ce;
        o += co;
        if e >= 5.0 {
            merged.push((e, o));
            e = 0.0;
            o = 0.0;
        }
    }
    if e > 0.0 || o > 0.0 {
        if let Some(last) = merged.last_mut() {
            last.0 += e;
            last.1 += o;
        } else {
            merged.push((e, o));
        }
    }
    let stat = merged.iter().map(|(e, o)| (o - e) * (o - e) / e).sum();
    (stat, merged.len().saturating_sub(1).max(1))
}

fn scorers_for(d: usize) -> (Array1<f64>, Array2<f64>, Array1<f64>) {
    let u = Array1::from_vec(uniform(d, -1.0, 1.0, 3)) * 3.0;
    let p = Array2::from_shape_vec((7, d), uniform(7 * d, -1.0, 1.0, 4)).unwrap();
    let c = Array1::from_vec(uniform(7, -1.0, 1.0, 5)) * 2.0;
    (u, p, c)
}

/// sample() called repeatedly and sample_many() both match the exact probabilities, with and
/// without the skip test.
#[test]
fn samples_follow_the_exact_mechanism() {
    for &(d, nu, kappa) in &[(1usize, 0.03, 3.0), (2, 0.25, 6.0), (2, 0.25, 0.3)] {
        let net = BallNet::new(d, nu, 1.0).unwrap();
        let (u, p, c) = scorers_for(d);
        let kern = Kernel::rbf(1.5).unwrap();
        let scs = [
            Scorer::Linear { u: u.view() },
            Scorer::KernelSum {
                kernel: kern,
                points: p.view(),
                coef: c.view(),
            },
        ];
        let n_pts = net.count() as usize;
        assert!((30..400).contains(&n_pts), "{n_pts}");
        for sc in &scs {
            let lp = exact_log_probs(&net, sc, kappa, 1 << 20).unwrap();
            let bound = 100.0;
            for (skip, n_samples) in [(true, 60_000), (false, 15_000)] {
                let mut rng = rng_from_seed(Some(42));
                let idx =
                    sample_many_opts(&net, sc, kappa, bound, n_samples, &mut rng, skip).unwrap();
                let mut counts = vec![0u64; n_pts];
                for i in idx {
                    counts[i as usize] += 1;
                }
                let (stat, dof) = chi_square(&counts, lp.as_slice().unwrap());
                assert!(
                    stat < chi_square_threshold(dof),
                    "many d={d} kappa={kappa} skip={skip}: {stat} dof {dof}"
                );
            }
            // sample(): map coords to canonical indices
            let (coords, _) = net.points(1 << 20).unwrap();
            let index_of = |c: &[i64]| {
                coords
                    .rows()
                    .into_iter()
                    .position(|r| r.as_slice().unwrap() == c)
                    .unwrap()
            };
            let mut rng = rng_from_seed(Some(7));
            let mut counts = vec![0u64; n_pts];
            let opts = ScanOptions {
                skip: true,
                wave_chunks: Some(1),
            };
            for _ in 0..6000 {
                let r = sample_opts(&net, sc, kappa, bound, &mut rng, &mut never_stop(), opts)
                    .unwrap()
                    .unwrap();
                counts[index_of(&r.coords)] += 1;
                assert_eq!(r.n_scored, n_pts as u64);
            }
            let (stat, dof) = chi_square(&counts, lp.as_slice().unwrap());
            assert!(
                stat < chi_square_threshold(dof),
                "sample d={d} kappa={kappa}: {stat} dof {dof}"
            );
        }
    }
}

fn run_sample(
    net: &BallNet,
    sc: &Scorer<'_>,
    kappa: f64,
    seed: u64,
    opts: ScanOptions,
) -> EmResult {
    let mut rng = rng_from_seed(Some(seed));
    sample_opts(net, sc, kappa, 1e6, &mut rng, &mut never_stop(), opts)
        .unwrap()
        .unwrap()
}

/// Output independent of the thread count, the wave size and the skip test (bit-identical).
#[test]
fn deterministic_across_threads_waves_and_skip() {
    let cases: Vec<(usize, f64)> = vec![(2, 0.01), (3, 0.05), (5, 0.25)];
    for (d, nu) in cases {
        let net = BallNet::new(d, nu, 1.0).unwrap();
        let (u, p, c) = scorers_for(d);
        let kern = Kernel::rbf(0.7).unwrap();
        let lin = Scorer::Linear { u: u.view() };
        let ks = Scorer::KernelSum {
            kernel: kern,
            points: p.view(),
            coef: c.view(),
        };
        let n = net.count();
        assert!(n > 10_000, "{n}");
        for (sc, kappa) in [(&lin, 40.0), (&lin, 0.0), (&ks, 5.0)] {
            let pool = |t: usize| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(t)
                    .build()
                    .unwrap()
            };
            for seed in 0..3u64 {
                let base = pool(1).install(|| {
                    run_sample(
                        &net,
                        sc,
                        kappa,
                        seed,
                        ScanOptions {
                            skip: false,
                            wave_chunks: None,
                        },
                    )
                });
                assert_eq!(base.n_scored, n);
                for (t, skip, wave) in [
                    (2, true, None),
                    (1, true, Some(3)),
                    (2, true, Some(1)),
                    (2, false, Some(7)),
                ] {
                    let r = pool(t).install(|| {
                        run_sample(
                            &net,
                            sc,
                            kappa,
                            seed,
                            ScanOptions {
                                skip,
                                wave_chunks: wave,
                            },
                        )
                    });
                    assert_eq!(r, base, "d={d} threads={t} skip={skip} wave={wave:?}");
                }
                let other = run_sample(&net, sc, kappa, seed + 100, ScanOptions::default());
                assert!(net.contains(&other.coords));
            }
        }
    }
}

#[test]
fn sample_many_is_thread_independent_and_skip_identical() {
    let net = BallNet::new(2, 0.1, 1.0).unwrap();
    let u = array![2.0, -1.0];
    let sc = Scorer::Linear { u: u.view() };
    let run = |t: usize, skip: bool| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(t)
            .build()
            .unwrap()
            .install(|| {
                let mut rng = rng_from_seed(Some(3));
                sample_many_opts(&net, &sc, 4.0, 10.0, 1000, &mut rng, skip).unwrap()
            })
    };
    let a = run(1, true);
    assert_eq!(a, run(2, true));
    assert_eq!(a, run(2, false));
}

#[test]
fn result_is_consistent() {
    let net = BallNet::new(3, 0.05, 1.0).unwrap();
    let u = array![0.5, -2.0, 1.0];
    let sc = Scorer::Linear { u: u.view() };
    let r = run_sample(&net, &sc, 30.0, 1, ScanOptions::default());
    assert!(net.contains(&r.coords));
    assert_eq!(r.point, net.point(&r.coords));
    assert!((r.score - r.point.dot(&u)).abs() < 1e-12);
    // a sharp mechanism puts the sample near the maximiser of |<z,u>| (the direction ±u/|u|)
    let align = r.point.dot(&u).abs() / u.dot(&u).sqrt();
    assert!(align > 0.8, "{align}");
    let p = Array2::from_shape_vec((2, 3), vec![0.3, 0.1, 0.0, -0.2, 0.5, 0.1]).unwrap();
    let c = array![1.0, -0.5];
    let k = Kernel::rbf(2.0).unwrap();
    let ks = Scorer::KernelSum {
        kernel: k,
        points: p.view(),
        coef: c.view(),
    };
    let r = run_sample(&net, &ks, 10.0, 2, ScanOptions::default());
    let want: f64 = p
        .rows()
        .into_iter()
        .zip(c.iter())
        .map(|(row, &cj)| cj * k.eval(r.point.view(), row))
        .sum();
    assert!((r.score - want).abs() < 1e-12);
}

#[test]
fn exponent_bound_is_enforced_never_clamped() {
    let net = BallNet::new(2, 0.2, 1.0).unwrap();
    let u = array![3.0, 4.0]; // max |<z,u>| = 5 on the unit ball
    let sc = Scorer::Linear { u: u.view() };
    let mut rng = rng_from_seed(Some(1));
    let e = sample(&net, &sc, 2.0, 9.0, &mut rng, &mut never_stop()).unwrap_err();
    assert!(e.to_string().starts_with("exponent_bound"), "{e}");
    assert!(sample(&net, &sc, 2.0, 10.0, &mut rng, &mut never_stop())
        .unwrap()
        .is_some());
    let e = sample_many(&net, &sc, 2.0, 9.0, 10, &mut rng).unwrap_err();
    assert!(e.to_string().starts_with("exponent_bound"), "{e}");
    // overflow to inf is refused too
    let big = array![1e308, 1e308];
    let sc = Scorer::Linear { u: big.view() };
    assert!(sample(&net, &sc, 1e10, 1e12, &mut rng, &mut never_stop()).is_err());
}

#[test]
fn hook_can_cancel_and_sees_progress() {
    let net = BallNet::new(2, 0.001, 1.0).unwrap();
    let u = array![1.0, 0.0];
    let sc = Scorer::Linear { u: u.view() };
    let mut rng = rng_from_seed(Some(1));
    let mut calls = Vec::new();
    let r = sample(&net, &sc, 1.0, 2.0, &mut rng, &mut |p: &Progress| {
        calls.push(*p);
        true
    })
    .unwrap()
    .unwrap();
    assert_eq!(calls.last().unwrap().n_scored, r.n_scored);
    assert_eq!(r.n_scored, net.count());
    let mut stop = |_: &Progress| false;
    assert!(sample(&net, &sc, 1.0, 2.0, &mut rng, &mut stop)
        .unwrap()
        .is_none());
}
