//! # ebm-testkit
//!
//! The exact test kit shared by every test of the workspace.
//!
//! Its generic half works for any model that implements [`ebm_core::Enumerable`] (lists its
//! states) and any kernel, the library's or yours:
//!
//! - [`exact_draws`]: independent exact draws from \\(p_\beta\\).
//! - [`invariance`]: the **exact invariance test** — draw the state exactly from the target,
//!   apply one kernel step, and test the result against the target by a chi-square test. A
//!   kernel that does not leave the target invariant fails it given enough draws.
//! - [`detailed_balance`] and [`skew_detailed_balance`]: statistical tests of (skew-)detailed
//!   balance from the same draws (is the law of the pair (before, after) symmetric?).
//! - [`AtBeta`]: a kernel run at the wrong temperature, the standard negative control.
//! - [`goodness_of_fit`]: chi-square test of any batch of independent chains against
//!   \\(p_\beta\\).
//!
//! The RBM half computes exact transition matrices and joint laws:
//!
//! - [`chi_square`]: Pearson's goodness-of-fit test of counts against exact probabilities, with
//!   low-expectation bins pooled, and its p-value from the regularised incomplete gamma function.
//! - [`exact_chains`]: independent exact draws of \\((v, h)\\) from the tempered joint of a small
//!   RBM (visible layer enumerated).
//! - [`visible_invariance`] and [`joint_invariance`]: the exact invariance test on the visible
//!   marginal and on the joint law of both layers.
//! - [`gibbs_transition_matrix`], [`single_site_transition_matrix`] and
//!   [`detailed_balance_violation`]: exact transition probabilities and the **detailed-balance
//!   check** \\(\max_{x,y} |p(x)T(x,y) - p(y)T(y,x)|\\).
//! - [`strategies`]: proptest strategies for small random binary RBMs.
//!
//! And for the pages: [`book_quotes`] and [`page_quotes`] fail unless a page (of the book, or
//! any file of the repository) quotes the text a test rendered from its measurements.

mod book;
mod chi2;
mod enumerable;
pub mod strategies;
mod transitions;

pub use book::{book_quotes, page_quotes};
pub use chi2::{ChiSquare, chi_square, regularized_gamma_q};
pub use enumerable::{
    AtBeta, MAX_STATES, detailed_balance, exact_draws, goodness_of_fit, invariance,
    skew_detailed_balance, state_counts,
};
pub use transitions::{
    conditionals, detailed_balance_violation, exact_chains, gibbs_transition_matrix,
    joint_invariance, joint_probabilities, single_site_transition_matrix, stationarity_violation,
    visible_invariance,
};
