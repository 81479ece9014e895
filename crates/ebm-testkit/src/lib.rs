//! # ebm-testkit
//!
//! The exact test kit shared by every test of the workspace.
//!
//! - [`chi_square`]: Pearson's goodness-of-fit test of counts against exact probabilities, with
//!   low-expectation bins pooled, and its p-value from the regularised incomplete gamma function.
//! - [`exact_chains`]: independent exact draws of \\((v, h)\\) from the tempered joint of a small
//!   RBM (visible layer enumerated).
//! - [`visible_invariance`] and [`joint_invariance`]: the **exact invariance test** — draw the
//!   state exactly from the target, apply one kernel step, and test the result against the
//!   target. A kernel that does not leave the target invariant fails it given enough draws.
//! - [`gibbs_transition_matrix`], [`single_site_transition_matrix`] and
//!   [`detailed_balance_violation`]: exact transition probabilities and the **detailed-balance
//!   check** \\(\max_{x,y} |p(x)T(x,y) - p(y)T(y,x)|\\).
//! - [`strategies`]: proptest strategies for small random binary RBMs.

mod chi2;
pub mod strategies;
mod transitions;

pub use chi2::{ChiSquare, chi_square, regularized_gamma_q};
pub use transitions::{
    conditionals, detailed_balance_violation, exact_chains, gibbs_transition_matrix,
    joint_invariance, joint_probabilities, single_site_transition_matrix, stationarity_violation,
    visible_invariance,
};
