//! Choosing the rungs of a ladder so that neighbouring swaps are accepted at a target rate:
//! the online checkpoint selector of parallel trajectory tempering, and the same rule applied
//! offline to any fine ladder (a dense temperature grid or a long sequence of checkpoints).
//! Both follow Béreux et al., *Fast training and sampling of RBMs* (greedy temperatures, and
//! model selection along the trajectory).

use super::ladder::{Ladder, Rung};
use ebm_core::{ChainRng, ChainState, EnergyModel, Error, Kernel, Par, RngStreams};
use rand::seq::SliceRandom;
use serde::{Deserialize, Serialize};

/// Estimated mean swap acceptance between two rungs from samples of each:
///
/// \\[ \hat a = \frac1n \sum_i \min\big(1, e^{E_a(x^a_i) + E_b(x^b_{\pi(i)}) - E_a(x^b_{\pi(i)})
///     - E_b(x^a_i)}\big), \\]
///
/// with \\(x^a \sim p_a\\), \\(x^b \sim p_b\\) (one chain each per term) and \\(\pi\\) a random
/// permutation drawn from `rng`, which decorrelates the pairing when the two batches descend
/// from each other (persistent chains saved at an earlier update). This is the expected PT
/// acceptance of the pair; averaging \\(\min(1, \cdot)\\) instead of accept/reject indicators
/// halves the noise of the PTT paper's trial swaps.
///
/// # Panics
/// If the two batches differ in their number of chains or are empty.
pub fn estimated_swap_acceptance<M: EnergyModel>(
    a: Rung<'_, M>,
    xa: &M::State,
    b: Rung<'_, M>,
    xb: &M::State,
    rng: &mut ChainRng,
    par: Par,
) -> f64 {
    swap_acceptance_with_error(a, xa, b, xb, rng, par).0
}

/// [`estimated_swap_acceptance`] with its standard error, \\(s / \sqrt n\\) for the sample
/// standard deviation \\(s\\) of the \\(n\\) terms: calibrated when the two batches are
/// independent draws of their models (e.g. exact draws), an underestimate when the chains of
/// each batch are correlated.
///
/// # Panics
/// If the two batches differ in their number of chains or are empty.
pub fn swap_acceptance_with_error<M: EnergyModel>(
    a: Rung<'_, M>,
    xa: &M::State,
    b: Rung<'_, M>,
    xb: &M::State,
    rng: &mut ChainRng,
    par: Par,
) -> (f64, f64) {
    use ebm_core::Chains;
    let n = xa.n_chains();
    assert!(
        n > 0 && xb.n_chains() == n,
        "swap acceptance needs two non-empty batches of equal size, got {n} and {}",
        xb.n_chains()
    );
    let mut e = vec![0.0; 4 * n];
    let (e_aa, rest) = e.split_at_mut(n);
    let (e_ba, rest) = rest.split_at_mut(n);
    let (e_ab, e_bb) = rest.split_at_mut(n);
    a.model.energies(xa, a.beta, e_aa, par);
    b.model.energies(xa, b.beta, e_ba, par);
    a.model.energies(xb, a.beta, e_ab, par);
    b.model.energies(xb, b.beta, e_bb, par);
    let mut pairing: Vec<usize> = (0..n).collect();
    pairing.shuffle(rng);
    let terms = (0..n).map(|i| {
        let j = pairing[i];
        (e_aa[i] + e_bb[j] - e_ab[j] - e_ba[i]).min(0.0).exp()
    });
    let (sum, sum_sq) = terms.fold((0.0, 0.0), |(s, q), t| (s + t, q + t * t));
    let nf = n as f64;
    let mean = sum / nf;
    let var = if n > 1 {
        ((sum_sq - nf * mean * mean) / (nf - 1.0)).max(0.0)
    } else {
        0.0
    };
    (mean, (var / nf).sqrt())
}

fn check_target(target: f64) -> ebm_core::Result<()> {
    if target > 0.0 && target < 1.0 {
        Ok(())
    } else {
        Err(Error::InvalidParameter {
            name: "target_acceptance".into(),
            reason: format!("must lie in (0, 1), got {target}"),
        })
    }
}

/// What [`CheckpointSelector::offer`] decided.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Selection {
    /// Whether the offered model is to be kept (saved as the next rung of the trajectory).
    pub keep: bool,
    /// Whether the model offered just before this one (not kept then) is to be kept now, as the
    /// rung before the offered one if that is kept too: it is the last model whose acceptance
    /// with the last kept one was still at least the target.
    #[serde(default)]
    pub keep_previous: bool,
    /// The estimated swap acceptance between the offered model and the last kept one (`None`
    /// for the first offer, which is always kept).
    pub acceptance: Option<f64>,
    /// The standard error of `acceptance` ([`swap_acceptance_with_error`]).
    #[serde(default)]
    pub acceptance_se: Option<f64>,
    /// When a newly kept neighbouring pair has an estimated acceptance below the target (the
    /// model moved further between two consecutive offers than the target allows, e.g. large
    /// first updates: offer more often or lower the learning rate): that acceptance.
    #[serde(default)]
    pub below_target: Option<f64>,
}

/// Online selection of training checkpoints for parallel trajectory tempering and trajectory
/// AIS (Béreux et al., *Fast training and sampling of RBMs*, "the acceptance of PTT exchanges between neighboring
/// models must not go below a target acceptance"): after each update the trainer offers the
/// current model with its persistent chains, and the selector estimates the swap acceptance
/// ([`estimated_swap_acceptance`], both models at \\(\beta = 1\\)) between it and the last kept
/// model. While it is at least the target, nothing is kept (the offer is remembered); when it
/// falls below, the **previous** offer, the last one still at or above the target, is kept
/// ([`Selection::keep_previous`]) and the current one is compared with it, and kept as well if
/// even that pair is below the target. So every kept neighbouring pair has an estimated
/// acceptance at least the target, except a pair of consecutive offers, which no selection can
/// split: it is reported ([`Selection::below_target`]). (The reference code keeps the first
/// model below the target instead, so its kept pairs are all below the target: 0.045 was
/// measured for a target of 0.25.) The first offer is always kept;
/// the caller also keeps the final model of a run.
///
/// The selector holds a copy of the last kept model and of the previous offer, each with the
/// chains it was offered with; it serialises (when the model and chains do) so a training
/// checkpoint resumes it exactly.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(bound(
    serialize = "M: Serialize, M::State: Serialize",
    deserialize = "M: Deserialize<'de>, M::State: Deserialize<'de>"
))]
pub struct CheckpointSelector<M: EnergyModel> {
    target: f64,
    rng: ChainRng,
    last: Option<(M, M::State)>,
    /// The last offer, when it was not kept.
    #[serde(default)]
    previous: Option<(M, M::State)>,
    kept: u64,
}

impl<M: EnergyModel + Clone> CheckpointSelector<M>
where
    M::State: Clone,
{
    /// A selector keeping a model whenever the acceptance with the last kept one falls below
    /// `target_acceptance`; `seed` drives the random pairing of chains.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless \\(0 < \\) `target_acceptance` \\(< 1\\).
    pub fn new(target_acceptance: f64, seed: u64) -> ebm_core::Result<Self> {
        check_target(target_acceptance)?;
        Ok(Self {
            target: target_acceptance,
            rng: RngStreams::auxiliary(seed, 0),
            last: None,
            previous: None,
            kept: 0,
        })
    }

    /// Checks a selector read from a file: a valid target, and `matches` accepts each stored
    /// model with its chains (e.g. that they have the shape of the run's model).
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] for the target; the errors of `matches`.
    pub fn check(
        &self,
        matches: impl Fn(&M, &M::State) -> ebm_core::Result<()>,
    ) -> ebm_core::Result<()> {
        check_target(self.target)?;
        for (model, chains) in self.last.iter().chain(&self.previous) {
            matches(model, chains)?;
        }
        Ok(())
    }

    fn acceptance_with(
        rng: &mut ChainRng,
        kept: &(M, M::State),
        model: &M,
        chains: &M::State,
        par: Par,
    ) -> (f64, f64) {
        swap_acceptance_with_error(
            Rung {
                model: &kept.0,
                beta: 1.0,
            },
            &kept.1,
            Rung { model, beta: 1.0 },
            chains,
            rng,
            par,
        )
    }

    /// Offers `model` with samples `chains` of it (e.g. the trainer's persistent chains); see
    /// the type's documentation for the rule.
    ///
    /// # Panics
    /// If `chains` has a different number of chains than the batch offered with the last kept
    /// model, or is empty.
    pub fn offer(&mut self, model: &M, chains: &M::State, par: Par) -> Selection {
        let Some(last) = &self.last else {
            self.last = Some((model.clone(), chains.clone()));
            self.kept += 1;
            return Selection {
                keep: true,
                keep_previous: false,
                acceptance: None,
                acceptance_se: None,
                below_target: None,
            };
        };
        let (a, a_se) = Self::acceptance_with(&mut self.rng, last, model, chains, par);
        if a >= self.target {
            self.previous = Some((model.clone(), chains.clone()));
            return Selection {
                keep: false,
                keep_previous: false,
                acceptance: Some(a),
                acceptance_se: Some(a_se),
                below_target: None,
            };
        }
        let (keep_previous, pair) = match self.previous.take() {
            Some(previous) => {
                let (b, _) = Self::acceptance_with(&mut self.rng, &previous, model, chains, par);
                self.last = Some(previous);
                self.kept += 1;
                (true, b)
            }
            None => (false, a),
        };
        let keep = pair < self.target;
        if keep {
            self.last = Some((model.clone(), chains.clone()));
            self.kept += 1;
        } else {
            self.previous = Some((model.clone(), chains.clone()));
        }
        Selection {
            keep,
            keep_previous,
            acceptance: Some(a),
            acceptance_se: Some(a_se),
            below_target: keep.then_some(pair),
        }
    }

    /// The target acceptance.
    pub fn target(&self) -> f64 {
        self.target
    }

    /// Number of models kept so far.
    pub fn kept(&self) -> u64 {
        self.kept
    }

    /// The last kept model, if any.
    pub fn last_kept(&self) -> Option<&M> {
        self.last.as_ref().map(|(m, _)| m)
    }
}

/// Offline selection along a fine ladder: walks the rungs of `fine` from rung 0 up, moving the
/// chains of `state` with `sweeps` steps of `kernel` at each rung (rung 0 included) (annealing them along the
/// ladder, as PTT's initial pass up the trajectory does), and keeps the furthest rung whose
/// estimated swap acceptance ([`estimated_swap_acceptance`]) with the last kept rung is still at
/// least `target_acceptance`: when rung \\(k\\) falls below the target, rung \\(k - 1\\) is kept
/// (or \\(k\\) itself if \\(k - 1\\) is the last kept rung, the fine ladder being too coarse
/// there). Rung 0 and the last rung are always kept. Returns the kept rung indices, increasing.
///
/// Applied to a dense [`super::TemperatureLadder`] this chooses temperatures (the greedy rule
/// of Béreux et al., *Fast training and sampling of RBMs*, see [`super::TemperatureLadder::with_target_acceptance`]);
/// applied to a [`super::TrajectoryLadder`] of all saved checkpoints it selects the PTT ladder
/// (neighbouring acceptance must not go below the target). The chains should start in
/// equilibrium at rung 0 (exact draws when rung 0 is tractable, or many sweeps there), and the
/// fine ladder should be dense enough that `sweeps` steps re-equilibrate the chains between
/// neighbouring rungs.
///
/// # Errors
/// [`Error::InvalidParameter`] for a target outside \\((0, 1)\\) or `sweeps == 0`.
pub fn select_rungs<L, K>(
    fine: &L,
    kernel: &K,
    state: &mut ChainState<<L::Model as EnergyModel>::State>,
    sweeps: usize,
    target_acceptance: f64,
    par: Par,
) -> ebm_core::Result<Vec<usize>>
where
    L: Ladder,
    K: Kernel<L::Model>,
    <L::Model as EnergyModel>::State: Clone,
{
    check_target(target_acceptance)?;
    if sweeps == 0 {
        return Err(Error::InvalidParameter {
            name: "sweeps".into(),
            reason: "at least one kernel step per rung is needed".into(),
        });
    }
    let mut rng = RngStreams::auxiliary(state.rngs.seed(), 1);
    let last = fine.n_rungs() - 1;
    let bottom = fine.rung(0);
    for _ in 0..sweeps {
        kernel.step(
            bottom.model,
            bottom.beta,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            par,
        );
    }
    state.steps += sweeps as u64;
    let mut kept = vec![0];
    let mut kept_chains = state.chains.clone();
    let mut previous = state.chains.clone();
    let mut k = 1;
    while k <= last {
        let rung = fine.rung(k);
        for _ in 0..sweeps {
            kernel.step(
                rung.model,
                rung.beta,
                &mut state.chains,
                state.rngs.as_mut_slice(),
                par,
            );
        }
        state.steps += sweeps as u64;
        let k_last = *kept.last().expect("rung 0 is kept");
        let a = estimated_swap_acceptance(
            fine.rung(k_last),
            &kept_chains,
            rung,
            &state.chains,
            &mut rng,
            par,
        );
        if a < target_acceptance && k - 1 > k_last {
            // Keep the previous rung and compare rung k again with it.
            kept.push(k - 1);
            kept_chains.clone_from(&previous);
            let a = estimated_swap_acceptance(
                fine.rung(k - 1),
                &kept_chains,
                rung,
                &state.chains,
                &mut rng,
                par,
            );
            if a < target_acceptance {
                kept.push(k);
                kept_chains.clone_from(&state.chains);
            }
        } else if a < target_acceptance {
            kept.push(k);
            kept_chains.clone_from(&state.chains);
        }
        if k == last && *kept.last().expect("non-empty") != last {
            kept.push(last);
        }
        previous.clone_from(&state.chains);
        k += 1;
    }
    Ok(kept)
}

/// The barrier-equalising schedule of non-reversible PT (Syed et al. 2022; the PTT paper
/// Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*): from a ladder at interpolation points
/// \\(t_0 < \dots < t_K\\) (inverse temperatures, or the coefficients of a reference ladder)
/// and its measured per-pair acceptance rates \\(a_k\\), returns `n_rungs` new points with the
/// same ends that split the estimated cumulative barrier evenly.
///
/// The cumulative barrier is estimated at the old points by \\(\Lambda(t_k) = \sum_{j<k} (1 -
/// a_j)\\) and interpolated linearly in between; new point \\(i\\) solves \\(\Lambda(t'_i) =
/// \frac{i}{n-1}\Lambda(t_K)\\). In the fine-ladder limit the rejection rate of a pair is the
/// barrier between its points, so the new ladder has (approximately) equal rejection rates,
/// which minimises \\(\sum_k r_k/(1 - r_k)\\) and maximises the DEO round-trip rate. Iterate
/// (run PT, measure, re-equalise) until the rates stop changing; a good number of rungs is
/// about \\(2\Lambda\\) or more.
///
/// # Errors
/// [`Error::InvalidParameter`] if the points are not strictly increasing, the rates are not
/// one per pair within \\([0, 1]\\), `n_rungs < 2`, or no rejection was measured
/// (\\(\Lambda = 0\\): nothing to equalise).
pub fn equalised_schedule(
    points: &[f64],
    acceptance_rates: &[f64],
    n_rungs: usize,
) -> ebm_core::Result<Vec<f64>> {
    let bad = |name: &str, reason: String| Error::InvalidParameter {
        name: name.into(),
        reason,
    };
    if points.len() < 2
        || points
            .windows(2)
            .any(|w| w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Less))
    {
        return Err(bad(
            "points",
            "need at least two strictly increasing points".into(),
        ));
    }
    if acceptance_rates.len() != points.len() - 1 {
        return Err(bad(
            "acceptance_rates",
            format!(
                "need one rate per pair ({}), got {}",
                points.len() - 1,
                acceptance_rates.len()
            ),
        ));
    }
    if let Some(k) = acceptance_rates
        .iter()
        .position(|a| !(0.0..=1.0).contains(a))
    {
        return Err(bad(
            "acceptance_rates",
            format!(
                "rate {k} = {} is not in [0, 1] (a pair never proposed?)",
                acceptance_rates[k]
            ),
        ));
    }
    if n_rungs < 2 {
        return Err(bad("n_rungs", format!("need at least 2, got {n_rungs}")));
    }
    let mut cumulative = vec![0.0];
    for a in acceptance_rates {
        cumulative.push(cumulative.last().expect("non-empty") + (1.0 - a));
    }
    let total = *cumulative.last().expect("non-empty");
    if total <= 0.0 {
        return Err(bad(
            "acceptance_rates",
            "every pair always accepts: the barrier is zero, nothing to equalise".into(),
        ));
    }
    let last = points.len() - 1;
    let mut out = Vec::with_capacity(n_rungs);
    let mut k = 0;
    for i in 0..n_rungs {
        if i == 0 {
            out.push(points[0]);
            continue;
        }
        if i == n_rungs - 1 {
            out.push(points[last]);
            continue;
        }
        let level = total * i as f64 / (n_rungs - 1) as f64;
        while cumulative[k + 1] < level {
            k += 1;
        }
        // cumulative[k] < level <= cumulative[k + 1], so the segment has positive rise.
        let f = (level - cumulative[k]) / (cumulative[k + 1] - cumulative[k]);
        out.push(points[k] + f * (points[k + 1] - points[k]));
    }
    Ok(out)
}
