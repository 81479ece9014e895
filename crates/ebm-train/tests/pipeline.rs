//! The paper-000 pipeline on an enumerable model (64 spins of the 8x8 Ising model at
//! beta = 0.6, two modes; 16 hidden units, log Z by enumerating them): RCM pretraining, then
//! training with the online log-likelihood, every stage against exact values.
//!
//! What these tests pin down:
//! - the online estimator's initial chains are exact draws of the pretrained (bimodal) model,
//!   so its log Z follows the exact one while the mode weights move (it used to start from
//!   Gibbs sweeps of one configuration, all in one mode, and reported a log Z 8-27 nats low
//!   with an error bar of 0.001 and no warning);
//! - PCD from the pretrained start loses the model (its persistent chains cannot cross between
//!   the modes, so their proportions stop following the model and the gradient drives the mode
//!   weights to 0 or 1) and the trainer now says so, while the same start trained with exact
//!   draws as the negative phase keeps both modes and its likelihood: the loss comes from the
//!   negative phase, not from the map of the RCM to the RBM, the centring or the learning rate;
//! - parallel tempering on the bridge from the pretrained model to the current one
//!   ([`ebm_train::Bridged`], rung 0 refreshed by exact draws of the pretrained model) keeps
//!   the model as exact draws do: the fix;
//! - a log-likelihood above 0 of discrete data is never reported.

mod common;

use ebm_core::{ChainState, Par};
use ebm_data::generators::ising::{IsingConfig, ising_2d};
use ebm_estimators::Warning;
use ebm_models::exact::{log_partition_by_hidden, sample_by_hidden};
use ebm_models::{Bernoulli, BinaryLayer, Rbm, RbmChains, Spin};
use ebm_samplers::tempering::PtState;
use ebm_train::pretrain::{PretrainConfig, PretrainedStart, RcmConfig};
use ebm_train::{
    Bridged, LearningRate, LikelihoodInfo, LikelihoodPolicy, MAX_NEGATIVE_Z, NegativeInfo,
    NegativePhase, Pcd, Trainer, TrainingData, initial_model,
};
use nalgebra::DMatrix;

type Model = Rbm<Spin, Bernoulli>;

/// Exact draws of the current model as the negative phase (hidden layer enumerated): the
/// gradient without sampling bias, the reference a negative phase must match.
#[derive(Clone, Copy, Debug)]
struct ExactDraws(usize);

impl NegativePhase<Spin, Bernoulli> for ExactDraws {
    type State = ChainState<RbmChains<f64>>;

    fn init(
        &self,
        model: &Model,
        _b: usize,
        seed: u64,
        _par: Par,
    ) -> ebm_core::Result<Self::State> {
        Ok(ChainState::new(model.default_chains(self.0), seed))
    }

    fn check_state(&self, _state: &Self::State, _batch: usize) -> ebm_core::Result<()> {
        Ok(())
    }

    fn sample(
        &self,
        model: &Model,
        state: &mut Self::State,
        _batch: &DMatrix<f64>,
        par: Par,
    ) -> ebm_core::Result<NegativeInfo> {
        sample_by_hidden(
            model,
            &mut state.chains,
            1.0,
            state.rngs.as_mut_slice(),
            par,
        )?;
        Ok(NegativeInfo::default())
    }

    fn chains<'a>(&self, state: &'a Self::State) -> &'a RbmChains<f64> {
        &state.chains
    }
}

/// The Ising data (2000 configurations, seed 1) as spins.
fn ising() -> (DMatrix<f64>, TrainingData<f64>) {
    let data = ising_2d(&IsingConfig::new(8, 0.6, 2000), 1)
        .unwrap()
        .data()
        .clone();
    let train = TrainingData::new(&Spin::zeros(64), data.clone()).unwrap();
    (data, train)
}

fn exact_log_z(model: &Model) -> f64 {
    log_partition_by_hidden(model, 1.0, Par::Rayon).unwrap()
}

fn exact_ll(model: &Model, data: &DMatrix<f64>) -> f64 {
    common::mean_neg_free_energy(model, data) - exact_log_z(model)
}

/// The exact weight of mode + ([`plus_fraction`]) from 20 000 exact draws.
fn mode_plus(model: &Model) -> f64 {
    let mut x = ChainState::new(model.default_chains(20_000), 99);
    sample_by_hidden(model, &mut x.chains, 1.0, x.rngs.as_mut_slice(), Par::Rayon).unwrap();
    plus_fraction(&x.chains.visible)
}

/// The fraction of columns with positive magnetisation (ties count half).
fn plus_fraction(v: &DMatrix<f64>) -> f64 {
    let plus: f64 = v
        .column_iter()
        .map(|c| {
            let s = c.sum();
            if s > 0.0 {
                1.0
            } else if s == 0.0 {
                0.5
            } else {
                0.0
            }
        })
        .sum();
    plus / v.ncols() as f64
}

/// RCM pretraining on one direction plus the bias direction, as `ebm train --pretrain rcm
/// --rcm-directions 1` (a coarser mesh, for speed), padded to 16 hidden units.
fn pretrained(data: &DMatrix<f64>) -> PretrainedStart<Spin, Bernoulli> {
    let cfg = PretrainConfig {
        directions: 1,
        bias: true,
        points_per_dim: 120,
        rcm: RcmConfig {
            hyperplanes: 100,
            seed: 1,
            ..RcmConfig::default()
        },
    };
    PretrainedStart::new(data, &cfg, 16, 1, Par::Rayon).unwrap()
}

/// The online likelihood every 100 updates from the exact initial log Z.
fn policy(initial_log_z: f64) -> LikelihoodPolicy {
    LikelihoodPolicy {
        chains: 1000,
        every: 100,
        initial_log_z: Some(initial_log_z),
        ..LikelihoodPolicy::default()
    }
}

/// Trains `model` for `updates` updates (minibatch 100, learning rate 0.01) and returns each
/// report with the model at it.
fn run<P: NegativePhase<Spin, Bernoulli>>(
    negative: P,
    model: &Model,
    train: &TrainingData<f64>,
    persistent_start: Option<&PretrainedStart<Spin, Bernoulli>>,
    updates: u64,
) -> Vec<(u64, LikelihoodInfo, Model)>
where
    P::State: AsChains,
{
    let mut trainer = Trainer::new(negative, 100);
    trainer.learning_rate = LearningRate::Constant(0.01);
    trainer.likelihood = Some(policy(exact_log_z(model)));
    let mut state = trainer.init(model.clone(), train, 1, Par::Rayon).unwrap();
    if let Some(start) = persistent_start {
        // As `ebm train --pretrain rcm`: the persistent chains start at static draws.
        let chains = state.negative.as_chains();
        let mut rngs = ebm_core::RngStreams::new(7, chains.visible.ncols());
        chains.visible = start.draw_visible(rngs.as_mut_slice()).unwrap();
    }
    let mut reports = Vec::new();
    for _ in 0..updates {
        let info = trainer.step(&mut state, train, None, Par::Rayon).unwrap();
        let l = info.likelihood.expect("likelihood followed");
        if l.train.is_some() || info.update.is_multiple_of(100) {
            reports.push((info.update, l, state.model.clone()));
        }
    }
    reports
}

/// The persistent chains of a negative phase's state.
trait AsChains {
    fn as_chains(&mut self) -> &mut RbmChains<f64>;
}

impl AsChains for ChainState<RbmChains<f64>> {
    fn as_chains(&mut self) -> &mut RbmChains<f64> {
        &mut self.chains
    }
}

impl AsChains for PtState<RbmChains<f64>> {
    fn as_chains(&mut self) -> &mut RbmChains<f64> {
        self.rungs_mut().last_mut().expect("at least one rung")
    }
}

fn disagreement_flagged(l: &LikelihoodInfo) -> bool {
    l.log_z.warnings.iter().any(|w| {
        matches!(w, Warning::AssumptionBroken { reason } if reason.contains("disagree on the mean -F(v)"))
    })
}

/// Every report of a training that keeps the pretrained model (exact LL `ll0`): the online
/// log Z within 3 of its errors of the exact one, the exact likelihood not below the start's,
/// both modes kept, and the negative phase's chains agreeing with the estimator's.
fn assert_keeps_the_model(
    label: &str,
    reports: &[(u64, LikelihoodInfo, Model)],
    data: &DMatrix<f64>,
    ll0: f64,
) {
    for (u, l, m) in reports {
        let (exact_z, ll, w) = (exact_log_z(m), exact_ll(m, data), mode_plus(m));
        let (z, se) = (l.log_z.log_z, l.log_z.std_err);
        eprintln!(
            "{label}, update {u}: log Z online {z:.4} +- {se:.4}, exact {exact_z:.4}; exact LL \
             {ll:.4}; mode + {w:.3}; negative z {:?}",
            l.negative_z
        );
        assert!(
            (z - exact_z).abs() <= 3.0 * se + 0.01,
            "{label}, update {u}"
        );
        assert!(
            ll > ll0 - 0.05,
            "{label}, update {u}: exact LL {ll} against {ll0}"
        );
        assert!((0.3..0.7).contains(&w), "{label}, update {u}: mode + {w}");
        assert!(
            l.negative_z.is_some_and(|z| z.abs() < MAX_NEGATIVE_Z),
            "{label}, update {u}"
        );
        assert!(!disagreement_flagged(l), "{label}: {:?}", l.log_z.warnings);
    }
}

#[test]
fn pretrained_pipeline_against_exact_values() {
    let (data, train) = ising();
    let start = pretrained(&data);
    let model = start.model.clone();
    let (ll0, w0) = (exact_ll(&model, &data), mode_plus(&model));
    eprintln!("pretrained: exact LL {ll0:.4}, mode + {w0:.3}");
    assert!(
        (0.3..0.7).contains(&w0),
        "the pretrained model is bimodal: mode + weighs {w0}"
    );

    // PCD-10 from the pretrained start, its persistent chains at static draws.
    let pcd = run(
        Pcd {
            sweeps: 10,
            chains: 300,
        },
        &model,
        &train,
        Some(&start),
        400,
    );
    assert_eq!(pcd.len(), 4);
    let exact_z0 = exact_log_z(&model);
    for (u, l, m) in &pcd {
        let (exact_z, ll) = (exact_log_z(m), exact_ll(m, &data));
        let (z, se) = (l.log_z.log_z, l.log_z.std_err);
        eprintln!(
            "PCD update {u}: log Z online {z:.4} +- {se:.4}, exact {exact_z:.4}; exact LL {ll:.4}; \
             mode + {:.3}; negative z {:?}",
            mode_plus(m),
            l.negative_z
        );
        // The online estimate follows the exact log Z while the mode weights move ...
        assert!(
            (z - exact_z).abs() <= 3.0 * se + 0.01,
            "update {u}: online log Z {z} +- {se} against the exact {exact_z}"
        );
        // ... and the likelihood it reports is the exact one.
        let train_ll = l.train.expect("reported");
        assert!(
            (train_ll - ll).abs() <= 3.0 * se + 0.01,
            "{train_ll} vs {ll}"
        );
    }
    // Negative control: a log Z frozen at its initial value fails the same bound.
    let (_, l, last) = pcd.last().unwrap();
    let bound = 3.0 * l.log_z.std_err + 0.01;
    assert!((exact_log_z(last) - exact_z0).abs() > 10.0 * bound);
    // PCD loses the model: the modes collapse and the likelihood falls ...
    let (ll, w) = (exact_ll(last, &data), mode_plus(last));
    assert!(
        ll < ll0 - 1.0,
        "PCD kept the likelihood: {ll} against {ll0}"
    );
    assert!(!(0.05..0.95).contains(&w), "PCD kept both modes: {w}");
    // ... and the trainer says so: its chains disagree with the estimator's.
    let z = l.negative_z.expect("checked at every report");
    assert!(z.abs() > MAX_NEGATIVE_Z, "negative z {z}");
    assert!(disagreement_flagged(l), "{:?}", l.log_z.warnings);

    // The same start trained with exact draws keeps both modes and its likelihood: the loss
    // above is the negative phase's, not the start's.
    let exact = run(ExactDraws(1000), &model, &train, None, 400);
    assert_keeps_the_model("exact draws", &exact, &data, ll0);

    // The fix: parallel tempering on the bridge from the pretrained model to the current one,
    // rung 0 refreshed by exact draws of the pretrained model, keeps both modes and the
    // likelihood as exact draws do, with the persistent chains of a sampler (5 rungs, 1 sweep).
    let bridged = Bridged::new(model.clone(), 5, 1, 1, 300, 1 << 20, Par::Rayon).unwrap();
    assert!(bridged.exact_reference());
    let bridge = run(bridged, &model, &train, None, 400);
    assert_eq!(bridge.len(), 4);
    assert_keeps_the_model("bridged PT", &bridge, &data, ll0);

    // Paper 000's Fig. 2 claim, pretrained above scratch at equal budget, does not hold on
    // this stand-in even with exact gradients: from scratch the same exact negative phase
    // ends higher (the book's *Low-rank pre-training* chapter quotes both).
    let scratch =
        initial_model(Spin::zeros(64), Bernoulli::zeros(16), Some(&train), 0.01, 1).unwrap();
    let scratch = run(ExactDraws(1000), &scratch, &train, None, 400);
    let (pretrained_ll, scratch_ll) = (
        exact_ll(&exact.last().unwrap().2, &data),
        exact_ll(&scratch.last().unwrap().2, &data),
    );
    eprintln!(
        "after 400 updates with exact draws: pretrained {pretrained_ll:.4}, scratch {scratch_ll:.4}"
    );
    assert!(scratch_ll > pretrained_ll + 0.5);

    // The book's two tables (*Low-rank pre-training*), rendered from these runs: each report's
    // exact LL, exact weight of mode + and negative-phase z, computed once per run.
    let summary = |reports: &[(u64, LikelihoodInfo, Model)]| -> Vec<(u64, [String; 3])> {
        reports
            .iter()
            .map(|(u, l, m)| {
                let z = l.negative_z.expect("checked at every report");
                let cells = [
                    format!("{:.3}", exact_ll(m, &data)),
                    format!("{:.3}", mode_plus(m)),
                    format!("{z:.1}"),
                ];
                (*u, cells.map(|c| c.replace('-', "−")))
            })
            .collect()
    };
    // The bridge's largest negative-phase z over its reports, quoted beside the tables.
    let worst = bridge
        .iter()
        .map(|r| r.1.negative_z.expect("checked").abs())
        .fold(0.0, f64::max);
    let (pcd, exact, bridge) = (summary(&pcd), summary(&exact), summary(&bridge));
    // Column `k` (0: LL, 1: weight, 2: z) of a run at `updates`, as the page writes it.
    let at = |rows: &[(u64, [String; 3])], updates: &[u64], k: usize| {
        updates
            .iter()
            .map(|&u| rows.iter().find(|r| r.0 == u).expect("reported").1[k].as_str())
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let (three, four) = ([100, 200, 400], [100, 200, 300, 400]);
    ebm_testkit::book_quotes(
        "concepts/pretraining.md",
        &format!(
            "| PCD-10, 300 chains at static draws | {} | {} | {} standard errors: flagged |\n\
             | exact draws (1000 per update) | {} | {} | {} |\n",
            at(&pcd, &three, 0),
            at(&pcd, &three, 1),
            at(&pcd, &three, 2),
            at(&exact, &three, 0),
            at(&exact, &three, 1),
            at(&exact, &three, 2),
        ),
    );
    ebm_testkit::book_quotes(
        "concepts/pretraining.md",
        &format!(
            "| PCD-10 (above) | {} | {} |\n| exact draws | {} | {} |\n| `Bridged`, 5 rungs | {} | {} |\n",
            at(&pcd, &four, 0),
            at(&pcd, &four, 1),
            at(&exact, &four, 0),
            at(&exact, &four, 1),
            at(&bridge, &four, 0),
            at(&bridge, &four, 1),
        ),
    );
    ebm_testkit::book_quotes(
        "concepts/pretraining.md",
        &format!("at every report (within {worst:.1} standard errors)"),
    );
    ebm_testkit::book_quotes(
        "concepts/pretraining.md",
        &format!(
            "the pretrained model is bimodal (exact weight of mode + {w0:.3}, exact LL\n{})",
            format!("{ll0:.3}").replace('-', "−")
        ),
    );
}

/// The static sampler against the model it starts. Importance weights of static draws give
/// the exact log Z within their error; against a model whose mode weights the sampler gets
/// wrong (visible fields shifted, so the static law is the unshifted model's), the raw draws
/// keep the wrong proportions (the negative control) and the resampled draws have the exact
/// ones.
#[test]
fn static_draws_are_checked_and_resampled_to_the_model() {
    let (data, _) = ising();
    let start = pretrained(&data);
    let exact = exact_log_z(&start.model);
    let mut rngs = ebm_core::RngStreams::new(5, 4000);
    let check = start.check_static(rngs.as_mut_slice(), Par::Rayon).unwrap();
    eprintln!(
        "static check: log Z {:.4} +- {:.4} (exact {exact:.4}), relative ESS {:.3}",
        check.log_z.log_mean,
        check.log_z.std_err,
        check.relative_ess()
    );
    assert!(
        (check.log_z.log_mean - exact).abs() < 3.0 * check.log_z.std_err + 0.01,
        "{check:?} against {exact}"
    );
    assert!(check.trusted(), "{check:?}");

    let mut shifted = start.clone();
    let fields: Vec<f64> = shifted
        .model
        .visible()
        .fields
        .iter()
        .map(|f| f + 0.02)
        .collect();
    shifted.model = Model::new(
        Spin::with_fields(fields),
        shifted.model.hidden().clone(),
        shifted.model.weights().clone(),
    )
    .unwrap();
    let target = mode_plus(&shifted.model);
    let n = 4000;
    let mut rngs = ebm_core::RngStreams::new(6, n);
    let raw = plus_fraction(&shifted.draw_visible(rngs.as_mut_slice()).unwrap());
    let mut rngs = ebm_core::RngStreams::new(6, n);
    let (v, check) = shifted
        .draw_visible_resampled(rngs.as_mut_slice(), 4, Par::Rayon)
        .unwrap();
    let resampled = plus_fraction(&v);
    // Binomial error of the effective draws (at most n of them), plus the exact weight's.
    let se =
        (target * (1.0 - target) * (1.0 / check.log_z.ess.min(n as f64) + 1.0 / 20_000.0)).sqrt();
    eprintln!(
        "shifted fields: exact mode + {target:.4}, static draws {raw:.4}, resampled \
         {resampled:.4} +- {se:.4} (relative ESS {:.3})",
        check.relative_ess()
    );
    assert!(check.trusted(), "{check:?}");
    assert!(
        (resampled - target).abs() < 3.0 * se,
        "{resampled} vs {target}"
    );
    assert!((raw - target).abs() > 10.0 * se, "{raw} vs {target}");
}

/// An online log Z below \\(\max_v -F(v)\\) over the data would give some sample a probability
/// above 1: the trainer reports no likelihood then (never a positive one) and flags the
/// estimate. Made here by a wrong initial log Z, 60 nats too low.
#[test]
fn a_positive_log_likelihood_of_discrete_data_is_never_reported() {
    let (_, train) = ising();
    let model =
        initial_model(Spin::zeros(64), Bernoulli::zeros(16), Some(&train), 0.01, 1).unwrap();
    let mut trainer = Trainer::new(
        Pcd {
            sweeps: 1,
            chains: 100,
        },
        100,
    );
    trainer.likelihood = Some(LikelihoodPolicy {
        every: 1,
        ..policy(exact_log_z(&model) - 60.0)
    });
    let mut state = trainer.init(model, &train, 1, Par::Rayon).unwrap();
    let mut flagged = 0;
    for _ in 0..30 {
        let l = trainer
            .step(&mut state, &train, None, Par::Rayon)
            .unwrap()
            .likelihood
            .unwrap();
        assert!(
            l.train.is_none_or(|x| x <= 0.0),
            "log-likelihood {:?}",
            l.train
        );
        flagged += l.log_z.warnings.iter().any(|w| {
            matches!(w, Warning::AssumptionBroken { reason } if reason.contains("below the largest -F(v)"))
        }) as usize;
    }
    assert_eq!(
        flagged, 30,
        "the estimate is flagged from the first update on"
    );
}
