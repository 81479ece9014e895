//! Nothing is built here: the script exists for its build-dependency on `syn` (see
//! `Cargo.toml`).

fn main() {}
