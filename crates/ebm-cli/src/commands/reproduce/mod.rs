//! `ebm reproduce CLAIM`: regenerates one of the papers' claims on this machine, with ordinary
//! `ebm` commands run in-process (listed in the report, so each can be rerun by hand), measured
//! against the model's own exact values, and writes `report.md`, `results.csv`, a figure and a
//! run record into one directory.
//!
//! One module per claim; each states the paper's sentence it tests, measures it against the
//! model's ground truth (never the data) and gives a verdict: reproduced, partly reproduced or
//! not reproduced, with the reason.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use crate::cli::{ClaimArg, ReproduceArgs};
use crate::error::{CliError, Result, bail};
use crate::record::Context;

mod lifted_training;
mod logz;
mod mixing;

pub(super) fn execute(args: &ReproduceArgs, ctx: &Context) -> Result<()> {
    if let Some(file) = &args.model
        && args.claim != ClaimArg::LogzEstimators
    {
        bail!(
            "--model {}: only logz-estimators takes a trained model (the other claims train \
             their own)",
            file.display()
        );
    }
    let data_allowed = args.claim == ClaimArg::PttMixingDigits
        || (args.claim == ClaimArg::LogzEstimators && args.model.is_some());
    if let Some(file) = &args.data
        && !data_allowed
    {
        bail!(
            "--data {}: only ptt-mixing-digits, and logz-estimators with --model, take a data \
             file (the other claims generate their own data)",
            file.display()
        );
    }
    if let Some(epochs) = args.epochs
        && args.claim != ClaimArg::LiftedTrainingDigits
    {
        bail!(
            "--epochs {epochs}: only lifted-training-digits takes a number of epochs (the other \
             claims run fixed budgets)"
        );
    }
    match args.claim {
        ClaimArg::PttMixingIsing => mixing::ptt_mixing(args, ctx, mixing::MixingData::Ising),
        ClaimArg::PttMixingDigits => mixing::ptt_mixing(args, ctx, mixing::MixingData::Digits01),
        ClaimArg::PttMixingClusters => mixing::ptt_mixing(args, ctx, mixing::MixingData::Clusters),
        ClaimArg::LogzEstimators => logz::logz_estimators(args, ctx),
        ClaimArg::LiftedTrainingDigits => lifted_training::lifted_training_digits(args, ctx),
    }
}

/// The output directory of claim `name`: `--out`, or `reproduce-NAME`; created if missing.
fn output_dir(args: &ReproduceArgs, name: &str) -> Result<PathBuf> {
    let dir = args
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("reproduce-{name}")));
    if dir.exists() && !dir.is_dir() {
        bail!("--out {}: exists and is not a directory", dir.display());
    }
    std::fs::create_dir_all(&dir)
        .map_err(|e| CliError::new(format!("cannot create {}: {e}", dir.display())))?;
    Ok(dir)
}

/// The end of every claim: says its verdict, the time it took and where the report is, and writes
/// the run record `reproduce.json` into `dir` (listing `outputs`).
#[allow(clippy::too_many_arguments)]
fn finish<R: Serialize>(
    args: &ReproduceArgs,
    ctx: &Context,
    dir: &Path,
    (verdict, reason): (&str, &str),
    started: Instant,
    report: &Path,
    outputs: &[&Path],
    results: &R,
) -> Result<()> {
    ctx.say(format!(
        "reproduce: {verdict}: {reason} ({:.0} s); report: {}",
        started.elapsed().as_secs_f64(),
        report.display()
    ));
    let inputs: [&Path; 0] = [];
    ctx.finish(
        "reproduce",
        Some(args.seed),
        args,
        &inputs,
        outputs,
        results,
        Some(&dir.join("reproduce.json")),
    )
}

/// The head of every claim's report: title, the paper's statement and the verdict with its
/// reason.
fn report_head(title: &str, statement: &str, verdict: &str, reason: &str) -> String {
    format!(
        "# Reproduction: {title}\n\n**Claim.** {statement}\n\n**Verdict: {}.** {reason}.\n\n",
        verdict.to_uppercase()
    )
}

/// The tail of every claim's report: the `ebm` command lines it ran, to rerun by hand.
fn commands_section(dir: &Path, commands: &[String]) -> String {
    format!(
        "## Commands\n\nRun in-process (outputs in {}); each can be rerun by hand:\n\n\
         ```console\n{}```\n",
        dir.display(),
        commands
            .iter()
            .map(|c| format!("{c}\n"))
            .collect::<String>()
    )
}
