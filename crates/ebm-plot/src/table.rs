//! CSV tables of numbers and labels, the input of [`log_likelihood`](crate::log_likelihood)
//! and [`log_z_versus_cost`](crate::log_z_versus_cost) figures drawn from a run's log.

use std::path::{Path, PathBuf};

use ebm_core::{Error, Result};

/// A CSV table with a header row, read as text cells.
#[derive(Debug)]
pub struct Table {
    path: PathBuf,
    /// Column names.
    pub columns: Vec<String>,
    /// `(line number, cells)` of every data row.
    rows: Vec<(usize, Vec<String>)>,
}

impl Table {
    /// Reads a comma-separated file: lines starting with `#` and blank lines are skipped, the
    /// first remaining line names the columns, every other line has one cell per column.
    pub fn read(path: &Path) -> Result<Table> {
        let bytes = ebm_core::input::read_regular(path, ebm_core::input::MAX_TEXT_BYTES).map_err(
            |source| Error::Io {
                path: path.to_path_buf(),
                source,
            },
        )?;
        let malformed = |location: String, reason: String| Error::Format {
            path: path.to_path_buf(),
            location,
            reason,
        };
        let text = String::from_utf8(bytes).map_err(|e| {
            malformed(
                format!("byte {}", e.utf8_error().valid_up_to()),
                "not a UTF-8 text file".into(),
            )
        })?;
        let mut lines = text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.trim()))
            .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'));
        let Some((header_line, header)) = lines.next() else {
            return Err(malformed(
                "line 1".into(),
                "no header row (empty file)".into(),
            ));
        };
        let split = |l: &str| -> Vec<String> {
            l.split(',')
                .map(|c| c.trim().trim_matches('"').to_string())
                .collect()
        };
        let columns = split(header);
        if let Some(k) = columns.iter().position(|c| c.is_empty()) {
            return Err(malformed(
                format!("line {header_line}"),
                format!("column {} has no name", k + 1),
            ));
        }
        let mut rows = Vec::new();
        for (line, l) in lines {
            let cells = split(l);
            if cells.len() != columns.len() {
                return Err(malformed(
                    format!("line {line}"),
                    format!(
                        "{} cells, the header has {} columns",
                        cells.len(),
                        columns.len()
                    ),
                ));
            }
            rows.push((line, cells));
        }
        if rows.is_empty() {
            return Err(malformed(
                "end".into(),
                "no data rows after the header".into(),
            ));
        }
        Ok(Table {
            path: path.to_path_buf(),
            columns,
            rows,
        })
    }

    /// The index of column `name`.
    pub fn column(&self, name: &str) -> Result<usize> {
        self.columns
            .iter()
            .position(|c| c == name)
            .ok_or_else(|| Error::InvalidParameter {
                name: "column".into(),
                reason: format!(
                    "{} has no column \"{name}\"; its columns are {}",
                    self.path.display(),
                    self.columns.join(", ")
                ),
            })
    }

    /// Whether every non-empty cell of column `k` is a number (and at least one is).
    pub fn is_numeric(&self, k: usize) -> bool {
        let mut any = false;
        for (_, cells) in &self.rows {
            let c = &cells[k];
            if c.is_empty() {
                continue;
            }
            if c.parse::<f64>().is_err() {
                return false;
            }
            any = true;
        }
        any
    }

    /// Column `k` as numbers: `None` for an empty cell; an error for text or a non-finite
    /// value.
    pub fn numbers(&self, k: usize) -> Result<Vec<Option<f64>>> {
        self.rows
            .iter()
            .map(|(line, cells)| {
                let c = &cells[k];
                if c.is_empty() {
                    return Ok(None);
                }
                let malformed = |reason: String| Error::Format {
                    path: self.path.clone(),
                    location: format!("line {line}, column \"{}\"", self.columns[k]),
                    reason,
                };
                let v: f64 = c
                    .parse()
                    .map_err(|_| malformed(format!("\"{c}\" is not a number")))?;
                if !v.is_finite() {
                    return Err(malformed(format!("non-finite value {c}")));
                }
                Ok(Some(v))
            })
            .collect()
    }

    /// Column `k` as text.
    pub fn texts(&self, k: usize) -> Vec<&str> {
        self.rows.iter().map(|(_, c)| c[k].as_str()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_report_lines_and_columns() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t.csv");
        std::fs::write(
            &p,
            "# log\nmethod,cost,est\nais,10,1.5\n\nais,100,\"1.25\"\nbar,5,\n",
        )
        .unwrap();
        let t = Table::read(&p).unwrap();
        assert_eq!(t.columns, ["method", "cost", "est"]);
        assert!(!t.is_numeric(0));
        assert!(t.is_numeric(1) && t.is_numeric(2));
        assert_eq!(t.numbers(2).unwrap(), [Some(1.5), Some(1.25), None]);
        assert_eq!(t.texts(0), ["ais", "ais", "bar"]);
        let e = t.numbers(0).unwrap_err().to_string();
        assert!(e.contains("line 3") && e.contains("\"ais\""), "{e}");
        assert!(
            t.column("nope")
                .unwrap_err()
                .to_string()
                .contains("method, cost, est")
        );

        std::fs::write(&p, "a,b\n1,inf\n").unwrap();
        let e = Table::read(&p).unwrap().numbers(1).unwrap_err().to_string();
        assert!(e.contains("non-finite"), "{e}");
        std::fs::write(&p, "a,b\n1\n").unwrap();
        let e = Table::read(&p).unwrap_err().to_string();
        assert!(e.contains("line 2: 1 cells"), "{e}");
    }
}
