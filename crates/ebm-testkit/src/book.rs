//! Tables of the book that a test measures: the test renders the table from what it measured
//! and fails unless the page quotes it verbatim, so the page changes when the numbers do.

use std::path::PathBuf;

/// Fails unless the book page `page` (a path under `book/src`, e.g. `"concepts/barriers.md"`)
/// holds `text` verbatim; the failure prints `text`, to be pasted into the page.
pub fn book_quotes(page: &str, text: &str) {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../book/src")
        .join(page);
    let held = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        held.contains(text),
        "{} does not quote what the test measured; regenerate it with:\n{text}",
        path.display()
    );
}
