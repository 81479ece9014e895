//! A small RBM's law, exactly and as Gibbs sampling draws it: 6 Bernoulli visible units (64
//! configurations) and 3 Bernoulli hidden units. Summing the hidden units out gives the free
//! energy \\(F(v)\\) of every visible configuration, hence \\(p(v) = e^{-F(v)} / Z\\) exactly;
//! 20 000 independent Gibbs chains, each run 200 sweeps from a uniformly random start, give
//! one draw each, compared with the exact law by a chi-square test.
//!
//! Run with `cargo run --release --example small_rbm_exact`; it draws the book's figure when
//! `EBM_FIGURES` names a directory.

use ebm::models::exact::visible_probabilities;
use ebm::nalgebra::DMatrix;
use ebm::prelude::*;
use ebm::rand::Rng;
use ebm::testkit::chi_square;

fn main() -> Result<(), Error> {
    // ANCHOR: exact
    let (nv, nh) = (6, 3);
    // Fixed, varied weights and fields (any values would do).
    let weights = DMatrix::from_fn(nv, nh, |i, j| 2.0 * (1.3 * i as f64 + 2.1 * j as f64).sin());
    let fields = (0..nv).map(|i| 0.5 * (0.7 * i as f64).cos()).collect();
    let rbm = Rbm::new(Bernoulli::new(fields), Bernoulli::zeros(nh), weights)?;
    // p(v) of configuration k (visible unit i is bit i of k), by enumeration.
    let exact = visible_probabilities(&rbm, 1.0, Par::Rayon)?;
    // ANCHOR_END: exact

    // ANCHOR: sample
    let chains = 20_000;
    let mut state = ChainState::new(rbm.new_state(chains), 11);
    // A uniformly random start, from each chain's own stream.
    for (c, rng) in state.rngs.as_mut_slice().iter_mut().enumerate() {
        for i in 0..nv {
            state.chains.visible[(i, c)] = f64::from(u8::from(rng.random::<bool>()));
        }
    }
    run(&rbm, &Gibbs::new(1), 1.0, &mut state, 200, Par::Rayon, ())?;
    let mut counts = vec![0u64; exact.len()];
    for chain in 0..chains {
        counts[rbm.state_index(&state.chains, chain)] += 1;
    }
    let test = chi_square(&counts, &exact);
    println!(
        "chi-square of {chains} Gibbs draws against the exact law: {:.1} on {} degrees of \
         freedom, p-value {:.3}",
        test.statistic, test.dof, test.p_value
    );
    // ANCHOR_END: sample
    assert!(
        test.p_value > 1e-3,
        "Gibbs draws do not follow the exact law"
    );

    if let Some(path) = ebm::plot::book_figure("small-rbm-exact.svg") {
        // The configurations from the most to the least likely.
        let mut order: Vec<usize> = (0..exact.len()).collect();
        order.sort_by(|&a, &b| exact[b].total_cmp(&exact[a]));
        let curve = |y: &dyn Fn(usize) -> f64| {
            order
                .iter()
                .enumerate()
                .map(|(rank, &k)| (rank as f64, y(k)))
                .collect()
        };
        let series = [
            ebm::plot::Series {
                label: "exact p(v)".into(),
                points: curve(&|k| exact[k]),
            },
            ebm::plot::Series {
                label: format!("fraction of {chains} Gibbs chains after 200 sweeps"),
                points: curve(&|k| counts[k] as f64 / chains as f64),
            },
        ];
        ebm::plot::line_chart(
            &path,
            "A 6 x 3 RBM: the 64 visible configurations",
            (
                "configuration, from the most to the least likely",
                "probability",
            ),
            &series,
        )?;
    }
    Ok(())
}
