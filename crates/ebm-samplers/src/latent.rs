//! Moves in hidden space: Gibbs sampling of the hidden layer with the visible layer summed
//! out (Algorithms 3 and 4 of the paper "Alternating Gibbs sampling in restricted Boltzmann
//! machines: free-energy barriers, analytic models and moves in latent space"; the AGS paper
//! Roussel, Cocco and Monasson, *Barriers and dynamical paths in alternating Gibbs sampling*).
//!
//! Summing the visible layer out of \\(e^{-\beta E(v, h)}\\) leaves the hidden marginal
//! \\(p_\beta(h) \propto e^{-E^{\rm eff}_\beta(h)}\\) with the effective energy
//!
//! \\[ E^{\rm eff}_\beta(h) = \beta U_H(h) - \sum_i \Gamma^\beta_{V,i}\big((W h)_i\big). \\]
//!
//! [`LatentGibbs`] updates blocks of one (Algorithm 3, random-permutation scan) or two
//! (Algorithm 4, random pairing) hidden units from their conditional law under
//! \\(E^{\rm eff}_\beta\\), then redraws \\(v \sim p_\beta(v \mid h)\\). Each candidate value of a
//! block costs one pass over the visible units (the input \\(W h\\) is updated incrementally).
//! A barrier that alternating Gibbs sampling must climb in \\(v\\) can be absent in \\(h\\): for
//! the Curie–Weiss model (one hidden unit) Algorithm 3 draws \\(h\\) exactly from its marginal,
//! so each step is an independent exact sample.

use ebm_core::linalg::{MatRef, matmul};
use ebm_core::{CHAIN_CHUNK, ConditionalSampler, Kernel, Par, Scalar};
use ebm_models::{Bernoulli, Gaussian, Layer, Rbm, RbmChains, ReLU, Spin};
use rand::Rng;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// The candidate values of one hidden unit in a latent block update.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Support {
    /// Finitely many values: the block conditional is computed exactly and sampled by tower
    /// sampling (exact Gibbs).
    Finite(&'static [f64]),
    /// A continuous unit approximated on `points` cells of width `width` starting at `lo`:
    /// a cell is drawn with probability proportional to the density at its centre, a value
    /// uniformly inside it, and the proposal is accepted with the exact Metropolis–Hastings
    /// ratio, so the move stays exact. Values outside the grid are never proposed (a unit held
    /// outside the grid stays there until another move changes it).
    Grid {
        /// Left edge of the first cell.
        lo: f64,
        /// Width of a cell.
        width: f64,
        /// Number of cells (at least 1).
        points: usize,
    },
}

impl Support {
    fn len(&self) -> usize {
        match self {
            Support::Finite(v) => v.len(),
            Support::Grid { points, .. } => *points,
        }
    }
    fn value(&self, k: usize) -> f64 {
        match self {
            Support::Finite(v) => v[k],
            Support::Grid { lo, width, .. } => lo + width * (k as f64 + 0.5),
        }
    }
    /// Index of the cell holding `x` (the index of the value for finite supports).
    fn cell(&self, x: f64) -> Option<usize> {
        match self {
            Support::Finite(v) => v.iter().position(|&y| y == x),
            Support::Grid { lo, width, points } => {
                let k = ((x - lo) / width).floor();
                (k >= 0.0 && k < *points as f64).then_some(k as usize)
            }
        }
    }
}

/// A hidden layer of scalar units that latent moves can update: it names the candidate values
/// of each unit and whether \\(h \mapsto -h\\) maps its state space onto itself.
pub trait LatentUnits: Layer {
    /// Whether every configuration's negation is a configuration (spins, Gaussian units), so
    /// the sign-flip move \\(h \to -h\\) is a valid proposal.
    const SIGN_SYMMETRIC: bool;

    /// The candidate values of unit `i`; continuous units use `grid`.
    fn support(&self, i: usize, grid: &Grid) -> Support;
}

impl<F: Scalar> LatentUnits for Bernoulli<F> {
    const SIGN_SYMMETRIC: bool = false;
    fn support(&self, _i: usize, _grid: &Grid) -> Support {
        Support::Finite(&[0.0, 1.0])
    }
}

impl<F: Scalar> LatentUnits for Spin<F> {
    const SIGN_SYMMETRIC: bool = true;
    fn support(&self, _i: usize, _grid: &Grid) -> Support {
        Support::Finite(&[-1.0, 1.0])
    }
}

/// The grid is centred on the unit's prior mode \\(\theta_i / \gamma_i\\).
impl<F: Scalar> LatentUnits for Gaussian<F> {
    const SIGN_SYMMETRIC: bool = true;
    fn support(&self, i: usize, grid: &Grid) -> Support {
        let centre = self.theta()[i].as_f64() / self.gamma()[i].as_f64();
        Support::Grid {
            lo: centre - grid.half_width,
            width: 2.0 * grid.half_width / grid.points as f64,
            points: grid.points,
        }
    }
}

/// The grid covers \\([0, 2 \cdot \texttt{half\_width}]\\).
impl<F: Scalar> LatentUnits for ReLU<F> {
    const SIGN_SYMMETRIC: bool = false;
    fn support(&self, _i: usize, grid: &Grid) -> Support {
        Support::Grid {
            lo: 0.0,
            width: 2.0 * grid.half_width / grid.points as f64,
            points: grid.points,
        }
    }
}

/// The discretisation of continuous hidden units: `points` cells over an interval of
/// half-width `half_width` (per unit; see [`LatentUnits::support`]). The grid only shapes the
/// proposal; exactness does not depend on it, efficiency does (the interval should hold the
/// bulk of each conditional law).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Grid {
    /// Number of cells per unit (at least 1).
    pub points: usize,
    /// Half-width of the interval.
    pub half_width: f64,
}

impl Default for Grid {
    fn default() -> Self {
        Self {
            points: 200,
            half_width: 20.0,
        }
    }
}

/// The block structure of a latent sweep.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Block {
    /// Algorithm 3: one unit at a time, in a fresh random permutation each sweep.
    Single,
    /// Algorithm 4: a fresh random permutation cut into consecutive pairs (a last unit alone
    /// when the count is odd); each pair is drawn jointly.
    Pair,
}

/// Hidden-space Gibbs sampling (Algorithms 3 and 4). A step draws \\(h \sim p_\beta(h \mid v)\\)
/// (the forward pass of AGS), then per sweep redraws every block of hidden units from its
/// conditional law under \\(E^{\rm eff}_\beta(h)\\) (module documentation),
/// optionally followed by a sign-flip Metropolis move \\(h \to -h\\) accepted with probability
/// \\(\min(1, e^{E^{\rm eff}_\beta(h) - E^{\rm eff}_\beta(-h)})\\); after the sweeps the visible
/// layer is redrawn from \\(p_\beta(v \mid h)\\) (the backward pass). The induced chain on
/// \\(v\\) is Markov and reversible with respect to \\(p_\beta(v)\\) (Eqs. C2–C3 of the paper).
/// A step with `sweeps == 0` does nothing.
///
/// Every block update leaves \\(p_\beta(h)\\) invariant (exact Gibbs for discrete units, exact
/// Metropolis–Hastings with the grid proposal for continuous ones), so a step leaves the joint
/// law \\(p_\beta(v, h)\\) invariant. With a random scan order each sweep is reversible: the
/// reversed order is equally likely. The sign flip is only proposed for layers with
/// [`LatentUnits::SIGN_SYMMETRIC`]; for others `sign_flip` is ignored and
/// [`LatentInfo::flips_proposed`] stays zero.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LatentGibbs {
    /// Single units (Algorithm 3) or pairs (Algorithm 4).
    pub block: Block,
    /// Sweeps per step.
    pub sweeps: usize,
    /// Propose \\(h \to -h\\) after each sweep.
    pub sign_flip: bool,
    /// Discretisation of continuous units (unused for discrete ones).
    pub grid: Grid,
}

impl LatentGibbs {
    /// Algorithm 3: one sweep of single-unit updates per step, no sign flip, default grid.
    pub fn single() -> Self {
        Self {
            block: Block::Single,
            sweeps: 1,
            sign_flip: false,
            grid: Grid::default(),
        }
    }

    /// Algorithm 4: one sweep of pair updates per step, no sign flip, default grid.
    pub fn pair() -> Self {
        Self {
            block: Block::Pair,
            ..Self::single()
        }
    }
}

/// What a latent step did, summed over chains.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct LatentInfo {
    /// Metropolis–Hastings proposals of grid (continuous) block updates.
    pub grid_proposed: u64,
    /// Of which accepted.
    pub grid_accepted: u64,
    /// Sign flips proposed.
    pub flips_proposed: u64,
    /// Of which accepted.
    pub flips_accepted: u64,
}

/// Per-chain scratch of a latent sweep.
struct Scratch<F> {
    input: Vec<F>,
    /// \\(\sum_i \Gamma^\beta_{V,i}(I_i)\\) of the current `input`, once computed; `None`
    /// whenever `input` changes. The candidate equal to the current values of a block has
    /// exactly this cumulant, so a binary unit's update evaluates one cumulant instead of two.
    input_cgf: Option<f64>,
    trial: Vec<F>,
    flipped: Vec<F>,
    logw: Vec<f64>,
    order: Vec<usize>,
}

/// The block conditional of `units` given the rest of `h`: writes, for every candidate index
/// `k` (mixed radix over the units' supports, first unit least significant),
/// \\(\log w_k = -\beta \sum_{u} U_{H,u}(x_u) + \sum_i \Gamma^\beta_{V,i}(I_i + \sum_u W_{iu}(x_u - h_u))\\)
/// into `logw`, where `input` holds \\(I = W h\\). This is \\(-E^{\rm eff}_\beta\\) up to a constant
/// of the block; for discrete units \\(p(k) = e^{\log w_k} / \sum_j e^{\log w_j}\\) is the exact
/// block conditional. Exposed for exact transition-matrix tests.
///
/// # Panics
/// If the lengths of `h`, `input` or `trial` do not match the model.
#[allow(clippy::too_many_arguments)]
pub fn block_log_weights<V: Layer, H: LatentUnits<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    grid: &Grid,
    units: &[usize],
    h: &[V::Scalar],
    input: &[V::Scalar],
    trial: &mut [V::Scalar],
    logw: &mut Vec<f64>,
) {
    block_log_weights_reusing(rbm, beta, grid, units, h, input, trial, logw, &mut None);
}

/// [`block_log_weights`], taking the cumulant of the candidate equal to the current values
/// (every unit's shift zero, so its trial input is `input` itself) from `input_cgf` when set,
/// and setting it when computed: the same numbers, one cumulant fewer per update.
#[allow(clippy::too_many_arguments)]
fn block_log_weights_reusing<V: Layer, H: LatentUnits<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    grid: &Grid,
    units: &[usize],
    h: &[V::Scalar],
    input: &[V::Scalar],
    trial: &mut [V::Scalar],
    logw: &mut Vec<f64>,
    input_cgf: &mut Option<f64>,
) {
    let nv = rbm.visible().width();
    let w = rbm.weights().as_slice();
    let support = |u: usize| rbm.hidden().support(u, grid);
    let n: usize = units.iter().map(|&u| support(u).len()).product();
    logw.clear();
    for k in 0..n {
        let mut rest = k;
        let mut prior = 0.0;
        let mut current = true;
        trial.copy_from_slice(input);
        for &u in units {
            let s = support(u);
            let x = s.value(rest % s.len());
            rest /= s.len();
            prior += rbm.hidden().unit_energy(u, &[V::Scalar::from_f64(x)]);
            let d = x - h[u].as_f64();
            current &= d == 0.0;
            add_column(trial, &w[u * nv..(u + 1) * nv], d);
        }
        let cgf = if current {
            // `trial` is `input`, unchanged (`add_column` skips zero shifts).
            *input_cgf.get_or_insert_with(|| rbm.visible().cgf(input, beta))
        } else {
            rbm.visible().cgf(trial, beta)
        };
        logw.push(-beta * prior + cgf);
    }
}

fn add_column<F: Scalar>(dst: &mut [F], col: &[F], d: f64) {
    if d != 0.0 {
        let d = F::from_f64(d);
        for (t, &c) in dst.iter_mut().zip(col) {
            *t = *t + c * d;
        }
    }
}

/// \\(-E^{\rm eff}_\beta\\) restricted to the terms that involve `units`, for the current values
/// given the visible cumulant `input_cgf` of the current input \\(I = W h\\).
fn block_log_weight_current<V: Layer, H: Layer<Scalar = V::Scalar>>(
    rbm: &Rbm<V, H>,
    beta: f64,
    units: &[usize],
    h: &[V::Scalar],
    input_cgf: f64,
) -> f64 {
    let prior: f64 = units
        .iter()
        .map(|&u| rbm.hidden().unit_energy(u, &h[u..u + 1]))
        .sum();
    -beta * prior + input_cgf
}

/// Tower sampling: index `k` with probability \\(e^{\log w_k} / \sum_j e^{\log w_j}\\).
fn tower<R: Rng + ?Sized>(logw: &[f64], rng: &mut R) -> usize {
    let max = logw.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let total: f64 = logw.iter().map(|l| (l - max).exp()).sum();
    let mut u = rng.random::<f64>() * total;
    for (k, l) in logw.iter().enumerate() {
        u -= (l - max).exp();
        if u < 0.0 {
            return k;
        }
    }
    logw.len() - 1
}

impl LatentGibbs {
    /// One block update of chain `h` (input \\(I = W h\\) kept up to date).
    #[allow(clippy::too_many_arguments)]
    fn update_block<V: Layer, H: LatentUnits<Scalar = V::Scalar>, R: Rng>(
        &self,
        rbm: &Rbm<V, H>,
        beta: f64,
        units: &[usize],
        h: &mut [V::Scalar],
        s: &mut Scratch<V::Scalar>,
        rng: &mut R,
        info: &mut LatentInfo,
    ) {
        let nv = rbm.visible().width();
        let w = rbm.weights().as_slice();
        block_log_weights_reusing(
            rbm,
            beta,
            &self.grid,
            units,
            h,
            &s.input,
            &mut s.trial,
            &mut s.logw,
            &mut s.input_cgf,
        );
        let k = tower(&s.logw, rng);
        let mut rest = k;
        let mut exact = true;
        let mut proposal = [0.0f64; 2];
        for (j, &u) in units.iter().enumerate() {
            let sup = rbm.hidden().support(u, &self.grid);
            let c = rest % sup.len();
            rest /= sup.len();
            proposal[j] = match sup {
                Support::Finite(v) => v[c],
                Support::Grid { lo, width, .. } => {
                    exact = false;
                    lo + width * (c as f64 + rng.random::<f64>())
                }
            };
        }
        if !exact {
            // Metropolis–Hastings with the piecewise-constant proposal q(x) ∝ w_{cell(x)}:
            // log α = [-E(x') + log q(x)] - [-E(x) + log q(x')].
            info.grid_proposed += 1;
            let mut cur_cell = 0usize;
            let mut radix = 1usize;
            for &u in units {
                let sup = rbm.hidden().support(u, &self.grid);
                match sup.cell(h[u].as_f64()) {
                    Some(c) => cur_cell += c * radix,
                    None => return, // the current value cannot be proposed back: reject
                }
                radix *= sup.len();
            }
            let input_cgf = *s
                .input_cgf
                .get_or_insert_with(|| rbm.visible().cgf(&s.input, beta));
            let cur = block_log_weight_current(rbm, beta, units, h, input_cgf);
            s.trial.copy_from_slice(&s.input);
            let mut prior = 0.0;
            for (j, &u) in units.iter().enumerate() {
                prior += rbm
                    .hidden()
                    .unit_energy(u, &[V::Scalar::from_f64(proposal[j])]);
                add_column(
                    &mut s.trial,
                    &w[u * nv..(u + 1) * nv],
                    proposal[j] - h[u].as_f64(),
                );
            }
            let new = -beta * prior + rbm.visible().cgf(&s.trial, beta);
            let log_alpha = new - cur + s.logw[cur_cell] - s.logw[k];
            if rng.random::<f64>().ln() >= log_alpha || log_alpha.is_nan() {
                return;
            }
            info.grid_accepted += 1;
        }
        for (j, &u) in units.iter().enumerate() {
            let d = proposal[j] - h[u].as_f64();
            if d != 0.0 {
                s.input_cgf = None;
            }
            add_column(&mut s.input, &w[u * nv..(u + 1) * nv], d);
            h[u] = V::Scalar::from_f64(proposal[j]);
        }
    }

    /// The sign flip \\(h \to -h\\) with its Metropolis test.
    fn sign_flip_move<V: Layer, H: LatentUnits<Scalar = V::Scalar>, R: Rng>(
        rbm: &Rbm<V, H>,
        beta: f64,
        h: &mut [V::Scalar],
        s: &mut Scratch<V::Scalar>,
        rng: &mut R,
        info: &mut LatentInfo,
    ) {
        info.flips_proposed += 1;
        let input_cgf = *s
            .input_cgf
            .get_or_insert_with(|| rbm.visible().cgf(&s.input, beta));
        let cur = -beta * rbm.hidden().energy(h) + input_cgf;
        for (f, &x) in s.flipped.iter_mut().zip(h.iter()) {
            *f = V::Scalar::from_f64(-x.as_f64());
        }
        for (t, &a) in s.trial.iter_mut().zip(&s.input) {
            *t = V::Scalar::from_f64(-a.as_f64());
        }
        let trial_cgf = rbm.visible().cgf(&s.trial, beta);
        let new = -beta * rbm.hidden().energy(&s.flipped) + trial_cgf;
        if rng.random::<f64>().ln() < new - cur {
            h.copy_from_slice(&s.flipped);
            std::mem::swap(&mut s.input, &mut s.trial);
            s.input_cgf = Some(trial_cgf);
            info.flips_accepted += 1;
        }
    }
}

impl<V, H> Kernel<Rbm<V, H>> for LatentGibbs
where
    V: Layer,
    H: LatentUnits<Scalar = V::Scalar>,
{
    type Info = LatentInfo;

    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> LatentInfo {
        let (nv, nh) = (model.visible().width(), model.hidden().width());
        let n = x.visible.ncols();
        assert_eq!(x.visible.nrows(), nv, "LatentGibbs: visible width");
        assert_eq!(x.hidden.shape(), (nh, n), "LatentGibbs: hidden shape");
        assert_eq!(rngs.len(), n, "LatentGibbs: one RNG stream per chain");
        if self.sweeps == 0 {
            return LatentInfo::default();
        }
        let flip = self.sign_flip && H::SIGN_SYMMETRIC;
        model.sample_hidden(x, beta, rngs, par);
        let totals = [const { AtomicU64::new(0) }; 4];
        // One chunk of CHAIN_CHUNK chains per task (boundaries independent of the thread
        // count); scratch is allocated once per chunk, nothing inside the sweeps.
        let chunk = |(vs, hs, rs): (&mut [V::Scalar], &mut [V::Scalar], &mut [R])| {
            let cols = rs.len();
            let mut s = Scratch {
                input: vec![V::Scalar::from_f64(0.0); nv],
                input_cgf: None,
                trial: vec![V::Scalar::from_f64(0.0); nv],
                flipped: vec![V::Scalar::from_f64(0.0); nh],
                logw: Vec::with_capacity(64),
                order: (0..nh).collect(),
            };
            // The inputs W h of the chunk, computed in place in the visible buffer (which the
            // backward pass overwrites anyway).
            matmul(
                MatRef::col_major(model.weights().as_slice(), nv, nh),
                MatRef::col_major(hs, nh, cols),
                vs,
            );
            let mut info = LatentInfo::default();
            let size = match self.block {
                Block::Single => 1,
                Block::Pair => 2,
            };
            for (k, rng) in rs.iter_mut().enumerate() {
                let h = &mut hs[k * nh..(k + 1) * nh];
                let v = &mut vs[k * nv..(k + 1) * nv];
                s.input.copy_from_slice(v);
                s.input_cgf = None;
                for _ in 0..self.sweeps {
                    for i in (1..nh).rev() {
                        s.order.swap(i, rng.random_range(0..=i));
                    }
                    let order = std::mem::take(&mut s.order);
                    for units in order.chunks(size) {
                        self.update_block(model, beta, units, h, &mut s, rng, &mut info);
                    }
                    s.order = order;
                    if flip {
                        Self::sign_flip_move(model, beta, h, &mut s, rng, &mut info);
                    }
                }
                // v ~ p(v | h): the input W h is exactly the visible layer's input.
                v.copy_from_slice(&s.input);
                model.visible().sample_in_place(v, beta, rng);
            }
            for (t, c) in totals.iter().zip([
                info.grid_proposed,
                info.grid_accepted,
                info.flips_proposed,
                info.flips_accepted,
            ]) {
                t.fetch_add(c, Ordering::Relaxed);
            }
        };
        let (vis, hid) = (x.visible.as_mut_slice(), x.hidden.as_mut_slice());
        match par {
            Par::Seq => vis
                .chunks_mut((nv * CHAIN_CHUNK).max(1))
                .zip(hid.chunks_mut((nh * CHAIN_CHUNK).max(1)))
                .zip(rngs.chunks_mut(CHAIN_CHUNK))
                .for_each(|((v, h), r)| chunk((v, h, r))),
            Par::Rayon => vis
                .par_chunks_mut((nv * CHAIN_CHUNK).max(1))
                .zip(hid.par_chunks_mut((nh * CHAIN_CHUNK).max(1)))
                .zip(rngs.par_chunks_mut(CHAIN_CHUNK))
                .for_each(|((v, h), r)| chunk((v, h, r))),
        }
        let [a, b, c, d] = totals.map(AtomicU64::into_inner);
        LatentInfo {
            grid_proposed: a,
            grid_accepted: b,
            flips_proposed: c,
            flips_accepted: d,
        }
    }
}

/// Two kernels applied in turn: `first` then `second` (the general [`crate::Cycle`]). With
/// [`crate::Gibbs`] as `first` and [`LatentGibbs`] as `second` it alternates k AGS sweeps with
/// one latent sweep; each part leaves \\(p_\beta\\) invariant, so the composition does.
pub type Alternate<A, B> = crate::Cycle<A, B>;
