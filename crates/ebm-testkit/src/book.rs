//! Numbers that a test measures and a page quotes: the test renders the text from what it
//! measured and fails unless the page holds it, so the page changes when the numbers do.

use std::path::PathBuf;

/// Fails unless the book page `page` (a path under `book/src`, e.g. `"concepts/barriers.md"`)
/// quotes `text`; see [`page_quotes`].
pub fn book_quotes(page: &str, text: &str) {
    page_quotes(&format!("book/src/{page}"), text);
}

/// Fails unless the file `path` (relative to the repository root, e.g. `"REPRODUCTIONS.md"`)
/// holds `text`, comparing words: every run of white space counts as one space on both sides,
/// so a paragraph may wrap anywhere (a table is compared row after row). The failure prints
/// `text`, to be pasted into the page.
pub fn page_quotes(path: &str, text: &str) {
    let file = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path);
    let held = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words(&held).contains(&words(text)),
        "{path} does not quote what the test measured; regenerate it with:\n{text}"
    );
}
