//! The PT loop reuses the hidden inputs \\(W^\top v\\) that an exchange computed for the free
//! energies in the first half-step \\(h \mid v\\) of the next Gibbs sweep: the kept products and
//! energies equal recomputed ones exactly, and PT gives the same chains, bit for bit, as with
//! every product recomputed (temperature and trajectory ladders, every schedule). A counting
//! model shows that the products are reused; a model that perturbs what it keeps is the
//! negative control.

use ebm_core::{ConditionalSampler, EnergyModel, Par, ProductCache};
use ebm_models::{Bernoulli, Rbm, RbmChains};
use ebm_samplers::Gibbs;
use ebm_samplers::tempering::{
    Exchange, KeptProducts, ParallelTempering, PtState, Rung, SwapSchedule, TemperatureLadder,
    TrajectoryLadder,
};
use nalgebra::DMatrix;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicUsize, Ordering};

type Model = Rbm<Bernoulli, Bernoulli>;

fn random_rbm(nv: usize, nh: usize, scale: f64, seed: u64) -> Model {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut u = |s: f64| s * (2.0 * rng.random::<f64>() - 1.0);
    let g = (0..nv).map(|_| u(1.0)).collect();
    let c = (0..nh).map(|_| u(1.0)).collect();
    let w = DMatrix::from_fn(nv, nh, |_, _| u(scale));
    Rbm::new(Bernoulli::new(g), Bernoulli::new(c), w).unwrap()
}

/// An RBM that counts its products \\(W^\top v\\) for \\(h \mid v\\) and its reuses of kept
/// ones, and adds `perturb` to the inputs it keeps (0 except in the negative control).
#[derive(Debug)]
struct Counting {
    rbm: Model,
    products: AtomicUsize,
    reused: AtomicUsize,
    perturb: f64,
    /// Energies computed from kept inputs (no product), and what to add to them (0 except
    /// in the negative control of that reuse).
    energy_reuses: AtomicUsize,
    perturb_energy: f64,
}

impl Counting {
    fn new(rbm: Model, perturb: f64) -> Self {
        Self {
            rbm,
            products: AtomicUsize::new(0),
            reused: AtomicUsize::new(0),
            perturb,
            energy_reuses: AtomicUsize::new(0),
            perturb_energy: 0.0,
        }
    }
}

impl EnergyModel for Counting {
    type Scalar = f64;
    type State = RbmChains<f64>;

    fn energies(&self, x: &Self::State, beta: f64, out: &mut [f64], par: Par) {
        self.rbm.energies(x, beta, out, par);
    }

    fn energies_at(&self, x: &Self::State, betas: &[f64], out: &mut [f64], par: Par) {
        self.rbm.energies_at(x, betas, out, par);
    }

    fn new_state(&self, n_chains: usize) -> Self::State {
        self.rbm.new_state(n_chains)
    }
}

impl ProductCache for Counting {
    fn energies_at_keeping(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &mut Self::State,
        par: Par,
    ) -> bool {
        let k = self.rbm.energies_at_keeping(x, betas, out, kept, par);
        kept.hidden.add_scalar_mut(self.perturb);
        k
    }

    fn energies_from_kept(
        &self,
        x: &Self::State,
        betas: &[f64],
        out: &mut [f64],
        kept: &Self::State,
        par: Par,
    ) -> bool {
        let reused = self.rbm.energies_from_kept(x, betas, out, kept, par);
        if reused {
            self.energy_reuses.fetch_add(1, Ordering::Relaxed);
            // At the first temperature only: a shift common to both temperatures of a
            // temperature-ladder exchange would cancel in its ratio.
            out.iter_mut()
                .step_by(betas.len().max(1))
                .for_each(|e| *e += self.perturb_energy);
        }
        reused
    }

    fn sample_hidden_from_kept<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        kept: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) -> bool {
        let reused = self.rbm.sample_hidden_from_kept(x, kept, beta, rngs, par);
        self.reused.fetch_add(reused as usize, Ordering::Relaxed);
        reused
    }
}

impl ConditionalSampler for Counting {
    fn sample_hidden<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.products.fetch_add(1, Ordering::Relaxed);
        self.rbm.sample_hidden(x, beta, rngs, par);
    }

    fn sample_visible<R: Rng + Send>(
        &self,
        x: &mut Self::State,
        beta: f64,
        rngs: &mut [R],
        par: Par,
    ) {
        self.rbm.sample_visible(x, beta, rngs, par);
    }
}

/// The same exchange without kept products: the PT loop then recomputes every product (the
/// straightforward path).
struct Plain<'a, L>(&'a L);

impl<L: Exchange> Exchange for Plain<'_, L> {
    type State = L::State;
    type RungModel = L::RungModel;

    fn n_exchange_rungs(&self) -> usize {
        self.0.n_exchange_rungs()
    }

    fn explored(&self, k: usize) -> Rung<'_, L::RungModel> {
        self.0.explored(k)
    }

    fn log_accept(&self, k: usize, lo: &Self::State, hi: &Self::State, out: &mut [f64], par: Par) {
        self.0.log_accept(k, lo, hi, out, par);
    }

    fn exchange<R: Rng + Send>(
        &self,
        k: usize,
        lo: &mut Self::State,
        hi: &mut Self::State,
        accept: &[bool],
        rngs: &mut [R],
        par: Par,
    ) {
        self.0.exchange(k, lo, hi, accept, rngs, par);
    }
}

const RUNGS: usize = 5;
const CHAINS: usize = 300;

fn temperatures(perturb: f64) -> TemperatureLadder<Counting> {
    let rbm = Counting::new(random_rbm(9, 6, 1.5, 1), perturb);
    TemperatureLadder::geometric(rbm, 0.2, RUNGS).unwrap()
}

fn trajectory(perturb: f64) -> TrajectoryLadder<Counting> {
    let models = (0..RUNGS)
        .map(|k| random_rbm(9, 6, 0.4 * (k + 1) as f64, 10 + k as u64))
        .collect();
    TrajectoryLadder::new(models)
        .unwrap()
        .map(|m| Counting::new(m, perturb))
}

/// `rounds` PT rounds of `ladder` from random visible states: the final state.
fn run<L: Exchange<State = RbmChains<f64>, RungModel = Counting>>(
    ladder: &L,
    schedule: SwapSchedule,
    rounds: usize,
) -> PtState<RbmChains<f64>> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let rungs = (0..RUNGS)
        .map(|_| RbmChains {
            visible: DMatrix::from_fn(9, CHAINS, |_, _| (rng.random::<bool>() as u8).into()),
            hidden: DMatrix::zeros(6, CHAINS),
        })
        .collect();
    let mut state = PtState::new(rungs, 7).unwrap();
    let pt = ParallelTempering::new(Gibbs::new(1), schedule);
    for _ in 0..rounds {
        pt.step(ladder, &mut state, Par::Rayon);
    }
    state
}

/// Total (products, reuses) over the distinct models of a ladder.
fn counts<'a>(models: impl Iterator<Item = &'a Counting>) -> (usize, usize) {
    models.fold((0, 0), |(p, r), m| {
        (
            p + m.products.swap(0, Ordering::Relaxed),
            r + m.reused.swap(0, Ordering::Relaxed),
        )
    })
}

/// Runs `ladder` with kept products and through [`Plain`]: identical chains (or, with
/// `perturb`, different ones), and the products saved are exactly the reuses.
fn check<L>(ladder: &L, models: &[&Counting], schedule: SwapSchedule, perturbed: bool)
where
    L: Exchange<State = RbmChains<f64>, RungModel = Counting>,
{
    let rounds = 40;
    let kept = run(ladder, schedule, rounds);
    let (products, reused) = counts(models.iter().copied());
    let plain = run(&Plain(ladder), schedule, rounds);
    let (plain_products, plain_reused) = counts(models.iter().copied());
    assert_eq!(plain_reused, 0);
    assert_eq!(plain_products, rounds * RUNGS);
    assert_eq!(products + reused, plain_products, "{schedule:?}");
    // Every schedule proposes some pair every round: at least one rung reuses per round after
    // the first.
    assert!(reused >= rounds - 1, "{schedule:?}: {reused} reuses");
    if perturbed {
        assert!(
            kept != plain,
            "{schedule:?}: perturbed reuse went unnoticed"
        );
    } else {
        assert!(kept == plain, "{schedule:?}: the reuse changed the chains");
    }
}

#[test]
fn pt_with_kept_products_gives_the_chains_of_recomputed_ones() {
    for perturbed in [false, true] {
        let perturb = if perturbed { 0.5 } else { 0.0 };
        let t = temperatures(perturb);
        let r = trajectory(perturb);
        let trajectory_models: Vec<&Counting> = r.models().iter().collect();
        for schedule in SwapSchedule::ALL {
            check(&t, &[t.model()], schedule, perturbed);
            check(&r, &trajectory_models, schedule, perturbed);
        }
    }
}

/// The energies of a keeping exchange are those of [`Exchange::log_accept`], bit for bit, and
/// the kept inputs of each rung after the exchange are \\(W^\top v\\) of its new state under its
/// own model, exactly as recomputed.
#[test]
fn kept_energies_and_inputs_equal_recomputed_ones_exactly() {
    fn check<L: Exchange<State = RbmChains<f64>, RungModel = Counting>>(ladder: &L) {
        let state = run(ladder, SwapSchedule::DeterministicEvenOdd, 3);
        for k in 0..RUNGS - 1 {
            let (mut lo, mut hi) = (state.rungs()[k].clone(), state.rungs()[k + 1].clone());
            let mut plain = vec![0.0; CHAINS];
            ladder.log_accept(k, &lo, &hi, &mut plain, Par::Rayon);
            let (mut kl, mut kh) = (KeptProducts::default(), KeptProducts::default());
            let mut kept = vec![0.0; CHAINS];
            ladder.log_accept_keeping(k, &lo, &hi, &mut kept, [&mut kl, &mut kh], Par::Rayon);
            let bits = |x: &[f64]| x.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&kept), bits(&plain), "pair {k}");
            // Energies from the kept inputs at any temperatures: the recomputed ones, bit for
            // bit.
            let rbm = &ladder.explored(k).model.rbm;
            let own = kl.products().expect("products kept");
            let betas = [0.3, 0.71, 1.0];
            let (mut direct, mut from_kept) = (vec![0.0; 3 * CHAINS], vec![0.0; 3 * CHAINS]);
            rbm.energies_at(&lo, &betas, &mut direct, Par::Seq);
            assert!(rbm.energies_from_kept(&lo, &betas, &mut from_kept, own, Par::Rayon));
            assert_eq!(bits(&from_kept), bits(&direct), "pair {k}");
            let accept: Vec<bool> = (0..CHAINS).map(|i| i % 3 == 0).collect();
            let mut rngs = ebm_core::RngStreams::new(1, CHAINS);
            ladder.exchange_keeping(
                k,
                &mut lo,
                &mut hi,
                &accept,
                rngs.as_mut_slice(),
                [&mut kl, &mut kh],
                Par::Rayon,
            );
            for (j, x, kept) in [(k, &lo, &kl), (k + 1, &hi, &kh)] {
                let rbm = &ladder.explored(j).model.rbm;
                let mut inputs = DMatrix::zeros(6, CHAINS);
                rbm.hidden_inputs(&x.visible, &mut inputs, Par::Seq);
                let kept = kept.products().expect("products kept");
                assert_eq!(kept.hidden, inputs, "rung {j}");
            }
        }
    }
    check(&temperatures(0.0));
    check(&trajectory(0.0));
}

/// Under the sweep schedule (every pair proposed in turn, as PTT does) the energies of rung k's
/// state in pair (k, k + 1) come from the product that pair (k - 1, k) kept: one product fewer
/// per pair, and the same chains bit for bit (also checked above for every schedule). Here:
/// the reuse happens exactly once per pair after the first in every round, never under DEO (no
/// two consecutive pairs in a round), and a perturbed reuse changes the chains (negative
/// control).
#[test]
fn sweep_schedule_reuses_the_previous_pairs_product_for_the_energies() {
    fn check<L>(ladder: &L, models: &[&Counting], perturbed: bool)
    where
        L: Exchange<State = RbmChains<f64>, RungModel = Counting>,
    {
        let rounds = 40;
        let reuses = || -> usize {
            models
                .iter()
                .map(|m| m.energy_reuses.swap(0, Ordering::Relaxed))
                .sum()
        };
        reuses();
        let deo = run(ladder, SwapSchedule::DeterministicEvenOdd, rounds);
        assert_eq!(reuses(), 0, "DEO never proposes two consecutive pairs");
        let sweep = run(ladder, SwapSchedule::Sweep, rounds);
        assert_eq!(
            reuses(),
            rounds * (RUNGS - 2),
            "one reuse per pair after the first"
        );
        let plain = run(&Plain(ladder), SwapSchedule::Sweep, rounds);
        assert_eq!(reuses(), 0);
        assert!(deo != sweep);
        if perturbed {
            assert!(sweep != plain, "a perturbed energy reuse went unnoticed");
        } else {
            assert!(sweep == plain, "the energy reuse changed the chains");
        }
    }
    for perturbed in [false, true] {
        let e = if perturbed { 0.5 } else { 0.0 };
        let mut m = temperatures(0.0).into_model();
        m.perturb_energy = e;
        let t = TemperatureLadder::geometric(m, 0.2, RUNGS).unwrap();
        check(&t, &[t.model()], perturbed);
        let r = trajectory(0.0).map(|mut m| {
            m.perturb_energy = e;
            m
        });
        let models: Vec<&Counting> = r.models().iter().collect();
        check(&r, &models, perturbed);
    }
}
