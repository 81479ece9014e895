//! Datasets, loaders, PCA and sample-quality / mixing metrics for the `ebm` workspace.
//!
//! - [`generators`]: the papers' data, seeded and deterministic: 2D Ising configurations
//!   (Swendsen–Wang), clustered binary data in a low-dimensional subspace (Mickey, 1D and 2D
//!   cluster sets), Bars and Stripes.
//! - [`loaders`]: `.npy`, CSV / whitespace text, IDX (MNIST), FASTA alignments, and the embedded
//!   binarised scikit-learn digits ([`loaders::digits()`]).
//! - [`Dataset`]: data, weights, domain ({0,1}, ±1, categorical, one-hot, real), labels, seeded
//!   train/test split, explicit domain conversions.
//! - [`augment`]: the one-pixel "nudge" augmentation of image data (paper 004's digits).
//! - [`Pca`]: centred and uncentred PCA and projections of data and chains.
//! - [`kmeans`](kmeans::kmeans): k-means clusters (k-means++ seeds, Lloyd iterations), e.g. to
//!   define the modes of a dataset.
//! - [`metrics`]: AA_TS and privacy loss, histogram distances on principal components (the
//!   mixing diagnostics, autocorrelation times and mode jumps, are in `ebm_core::diagnostics`).
//!
//! **Layout**: a [`Dataset`] holds an `n_features x n_samples` column-major matrix, one column
//! per sample, like the samplers' chain batches (one column per chain).
//!
//! The free functions [`generate`], [`load`], [`split`] and [`pca()`] are the entry points for a
//! command-line front end.
//!
//! ```
//! use ebm_data::{generate, pca, split, Centering, GeneratorSpec};
//! let ds = generate(&GeneratorSpec::BarsAndStripes { n: 4, n_samples: 500, noise: 0.0 }, 1)?;
//! let (train, test) = split(&ds, 0.6, 7)?;
//! assert_eq!(train.n_samples() + test.n_samples(), 500);
//! let p = pca(&train, 2, Centering::Centered)?;
//! assert_eq!(p.project(test.data())?.shape(), (2, 200));
//! # Ok::<(), ebm_data::Error>(())
//! ```

pub mod augment;
pub mod dataset;
pub mod error;
pub mod generators;
pub mod kmeans;
mod linalg;
pub mod loaders;
pub mod metrics;
pub mod pca;

use std::path::{Path, PathBuf};

pub use dataset::{Dataset, Domain};
pub use error::{Error, Location, Result};
pub use pca::{Centering, Pca};

use generators::bars_stripes::bars_and_stripes_sample;
use generators::clusters::{ClusterConfig, ClusterPreset, clustered};
use generators::ising::{IsingConfig, ising_2d};
use loaders::fasta::Alphabet;
use loaders::idx::MnistOptions;
use loaders::text::TextOptions;

/// What [`generate`] produces.
#[derive(Debug, Clone, PartialEq)]
pub enum GeneratorSpec {
    /// 2D Ising configurations ([`generators::ising`]), [`Domain::Spin`].
    Ising(IsingConfig),
    /// Bars and Stripes ([`generators::bars_stripes`]), [`Domain::Binary01`].
    BarsAndStripes {
        /// Grid size `n` (`n x n` pixels).
        n: usize,
        /// Number of samples.
        n_samples: usize,
        /// Pixel flip probability.
        noise: f64,
    },
    /// Clustered data ([`generators::clusters`]), [`Domain::Spin`].
    Clusters(ClusterConfig),
    /// One of the papers' clustered sets, [`Domain::Spin`].
    Preset(ClusterPreset),
    /// The embedded binarised digits (the seed is ignored), [`Domain::Binary01`].
    Digits,
    /// Exact samples of the Curie–Weiss model ([`ebm_models::CurieWeiss`]) at inverse
    /// temperature `beta`, [`Domain::Spin`]: bimodal data whose mode weights are known exactly
    /// (`CurieWeiss::positive_mode_weight`). Labels: 1 for positive magnetisation, 0 otherwise.
    CurieWeiss {
        /// Number of spins.
        n: usize,
        /// Coupling \\(J\\).
        coupling: f64,
        /// Field \\(h\\).
        field: f64,
        /// Inverse temperature.
        beta: f64,
        /// Number of samples.
        n_samples: usize,
    },
    /// Exact samples (by enumeration, `n <= 24`) of a Hopfield model
    /// ([`ebm_models::Hopfield`]) with `n_patterns` random \\(\pm1\\) patterns drawn from the seed,
    /// no field, [`Domain::Spin`]. Labels: the index of the pattern with the largest overlap in
    /// absolute value.
    Hopfield {
        /// Number of spins (at most 24).
        n: usize,
        /// Number of patterns.
        n_patterns: usize,
        /// Coupling \\(J\\).
        coupling: f64,
        /// Inverse temperature.
        beta: f64,
        /// Number of samples.
        n_samples: usize,
    },
    /// Planted multimodal Potts data ([`generators::potts`]), [`Domain::Categorical`].
    PlantedPotts(generators::potts::PlantedPotts),
}

/// Generates a dataset; deterministic given `seed`.
///
/// # Errors
/// The generator's parameter errors ([`Error::InvalidArgument`]).
pub fn generate(spec: &GeneratorSpec, seed: u64) -> Result<Dataset> {
    match spec {
        GeneratorSpec::Ising(cfg) => ising_2d(cfg, seed),
        GeneratorSpec::BarsAndStripes {
            n,
            n_samples,
            noise,
        } => bars_and_stripes_sample(*n, *n_samples, *noise, seed),
        GeneratorSpec::Clusters(cfg) => Ok(clustered(cfg, seed)?.dataset),
        GeneratorSpec::Preset(p) => Ok(clustered(&p.config(), seed)?.dataset),
        GeneratorSpec::Digits => Ok(loaders::digits()),
        GeneratorSpec::CurieWeiss {
            n,
            coupling,
            field,
            beta,
            n_samples,
        } => {
            let cw = ebm_models::CurieWeiss::new(*n, *coupling, *field).map_err(model_error)?;
            let x = cw.exact_samples(*n_samples, *beta, seed);
            let labels = x.column_iter().map(|c| (c.sum() > 0.0) as u32).collect();
            Dataset::new(x, Domain::Spin)?.with_labels(labels)
        }
        GeneratorSpec::Hopfield {
            n,
            n_patterns,
            coupling,
            beta,
            n_samples,
        } => {
            use rand::{Rng, SeedableRng};
            let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
            let patterns = nalgebra::DMatrix::from_fn(*n, *n_patterns, |_, _| {
                if rng.random::<bool>() { 1.0 } else { -1.0 }
            });
            let hop = ebm_models::Hopfield::new(patterns, *coupling, vec![0.0; *n])
                .map_err(model_error)?;
            let x = hop
                .exact_samples(*n_samples, *beta, seed.wrapping_add(1))
                .map_err(model_error)?;
            let m = hop.overlaps(&x);
            let labels = m
                .column_iter()
                .map(|c| {
                    c.iter()
                        .enumerate()
                        .fold((0, -1.0), |best, (k, v)| {
                            if v.abs() > best.1 { (k, v.abs()) } else { best }
                        })
                        .0 as u32
                })
                .collect();
            Dataset::new(x, Domain::Spin)?.with_labels(labels)
        }
        GeneratorSpec::PlantedPotts(p) => generators::potts::planted_potts(p, seed),
    }
}

fn model_error(e: ebm_core::Error) -> Error {
    Error::InvalidArgument(e.to_string())
}

/// File formats understood by [`load`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// NumPy `.npy`.
    Npy,
    /// CSV or whitespace-separated text.
    Text,
    /// IDX (MNIST) images.
    Idx,
    /// FASTA alignment (loaded as one-hot Potts data).
    Fasta,
}

impl Format {
    /// Guesses the format from the file name: `.npy`; `.csv`, `.tsv`, `.txt`, `.dat`, `.d`;
    /// `.idx`, `*-ubyte`, `.idx1`..`.idx3`; `.fasta`, `.fa`, `.afa`, `.aln`, `.faa`, `.fna`.
    pub fn from_path(path: &Path) -> Option<Format> {
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        if name.ends_with("-ubyte") {
            return Some(Format::Idx);
        }
        let ext = name.rsplit_once('.')?.1;
        Some(match ext {
            "npy" => Format::Npy,
            "csv" | "tsv" | "txt" | "dat" | "d" => Format::Text,
            "idx" | "idx1" | "idx2" | "idx3" => Format::Idx,
            "fasta" | "fa" | "afa" | "aln" | "faa" | "fna" => Format::Fasta,
            _ => return None,
        })
    }
}

/// Options of [`load`].
#[derive(Debug, Clone, PartialEq)]
pub struct LoadOptions {
    /// Format; `None` guesses from the file name ([`Format::from_path`]).
    pub format: Option<Format>,
    /// Text options (delimiter, header rows, label column).
    pub text: TextOptions,
    /// IDX label file to pair with IDX images.
    pub idx_labels: Option<PathBuf>,
    /// Keep only samples with these labels (needs labels).
    pub keep_labels: Option<Vec<u32>>,
    /// Binarise with `x > threshold -> 1` (not for FASTA).
    pub binarize: Option<f64>,
    /// Alphabet for FASTA files.
    pub alphabet: Alphabet,
    /// Check the values against this domain and tag the dataset with it
    /// ([`Dataset::reinterpret`]) after binarisation; `None` keeps the loader's domain.
    pub domain: Option<Domain>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        LoadOptions {
            format: None,
            text: TextOptions::default(),
            idx_labels: None,
            keep_labels: None,
            binarize: None,
            alphabet: Alphabet::protein(),
            domain: None,
        }
    }
}

/// Loads a data file, dispatching on the format (FASTA alignments become one-hot Potts data).
///
/// # Errors
/// [`Error::InvalidArgument`] if the format cannot be guessed or an option does not apply
/// (binarising FASTA, filtering without labels); [`Error::Io`] / [`Error::Parse`] from the
/// loader; [`Error::Domain`] if `domain` does not fit the values.
pub fn load(path: impl AsRef<Path>, opts: &LoadOptions) -> Result<Dataset> {
    let path = path.as_ref();
    let format = opts
        .format
        .or_else(|| Format::from_path(path))
        .ok_or_else(|| {
            Error::InvalidArgument(format!(
                "cannot guess the format of {}; set LoadOptions::format",
                path.display()
            ))
        })?;
    let mut ds = match format {
        Format::Npy => loaders::npy::load_npy(path)?,
        Format::Text => loaders::text::load_text_matrix(path, &opts.text)?,
        Format::Idx => {
            loaders::idx::load_mnist(path, opts.idx_labels.as_deref(), &MnistOptions::default())?
        }
        Format::Fasta => {
            if opts.binarize.is_some() {
                return Err(Error::InvalidArgument(
                    "binarisation does not apply to FASTA alignments".into(),
                ));
            }
            loaders::fasta::load_fasta(path, &opts.alphabet)?.one_hot()
        }
    };
    if let Some(keep) = &opts.keep_labels {
        ds = ds.filter_labels(keep)?;
    }
    if let Some(t) = opts.binarize {
        ds = ds.binarize(t);
    }
    if let Some(d) = opts.domain {
        ds = if ds.domain() == Domain::Real {
            ds.reinterpret(d)?
        } else {
            ds.to_domain(d)?
        };
    }
    Ok(ds)
}

/// Seeded train/test split ([`Dataset::split`]); the papers use `train_fraction = 0.6`.
///
/// # Errors
/// As [`Dataset::split`].
pub fn split(ds: &Dataset, train_fraction: f64, seed: u64) -> Result<(Dataset, Dataset)> {
    ds.split(train_fraction, seed)
}

/// PCA of a dataset with its weights ([`Pca::fit_dataset`]).
///
/// # Errors
/// As [`Pca::fit`].
pub fn pca(ds: &Dataset, k: usize, centering: Centering) -> Result<Pca> {
    Pca::fit_dataset(ds, k, centering)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_dispatches_on_extension_and_applies_options() {
        let dir = tempfile::tempdir().unwrap();
        let csv = dir.path().join("d.csv");
        std::fs::write(&csv, "0,1,5\n1,1,3\n0,0,5\n").unwrap();
        let opts = LoadOptions {
            text: TextOptions {
                label_column: loaders::text::LabelColumn::Last,
                ..Default::default()
            },
            keep_labels: Some(vec![5]),
            domain: Some(Domain::Spin),
            ..Default::default()
        };
        let err = load(&csv, &opts).unwrap_err();
        assert!(matches!(err, Error::Domain(_)), "{err}");
        let opts = LoadOptions {
            domain: Some(Domain::Binary01),
            ..opts
        };
        let d = load(&csv, &opts).unwrap();
        assert_eq!(d.n_samples(), 2);
        assert_eq!(d.sample(1), &[0.0, 0.0]);
        assert_eq!(d.domain(), Domain::Binary01);

        let npy = dir.path().join("m.npy");
        loaders::npy::save_npy(&npy, &d).unwrap();
        let back = load(&npy, &LoadOptions::default()).unwrap();
        assert_eq!(back.data(), d.data());

        let fa = dir.path().join("a.fasta");
        std::fs::write(&fa, ">a\nAC\n>b\nGT\n").unwrap();
        let opts = LoadOptions {
            alphabet: Alphabet::dna(),
            ..Default::default()
        };
        let oh = load(&fa, &opts).unwrap();
        assert_eq!(oh.domain(), Domain::OneHot { q: 5 });
        assert_eq!(oh.n_features(), 10);

        let missing = load(dir.path().join("none.npy"), &LoadOptions::default()).unwrap_err();
        assert!(missing.to_string().contains("none.npy"), "{missing}");
        assert!(load(dir.path().join("x.unknown"), &LoadOptions::default()).is_err());
        assert_eq!(
            Format::from_path(Path::new("train-images-idx3-ubyte")),
            Some(Format::Idx)
        );
    }

    #[test]
    fn generate_dispatch() {
        let d = generate(&GeneratorSpec::Digits, 0).unwrap();
        assert_eq!(d.n_samples(), 1797);
        let mut cfg = ClusterPreset::TwoClusters1d.config();
        cfg.n_samples = 10;
        assert_eq!(
            generate(&GeneratorSpec::Clusters(cfg), 1)
                .unwrap()
                .n_samples(),
            10
        );
        let is = generate(&GeneratorSpec::Ising(IsingConfig::new(4, 0.3, 7)), 2).unwrap();
        assert_eq!((is.n_features(), is.n_samples()), (16, 7));
    }
}
