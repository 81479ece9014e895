//! The main job until the command line exists: build a small RBM, sample it with alternating
//! Gibbs sampling, and compare the sampled visible magnetisations and the histogram of visible
//! configurations with the exact values obtained by enumeration.
//!
//! Run with `cargo run --release --example quickstart`.

use ebm::models::exact;
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;

fn main() -> Result<(), Error> {
    // 10 visible x 6 hidden Bernoulli RBM with structured couplings: two groups of visible
    // units, each coupled to its own hidden units, which makes the law clearly non-uniform.
    let (nv, nh) = (10, 6);
    let weights = DMatrix::from_fn(nv, nh, |i, j| {
        let same_group = (i < nv / 2) == (j < nh / 2);
        if same_group { 0.9 } else { -0.3 }
    });
    let rbm = Rbm::new(
        Bernoulli::new((0..nv).map(|i| -0.8 + 0.05 * i as f64).collect()),
        Bernoulli::new(vec![-1.0; nh]),
        weights,
    )?;

    // Exact answers by enumerating the 2^10 visible configurations.
    let beta = 1.0;
    let p = exact::visible_probabilities(&rbm, beta, Par::Rayon)?;
    let log_z = exact::log_partition_by_visible(&rbm, beta, Par::Rayon)?;
    let mut v = vec![0.0; nv];
    let mut exact_mean = vec![0.0; nv];
    for (k, pk) in p.iter().enumerate() {
        rbm.visible().write_configuration(k as u128, &mut v);
        for i in 0..nv {
            exact_mean[i] += pk * v[i];
        }
    }

    // 4000 chains, one RNG stream each, 200 Gibbs sweeps from the all-zero state.
    let (chains, sweeps, seed) = (4000, 200, 2024);
    let mut state = ChainState::new(rbm.new_state(chains), seed);
    run(
        &rbm,
        &Gibbs::new(1),
        beta,
        &mut state,
        sweeps,
        Par::Rayon,
        (),
    )?;

    println!("ebm quickstart: {nv} x {nh} Bernoulli RBM, exact log Z = {log_z:.6}");
    println!("{chains} chains x {sweeps} Gibbs sweeps, seed {seed}\n");
    println!("unit   exact <v_i>   sampled <v_i>   std. error   |z|");
    let n = chains as f64;
    let mut worst_z: f64 = 0.0;
    for i in 0..nv {
        let m = state.chains.visible.row(i).iter().sum::<f64>() / n;
        let se = (exact_mean[i] * (1.0 - exact_mean[i]) / n).sqrt();
        let z = (m - exact_mean[i]).abs() / se;
        worst_z = worst_z.max(z);
        println!(
            "{i:>4}   {:>11.4}   {:>13.4}   {:>10.4}   {z:.2}",
            exact_mean[i], m, se
        );
    }
    let mut counts = vec![0u64; p.len()];
    for col in state.chains.visible.column_iter() {
        counts[rbm.visible().configuration_index(col.as_slice()) as usize] += 1;
    }
    let t = ebm_testkit::chi_square(&counts, &p);
    println!(
        "\nchi-square of the {} visible configurations: statistic {:.1} on {} dof, p-value {:.3}",
        p.len(),
        t.statistic,
        t.dof,
        t.p_value
    );
    println!("largest |z| over the units: {worst_z:.2} (independent chains; |z| < 4 expected)");
    Ok(())
}
