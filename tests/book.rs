//! The book's code is the library's code: every Rust block in `book/src` must be an
//! `{{#include}}` of a file that is compiled (an example, which `.ci/book-check` also runs, or
//! a crate's source), with its anchor present; and no book page or Rust source holds a control
//! character (a `\b` typed as "\beta" in a non-raw string renders as garbage in rustdoc).

use std::fs;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.expect("directory entry").path();
        if path.is_dir() {
            if path.file_name().is_some_and(|n| n != "target") {
                files(&path, ext, out);
            }
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

fn book_pages() -> Vec<PathBuf> {
    let mut pages = Vec::new();
    files(&root().join("book/src"), "md", &mut pages);
    pages.sort();
    pages
}

/// The Rust blocks of a page: (line of the opening fence, its info string, its body lines).
fn rust_blocks(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        let fence = line.trim_start();
        if let Some(info) = fence.strip_prefix("```") {
            let body: Vec<String> = lines
                .by_ref()
                .take_while(|(_, l)| !l.trim_start().starts_with("```"))
                .map(|(_, l)| l.trim().to_string())
                .collect();
            if info.starts_with("rust") {
                blocks.push((i + 1, info.to_string(), body));
            }
        }
    }
    blocks
}

/// What is wrong with the Rust blocks of one page (`page` locates relative includes).
fn block_problems(page: &Path, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (line, info, body) in rust_blocks(text) {
        let at = format!("{}:{line}", page.display());
        if info != "rust" {
            problems.push(format!("{at}: fence `{info}`, expected plain `rust`"));
        }
        for l in body.iter().filter(|l| !l.is_empty()) {
            let Some(target) = l
                .strip_prefix("{{#include ")
                .and_then(|t| t.strip_suffix("}}"))
            else {
                problems.push(format!("{at}: `{l}` is not an include of compiled code"));
                continue;
            };
            let (file, anchor) = match target.split_once(':') {
                Some((f, a)) => (f, Some(a)),
                None => (target, None),
            };
            let Ok(path) = page
                .parent()
                .expect("page directory")
                .join(file)
                .canonicalize()
            else {
                problems.push(format!("{at}: {file} does not exist"));
                continue;
            };
            let root = root().canonicalize().expect("package root");
            let compiled = path.starts_with(root.join("examples"))
                || (path.starts_with(root.join("crates"))
                    && path.components().any(|c| c.as_os_str() == "src"));
            if !compiled {
                problems.push(format!("{at}: {file} is not an example or crate source"));
            }
            if let Some(anchor) = anchor {
                let source = fs::read_to_string(&path).expect("readable source");
                let has = |tag: &str| {
                    let want = format!("// {tag}: {anchor}");
                    source.lines().any(|l| l.trim() == want)
                };
                if !has("ANCHOR") || !has("ANCHOR_END") {
                    problems.push(format!("{at}: anchor `{anchor}` missing in {file}"));
                }
            }
        }
    }
    problems
}

/// The control characters of a text other than tab: (line, character).
fn control_characters(text: &str) -> Vec<(usize, char)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            l.chars()
                .find(|c| c.is_control() && *c != '\t')
                .map(|c| (i + 1, c))
        })
        .collect()
}

#[test]
fn every_rust_block_of_the_book_includes_compiled_code() {
    let problems: Vec<String> = book_pages()
        .iter()
        .flat_map(|page| block_problems(page, &fs::read_to_string(page).expect("readable page")))
        .collect();
    assert!(
        problems.is_empty(),
        "book code problems:\n{}",
        problems.join("\n")
    );
}

/// Negative controls: each kind of bad block is reported.
#[test]
fn the_book_check_rejects_uncompiled_blocks() {
    let page = root().join("book/src/using/quickstart.md");
    let bad = [
        "```rust,ignore\n{{#include ../../../examples/using.rs:model}}\n```\n",
        "```rust\nlet x = 1;\n```\n",
        "```rust\n{{#include ../../../examples/using.rs:no_such_anchor}}\n```\n",
        "```rust\n{{#include ../../../examples/no_such_example.rs}}\n```\n",
        "```rust\n{{#include ../../../README.md}}\n```\n",
    ];
    for text in bad {
        assert_eq!(block_problems(&page, text).len(), 1, "not caught: {text}");
    }
    let good = "```rust\n{{#include ../../../examples/using.rs:model}}\n```\n```text\nx\n```\n";
    assert!(block_problems(&page, good).is_empty());
}

#[test]
fn no_book_page_or_source_holds_a_control_character() {
    let mut sources = book_pages();
    for dir in ["crates", "src", "examples", "tests", "benches"] {
        files(&root().join(dir), "rs", &mut sources);
    }
    sources.push(root().join("README.md"));
    let problems: Vec<String> = sources
        .iter()
        .flat_map(|path| {
            let text = fs::read_to_string(path).expect("readable file");
            control_characters(&text)
                .into_iter()
                .map(move |(line, c)| format!("{}:{line}: {c:?}", path.display()))
        })
        .collect();
    assert!(
        problems.is_empty(),
        "control characters:\n{}",
        problems.join("\n")
    );
}

/// Negative control: a backspace (what "\beta" becomes in a non-raw string) is reported.
#[test]
fn the_control_character_check_sees_a_backspace() {
    assert_eq!(
        control_characters("fine\nthe \u{8}eta\n"),
        vec![(2, '\u{8}')]
    );
    assert!(control_characters("tabs\tare fine\n").is_empty());
}

/// Where a text cites the project's private specification files instead of the papers:
/// (line, what). The specs are working notes outside the repository; readers of rustdoc and
/// the book get the papers (listed in the introduction), which they can find.
fn spec_citations(text: &str) -> Vec<(usize, &'static str)> {
    const NAMES: [&str; 7] = [
        "shared/spec",
        "ptt-trais-rcm",
        "lifted-deo-pt",
        "ags-barriers-analytic-models",
        "peer-libraries.md",
        "`stacked-tempering.md`",
        "`tethered-mc.md`",
    ];
    // "spec" as a word, followed by a section, an appendix, an equation or a possessive.
    const FOLLOWERS: [&str; 4] = [" §", "'s", " appendix", " eq"];
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let lower = line.to_lowercase();
        if let Some(name) = NAMES.iter().find(|n| lower.contains(*n)) {
            found.push((i + 1, *name));
            continue;
        }
        let cites = lower.match_indices("spec").any(|(at, _)| {
            let word_start = lower[..at]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric());
            let rest = &lower[at + 4..];
            word_start && FOLLOWERS.iter().any(|f| rest.starts_with(f))
        });
        if cites {
            found.push((i + 1, "spec section"));
        }
    }
    found
}

#[test]
fn rustdoc_and_the_book_cite_papers_not_spec_files() {
    let mut sources = book_pages();
    for dir in ["crates", "src", "examples"] {
        files(&root().join(dir), "rs", &mut sources);
    }
    sources.retain(|p| !p.components().any(|c| c.as_os_str() == "tests"));
    sources.extend(["README.md", "REPRODUCTIONS.md"].map(|f| root().join(f)));
    let problems: Vec<String> = sources
        .iter()
        .flat_map(|path| {
            let text = fs::read_to_string(path).expect("readable file");
            spec_citations(&text)
                .into_iter()
                .map(|(line, what)| format!("{}:{line}: {what}", path.display()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        problems.is_empty(),
        "spec citations (cite the paper instead):\n{}",
        problems.join("\n")
    );
}

/// Negative controls: each way of citing a spec is reported; links to the book's own chapters
/// and words that merely contain "spec" are not.
#[test]
fn the_citation_check_sees_spec_references() {
    for bad in [
        "see ../shared/spec/x.md",
        "(spec `ptt-trais-rcm.md` §2.4)",
        "(`stacked-tempering.md` §2.4)",
        "(spec §2.7)",
        "PTT spec §5.4",
        "the spec's Eq. 38",
    ] {
        assert_eq!(spec_citations(bad).len(), 1, "not caught: {bad}");
    }
    for fine in [
        "[Stacked tempering](concepts/stacked-tempering.md)",
        "GeneratorSpec::Ising(cfg)",
        "a special function, specific to the spec",
        "(Béreux et al., *Fast training and sampling of RBMs*)",
    ] {
        assert!(spec_citations(fine).is_empty(), "false alarm: {fine}");
    }
}

/// The local images a page shows (`![caption](path)`, not `http…`), as (line, path relative to
/// the page).
fn images(text: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(start) = rest.find("![") {
            rest = &rest[start + 2..];
            let Some(close) = rest.find("](") else { break };
            let after = &rest[close + 2..];
            let Some(end) = after.find(')') else { break };
            let path = &after[..end];
            if !path.starts_with("http") {
                found.push((i + 1, path.to_string()));
            }
            rest = &after[end..];
        }
    }
    found
}

/// The images of a page that are not where it points.
fn missing_images(page: &Path, text: &str) -> Vec<String> {
    let dir = page.parent().expect("a page is in a directory");
    images(text)
        .into_iter()
        .filter(|(_, path)| !dir.join(path).is_file())
        .map(|(line, path)| format!("{}:{line}: no image {path}", page.display()))
        .collect()
}

/// Every image a page shows exists, and every figure in `book/src/figures` is shown by a page
/// (the examples draw them, `.ci/book-check` redraws them and compares).
#[test]
fn every_image_of_the_book_exists_and_every_figure_is_shown() {
    let pages = book_pages();
    let mut problems = Vec::new();
    let mut shown = Vec::new();
    for page in &pages {
        let text = fs::read_to_string(page).expect("readable page");
        problems.extend(missing_images(page, &text));
        let dir = page.parent().expect("a page is in a directory");
        for (_, path) in images(&text) {
            if let Ok(p) = dir.join(path).canonicalize() {
                shown.push(p);
            }
        }
    }
    let mut figures = Vec::new();
    files(&root().join("book/src/figures"), "svg", &mut figures);
    for figure in figures {
        let figure = figure.canonicalize().expect("a figure file");
        if !shown.contains(&figure) {
            problems.push(format!("{}: shown by no page", figure.display()));
        }
    }
    assert!(problems.is_empty(), "book images:\n{}", problems.join("\n"));
}

/// Negative control: an image that is not there is reported, one that is there is not.
#[test]
fn the_image_check_sees_a_missing_image() {
    let page = root().join("book/src/extending/tempering-log-z.md");
    let bad = "text ![a figure](../figures/no-such-figure.svg) more\n";
    assert_eq!(missing_images(&page, bad).len(), 1);
    let good =
        "![AIS](../figures/custom-model-ais.svg) and ![web](https://example.invalid/x.png)\n";
    assert!(missing_images(&page, good).is_empty());
}
