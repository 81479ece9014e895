//! Observers of training: a progress line, CSV and JSON-lines logs. The trainer prints
//! nothing; these write to any [`std::io::Write`] (a file, `stderr`, a buffer). Compose them
//! with `(a, b)` and thin them with [`ebm_core::Every`].

use crate::trainer::TrainInfo;
use ebm_core::{Error, Observer, Result};
use std::io::Write;

fn write_failed(e: std::io::Error) -> Error {
    Error::Observer(Box::new(e))
}

/// The mean of the pairs proposed during the update: a pair with no proposal (an even/odd
/// schedule's other half in a one-round update) has a `NaN` acceptance and is left out;
/// `None` when no pair was proposed.
fn mean(x: &[f64]) -> Option<f64> {
    let proposed: Vec<f64> = x.iter().copied().filter(|a| !a.is_nan()).collect();
    (!proposed.is_empty()).then(|| proposed.iter().sum::<f64>() / proposed.len() as f64)
}

fn opt(x: Option<f64>) -> String {
    x.map_or_else(String::new, |v| format!("{v}"))
}

/// A human-readable progress line every `every` updates: update, learning rate, gradient
/// norm, mean and minimum swap acceptance (tempered phases), ESS (reweighted phases), the
/// online \\(\log Z\\) and train / test log-likelihood with the estimator's ESS, the last
/// checkpoint acceptance and the number of checkpoints kept during the observed updates.
#[derive(Debug)]
pub struct Progress<W> {
    out: W,
    every: u64,
    kept: u64,
}

impl<W: Write> Progress<W> {
    /// Writes to `out` every `every` updates (0: never).
    pub fn new(out: W, every: u64) -> Self {
        Self {
            out,
            every,
            kept: 0,
        }
    }
}

impl<W: Write> Observer<TrainInfo> for Progress<W> {
    fn observe(&mut self, step: u64, info: &TrainInfo) -> Result<()> {
        if info.checkpoint.is_some_and(|c| c.keep) {
            self.kept += 1;
        }
        if self.every == 0 || !step.is_multiple_of(self.every) {
            return Ok(());
        }
        let mut line = format!(
            "update {:>8}  lr {:.3e}  |grad| {:.3e}",
            info.update, info.learning_rate, info.gradient_norm
        );
        let acc = &info.negative.swap_acceptance;
        if let Some(m) = mean(acc) {
            let min = acc.iter().copied().fold(f64::INFINITY, f64::min);
            line += &format!("  swap acc mean {m:.3} min {min:.3}");
        }
        if let Some(ess) = info.negative.ess {
            line += &format!("  ess {ess:.3}");
        }
        if let Some(l) = &info.likelihood {
            line += &format!("  log Z {:.4} ± {:.1e}", l.log_z.log_z, l.log_z.std_err);
            if let Some(t) = l.train {
                line += &format!("  LL train {t:.4}");
            }
            if let Some(t) = l.test {
                line += &format!("  test {t:.4}");
            }
            line += &format!("  AIS ess {:.3}", l.relative_ess);
        }
        if let Some(a) = info.checkpoint.and_then(|c| c.acceptance) {
            line += &format!("  checkpoint acc {a:.3}");
        }
        line += &format!("  kept {}", self.kept);
        writeln!(self.out, "{line}").map_err(write_failed)
    }
}

/// A CSV log with one row per observed update and a header line. Columns (empty when not
/// applicable): `update, learning_rate, gradient_norm, sweeps, chain_sweeps,
/// mean_swap_acceptance, min_swap_acceptance, round_trips, ess, resampled,
/// checkpoint_offered, checkpoint_kept, checkpoint_acceptance, log_z, log_z_std_err,
/// ais_relative_ess, train_ll, test_ll` ([`CSV_COLUMNS`]).
#[derive(Debug)]
pub struct CsvLog<W> {
    out: W,
    header_written: bool,
}

/// The columns of [`CsvLog`].
pub const CSV_COLUMNS: [&str; 18] = [
    "update",
    "learning_rate",
    "gradient_norm",
    "sweeps",
    "chain_sweeps",
    "mean_swap_acceptance",
    "min_swap_acceptance",
    "round_trips",
    "ess",
    "resampled",
    "checkpoint_offered",
    "checkpoint_kept",
    "checkpoint_acceptance",
    "log_z",
    "log_z_std_err",
    "ais_relative_ess",
    "train_ll",
    "test_ll",
];

impl<W: Write> CsvLog<W> {
    /// A log writing to `out`; the header is written before the first row.
    pub fn new(out: W) -> Self {
        Self {
            out,
            header_written: false,
        }
    }

    /// The writer (e.g. the rows so far, for a `Vec<u8>`).
    pub fn get_ref(&self) -> &W {
        &self.out
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Observer<TrainInfo> for CsvLog<W> {
    fn observe(&mut self, _step: u64, info: &TrainInfo) -> Result<()> {
        if !self.header_written {
            writeln!(self.out, "{}", CSV_COLUMNS.join(",")).map_err(write_failed)?;
            self.header_written = true;
        }
        let n = &info.negative;
        let acc = &n.swap_acceptance;
        // f64::min passes over the NaN of pairs not proposed.
        let min = mean(acc).map(|_| acc.iter().copied().fold(f64::INFINITY, f64::min));
        let c = info.checkpoint;
        let row = [
            info.update.to_string(),
            info.learning_rate.to_string(),
            info.gradient_norm.to_string(),
            n.sweeps.to_string(),
            n.chain_sweeps.to_string(),
            opt(mean(acc)),
            opt(min),
            if acc.is_empty() {
                String::new()
            } else {
                n.round_trips.to_string()
            },
            opt(n.ess),
            if n.ess.is_some() {
                (n.resampled as u8).to_string()
            } else {
                String::new()
            },
            (c.is_some() as u8).to_string(),
            c.map_or_else(String::new, |c| (c.keep as u8).to_string()),
            opt(c.and_then(|c| c.acceptance)),
            opt(info.likelihood.as_ref().map(|l| l.log_z.log_z)),
            opt(info.likelihood.as_ref().map(|l| l.log_z.std_err)),
            opt(info.likelihood.as_ref().map(|l| l.relative_ess)),
            opt(info.likelihood.as_ref().and_then(|l| l.train)),
            opt(info.likelihood.as_ref().and_then(|l| l.test)),
        ];
        writeln!(self.out, "{}", row.join(",")).map_err(write_failed)
    }
}

/// A JSON-lines log: each observed [`TrainInfo`] as one JSON object per line.
#[derive(Debug)]
pub struct JsonLinesLog<W> {
    out: W,
}

impl<W: Write> JsonLinesLog<W> {
    /// A log writing to `out`.
    pub fn new(out: W) -> Self {
        Self { out }
    }

    /// Gives back the writer.
    pub fn into_inner(self) -> W {
        self.out
    }
}

impl<W: Write> Observer<TrainInfo> for JsonLinesLog<W> {
    fn observe(&mut self, _step: u64, info: &TrainInfo) -> Result<()> {
        let line = serde_json::to_string(info).map_err(|e| Error::Observer(Box::new(e)))?;
        writeln!(self.out, "{line}").map_err(write_failed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NegativeInfo;

    /// A deterministic even/odd round proposes half the pairs: the log's mean and minimum are
    /// those of the proposed pairs, never `NaN` (it was `NaN` at every update of such a run).
    #[test]
    fn swap_acceptance_of_pairs_not_proposed_is_left_out() {
        let info = TrainInfo {
            update: 1,
            learning_rate: 0.01,
            gradient_norm: 1.0,
            negative: NegativeInfo {
                swap_acceptance: vec![f64::NAN, 0.5, f64::NAN, 0.25],
                ..NegativeInfo::default()
            },
            checkpoint: None,
            likelihood: None,
        };
        let mut log = CsvLog::new(Vec::new());
        log.observe(1, &info).unwrap();
        let text = String::from_utf8(log.into_inner()).unwrap();
        let row: Vec<&str> = text.lines().nth(1).unwrap().split(',').collect();
        assert_eq!(row[5], "0.375");
        assert_eq!(row[6], "0.25");
        assert_eq!(mean(&[f64::NAN, f64::NAN]), None);
    }
}
