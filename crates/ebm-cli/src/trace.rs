//! What `ebm sample --trace-every` records: the mode of every target chain (by the rule of
//! `--modes`, on the data's principal components: [`ebm_samplers::ModeRule`]) and, with
//! `--chain-out`, the configurations of chain 0 ([`ebm_samplers::ModeTracer`]).

use std::path::Path;

use ebm_data::Dataset;
use ebm_samplers::{ModeRule, ModeTrace, ModeTracer};

use crate::cli::{ModeRuleArg, SampleArgs};
use crate::error::{CliError, Result, bail};
use crate::files::load_dataset;

/// The tracer of `--trace-every` (modes by the rule of `--modes`, default `pc1`, fitted to
/// `data`; chain 0 with `--chain-out`), or one that records nothing.
pub(crate) fn tracer(args: &SampleArgs, data: Option<&Dataset>) -> Result<ModeTracer> {
    let Some(every) = args.trace_every else {
        return Ok(ModeTracer::off());
    };
    let rule = data.map(|ds| mode_rule(args, ds)).transpose()?;
    Ok(ModeTracer::new(every, rule, args.chain_out.is_some()))
}

/// The rule of `--modes` fitted to `ds`.
fn mode_rule(args: &SampleArgs, ds: &Dataset) -> Result<ModeRule> {
    let arg = args.modes.clone().unwrap_or(ModeRuleArg::Pc1);
    let rule = match &arg {
        ModeRuleArg::Pc1 => ModeRule::pc1(ds, args.mode_threshold.unwrap_or(0.0)),
        &ModeRuleArg::PcPlane { a, b, c } => ModeRule::pc_plane(ds, a, b, c),
        &ModeRuleArg::Kmeans { k } => ModeRule::kmeans(ds, k, args.seed),
        ModeRuleArg::Labels { file } => {
            let labels = read_labels(file, ds.n_samples())?;
            ModeRule::labels(ds, &labels, &file.display().to_string())
        }
    };
    rule.map_err(|e| CliError::new(format!("--modes {}: {e}", arg.spec())))
}

/// The modes' jump curve and weights, their warnings and the recorded chain, for the record;
/// `sweeps_per_step` converts steps to Gibbs sweeps.
pub(crate) fn finish(tracer: ModeTracer, sweeps_per_step: u64) -> Result<ModeTrace> {
    let every = tracer.every();
    tracer.finish(sweeps_per_step).map_err(|e| {
        CliError::new(format!(
            "--trace-every {}: {e} (record more often or run more steps)",
            every.unwrap_or(0)
        ))
    })
}

/// Reads a labels file: one integer >= 0 per data row, in a one-column data file.
pub(crate) fn read_labels(path: &Path, n_rows: usize) -> Result<Vec<u32>> {
    let ds = load_dataset(path)?;
    if ds.n_features() != 1 {
        bail!(
            "{}: a labels file has one column (one integer label per data row), this one has {}",
            path.display(),
            ds.n_features()
        );
    }
    if ds.n_samples() != n_rows {
        bail!(
            "{}: {} labels for {n_rows} data rows; give one label per row",
            path.display(),
            ds.n_samples()
        );
    }
    ds.data()
        .iter()
        .enumerate()
        .map(|(j, &v)| {
            if v >= 0.0 && v.fract() == 0.0 && v <= u32::MAX as f64 {
                Ok(v as u32)
            } else {
                bail!(
                    "{}: row {}: label {v} is not a whole number >= 0",
                    path.display(),
                    j + 1
                )
            }
        })
        .collect()
}
