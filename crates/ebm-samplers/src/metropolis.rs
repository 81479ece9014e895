use ebm_core::num_traits::Zero;
use ebm_core::{Kernel, Par, Scalar, for_each_chain_chunk};
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

/// Single-site Metropolis on the visible layer of an RBM, targeting the visible marginal
/// \\(p_\beta(v) \propto e^{-F_\beta(v)}\\).
///
/// A sweep visits the visible units in order; at unit \\(i\\) it proposes a state drawn
/// uniformly among the \\(q - 1\\) other states of that unit (a flip for binary units) and
/// accepts with probability \\(\min(1, e^{-\Delta F})\\), where
///
/// \\[ \Delta F = \beta\,[U_i(x_i') - U_i(x_i)] - \sum_\mu \big[\Gamma^\beta_\mu(I_\mu') -
///     \Gamma^\beta_\mu(I_\mu)\big], \qquad I = W^\top v, \\]
///
/// is the exact difference of tempered free energies (the hidden layer summed out). Each
/// single-site update satisfies detailed balance; a sweep is their composition, so it leaves
/// \\(p_\beta(v)\\) invariant. The hidden part of the chains is not touched (left stale).
///
/// Cost per proposal: \\(O(N_h)\\) with the hidden inputs kept up to date incrementally.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Metropolis {
    /// Number of sweeps over the visible units per step.
    pub sweeps: usize,
}

impl Default for Metropolis {
    fn default() -> Self {
        Self { sweeps: 1 }
    }
}

/// What a Metropolis step did.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetropolisInfo {
    /// Proposals made (chains x sweeps x visible units).
    pub proposals: u64,
    /// Proposals accepted.
    pub accepted: u64,
}

impl MetropolisInfo {
    /// Fraction of proposals accepted (0 when none were made).
    pub fn acceptance_rate(&self) -> f64 {
        if self.proposals == 0 {
            0.0
        } else {
            self.accepted as f64 / self.proposals as f64
        }
    }
}

/// `out = inputs + sum_c W[row_c, :] * (new_c - old_c)` over the rows of one unit's slot.
fn shifted_inputs<F: Scalar>(
    w: &[F],
    nv: usize,
    rows: std::ops::Range<usize>,
    new: &[F],
    old: &[F],
    inputs: &[F],
    out: &mut [F],
) {
    out.copy_from_slice(inputs);
    for ((r, &n), &o) in rows.zip(new).zip(old) {
        let d = n - o;
        if d != F::zero() {
            for (mu, o) in out.iter_mut().enumerate() {
                *o = *o + w[r + mu * nv] * d;
            }
        }
    }
}

impl Metropolis {
    /// A kernel doing `sweeps` sweeps per step.
    pub fn new(sweeps: usize) -> Self {
        Self { sweeps }
    }

    /// The log acceptance probability \\(\min(0, -\Delta F)\\) of moving unit `i` of the
    /// visible configuration `v` to state `new_state`, computed exactly as the kernel does.
    /// Exposed so that tests can build the exact transition matrix of a single-site update.
    ///
    /// # Panics
    /// If `v` has the wrong length, `i` is out of range or `new_state` is not a state.
    pub fn log_acceptance<V, H>(
        rbm: &Rbm<V, H>,
        beta: f64,
        v: &[V::Scalar],
        i: usize,
        new_state: usize,
    ) -> f64
    where
        V: DiscreteLayer,
        H: Layer<Scalar = V::Scalar>,
    {
        let (nv, nh) = (rbm.visible().width(), rbm.hidden().width());
        assert_eq!(v.len(), nv, "log_acceptance: visible length");
        let w = rbm.weights().as_slice();
        let inputs: Vec<V::Scalar> = (0..nh)
            .map(|mu| {
                v.iter()
                    .enumerate()
                    .fold(V::Scalar::zero(), |acc, (r, &x)| acc + w[r + mu * nv] * x)
            })
            .collect();
        let mut scratch = vec![V::Scalar::zero(); nh];
        let mut slot = vec![V::Scalar::zero(); rbm.visible().unit_width()];
        let cur = rbm.hidden().cgf(&inputs, beta);
        let (d, _) = delta_free_energy(
            rbm,
            beta,
            v,
            i,
            new_state,
            &inputs,
            cur,
            &mut scratch,
            &mut slot,
        );
        (-d).min(0.0)
    }
}

/// Free-energy difference of moving unit `i` to `new_state`; leaves the proposed inputs in
/// `scratch` and the proposed slot in `slot`; returns `(delta_f, new_cgf)`.
fn delta_free_energy<V, H>(
    rbm: &Rbm<V, H>,
    beta: f64,
    v: &[V::Scalar],
    i: usize,
    new_state: usize,
    inputs: &[V::Scalar],
    cur_cgf: f64,
    scratch: &mut [V::Scalar],
    slot: &mut [V::Scalar],
) -> (f64, f64)
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    let vis = rbm.visible();
    let uw = vis.unit_width();
    let range = i * uw..(i + 1) * uw;
    let old = &v[range.clone()];
    vis.write_unit_state(new_state, slot);
    shifted_inputs(
        rbm.weights().as_slice(),
        vis.width(),
        range,
        slot,
        old,
        inputs,
        scratch,
    );
    let new_cgf = rbm.hidden().cgf(scratch, beta);
    let du = vis.unit_energy(i, slot) - vis.unit_energy(i, old);
    (beta * du - (new_cgf - cur_cgf), new_cgf)
}

impl<V, H> Kernel<Rbm<V, H>> for Metropolis
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
{
    type Info = MetropolisInfo;

    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> MetropolisInfo {
        let vis = model.visible();
        let (nv, nh) = (vis.width(), model.hidden().width());
        let (n_units, uw, q) = (vis.n_units(), vis.unit_width(), vis.unit_states());
        assert_eq!(x.visible.nrows(), nv, "Metropolis: visible width");
        let accepted = AtomicU64::new(0);
        let w = model.weights().as_slice();
        for_each_chain_chunk(par, nv, x.visible.as_mut_slice(), rngs, |_, vchunk, r| {
            let mut inputs = vec![V::Scalar::zero(); nh];
            let mut scratch = vec![V::Scalar::zero(); nh];
            let mut slot = vec![V::Scalar::zero(); uw];
            let mut acc = 0u64;
            for (v, rng) in vchunk.chunks_mut(nv.max(1)).zip(r.iter_mut()) {
                for (mu, inp) in inputs.iter_mut().enumerate() {
                    *inp = v
                        .iter()
                        .enumerate()
                        .fold(V::Scalar::zero(), |a, (row, &xv)| a + w[row + mu * nv] * xv);
                }
                let mut cur = model.hidden().cgf(&inputs, beta);
                for _ in 0..self.sweeps {
                    for i in 0..n_units {
                        let old_state = vis.read_unit_state(&v[i * uw..(i + 1) * uw]);
                        let mut s = rng.random_range(0..q - 1);
                        if s >= old_state {
                            s += 1;
                        }
                        let (d, new_cgf) = delta_free_energy(
                            model,
                            beta,
                            v,
                            i,
                            s,
                            &inputs,
                            cur,
                            &mut scratch,
                            &mut slot,
                        );
                        let u = f64::uniform(rng);
                        if d <= 0.0 || u < (-d).exp() {
                            v[i * uw..(i + 1) * uw].copy_from_slice(&slot);
                            std::mem::swap(&mut inputs, &mut scratch);
                            cur = new_cgf;
                            acc += 1;
                        }
                    }
                }
            }
            accepted.fetch_add(acc, Ordering::Relaxed);
        });
        MetropolisInfo {
            proposals: (x.visible.ncols() * self.sweeps * n_units) as u64,
            accepted: accepted.into_inner(),
        }
    }
}
