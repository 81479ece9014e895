//! Stacked tempering (paper 002, *Accelerated sampling with stacked restricted Boltzmann
//! machines*, Fernandez-de-Cossio-Diaz, Roussel, Cocco, Monasson, ICLR 2024): the rungs of the
//! PT engine are the RBMs of a [`Stack`], and the exchange swaps the hidden configuration of
//! RBM \\(n\\) with the visible configuration of RBM \\(n + 1\\).

use super::ladder::{Exchange, Rung, SplitExchange};
use super::pt::{ParallelTempering, PtInfo, PtState, SwapSchedule};
use crate::Gibbs;
use ebm_core::{ConditionalSampler, Error, Kernel, Par, RngStreams, Scalar};
use ebm_models::{Layer, RbmChains, Stack, StackedRbm};
use nalgebra::DMatrix;
use rand::Rng;
use std::sync::Mutex;

/// A [`Stack`] seen as a ladder of the PT engine, rung 0 the easy end: rung \\(k\\) holds the
/// \\((v, h)\\) chains of RBM \\(L - k\\) (1-based), so the last rung is the bottom RBM, the
/// target, and rung 0 the top of the stack. The rungs differ in layer sizes; every rung is
/// explored at \\(\beta = 1\\) by the PT kernel (one AGS step with [`Gibbs`]).
///
/// The exchange of pair \\((k, k + 1)\\), i.e. of RBM \\(n + 1\\) (`lo`) and RBM \\(n\\) (`hi`),
/// proposes to swap \\(h_n\\) with \\(v_{n+1}\\) and accepts with probability
/// \\(\min(1, e^{-\Delta F})\\) (paper 002, Eq. 4, written in the log domain with the marginal
/// free energies of §2):
///
/// \\[ \Delta F = \big[F^h_n(v_{n+1}) - F^h_n(h_n)\big]
///              + \big[F^v_{n+1}(h_n) - F^v_{n+1}(v_{n+1})\big], \\]
///
/// where the partition functions cancel. That Metropolis move is valid only on the collapsed
/// pair \\((h_n, v_{n+1})\\) with target \\(P^h_n \otimes P^v_{n+1}\\); so, accepted or not,
/// it is always followed by the exact refresh \\(v_n \sim P_n(v \mid h_n)\\) and
/// \\(h_{n+1} \sim P_{n+1}(h \mid v_{n+1})\\), which makes the move leave the product
/// \\(\prod_n P_n(v_n, h_n)\\) invariant (checked by exact enumeration in the tests; without
/// the refresh it is not). Under a schedule that does not propose a pair to every system
/// (stochastic even/odd, random pair), the refresh is still applied to every chain of the
/// pair: it is an exact Gibbs half-step, hence harmless.
#[derive(Debug)]
pub struct StackLadder<V: Layer, H: Layer<Scalar = V::Scalar>> {
    stack: Stack<V, H>,
    /// The upper RBMs transposed (`transposed[n - 1]` is RBM \\(n + 1\\)), whose hidden free
    /// energy is the visible free energy of the RBM: \\(F^v_{n+1}\\) is evaluated by the same
    /// code path as \\(F^h_n\\), so a mirrored pair gives \\(\Delta F = 0\\) bit for bit.
    transposed: Vec<ebm_models::Rbm<H, H>>,
    /// Per pair, the products of the last [`Exchange::log_accept`], reused by the refresh of
    /// [`Exchange::exchange`] and kept between rounds (no allocation per round).
    scratch: Vec<Mutex<PairProducts<V::Scalar>>>,
    /// Per rung, the visible inputs \\(W h\\) of the last Gibbs half-step \\(v \mid h\\) of
    /// [`StackedTempering`]'s exploration, with the \\(h\\) they belong to: the input of
    /// \\(F^h_n(h_n)\\) in the next exchange, which then costs no product.
    kept: Vec<Mutex<KeptInputs<V::Scalar>>>,
}

/// The visible inputs of one rung's chains, as computed by the last Gibbs half-step.
#[derive(Debug)]
struct KeptInputs<F: ebm_core::Scalar> {
    /// The hidden configurations the inputs were computed from.
    hidden: DMatrix<F>,
    /// \\(W h\\), one column per chain.
    inputs: DMatrix<F>,
    /// Whether `inputs` belong to `hidden` (false once handed to an exchange).
    valid: bool,
}

impl<F: ebm_core::Scalar> KeptInputs<F> {
    fn empty() -> Self {
        let e = || DMatrix::from_element(0, 0, F::from_f64(0.0));
        Self {
            hidden: e(),
            inputs: e(),
            valid: false,
        }
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Clone for StackLadder<V, H> {
    fn clone(&self) -> Self {
        Self::new(self.stack.clone())
    }
}

/// The four matrix products of the exchange of pair \\((h_n, v_{n+1})\\), and copies of the
/// configurations they were computed from. The refresh needs the input of \\(v_n\\) given the
/// new \\(h_n\\) and that of \\(h_{n+1}\\) given the new \\(v_{n+1}\\): after the swap decision
/// these are columns of the products already computed for \\(\Delta F\\), so an exchange costs
/// two products per RBM of the pair instead of three.
#[derive(Debug)]
struct PairProducts<F: ebm_core::Scalar> {
    /// \\(h_n\\) and \\(v_{n+1}\\) as they were when the products were computed.
    h_n: DMatrix<F>,
    v_up: DMatrix<F>,
    /// \\(W_n v_{n+1}\\) and \\(W_n h_n\\): visible inputs of RBM \\(n\\).
    lower_v: DMatrix<F>,
    lower_h: DMatrix<F>,
    /// \\(W_{n+1}^\top h_n\\) and \\(W_{n+1}^\top v_{n+1}\\): hidden inputs of RBM \\(n + 1\\).
    upper_h: DMatrix<F>,
    upper_v: DMatrix<F>,
    /// The four free energies of \\(\Delta F\\), one per chain each.
    free_energies: Vec<f64>,
    /// Whether the products belong to `h_n` and `v_up`.
    valid: bool,
}

impl<F: ebm_core::Scalar> PairProducts<F> {
    fn empty() -> Self {
        let e = || DMatrix::from_element(0, 0, F::from_f64(0.0));
        Self {
            h_n: e(),
            v_up: e(),
            lower_v: e(),
            lower_h: e(),
            upper_h: e(),
            upper_v: e(),
            free_energies: Vec::new(),
            valid: false,
        }
    }
}

/// Gives `m` the shape `rows x cols` (allocating only when the shape changes).
fn fit<F: ebm_core::Scalar>(m: &mut DMatrix<F>, rows: usize, cols: usize) {
    if m.shape() != (rows, cols) {
        *m = DMatrix::from_element(rows, cols, F::from_f64(0.0));
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> StackLadder<V, H> {
    /// The ladder of `stack`.
    pub fn new(stack: Stack<V, H>) -> Self {
        let transposed = stack.upper().map(|r| r.transposed()).collect();
        let scratch = (1..stack.len())
            .map(|_| Mutex::new(PairProducts::empty()))
            .collect();
        let kept = (0..stack.len())
            .map(|_| Mutex::new(KeptInputs::empty()))
            .collect();
        Self {
            stack,
            transposed,
            scratch,
            kept,
        }
    }

    /// The stack.
    pub fn stack(&self) -> &Stack<V, H> {
        &self.stack
    }

    /// Gives back the stack.
    pub fn into_stack(self) -> Stack<V, H> {
        self.stack
    }

    /// The RBM at rung `k`.
    fn at(&self, k: usize) -> &StackedRbm<V, H> {
        self.stack.rbm(self.stack.len() - 1 - k)
    }

    /// The scratch products of pair `k`.
    fn products(&self, k: usize) -> std::sync::MutexGuard<'_, PairProducts<V::Scalar>> {
        lock(&self.scratch[k])
    }

    /// The rung whose model is `model` (by address: the models the PT loop explores are this
    /// ladder's own).
    fn rung_of(&self, model: &StackedRbm<V, H>) -> Option<usize> {
        (0..self.stack.len()).find(|&k| std::ptr::eq(self.at(k), model))
    }

    /// Computes the four products and free energies of pair `k` for the states `lo`, `hi`
    /// into `p`: one batched product per (RBM, configuration), then one pass of the layers'
    /// cumulant generating functions over the batch.
    fn compute(
        &self,
        k: usize,
        lo: &RbmChains<V::Scalar>,
        hi: &RbmChains<V::Scalar>,
        p: &mut PairProducts<V::Scalar>,
        par: Par,
    ) {
        let lower = self.at(k + 1);
        // RBM n + 1 (0-based index L - 1 - k) is upper RBM L - 2 - k.
        let upper = &self.transposed[self.stack.len() - 2 - k];
        let n = lo.visible.ncols();
        let (wn, wu) = (hi.visible.nrows(), lo.hidden.nrows());
        fit(&mut p.h_n, hi.hidden.nrows(), n);
        fit(&mut p.v_up, lo.visible.nrows(), n);
        p.h_n.copy_from(&hi.hidden);
        p.v_up.copy_from(&lo.visible);
        for m in [&mut p.lower_v, &mut p.lower_h] {
            fit(m, wn, n);
        }
        for m in [&mut p.upper_h, &mut p.upper_v] {
            fit(m, wu, n);
        }
        p.free_energies.resize(4 * n, 0.0);
        lower.visible_inputs(&lo.visible, &mut p.lower_v, par);
        // W_n h_n: kept by the last Gibbs half-step of rung k + 1 if h_n has not moved since.
        let mut kept = lock(&self.kept[k + 1]);
        if kept.valid && kept.hidden == hi.hidden {
            std::mem::swap(&mut kept.inputs, &mut p.lower_h);
            kept.valid = false;
        } else {
            lower.visible_inputs(&hi.hidden, &mut p.lower_h, par);
        }
        drop(kept);
        upper.visible_inputs(&hi.hidden, &mut p.upper_h, par);
        upper.visible_inputs(&lo.visible, &mut p.upper_v, par);
        let (fh_v, rest) = p.free_energies.split_at_mut(n);
        let (fh_h, rest) = rest.split_at_mut(n);
        let (fv_h, fv_v) = rest.split_at_mut(n);
        lower.free_energy_hidden_from_inputs(&lo.visible, &p.lower_v, fh_v, par);
        lower.free_energy_hidden_from_inputs(&hi.hidden, &p.lower_h, fh_h, par);
        upper.free_energy_hidden_from_inputs(&hi.hidden, &p.upper_h, 1.0, fv_h, par);
        upper.free_energy_hidden_from_inputs(&lo.visible, &p.upper_v, 1.0, fv_v, par);
        p.valid = true;
    }

    /// The free-energy difference \\(\Delta F\\) of swapping `h_n` (the hidden layer of `hi`,
    /// RBM \\(n\\) at rung `k + 1`) with `v_{n+1}` (the visible layer of `lo`, RBM \\(n + 1\\)
    /// at rung `k`), for every chain, into `out`.
    ///
    /// # Panics
    /// If `k + 1 >= len()` or the batches do not match the RBMs.
    pub fn delta_free_energy(
        &self,
        k: usize,
        lo: &RbmChains<V::Scalar>,
        hi: &RbmChains<V::Scalar>,
        out: &mut [f64],
        par: Par,
    ) {
        let mut p = self.products(k);
        self.compute(k, lo, hi, &mut p, par);
        let n = out.len();
        let f = &p.free_energies;
        for i in 0..n {
            out[i] = (f[i] - f[n + i]) + (f[2 * n + i] - f[3 * n + i]);
        }
    }
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Exchange for StackLadder<V, H> {
    type State = RbmChains<V::Scalar>;
    type RungModel = StackedRbm<V, H>;

    fn n_exchange_rungs(&self) -> usize {
        self.stack.len()
    }

    fn refreshes(&self) -> bool {
        true
    }

    fn explored(&self, k: usize) -> Rung<'_, StackedRbm<V, H>> {
        Rung {
            model: self.at(k),
            beta: 1.0,
        }
    }

    /// \\(\log\alpha = -\Delta F\\) ([`StackLadder::delta_free_energy`]).
    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        self.delta_free_energy(k, lo, hi, out, par);
        for x in out.iter_mut() {
            *x = -*x;
        }
    }

    /// Swaps \\(h_n\\) (`hi.hidden`) and \\(v_{n+1}\\) (`lo.visible`) of the accepted chains,
    /// then refreshes \\(v_n \mid h_n\\) and \\(h_{n+1} \mid v_{n+1}\\) for every chain. The
    /// inputs of the refresh are the products of the preceding [`Exchange::log_accept`] on the
    /// same states (checked by comparing the configurations; recomputed otherwise), so the
    /// refresh costs no matrix product.
    fn exchange<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        par: Par,
    ) {
        let mut p = self.products(k);
        if !(p.valid && p.h_n == hi.hidden && p.v_up == lo.visible) {
            self.compute(k, lo, hi, &mut p, par);
        }
        p.valid = false;
        for (i, &a) in accept.iter().enumerate() {
            let (v_in, h_in) = if a {
                ebm_core::swap_columns(&mut hi.hidden, &mut lo.visible, i);
                (&p.lower_v, &p.upper_h)
            } else {
                (&p.lower_h, &p.upper_v)
            };
            hi.visible.column_mut(i).copy_from(&v_in.column(i));
            lo.hidden.column_mut(i).copy_from(&h_in.column(i));
        }
        self.at(k + 1)
            .sample_visible_from_inputs(&mut hi.visible, rngs, par);
        self.at(k)
            .sample_hidden_from_inputs(&mut lo.hidden, rngs, par);
    }
}

/// \\(\Delta F\\) splits by state: each of its four free energies is a function of one
/// layer that the exchange moves, \\(h_n\\) of the upper rung or \\(v_{n+1}\\) of the lower
/// ([`SplitExchange::pair_energies`]).
impl<V: Layer, H: Layer<Scalar = V::Scalar>> SplitExchange for StackLadder<V, H> {
    type Part = DMatrix<V::Scalar>;

    /// The free energies of the layer that the exchange moves (\\(h_n\\) if `upper`, else
    /// \\(v_{n+1}\\)) under both RBMs of the pair: \\(E_k = F^v_{n+1}\\) into `out[2 i]` and
    /// \\(E_{k+1} = F^h_n\\) into `out[2 i + 1]`, with the products and the code path of
    /// [`Exchange::log_accept`] (so the same numbers).
    fn pair_energies(&self, k: usize, x: &Self::State, upper: bool, out: &mut [f64], par: Par) {
        let layer = if upper { &x.hidden } else { &x.visible };
        let n = layer.ncols();
        assert_eq!(out.len(), 2 * n, "pair_energies: output length");
        let (lower, up) = (self.at(k + 1), &self.transposed[self.stack.len() - 2 - k]);
        let mut e = vec![0.0; 2 * n];
        let (fv, fh) = e.split_at_mut(n);
        let zeros = |rows| DMatrix::from_element(rows, n, V::Scalar::from_f64(0.0));
        let mut inputs = zeros(self.at(k).hidden().width());
        up.visible_inputs(layer, &mut inputs, par);
        up.free_energy_hidden_from_inputs(layer, &inputs, 1.0, fv, par);
        let mut inputs = zeros(lower.visible_width());
        lower.visible_inputs(layer, &mut inputs, par);
        lower.free_energy_hidden_from_inputs(layer, &inputs, fh, par);
        for i in 0..n {
            out[2 * i] = fv[i];
            out[2 * i + 1] = fh[i];
        }
    }

    /// \\(-\Delta F\\) summed as [`StackLadder::delta_free_energy`] sums it (a mirrored pair
    /// gives exactly 0).
    fn log_accept_from_energies(&self, _k: usize, lo: &[f64], hi: &[f64], out: &mut [f64]) {
        for (i, o) in out.iter_mut().enumerate() {
            *o = -((lo[2 * i + 1] - hi[2 * i + 1]) + (hi[2 * i] - lo[2 * i]));
        }
    }

    /// \\(h_n\\) (the hidden layer) of the upper rung, \\(v_{n+1}\\) (the visible layer) of the
    /// lower.
    fn part_mut<'a>(&self, _k: usize, x: &'a mut Self::State, upper: bool) -> &'a mut Self::Part {
        if upper { &mut x.hidden } else { &mut x.visible }
    }

    /// \\(v_n \sim P_n(v \mid h_n)\\) on the upper rung, \\(h_{n+1} \sim P_{n+1}(h \mid
    /// v_{n+1})\\) on the lower, from the products \\(W_n h_n\\) and \\(W_{n+1}^\top v_{n+1}\\)
    /// computed as [`Exchange::exchange`] computes them.
    fn refresh<R: Rng + Send>(
        &self,
        k: usize,
        x: &mut Self::State,
        upper: bool,
        rngs: &mut [R],
        par: Par,
    ) {
        if upper {
            let rbm = self.at(k + 1);
            rbm.visible_inputs(&x.hidden, &mut x.visible, par);
            rbm.sample_visible_from_inputs(&mut x.visible, rngs, par);
        } else {
            self.transposed[self.stack.len() - 2 - k].visible_inputs(
                &x.visible,
                &mut x.hidden,
                par,
            );
            self.at(k)
                .sample_hidden_from_inputs(&mut x.hidden, rngs, par);
        }
    }
}

/// Locks `m`, ignoring poisoning (the data are overwritten or checked before use).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// [`Gibbs`] on the rungs of a [`StackLadder`] that keeps the product of its last half-step:
/// the visible inputs \\(W_n h_n\\) from which \\(v_n\\) is drawn are also the inputs of the
/// hidden free energy \\(F^h_n(h_n)\\) that the next exchange of RBM \\(n\\) with RBM
/// \\(n + 1\\) needs, so they are kept with a copy of \\(h_n\\) (the exchange uses them only
/// if \\(h_n\\) is unchanged). The draws are bit for bit those of [`Gibbs`]: the same product
/// per chunk of chains, then the same sampling pass on the same streams.
#[derive(Debug)]
struct KeepingGibbs<'a, V: Layer, H: Layer<Scalar = V::Scalar>> {
    ladder: &'a StackLadder<V, H>,
    gibbs: Gibbs,
}

impl<V: Layer, H: Layer<Scalar = V::Scalar>> Kernel<StackedRbm<V, H>> for KeepingGibbs<'_, V, H> {
    type Info = crate::GibbsInfo;

    fn step<R: Rng + Send>(
        &self,
        model: &StackedRbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> crate::GibbsInfo {
        let k = match self.ladder.rung_of(model) {
            Some(k) if beta == 1.0 && self.gibbs.sweeps > 0 => k,
            _ => return self.gibbs.step(model, beta, x, rngs, par),
        };
        let mut kept = lock(&self.ladder.kept[k]);
        kept.valid = false;
        Gibbs::new(self.gibbs.sweeps - 1).step(model, beta, x, rngs, par);
        model.sample_hidden(x, beta, rngs, par);
        fit(&mut kept.inputs, x.visible.nrows(), x.visible.ncols());
        fit(&mut kept.hidden, x.hidden.nrows(), x.hidden.ncols());
        model.sample_visible_keeping_inputs(x, rngs, &mut kept.inputs, par);
        kept.hidden.copy_from(&x.hidden);
        kept.valid = true;
        crate::GibbsInfo {
            sweeps: self.gibbs.sweeps,
        }
    }
}

/// The stacked-tempering driver (paper 002, §3.2 and §3.5; the schedule of the reference
/// code): each iteration does one AGS step on every RBM, then proposes the exchanges of
/// alternating disjoint pairs (deterministic even/odd, one attempt per adjacent pair every two
/// iterations), each with its refresh. It is [`ParallelTempering`] with [`Gibbs`] on a
/// [`StackLadder`]: the same loop, schedules (SEO, DEO, lifted) and diagnostics as
/// temperature and trajectory ladders. [`StackedTempering::step`] runs the Gibbs steps through a
/// kernel that keeps the product \\(W_n h_n\\) of each RBM's last half-step for the next
/// exchange (same draws, one product fewer per exchange).
///
/// Cost accounting (§3.6): one iteration costs \\(L\\) AGS steps, one per RBM, the unit in
/// which mixing is compared with AGS and with PT over \\(R\\) replicas (\\(R\\) AGS steps per
/// round).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StackedTempering {
    /// The PT loop run on the stack.
    pub pt: ParallelTempering<Gibbs>,
}

impl Default for StackedTempering {
    fn default() -> Self {
        Self::new(SwapSchedule::DeterministicEvenOdd)
    }
}

/// What one stacked-tempering iteration did.
#[derive(Clone, Debug, PartialEq)]
pub struct StInfo {
    /// The exchanges per pair (pair `k` is rung `k` with rung `k + 1`, i.e. RBM \\(L - k\\)
    /// with RBM \\(L - k - 1\\)), as for any PT round.
    pub exchanges: PtInfo,
    /// AGS steps spent in this iteration, summed over the RBMs (\\(L\\) per iteration).
    pub ags_steps: u64,
}

impl StackedTempering {
    /// Stacked tempering with one AGS step per RBM and the given exchange schedule (the
    /// reference is [`SwapSchedule::DeterministicEvenOdd`]).
    pub fn new(schedule: SwapSchedule) -> Self {
        Self {
            pt: ParallelTempering::new(Gibbs::new(1), schedule),
        }
    }

    /// The initial state of `n` chains from bottom visible configurations (one column per
    /// chain), by the bottom-to-top pass ([`Stack::bottom_to_top`]), with RNG streams derived
    /// from `seed` (rung `k` chain `i` uses stream `k n + i`, as [`PtState`]).
    ///
    /// # Errors
    /// As [`Stack::bottom_to_top`].
    pub fn init<V: Layer, H: Layer<Scalar = V::Scalar>>(
        &self,
        ladder: &StackLadder<V, H>,
        bottom_visible: &nalgebra::DMatrix<V::Scalar>,
        seed: u64,
        par: Par,
    ) -> ebm_core::Result<PtState<RbmChains<V::Scalar>>> {
        let n = bottom_visible.ncols();
        if n == 0 {
            return Err(Error::InvalidParameter {
                name: "bottom_visible".into(),
                reason: "stacked tempering needs at least one chain".into(),
            });
        }
        // The pass uses the target rung's streams (the last rung holds the bottom RBM).
        let mut streams = RngStreams::new(seed, ladder.stack.len() * n);
        let last = (ladder.stack.len() - 1) * n;
        let mut chains =
            ladder
                .stack
                .bottom_to_top(bottom_visible, &mut streams.as_mut_slice()[last..], par)?;
        chains.reverse();
        let mut state = PtState::new(chains, seed)?;
        state.rngs = streams;
        Ok(state)
    }

    /// One iteration: one AGS step on every RBM, then the exchanges of the schedule.
    ///
    /// # Panics
    /// If `state` does not have one batch per RBM of the stack.
    pub fn step<V: Layer, H: Layer<Scalar = V::Scalar>>(
        &self,
        ladder: &StackLadder<V, H>,
        state: &mut PtState<RbmChains<V::Scalar>>,
        par: Par,
    ) -> StInfo {
        let exchanges = self.engine(ladder).step(ladder, state, par);
        StInfo {
            exchanges,
            ags_steps: (self.pt.kernel.sweeps * ladder.stack.len()) as u64,
        }
    }

    /// The PT loop that [`StackedTempering::step`] runs on `ladder`: [`StackedTempering::pt`]
    /// with its Gibbs steps through a kernel that keeps each RBM's last product \\(W_n h_n\\)
    /// for the next exchange (the same draws as [`Gibbs`]). Run it with
    /// [`ParallelTempering::step_linked`] on a block of rungs ([`PtState::for_rungs`]) for
    /// stacked tempering sharded by rung.
    pub fn engine<'a, V: Layer, H: Layer<Scalar = V::Scalar>>(
        &self,
        ladder: &'a StackLadder<V, H>,
    ) -> ParallelTempering<impl Kernel<StackedRbm<V, H>> + use<'a, V, H>> {
        ParallelTempering {
            kernel: KeepingGibbs {
                ladder,
                gibbs: self.pt.kernel,
            },
            schedule: self.pt.schedule,
            rung0_kernel: self
                .pt
                .rung0_kernel
                .map(|gibbs| KeepingGibbs { ladder, gibbs }),
        }
    }

    /// The bottom RBM's chains (the samples of the target) in a stacked-tempering state.
    pub fn bottom<F: ebm_core::Scalar>(state: &PtState<RbmChains<F>>) -> &RbmChains<F> {
        state
            .rungs()
            .last()
            .expect("a PT state has at least one rung")
    }
}
