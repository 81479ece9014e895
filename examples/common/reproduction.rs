//! What the reproduction examples share (`bas_latent`, `hopfield_latent`, `ring_paths`): their
//! `--name value` options, the mean and standard error over chains, and their per-seed run
//! records, `DIR/seedK.json`, from which
//! `tests/reproductions.rs` renders the tables of REPRODUCTIONS.md.

use ebm::prelude::Error;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// The command line's `--name value` pairs, checked against the names an example knows.
pub struct Options(BTreeMap<String, String>);

impl Options {
    /// Reads the process arguments.
    ///
    /// # Errors
    /// An unknown name, or a name without a value.
    pub fn parse(known: &[&str]) -> Result<Self, Error> {
        let args: Vec<String> = std::env::args().skip(1).collect();
        let mut map = BTreeMap::new();
        for pair in args.chunks(2) {
            let name = pair[0].as_str();
            if !known.contains(&name) {
                return Err(invalid(name, format!("unknown option; known: {known:?}")));
            }
            let value = pair
                .get(1)
                .ok_or_else(|| invalid(name, "needs a value".into()))?;
            map.insert(name.to_string(), value.clone());
        }
        Ok(Self(map))
    }

    /// The value of `name`, or `default` when it is not given.
    ///
    /// # Errors
    /// A value that does not parse as a `T`.
    pub fn get<T: FromStr>(&self, name: &str, default: T) -> Result<T, Error> {
        match self.0.get(name) {
            None => Ok(default),
            Some(v) => v
                .parse()
                .map_err(|_| invalid(name, format!("cannot read {v:?}"))),
        }
    }

    /// The seeds of `--seeds K,K,..`, or `default`.
    ///
    /// # Errors
    /// A list that does not parse, or an empty one.
    pub fn seeds(&self, default: &[u64]) -> Result<Vec<u64>, Error> {
        let Some(v) = self.0.get("--seeds") else {
            return Ok(default.to_vec());
        };
        let seeds: Vec<u64> = v
            .split(',')
            .map(|x| x.parse())
            .collect::<Result<_, _>>()
            .map_err(|_| invalid("--seeds", format!("expected K,K,.., got {v:?}")))?;
        if seeds.is_empty() {
            return Err(invalid("--seeds", "needs at least one seed".into()));
        }
        Ok(seeds)
    }

    /// The directory of `--record`, if given.
    pub fn record(&self) -> Option<PathBuf> {
        self.0.get("--record").map(PathBuf::from)
    }
}

/// Mean and standard error of the mean of per-chain values (the sample variance over
/// `n - 1`).
pub fn mean_se(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|y| (y - mean).powi(2)).sum::<f64>() / (n - 1.0).max(1.0);
    (mean, (var / n).sqrt())
}

/// An invalid option.
pub fn invalid(name: &str, reason: String) -> Error {
    Error::InvalidParameter {
        name: name.into(),
        reason,
    }
}

/// Writes `record`, with its `seed` and `settings`, to `dir/seed<seed>.json` (creating `dir`).
///
/// # Errors
/// Whatever creating the directory or writing the file reports.
pub fn write_record(
    dir: &Path,
    seed: u64,
    settings: serde_json::Value,
    mut record: serde_json::Map<String, serde_json::Value>,
) -> Result<(), Error> {
    record.insert("seed".into(), seed.into());
    record.insert("settings".into(), settings);
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let path = dir.join(format!("seed{seed}.json"));
    let text = serde_json::to_string_pretty(&record).expect("plain JSON") + "\n";
    std::fs::write(&path, text).map_err(|source| Error::Io { path, source })
}
