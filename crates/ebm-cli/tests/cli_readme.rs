//! The README's quick start, run verbatim (`cargo install` aside: the test's own `ebm` binary
//! stands for the installed one), in an empty directory: every command succeeds, every file the
//! block names exists afterwards, and no command's run record replaced another's (the figure
//! of `ebm plot samples --out ptt-pca.png` once overwrote `ptt.json`, the record of
//! `ebm sample --out ptt.npy`), and the demo it runs gives the mode weights the README quotes.
//! (This is CI's run of the README's demo command.)

mod common;
use common::{ebm, json};

use std::path::Path;

/// The text of the first ```console block after `heading` in `markdown`.
fn raw_block<'a>(markdown: &'a str, heading: &str) -> &'a str {
    let after = &markdown[markdown.find(heading).expect("heading in README")..];
    let start = after.find("```console").expect("console block") + "```console".len();
    let body = &after[start..];
    &body[..body.find("```").expect("end of the block")]
}

/// The commands of a console block: continuation lines joined, comments removed.
fn commands(block: &str) -> Vec<String> {
    block
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.split(" #").next().unwrap_or("").trim().to_string())
        .filter(|l| !l.is_empty())
        .collect()
}

/// Every word of `block` (comments included) that names a file the quick start writes.
fn named_files(block: &str) -> Vec<String> {
    const EXTENSIONS: [&str; 6] = [".npy", ".csv", ".png", ".svg", ".safetensors", ".md"];
    let mut files: Vec<String> = block
        .split(|c: char| c.is_whitespace() || c == '`' || c == ':' || c == ',')
        .filter(|w| w.starts_with(char::is_alphanumeric))
        .filter(|w| EXTENSIONS.iter().any(|e| w.ends_with(e)))
        .map(String::from)
        .collect();
    files.sort();
    files.dedup();
    files
}

#[test]
fn readme_quick_start_runs_verbatim_and_writes_every_file_it_names() {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md"))
            .unwrap();
    let block = raw_block(&readme, "## Quick start");
    let commands = commands(block);
    assert!(commands.len() >= 8, "{commands:?}");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    for line in &commands {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "cargo" => continue,
            "ebm" => {}
            other => panic!("the quick start runs {other}, not ebm: {line}"),
        }
        let out = ebm().current_dir(d).args(&words[1..]).output().unwrap();
        assert!(
            out.status.success(),
            "{line} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // The block as written, comments included: every file it names is there.
    let files = named_files(block);
    assert!(files.len() >= 10, "{files:?}");
    for f in &files {
        assert!(
            d.join(f).is_file(),
            "the quick start names {f}, which is missing"
        );
    }
    // Each command kept its own run record.
    let command = |f: &str| json(&d.join(f))["command"].as_str().unwrap().to_string();
    assert_eq!(command("ptt.json"), "sample");
    assert_eq!(command("my.json"), "train");
    assert_eq!(command("ptt-pca.png.json"), "plot");
    assert_eq!(command("ptt-images.png.json"), "plot");
    assert_eq!(command("loglik.png.json"), "plot");
    // The demo the block runs (`ebm demo --out ebm-demo`, seed 1) gives the weights of mode +
    // that the README quotes first: the model's exact one and PTT's (the other seeds' are
    // checked on their records by tests/reproductions.rs).
    let demo = json(&d.join("ebm-demo/demo.json"))["results"].clone();
    let weight = |w: &serde_json::Value, se: &serde_json::Value| {
        format!("{:.3} ± {:.3}", w.as_f64().unwrap(), se.as_f64().unwrap())
    };
    let ptt = demo["samplers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["label"] == "PTT")
        .unwrap();
    let words = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    for (what, quoted) in [
        (
            "exact weight of mode + is",
            weight(&demo["exact_mode_plus"], &demo["exact_mode_plus_se"]),
        ),
        ("PTT gives", weight(&ptt["mode_plus"], &ptt["mode_plus_se"])),
    ] {
        assert!(
            words.contains(&format!("{what} {quoted}")),
            "the README does not say \"{what} {quoted}\", the demo's numbers"
        );
    }
}
