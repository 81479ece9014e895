use ebm_core::{ChainState, Chains, EnergyModel, Error, Kernel, Par, ProductCache};
use rand::Rng;

/// One distribution of a ladder: a model at an inverse temperature, \\(p_\beta \propto
/// e^{-E_\beta}\\) with \\(E_\beta\\) as returned by [`EnergyModel::energies`].
#[derive(Debug)]
pub struct Rung<'a, M> {
    /// The model.
    pub model: &'a M,
    /// The inverse temperature at which it is evaluated and sampled.
    pub beta: f64,
}

impl<M> Clone for Rung<'_, M> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<M> Copy for Rung<'_, M> {}

/// An ordered family of distributions on one state space: rung 0 is the easy end, the last
/// rung the target.
pub trait Ladder: Sync {
    /// The model type of every rung.
    type Model: EnergyModel;

    /// Number of rungs (at least 1).
    fn n_rungs(&self) -> usize;

    /// Rung `k`.
    ///
    /// # Panics
    /// If `k >= n_rungs()`.
    fn rung(&self, k: usize) -> Rung<'_, Self::Model>;
}

/// What parallel tempering needs from a family of distributions: the log acceptance of
/// exchanging the states of two neighbouring rungs, and the exchange itself.
///
/// Every [`Ladder`] implements it by swapping whole chains, with the exact Metropolis ratio of
/// the product target \\(\prod_k p_k\\):
///
/// \\[ \log\alpha = E_k(x_k) + E_{k+1}(x_{k+1}) - E_k(x_{k+1}) - E_{k+1}(x_k), \\]
///
/// where \\(E_k\\) is rung \\(k\\)'s energy **at its own inverse temperature** (for an RBM the
/// tempered free energy \\(F_{\beta_k}\\), not \\(\beta_k F_1\\)). Models of other structure (a
/// stack of RBMs, [`super::StackLadder`]) implement it by hand.
///
/// The PT loop explores rung `k` with its kernel on [`Exchange::explored`]`(k)`, so one loop
/// (with its schedules and diagnostics) runs every implementation.
pub trait Exchange: Sync {
    /// The state of one rung (a batch of chains).
    type State: Chains;
    /// The model type explored at every rung.
    type RungModel: ProductCache<State = Self::State>;

    /// Number of rungs.
    fn n_exchange_rungs(&self) -> usize;

    /// The model and inverse temperature that the exploration kernel samples at rung `k`.
    ///
    /// # Panics
    /// If `k >= n_exchange_rungs()`.
    fn explored(&self, k: usize) -> Rung<'_, Self::RungModel>;

    /// Writes the log acceptance of exchanging chain `i` of rung `k` (`lo`) with chain `i` of
    /// rung `k + 1` (`hi`) into `out[i]`, for every chain.
    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par);

    /// [`Exchange::log_accept`], keeping in `kept_lo` and `kept_hi` products of the
    /// energies that the next exploration of rungs `k` and `k + 1` can reuse
    /// ([`ProductCache::energies_at_keeping`]); [`Exchange::exchange_keeping`] then moves them
    /// with the chains. The default keeps nothing; ladders ([`Ladder`]) keep the inputs
    /// \\(W^\top v\\) of every state, which the first half-step of the next Gibbs sweep needs.
    fn log_accept_keeping(
        &self,
        k: usize,
        lo: &Self::State,
        hi: &Self::State,
        out: &mut [f64],
        kept: [&mut KeptProducts<Self::State>; 2],
        par: Par,
    ) {
        for x in kept {
            x.valid = false;
        }
        self.log_accept(k, lo, hi, out, par);
    }

    /// [`Exchange::exchange`] after [`Exchange::log_accept_keeping`] on the same states, moving
    /// the kept products with the chains. The default drops them.
    ///
    /// # Panics
    /// As [`Exchange::exchange`].
    #[allow(clippy::too_many_arguments)]
    fn exchange_keeping<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        kept: [&mut KeptProducts<Self::State>; 2],
        par: Par,
    ) {
        for x in kept {
            x.valid = false;
        }
        self.exchange(k, lo, hi, accept, rngs, par);
    }

    /// Whether [`Exchange::exchange`] draws from the streams after the swap (an exact
    /// conditional refresh, [`SplitExchange::refresh`]); false for a ladder.
    fn refreshes(&self) -> bool {
        false
    }

    /// Performs the exchange of chain `i` between rungs `k` and `k + 1` wherever `accept[i]`,
    /// followed by whatever exact conditional refresh the move needs to be valid (none for a
    /// ladder; [`super::StackLadder`] redraws the two layers left out of its collapsed
    /// acceptance). Chain `i` consumes only `rngs[i]`.
    ///
    /// # Panics
    /// If `accept` or `rngs` does not have one entry per chain.
    fn exchange<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        par: Par,
    );
}

/// An [`Exchange`] whose log acceptance splits into two energies per state, so that two
/// processes holding the two rungs of a pair decide its exchanges from each other's energies
/// alone and move only the part of the states that the exchange swaps: what rung-sharded PT
/// ([`super::PtState::for_rungs`], [`super::ParallelTempering::step_linked`]) needs. Every
/// [`Ladder`] is one (whole chains move) and so is [`super::StackLadder`] (one layer moves).
pub trait SplitExchange: Exchange {
    /// The part of a state that an accepted exchange moves to the other rung
    /// ([`SplitExchange::part_mut`]): the state itself for a ladder.
    type Part;

    /// Writes the energies of every chain of `x`, held at rung `k + 1` if `upper` else at rung `k`,
    /// under the two rungs of pair `k`, \\(E_k(x_i)\\) into `out[2 i]` and \\(E_{k+1}(x_i)\\) into
    /// `out[2 i + 1]`, the very numbers [`Exchange::log_accept`] combines
    /// ([`SplitExchange::log_accept_from_energies`]). For a ladder \\(E_k\\) is rung \\(k\\)'s
    /// energy of the whole state; for a stack it is a marginal free energy of the part of the state
    /// that the exchange moves.
    ///
    /// # Panics
    /// If `out.len() != 2 * x.n_chains()`.
    fn pair_energies(&self, k: usize, x: &Self::State, upper: bool, out: &mut [f64], par: Par);

    /// The log acceptance of pair `k` from [`SplitExchange::pair_energies`] of the lower state
    /// (`lo`) and of the upper one (`hi`), into `out` (one entry per chain): by default
    /// [`pair_log_accept`], \\(\log\alpha = E_k(x_k) + E_{k+1}(x_{k+1}) - E_{k+1}(x_k) -
    /// E_k(x_{k+1})\\). An exchange whose [`Exchange::log_accept`] sums the same four numbers
    /// in another order overrides it with that order, so that two processes compute the
    /// one-process \\(\log\alpha\\) bit for bit.
    fn log_accept_from_energies(&self, k: usize, lo: &[f64], hi: &[f64], out: &mut [f64]) {
        let _ = k;
        pair_log_accept(lo, hi, out);
    }

    /// The part of `x` (held at rung `k + 1` if `upper` else at rung `k`) that an accepted exchange
    /// of pair `k` swaps with the same part of the other rung's chain: `x` itself for a ladder
    /// (whole chains move), one layer for a stack (\\(h_n\\) of the upper rung, \\(v_{n+1}\\) of
    /// the lower).
    fn part_mut<'a>(&self, k: usize, x: &'a mut Self::State, upper: bool) -> &'a mut Self::Part;

    /// The refresh that [`Exchange::exchange`] applies, after the swap, to the chains of `x`
    /// (held at rung `k + 1` if `upper` else at rung `k`), drawing from `rngs` (the streams of
    /// rung `k`, as in [`Exchange::exchange`], which refreshes the upper state first): two
    /// processes holding the two rungs reproduce [`Exchange::exchange`] with these calls on
    /// the swapped states. The default draws nothing.
    fn refresh<R: Rng + Send>(
        &self,
        k: usize,
        x: &mut Self::State,
        upper: bool,
        rngs: &mut [R],
        par: Par,
    ) {
        let _ = (k, x, upper, rngs, par);
    }
}

impl<L: Ladder> Exchange for L
where
    L::Model: ProductCache,
{
    type State = <L::Model as EnergyModel>::State;
    type RungModel = L::Model;

    fn n_exchange_rungs(&self) -> usize {
        self.n_rungs()
    }

    fn explored(&self, k: usize) -> Rung<'_, L::Model> {
        self.rung(k)
    }

    /// When both rungs share one model (a temperature ladder), each state's energies at the
    /// two temperatures come from one [`EnergyModel::energies_at`] call (for an RBM one
    /// product \\(W^\top v\\) per state instead of two).
    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        ladder_log_accept(self, k, lo, hi, out, None, par);
    }

    /// The energies of [`Exchange::log_accept`] (the same numbers), keeping for each rung the
    /// product of its own state under its model, and for distinct models also the product of
    /// the neighbour's state under its model (the state it receives if the swap is accepted).
    fn log_accept_keeping(
        &self,
        k: usize,
        lo: &Self::State,
        hi: &Self::State,
        out: &mut [f64],
        kept: [&mut KeptProducts<Self::State>; 2],
        par: Par,
    ) {
        ladder_log_accept(self, k, lo, hi, out, Some(kept), par);
    }

    /// Swaps whole chains and their kept products: between the two rungs when they share one
    /// model, else with the product of the neighbour's state under the rung's own model.
    fn exchange_keeping<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        kept: [&mut KeptProducts<Self::State>; 2],
        par: Par,
    ) {
        self.exchange(k, lo, hi, accept, rngs, par);
        let [kl, kh] = kept;
        if !(kl.valid && kh.valid) {
            kl.valid = false;
            kh.valid = false;
            return;
        }
        match (&mut kl.own, &mut kh.own, &mut kl.cross, &mut kh.cross) {
            (Some(ol), Some(oh), None, None) => ol.swap_chains_where(oh, accept, par),
            (Some(ol), Some(oh), Some(cl), Some(ch)) => {
                ol.swap_chains_where(cl, accept, par);
                oh.swap_chains_where(ch, accept, par);
            }
            _ => unreachable!("valid kept products without buffers"),
        }
    }

    /// Swaps whole chains ([`Chains::swap_chains_where`]); no refresh, so `rngs` is not used.
    fn exchange<R: Rng + Send>(
        &self,
        _k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        _rngs: &mut [R],
        par: Par,
    ) {
        lo.swap_chains_where(hi, accept, par);
    }
}

impl<L: Ladder> SplitExchange for L
where
    L::Model: ProductCache,
{
    type Part = Self::State;

    /// With one model on both rungs, one [`EnergyModel::energies_at`] call at the two
    /// temperatures; else one call per rung, as [`Exchange::log_accept`] computes them.
    fn pair_energies(&self, k: usize, x: &Self::State, _upper: bool, out: &mut [f64], par: Par) {
        let (a, b) = (self.rung(k), self.rung(k + 1));
        let n = x.n_chains();
        assert_eq!(out.len(), 2 * n, "pair_energies: output length");
        if std::ptr::eq(a.model, b.model) {
            a.model.energies_at(x, &[a.beta, b.beta], out, par);
        } else {
            let mut e = vec![0.0; n];
            for (j, rung) in [a, b].into_iter().enumerate() {
                rung.model.energies_at(x, &[rung.beta], &mut e, par);
                for (i, v) in e.iter().enumerate() {
                    out[2 * i + j] = *v;
                }
            }
        }
    }

    /// The whole state: exchanges move whole chains.
    fn part_mut<'a>(&self, _k: usize, x: &'a mut Self::State, _upper: bool) -> &'a mut Self::State {
        x
    }
}

/// Products that an exchange of a [`Ladder`] computed for its energies and that the next
/// exploration of a rung reuses (for an RBM, the hidden inputs \\(W^\top v\\) of the first
/// half-step of a Gibbs sweep; see [`ProductCache::energies_at_keeping`]). The PT loop holds
/// one per rung in its [`super::PtState`]; the buffers are allocated once.
#[derive(Debug)]
pub struct KeptProducts<S> {
    /// The products of the rung's current state under the rung's model.
    pub(crate) own: Option<S>,
    /// The products of the neighbour's state under the rung's model (distinct models only).
    pub(crate) cross: Option<S>,
    /// Whether `own` belongs to the rung's current state.
    pub(crate) valid: bool,
    /// The energies of the exchanges of the pair whose lower rung this is (reused, so an
    /// exchange allocates nothing).
    pub(crate) energies: Vec<f64>,
}

impl<S> KeptProducts<S> {
    /// The products kept for the rung's current state, if any (for an RBM, the hidden inputs
    /// \\(W^\top v\\), in `hidden`). Valid by construction: the PT loop drops them whenever
    /// the rung's chains change otherwise than by an exchange that moves them along
    /// ([`super::PtState::rungs_mut`]).
    pub fn products(&self) -> Option<&S> {
        self.own.as_ref().filter(|_| self.valid)
    }
}

impl<S> Default for KeptProducts<S> {
    fn default() -> Self {
        Self {
            own: None,
            cross: None,
            valid: false,
            energies: Vec::new(),
        }
    }
}

/// The energies of the exchange of pair `k` of a ladder, keeping products in `kept` if given.
/// When both rungs share one model, each state's energies at the two temperatures come from one
/// [`EnergyModel::energies_at`] call; else one call per (state, rung).
fn ladder_log_accept<L: Ladder<Model: ProductCache>>(
    ladder: &L,
    k: usize,
    lo: &<L::Model as EnergyModel>::State,
    hi: &<L::Model as EnergyModel>::State,
    out: &mut [f64],
    kept: Option<[&mut KeptProducts<<L::Model as EnergyModel>::State>; 2]>,
    par: Par,
) {
    let (a, b) = (ladder.rung(k), ladder.rung(k + 1));
    let n = lo.n_chains();
    let shared = std::ptr::eq(a.model, b.model);
    // The energies of `x` under `rung` (at the given temperatures) into `e`, keeping the
    // product in `slot` when given; returns whether it kept it. With `reuse`, `slot` already
    // holds the product of `x` under `rung` (kept by the previous pair of this round), and the
    // energies come from it when the model can use it: the same numbers, one product fewer.
    let energies = |rung: Rung<'_, L::Model>,
                    x: &<L::Model as EnergyModel>::State,
                    betas: &[f64],
                    e: &mut [f64],
                    slot: Option<&mut Option<<L::Model as EnergyModel>::State>>,
                    reuse: bool| match slot {
        Some(Some(buf)) if reuse && rung.model.energies_from_kept(x, betas, e, buf, par) => true,
        Some(slot) => {
            let buf = slot.get_or_insert_with(|| rung.model.new_state(0));
            rung.model.energies_at_keeping(x, betas, e, buf, par)
        }
        None => {
            rung.model.energies_at(x, betas, e, par);
            false
        }
    };
    let (mut kl, mut kh) = match kept {
        Some([kl, kh]) => (Some(kl), Some(kh)),
        None => (None, None),
    };
    // e_x[2 i] = E_a(x_i), e_x[2 i + 1] = E_b(x_i) for x = lo, hi, then n values of scratch;
    // the buffer is the lower rung's when products are kept.
    let mut e = kl
        .as_deref_mut()
        .map(|k| std::mem::take(&mut k.energies))
        .unwrap_or_default();
    e.resize(5 * n, 0.0);
    let (e_lo, rest) = e.split_at_mut(2 * n);
    let (e_hi, tmp) = rest.split_at_mut(2 * n);
    // Rung k's own product is still valid when the previous pair (k - 1, k) of this round
    // kept it (a schedule proposing every pair in turn); the exploration invalidates it.
    let reuse_lo = kl.as_deref().is_some_and(|k| k.valid);
    let mut all_kept = true;
    if shared {
        let betas = [a.beta, b.beta];
        let slot_lo = kl.as_deref_mut().map(|k| &mut k.own);
        all_kept &= energies(a, lo, &betas, e_lo, slot_lo, reuse_lo);
        let slot_hi = kh.as_deref_mut().map(|k| &mut k.own);
        all_kept &= energies(a, hi, &betas, e_hi, slot_hi, false);
        for k in [&mut kl, &mut kh].into_iter().flatten() {
            k.cross = None;
        }
    } else {
        // (state, rung, slot): the rung's own state goes to its `own`, the neighbour's to
        // its `cross`.
        for (x, ex, own) in [(lo, &mut *e_lo, true), (hi, &mut *e_hi, false)] {
            for (j, rung) in [a, b].into_iter().enumerate() {
                let rung_kept = if j == 0 {
                    kl.as_deref_mut()
                } else {
                    kh.as_deref_mut()
                };
                let slot = rung_kept.map(|k| {
                    if (j == 0) == own {
                        &mut k.own
                    } else {
                        &mut k.cross
                    }
                });
                let reuse = reuse_lo && own && j == 0;
                all_kept &= energies(rung, x, &[rung.beta], tmp, slot, reuse);
                for (i, v) in tmp.iter().enumerate() {
                    ex[2 * i + j] = *v;
                }
            }
        }
    }
    pair_log_accept(e_lo, e_hi, &mut out[..n]);
    if let Some(k) = kl.as_deref_mut() {
        k.energies = e;
    }
    for k in [kl, kh].into_iter().flatten() {
        k.valid = all_kept;
    }
}

/// The log acceptance of exchanging chain `i` of rungs `k` and `k + 1` from the energies of their
/// states at both rungs ([`SplitExchange::pair_energies`] of the lower state, `lo`, and of the
/// upper, `hi`): \\(\log\alpha_i = E_k(x_{k,i}) + E_{k+1}(x_{k+1,i}) - E_{k+1}(x_{k,i}) -
/// E_k(x_{k+1,i})\\), into `out[i]`. One formula for the one-process exchange and for two processes
/// that each computed the energies of their own rung.
pub fn pair_log_accept(lo: &[f64], hi: &[f64], out: &mut [f64]) {
    for (i, o) in out.iter_mut().enumerate() {
        *o = lo[2 * i] + hi[2 * i + 1] - lo[2 * i + 1] - hi[2 * i];
    }
}

/// One model at increasing inverse temperatures \\(0 \le \beta_0 < \dots < \beta_K\\); the last,
/// \\(\beta_K = \beta^*\\), is the target. Usually \\(\beta^* = 1\\) (the model itself), but any
/// \\(\beta^* > 0\\) is a target: a model sampled hotter than its own temperature
/// (\\(\beta^* < 1\\)), or a colder target reached from the model's own temperature
/// (\\(\beta^* > 1\\)). Parallel tempering then samples \\(p_{\beta^*}\\) at the last rung, and
/// AIS along the ladder estimates \\(\log Z_{\beta^*}\\).
#[derive(Clone, Debug)]
pub struct TemperatureLadder<M> {
    model: M,
    betas: Vec<f64>,
}

/// Checks an inverse-temperature ladder: non-empty, every value finite and \\(\ge 0\\), strictly
/// increasing, the last (the target) \\(> 0\\).
///
/// # Errors
/// [`Error::InvalidParameter`] naming `betas` and the first offending rung.
pub fn validate_betas(betas: &[f64]) -> ebm_core::Result<()> {
    if betas.is_empty() {
        return Err(bad_betas(
            "a ladder needs at least one inverse temperature".into(),
        ));
    }
    if let Some(k) = betas.iter().position(|b| !(b.is_finite() && *b >= 0.0)) {
        return Err(bad_betas(format!(
            "beta[{k}] = {} is not a finite value >= 0",
            betas[k]
        )));
    }
    if let Some(k) = betas.windows(2).position(|w| w[0] >= w[1]) {
        return Err(bad_betas(format!(
            "betas must increase strictly: beta[{k}] = {} >= beta[{}] = {}",
            betas[k],
            k + 1,
            betas[k + 1]
        )));
    }
    if betas[betas.len() - 1] == 0.0 {
        return Err(bad_betas(
            "the last beta is the target and must be > 0".into(),
        ));
    }
    Ok(())
}

/// [`validate_betas`] for ladders whose target must be the model itself, \\(\beta_K = 1\\):
/// interpolation coefficients ([`ReferenceLadder`]) and the negative phase of training, which
/// must sample the model being trained.
///
/// # Errors
/// As [`validate_betas`], or a last value other than 1.
pub fn validate_betas_to_one(betas: &[f64]) -> ebm_core::Result<()> {
    validate_betas(betas)?;
    match betas[betas.len() - 1] {
        1.0 => Ok(()),
        last => Err(bad_betas(format!(
            "this ladder must end at the model itself, beta = 1, got {last}"
        ))),
    }
}

/// \\(n\\) inverse temperatures from `beta_min` to 1, geometric:
/// \\(\beta_k = \beta_{\min}^{1 - k/(n-1)}\\), the last exactly 1 (the spacing of Kadan, Syed and
/// Wøien, *Lifted parallel tempering for training RBMs*); one rung is the target alone.
///
/// # Errors
/// [`Error::InvalidParameter`] for no rung, or `beta_min` not in \\((0, 1)\\) with
/// \\(n \ge 2\\).
pub fn geometric_betas(beta_min: f64, n: usize) -> ebm_core::Result<Vec<f64>> {
    if n == 0 {
        return Err(bad_betas(
            "a ladder needs at least one inverse temperature".into(),
        ));
    }
    if n >= 2 && !(beta_min > 0.0 && beta_min < 1.0) {
        return Err(Error::InvalidParameter {
            name: "beta_min".into(),
            reason: format!("a geometric ladder needs 0 < beta_min < 1, got {beta_min}"),
        });
    }
    let k = n.saturating_sub(1).max(1) as f64;
    Ok((0..n)
        .map(|i| {
            if i + 1 == n {
                1.0
            } else {
                beta_min.powf(1.0 - i as f64 / k)
            }
        })
        .collect())
}

/// \\(n \ge 2\\) inverse temperatures evenly spaced from 0 to 1, \\(\beta_k = k/(n-1)\\): the
/// coefficients of a bridge from a reference at rung 0 to the model (PT with reference).
///
/// # Errors
/// [`Error::InvalidParameter`] for fewer than 2 rungs.
pub fn even_betas(n: usize) -> ebm_core::Result<Vec<f64>> {
    if n < 2 {
        return Err(bad_betas(format!(
            "an evenly spaced ladder from 0 to 1 needs at least 2 rungs, got {n}"
        )));
    }
    Ok((0..n).map(|i| i as f64 / (n - 1) as f64).collect())
}

/// How a temperature ladder is given: its inverse temperatures, or a number of rungs spaced
/// geometrically from `beta_min` to 1 ([`geometric_betas`]). The default, 10 rungs from 0.1,
/// is the ladder of `ebm sample --sampler pt` and `ebm train --negative pt`.
///
/// ```
/// use ebm_samplers::tempering::TemperatureSpec;
/// let betas = TemperatureSpec::default().betas()?;
/// assert_eq!((betas.len(), betas[0], betas[9]), (10, 0.1, 1.0));
/// assert!(TemperatureSpec::Geometric { rungs: 1, beta_min: 0.1 }.check().is_err());
/// # Ok::<(), ebm_core::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq)]
pub enum TemperatureSpec {
    /// `rungs` inverse temperatures from `beta_min` to 1, geometric.
    Geometric {
        /// Number of rungs, 2 to [`TemperatureSpec::MAX_RUNGS`].
        rungs: usize,
        /// The smallest inverse temperature, in \\((0, 1)\\).
        beta_min: f64,
    },
    /// The inverse temperatures themselves, 2 to [`TemperatureSpec::MAX_RUNGS`] of them
    /// (their values are checked by the ladder that takes them).
    Betas(Vec<f64>),
}

impl Default for TemperatureSpec {
    fn default() -> Self {
        TemperatureSpec::Geometric {
            rungs: Self::DEFAULT_RUNGS,
            beta_min: Self::DEFAULT_BETA_MIN,
        }
    }
}

impl TemperatureSpec {
    /// The default number of rungs.
    pub const DEFAULT_RUNGS: usize = 10;
    /// The default smallest inverse temperature.
    pub const DEFAULT_BETA_MIN: f64 = 0.1;
    /// The largest number of rungs accepted: far beyond any useful ladder, it bounds the
    /// memory of a ladder given by size.
    pub const MAX_RUNGS: usize = 10_000;

    /// Checks the sizes: 2 to [`TemperatureSpec::MAX_RUNGS`] rungs, and `beta_min` in
    /// \\((0, 1)\\).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] named `rungs`, `betas` or `beta_min`.
    pub fn check(&self) -> ebm_core::Result<()> {
        let max = Self::MAX_RUNGS;
        match self {
            TemperatureSpec::Geometric { rungs, beta_min } => {
                if !(2..=max).contains(rungs) {
                    return Err(Error::InvalidParameter {
                        name: "rungs".into(),
                        reason: format!("parallel tempering needs 2 to {max} rungs"),
                    });
                }
                if !(*beta_min > 0.0 && *beta_min < 1.0) {
                    return Err(Error::InvalidParameter {
                        name: "beta_min".into(),
                        reason: "the smallest inverse temperature must be in (0, 1)".into(),
                    });
                }
                Ok(())
            }
            TemperatureSpec::Betas(b) if !(2..=max).contains(&b.len()) => Err(bad_betas(format!(
                "parallel tempering needs 2 to {max} inverse temperatures, got {}",
                b.len()
            ))),
            TemperatureSpec::Betas(_) => Ok(()),
        }
    }

    /// The inverse temperatures, after [`TemperatureSpec::check`].
    ///
    /// # Errors
    /// As [`TemperatureSpec::check`].
    pub fn betas(&self) -> ebm_core::Result<Vec<f64>> {
        self.check()?;
        match self {
            TemperatureSpec::Geometric { rungs, beta_min } => geometric_betas(*beta_min, *rungs),
            TemperatureSpec::Betas(b) => Ok(b.clone()),
        }
    }
}

/// The indices of the checkpoints of a trajectory of `n` kept as the rungs of trajectory
/// tempering: all of them, or `rungs` evenly spaced ones (index
/// \\(\operatorname{round}(i (n-1)/(k-1))\\)), always the first and the last.
///
/// ```
/// use ebm_samplers::tempering::kept_checkpoints;
/// assert_eq!(kept_checkpoints(11, Some(3))?, vec![0, 5, 10]);
/// assert_eq!(kept_checkpoints(4, None)?, vec![0, 1, 2, 3]);
/// # Ok::<(), ebm_core::Error>(())
/// ```
///
/// # Errors
/// [`Error::InvalidParameter`] named `checkpoints` for fewer than 2 checkpoints, named `rungs`
/// for more rungs than checkpoints or fewer than 2.
pub fn kept_checkpoints(n: usize, rungs: Option<usize>) -> ebm_core::Result<Vec<usize>> {
    if n < 2 {
        return Err(Error::InvalidParameter {
            name: "checkpoints".into(),
            reason: format!("trajectory tempering needs at least 2 checkpoints, the file has {n}"),
        });
    }
    let Some(k) = rungs else {
        return Ok((0..n).collect());
    };
    if k > n || k < 2 {
        return Err(Error::InvalidParameter {
            name: "rungs".into(),
            reason: format!("{k} rungs of {n} checkpoints: keep 2 to {n}"),
        });
    }
    // i (n - 1) / (k - 1), rounded; strictly increasing because k <= n.
    Ok((0..k)
        .map(|i| (2 * i * (n - 1) + (k - 1)) / (2 * (k - 1)))
        .collect())
}

fn bad_betas(reason: String) -> Error {
    Error::InvalidParameter {
        name: "betas".into(),
        reason,
    }
}

impl<M: EnergyModel> TemperatureLadder<M> {
    /// A ladder of `model` at `betas`, the last the target.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless `betas` is non-empty, finite, \\(\ge 0\\), strictly
    /// increasing and ends above 0 ([`validate_betas`]).
    pub fn new(model: M, betas: Vec<f64>) -> ebm_core::Result<Self> {
        validate_betas(&betas)?;
        Ok(Self { model, betas })
    }

    /// \\(K + 1\\) inverse temperatures spaced geometrically from `beta_min` (> 0) to the model
    /// itself at 1, \\(\beta_k = \beta_{\min}^{1 - k/K}\\) (the spacing of Kadan, Syed and Wøien,
    /// *Lifted parallel tempering for training RBMs*).
    ///
    /// # Errors
    /// As [`TemperatureLadder::new`], or `beta_min` not in \\((0, 1)\\) with `n_rungs >= 2`.
    pub fn geometric(model: M, beta_min: f64, n_rungs: usize) -> ebm_core::Result<Self> {
        Self::new(model, geometric_betas(beta_min, n_rungs)?)
    }

    /// Temperatures chosen greedily from a dense `grid` of inverse temperatures (increasing, ending
    /// at the target) so that the swap acceptance between neighbouring rungs stays at or above
    /// `target_acceptance`: the chains of `state` are annealed up the grid with `sweeps` steps of
    /// `kernel` per grid point, and [`select_rungs`](super::select_rungs) keeps the rungs (Béreux
    /// et al., *Fast training and sampling of RBMs*, where the reference code scans 1000 points
    /// with 10 Gibbs sweeps and targets 0.3). Start `state` in equilibrium at `grid[0]` (for RBMs
    /// at \\(\beta = 0\\): uniform random states, or any state after one Gibbs sweep).
    ///
    /// # Errors
    /// As [`TemperatureLadder::new`] for the grid, and as [`select_rungs`](super::select_rungs).
    pub fn with_target_acceptance<K: Kernel<M>>(
        model: M,
        grid: Vec<f64>,
        kernel: &K,
        state: &mut ChainState<M::State>,
        sweeps: usize,
        target_acceptance: f64,
        par: Par,
    ) -> ebm_core::Result<Self>
    where
        M::State: Clone,
    {
        let fine = Self::new(model, grid)?;
        let kept = super::select_rungs(&fine, kernel, state, sweeps, target_acceptance, par)?;
        let betas = kept.iter().map(|&k| fine.betas[k]).collect();
        Self::new(fine.model, betas)
    }

    /// The same model on the `n_rungs` inverse temperatures that equalise the rejection rates
    /// measured on this ladder ([`equalised_schedule`](super::equalised_schedule), e.g. with
    /// [`PtDiagnostics::acceptance_rates`](super::PtDiagnostics::acceptance_rates)).
    ///
    /// # Errors
    /// As [`equalised_schedule`](super::equalised_schedule).
    pub fn with_equalised_rejections(
        self,
        acceptance_rates: &[f64],
        n_rungs: usize,
    ) -> ebm_core::Result<Self> {
        let betas = super::equalised_schedule(&self.betas, acceptance_rates, n_rungs)?;
        Self::new(self.model, betas)
    }

    /// The inverse temperatures.
    pub fn betas(&self) -> &[f64] {
        &self.betas
    }

    /// Gives back the model.
    pub fn into_model(self) -> M {
        self.model
    }

    /// The model.
    pub fn model(&self) -> &M {
        &self.model
    }
}

impl<M: EnergyModel> Ladder for TemperatureLadder<M> {
    type Model = M;

    fn n_rungs(&self) -> usize {
        self.betas.len()
    }

    fn rung(&self, k: usize) -> Rung<'_, M> {
        Rung {
            model: &self.model,
            beta: self.betas[k],
        }
    }
}

/// A sequence of models of the same shape, all at \\(\beta = 1\\): for instance the checkpoints of
/// a training run, rung 0 the earliest (easiest) and the last the trained model. Parallel
/// trajectory tempering (PTT) is parallel tempering on this ladder.
#[derive(Clone, Debug)]
pub struct TrajectoryLadder<M> {
    models: Vec<M>,
}

impl<V, H> TrajectoryLadder<ebm_models::Rbm<V, H>>
where
    V: ebm_models::Layer,
    H: ebm_models::Layer<Scalar = V::Scalar>,
{
    /// A ladder through `models` in order.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for no models; [`Error::ShapeMismatch`] if a model's layers
    /// differ in size from the first one's.
    pub fn new(models: Vec<ebm_models::Rbm<V, H>>) -> ebm_core::Result<Self> {
        let first = models.first().ok_or_else(|| Error::InvalidParameter {
            name: "models".into(),
            reason: "a trajectory ladder needs at least one model".into(),
        })?;
        let shape = first.weights().shape();
        for (k, m) in models.iter().enumerate() {
            if m.weights().shape() != shape {
                return Err(Error::ShapeMismatch {
                    what: format!("trajectory model {k}"),
                    expected: format!("{}x{}", shape.0, shape.1),
                    got: format!("{}x{}", m.weights().nrows(), m.weights().ncols()),
                });
            }
        }
        Ok(Self { models })
    }
}

impl<M> TrajectoryLadder<M> {
    /// The models, in ladder order.
    pub fn models(&self) -> &[M] {
        &self.models
    }

    /// The same ladder with every model passed through `f`: e.g.
    /// [`ebm_models::StackedRbm::Bottom`], to join the checkpoints of a stack's bottom RBM to
    /// the stack ([`super::MixedLadder`]).
    pub fn map<N>(self, f: impl FnMut(M) -> N) -> TrajectoryLadder<N> {
        TrajectoryLadder {
            models: self.models.into_iter().map(f).collect(),
        }
    }
}

impl<M: EnergyModel> Ladder for TrajectoryLadder<M> {
    type Model = M;

    fn n_rungs(&self) -> usize {
        self.models.len()
    }

    fn rung(&self, k: usize) -> Rung<'_, M> {
        Rung {
            model: &self.models[k],
            beta: 1.0,
        }
    }
}

/// The rungs of `A` followed by those of `B` (e.g. a temperature ladder of the first checkpoint
/// below a trajectory ladder).
#[derive(Clone, Debug)]
pub struct Concat<A, B>(pub A, pub B);

impl<A: Ladder, B: Ladder<Model = A::Model>> Ladder for Concat<A, B> {
    type Model = A::Model;

    fn n_rungs(&self) -> usize {
        self.0.n_rungs() + self.1.n_rungs()
    }

    fn rung(&self, k: usize) -> Rung<'_, A::Model> {
        let n = self.0.n_rungs();
        if k < n {
            self.0.rung(k)
        } else {
            self.1.rung(k - n)
        }
    }
}

/// The bridge from a tractable independent-site reference to the model: \\(p_\beta \propto
/// p_{\text{ref}}^{1-\beta} e^{-\beta E}\\), realised as the RBM with interpolated parameters
/// \\(\Theta_\beta = \beta\Theta + (1 - \beta)\Theta_{\text{ref}}\\)
/// ([`ebm_models::Rbm::interpolate`]) at temperature 1, for \\(0 \le \beta_0 < \dots < \beta_K =
/// 1\\) (Béreux et al., *Fast training and sampling of RBMs*): the coefficients must end at 1,
/// where the interpolated model is the model. The reference is an RBM with zero weights
/// (independent sites), e.g. visible fields from the data frequencies
/// ([`ebm_models::Bernoulli::from_means`]) and neutral hidden units; rung 0 at \\(\beta_0 = 0\\) is
/// the reference itself. The interpolated models are built once.
#[derive(Clone, Debug)]
pub struct ReferenceLadder<M> {
    models: Vec<M>,
    betas: Vec<f64>,
}

impl<V, H> ReferenceLadder<ebm_models::Rbm<V, H>>
where
    V: ebm_models::Layer,
    H: ebm_models::Layer<Scalar = V::Scalar>,
{
    /// The ladder from `reference` to `model` at `betas`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for betas that are not a valid ladder ending at 1
    /// ([`validate_betas_to_one`]) or a reference with non-zero weights;
    /// [`Error::ShapeMismatch`] if the two models differ in shape.
    pub fn new(
        model: &ebm_models::Rbm<V, H>,
        reference: &ebm_models::Rbm<V, H>,
        betas: Vec<f64>,
    ) -> ebm_core::Result<Self> {
        use ebm_core::Scalar;
        validate_betas_to_one(&betas)?;
        if let Some(k) = reference.weights().iter().position(|w| w.as_f64() != 0.0) {
            return Err(Error::InvalidParameter {
                name: "reference".into(),
                reason: format!(
                    "the reference must have zero weights (independent sites); weight {k} is not zero"
                ),
            });
        }
        let models = betas
            .iter()
            .map(|&b| model.interpolate(reference, b))
            .collect::<ebm_core::Result<Vec<_>>>()?;
        Ok(Self { models, betas })
    }
}

impl<M> ReferenceLadder<M> {
    /// The interpolation coefficients \\(\beta_k\\).
    pub fn betas(&self) -> &[f64] {
        &self.betas
    }

    /// The interpolated models, rung by rung.
    pub fn models(&self) -> &[M] {
        &self.models
    }
}

impl<M: EnergyModel> Ladder for ReferenceLadder<M> {
    type Model = M;

    fn n_rungs(&self) -> usize {
        self.models.len()
    }

    fn rung(&self, k: usize) -> Rung<'_, M> {
        Rung {
            model: &self.models[k],
            beta: 1.0,
        }
    }
}
