//! Helpers shared by the CLI integration tests: the `ebm` binary and running it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command as StdCommand;
use std::sync::OnceLock;

use assert_cmd::Command;
use serde_json::Value;

/// The `ebm` binary of the root package. Tests of the root package (`tests/cli_mpi.rs`, which
/// includes this module) get it from cargo, built with their features (`--features mpi`).
/// Integration tests of `ebm-cli` do not get `CARGO_BIN_EXE_ebm`, since the binary belongs to
/// another package: it is built (or found up to date) by cargo in this test's own target
/// directory and profile.
///
/// It is built as `cargo test --workspace` builds it: cargo chooses the dependencies' features
/// from the packages and targets selected, so `-p ebm --bin ebm` alone would build another
/// variant of nearly every dependency (and of every workspace crate) than the test run has
/// just built, minutes of release compilation. `--workspace` with one example (examples, like
/// tests, bring in every member's dev-dependencies) selects the same features, so after
/// `cargo test --workspace --release` this build finds everything up to date.
pub fn ebm_binary() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // A prebuilt binary, for a machine without cargo (`scripts/gpu-check.sh`).
        if let Some(bin) = std::env::var_os("EBM_BIN") {
            return PathBuf::from(bin);
        }
        if let Some(bin) = option_env!("CARGO_BIN_EXE_ebm") {
            return PathBuf::from(bin);
        }
        // This test runs as <target>/<profile>/deps/<name>-<hash>.
        let exe = std::env::current_exe().expect("test executable path");
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .expect("test executable in <target>/<profile>/deps");
        let profile = profile_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("profile directory name");
        let cargo_profile = if profile == "debug" { "dev" } else { profile };
        let target_dir = profile_dir.parent().expect("target directory");
        // The workspace root (this file is also included by the root package's tests).
        let workspace = Path::new(env!("CARGO_MANIFEST_DIR"))
            .ancestors()
            .find(|d| d.join("Cargo.lock").exists())
            .expect("the workspace root holds Cargo.lock");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = StdCommand::new(cargo)
            .current_dir(workspace)
            .env("CARGO_TARGET_DIR", target_dir)
            .args(["build", "--quiet", "--workspace", "--bin", "ebm"])
            .args(["--example", "quickstart", "--profile"])
            .arg(cargo_profile)
            .status()
            .expect("run cargo to build the ebm binary");
        assert!(status.success(), "building the ebm binary failed");
        let bin = profile_dir.join(format!("ebm{}", std::env::consts::EXE_SUFFIX));
        assert!(bin.exists(), "{} was not built", bin.display());
        bin
    })
}

/// The `ebm` command, without a backtrace variable (errors must stay one line).
pub fn ebm() -> Command {
    let mut c = Command::new(ebm_binary());
    c.env_remove("RUST_BACKTRACE");
    c
}

/// Runs `ebm <args>` in `dir` (arguments split at whitespace, no backtrace variable) for at
/// most `limit`: its output (stderr, and stdout when `stdout` is set; discarded otherwise), or
/// `None` if it was still running then (it is killed: for a test of hostile input, a run still
/// going has passed validation and is working).
pub fn run_within(
    dir: &Path,
    args: &str,
    limit: std::time::Duration,
    stdout: bool,
) -> Option<std::process::Output> {
    use std::process::Stdio;
    let mut child = StdCommand::new(ebm_binary())
        .current_dir(dir)
        .env_remove("RUST_BACKTRACE")
        .args(args.split_whitespace())
        .stdout(if stdout {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    Some(child.wait_with_output().unwrap())
}

/// Runs `ebm <args>` in `dir` (arguments split at whitespace), expecting success; returns
/// stdout.
pub fn ok(dir: &Path, args: &str) -> String {
    String::from_utf8(succeeds(dir, args).stdout).unwrap()
}

/// Runs `ebm <args>` in `dir` (arguments split at whitespace), expecting success; returns
/// stderr (its warnings).
pub fn ok_stderr(dir: &Path, args: &str) -> String {
    String::from_utf8(succeeds(dir, args).stderr).unwrap()
}

/// The output of `ebm <args>` in `dir`, which must succeed.
fn succeeds(dir: &Path, args: &str) -> std::process::Output {
    let out = ebm()
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "ebm {args} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// Runs `ebm <args>` in `dir`, expecting failure with exit code `code`, nothing on stdout and
/// exactly one line on stderr, `error: ...`, containing `needle`.
pub fn fails(dir: &Path, args: &str, code: i32, needle: &str) {
    let out = ebm()
        .current_dir(dir)
        .args(args.split_whitespace())
        .output()
        .unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(code), "ebm {args}: {stderr:?}");
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "ebm {args}: stderr is not one line: {stderr:?}"
    );
    assert!(lines[0].starts_with("error: "), "ebm {args}: {stderr:?}");
    assert!(
        lines[0].contains(needle),
        "ebm {args}: {stderr:?} lacks {needle:?}"
    );
    assert!(
        out.stdout.is_empty(),
        "ebm {args} printed on stdout on failure"
    );
}

/// A JSON file (a run record).
pub fn json(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// A file's bytes.
pub fn bytes(path: &Path) -> Vec<u8> {
    std::fs::read(path).unwrap()
}

/// Writes a JSON document read with [`json`] from a file with a checksum (a state file) and
/// edited, with its checksum recomputed, as a deliberate edit would: the program then reaches
/// the edited content (without, any edit is caught by the checksum first).
pub fn write_signed_json(path: &Path, mut document: Value) {
    document.as_object_mut().unwrap().remove("checksum");
    ebm_io::output::write_json_checked(path, &document).unwrap();
}

/// Rewrites the model or trajectory file `raw` (its bytes) with its JSON header edited by
/// `edit` and its checksum recomputed ([`ebm_io::sign_safetensors`]); the data section is
/// kept.
pub fn signed_safetensors(raw: &[u8], edit: impl FnOnce(&mut Value)) -> Vec<u8> {
    let n = u64::from_le_bytes(raw[..8].try_into().unwrap()) as usize;
    let mut header: Value = serde_json::from_slice(&raw[8..8 + n]).unwrap();
    edit(&mut header);
    let text = header.to_string();
    let mut file = (text.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(text.as_bytes());
    file.extend_from_slice(&raw[8 + n..]);
    ebm_io::sign_safetensors(&file).unwrap()
}

/// The rows of a numeric CSV file with a header line, by column name.
pub fn csv_columns(path: &Path) -> std::collections::BTreeMap<String, Vec<f64>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let names: Vec<String> = lines
        .next()
        .expect("header")
        .split(',')
        .map(String::from)
        .collect();
    let mut cols = vec![Vec::new(); names.len()];
    for l in lines {
        for (c, x) in cols.iter_mut().zip(l.split(',')) {
            c.push(x.trim().parse::<f64>().unwrap_or(f64::NAN));
        }
    }
    names.into_iter().zip(cols).collect()
}
