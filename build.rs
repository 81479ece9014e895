//! Tells the run records which commit the `ebm` program was built from: sets `EBM_GIT_COMMIT`
//! (read by `src/main.rs`) to the commit checked out in this workspace's git repository, with
//! `-dirty` when the tracked sources of the build (`crates/`, `src/`, `build.rs`, `Cargo.toml`,
//! `Cargo.lock`) differ from it. Outside a git checkout of this workspace (a package downloaded
//! from a registry, no `git`), it sets nothing and the records carry no commit.
//!
//! Only the root package has this script, so a new commit rebuilds its `main` and relinks the
//! program, not the command-line crate.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The tracked sources whose changes make a build `-dirty`.
const SOURCES: [&str; 5] = ["crates", "src", "build.rs", "Cargo.toml", "Cargo.lock"];

fn git(root: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    println!("cargo:rerun-if-changed=build.rs");
    // Only this workspace's own repository, not one that happens to contain it.
    let Some(top) = git(&root, &["rev-parse", "--show-toplevel"]) else {
        return;
    };
    if Path::new(&top).canonicalize().ok() != root.canonicalize().ok() {
        return;
    }
    let Some(git_dir) = git(&root, &["rev-parse", "--absolute-git-dir"]).map(PathBuf::from) else {
        return;
    };
    let mut watched: Vec<PathBuf> = SOURCES.iter().map(|s| root.join(s)).collect();
    watched.extend(["HEAD", "index", "packed-refs"].map(|f| git_dir.join(f)));
    if let Some(branch) = git(&root, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git_dir.join(branch));
    }
    for path in watched {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    let Some(commit) = git(&root, &["rev-parse", "HEAD"]) else {
        return;
    };
    // `--no-optional-locks`: `git status` must not refresh the index, a watched file.
    let status = [
        &[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
        ],
        &SOURCES[..],
    ]
    .concat();
    let dirty = git(&root, &status).is_some_and(|s| !s.is_empty());
    let suffix = if dirty { "-dirty" } else { "" };
    println!("cargo:rustc-env=EBM_GIT_COMMIT={commit}{suffix}");
}
