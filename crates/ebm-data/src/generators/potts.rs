//! Planted multimodal Potts data: the stand-in for the lattice proteins of paper 002
//! (*Accelerated sampling with stacked restricted Boltzmann machines*), whose compact 3x3x3
//! structures and contact energies are not available here.
//!
//! `n_modes` planted sequences of `n_sites` categorical sites with `q` states are drawn
//! uniformly; each sample copies a planted sequence chosen uniformly and replaces each site,
//! independently with probability `mutation`, by a uniformly drawn *other* state. For small
//! mutation rates the data are sharply multimodal (one mode per planted sequence, at Hamming
//! distance about `n_sites (1 - 1/q)` from each other); the labels are the planted sequences.
//! Values are [`Domain::Categorical`] codes `0..q` (one row per site).

use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;

use crate::dataset::{Dataset, Domain};
use crate::error::{Error, Result};

/// The parameters of [`planted_potts`].
#[derive(Clone, Debug, PartialEq)]
pub struct PlantedPotts {
    /// Number of sites (features).
    pub n_sites: usize,
    /// Number of states per site (at least 2).
    pub q: usize,
    /// Number of planted sequences (modes).
    pub n_modes: usize,
    /// Probability that a site differs from its planted state, in \\([0, 1 - 1/q]\\)
    /// (\\(1 - 1/q\\): uniform data).
    pub mutation: f64,
    /// Number of samples.
    pub n_samples: usize,
}

/// Samples of [`PlantedPotts`] (one column per sample), labelled with their planted sequence;
/// deterministic given `seed` (the planted sequences come first from the same stream).
///
/// # Errors
/// [`Error::InvalidArgument`] for no site, no mode, no sample, `q < 2`, or a mutation
/// probability outside \\([0, 1 - 1/q]\\).
pub fn planted_potts(p: &PlantedPotts, seed: u64) -> Result<Dataset> {
    let bad = |what: String| Err(Error::InvalidArgument(what));
    if p.n_sites == 0 || p.n_modes == 0 || p.n_samples == 0 {
        return bad(format!(
            "planted Potts: sites ({}), modes ({}) and samples ({}) must be positive",
            p.n_sites, p.n_modes, p.n_samples
        ));
    }
    if p.q < 2 {
        return bad(format!(
            "planted Potts: q = {} states, at least 2 are needed",
            p.q
        ));
    }
    let max = 1.0 - 1.0 / p.q as f64;
    if !(0.0..=max).contains(&p.mutation) {
        return bad(format!(
            "planted Potts: mutation probability {} must be in [0, {max}]",
            p.mutation
        ));
    }
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let planted = DMatrix::from_fn(p.n_sites, p.n_modes, |_, _| rng.random_range(0..p.q));
    let mut labels = Vec::with_capacity(p.n_samples);
    let mut data = DMatrix::zeros(p.n_sites, p.n_samples);
    for j in 0..p.n_samples {
        let m = rng.random_range(0..p.n_modes);
        labels.push(m as u32);
        for i in 0..p.n_sites {
            let mut x = planted[(i, m)];
            if rng.random::<f64>() < p.mutation {
                // A uniform state among the q - 1 others.
                let r = rng.random_range(0..p.q - 1);
                x = if r >= x { r + 1 } else { r };
            }
            data[(i, j)] = x as f64;
        }
    }
    Dataset::new(data, Domain::Categorical { q: p.q })?.with_labels(labels)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(mutation: f64) -> PlantedPotts {
        PlantedPotts {
            n_sites: 30,
            q: 4,
            n_modes: 3,
            mutation,
            n_samples: 3000,
        }
    }

    /// Seeded; the values are codes below q; every sample differs from its planted sequence
    /// (the majority state of its label's samples) at a fraction of sites that matches the
    /// mutation probability; the modes are balanced.
    #[test]
    fn samples_are_planted_sequences_mutated_at_the_given_rate() {
        let d = planted_potts(&cfg(0.1), 7).unwrap();
        assert_eq!(d, planted_potts(&cfg(0.1), 7).unwrap());
        assert_ne!(d, planted_potts(&cfg(0.1), 8).unwrap());
        assert_eq!(d.domain(), Domain::Categorical { q: 4 });
        assert_eq!((d.n_features(), d.n_samples()), (30, 3000));
        let labels = d.labels().unwrap();
        let (mut differ, mut total) = (0usize, 0usize);
        for m in 0..3u32 {
            let cols: Vec<usize> = (0..3000).filter(|&j| labels[j] == m).collect();
            assert!(
                (cols.len() as f64 - 1000.0).abs() < 5.0 * 1000f64.sqrt(),
                "mode {m}: {} samples",
                cols.len()
            );
            for i in 0..30 {
                let mut counts = [0usize; 4];
                for &j in &cols {
                    counts[d.sample(j)[i] as usize] += 1;
                }
                let majority = *counts.iter().max().unwrap();
                differ += cols.len() - majority;
                total += cols.len();
            }
        }
        let rate = differ as f64 / total as f64;
        // Binomial standard error over 90 000 sites: 0.001.
        assert!((rate - 0.1).abs() < 0.005, "mutation rate {rate}");
    }

    #[test]
    fn bad_parameters_are_rejected() {
        for (p, needle) in [
            (PlantedPotts { q: 1, ..cfg(0.1) }, "q = 1"),
            (
                PlantedPotts {
                    n_modes: 0,
                    ..cfg(0.1)
                },
                "modes (0)",
            ),
            (cfg(0.8), "mutation probability 0.8"),
            (cfg(-0.1), "mutation probability -0.1"),
        ] {
            let e = planted_potts(&p, 0).unwrap_err().to_string();
            assert!(e.contains(needle), "{e}");
        }
    }
}
