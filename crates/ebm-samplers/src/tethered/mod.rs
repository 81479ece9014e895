//! Tethered Monte Carlo (TMC): order parameters, tethers, the tethered kernel, and the
//! reconstruction of the tethered potential and probability.
//!
//! Paper: "Learning a Restricted Boltzmann Machine using biased Monte Carlo sampling"
//! (Béreux, Decelle, Furtlehner, Seoane, SciPost Phys. 14, 032, 2023; paper 001 of the library).
//!
//! The tethered ensemble inserts a soft constraint on \\(k\\) linear order parameters
//! \\(m_l(v) = v \cdot \omega_l / \sqrt{N_v}\\):
//!
//! \\[ p_{\hat m}(v, h) \propto e^{-\beta E(v, h) - B(m(v); \hat m)}, \qquad
//!     B(m; \hat m) = \tfrac{\alpha}{2} \lVert m - \hat m \rVert^2 , \\]
//!
//! whose normaliser defines the effective potential \\(e^{-\alpha \Omega(\hat m)}\\) and the
//! tethered probability \\(p(\hat m) \propto e^{-\alpha\Omega(\hat m)}\\). The paper's key
//! identity \\(\Omega'(\hat m) = \langle \hat m - m \rangle_{\hat m}\\) turns the measurement of
//! a barrier-separated distribution into one of averages at fixed \\(\hat m\\), each of which
//! is sampled easily; integrating \\(\Omega'\\) and normalising in log space gives
//! \\(p(\hat m)\\), and \\(\langle O \rangle = \int \langle O \rangle_{\hat m}\, p(\hat m)\,
//! d\hat m\\) gives canonical averages.
//!
//! - [`OrderParameter`]: the directions \\(\omega_l\\) (from a PCA, from the SVD of \\(W\\), or
//!   given), projections and their single-site increments.
//! - [`Tether`] and [`GaussianTether`]: the bias \\(B\\).
//! - [`Tethered`]: the TMC kernel (a [`ebm_core::Kernel`]); [`HiddenTethered`]: the variant
//!   tethering hidden order parameters.
//! - [`profile`]: grids, measurement of \\(\Omega'\\), reconstruction, barriers, canonical
//!   averages and generation of samples.
//! - [`plane`]: two order parameters on a tensor grid, path integration of
//!   \\(\nabla\Omega\\) along both L-shaped paths as a consistency check.

mod hidden;
mod kernel;
mod order;
pub mod plane;
pub mod profile;

pub use hidden::HiddenTethered;
pub use kernel::{Tethered, TetheredInfo, randomize_visible, tilted_visible};
pub use order::{GaussianTether, OrderParameter, Tether, tether_curvature_bound};
