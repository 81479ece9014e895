//! Seeded, deterministic generators of the papers' datasets.

pub mod bars_stripes;
pub mod clusters;
pub mod ising;
pub mod potts;
