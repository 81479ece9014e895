use super::order::{OrderParameter, Tether};
use ebm_core::linalg::{MatRef, matmul};
use ebm_core::{ConditionalSampler, Error, Kernel, Par, Result, Scalar, for_each_chain_chunk};
use ebm_models::{DiscreteLayer, Layer, Rbm, RbmChains};
use rand::Rng;
use std::sync::atomic::{AtomicU64, Ordering};

/// The Tethered Monte Carlo kernel: one sweep draws \\(h \sim p_\beta(h \mid v)\\) for every
/// chain (block Gibbs; the tether does not involve \\(h\\)), then visits the visible units in
/// order \\(0, \dots, N_v - 1\\) with single-site Metropolis under the tether: at unit \\(i\\) a
/// state different from the current one is proposed uniformly (a flip for binary units) and
/// accepted with probability \\(\min(1, e^{-\Delta})\\),
///
/// \\[ \Delta = \beta\,[E(v', h) - E(v, h)] + B(m(v'); \hat m) - B(m(v); \hat m), \\]
///
/// where \\(E(v', h) - E(v, h) = U_i(v_i') - U_i(v_i) - (v_i' - v_i) \cdot (W h)_i\\) (the local
/// fields \\(W h\\) are computed once per sweep by one matrix product per chunk of chains) and
/// \\(m(v') = m(v) + \Delta m\\) is updated incrementally. This is the rule of the paper's
/// reference code ("Learning a Restricted Boltzmann Machine using biased Monte Carlo
/// sampling", Béreux et al. 2023); the paper's text does not state one.
///
/// Each part leaves the tethered joint law \\(p_{\hat m}(v, h) \propto e^{-\beta E(v,h) -
/// B(m(v);\hat m)}\\) invariant (the hidden update is exact block sampling; each visible
/// update satisfies detailed balance), hence so does their composition; the sweep as a whole
/// is not reversible. Visible units of any [`DiscreteLayer`] (Bernoulli, spins, one-hot Potts)
/// are supported.
///
/// **Where the per-chain state lives.** The targets \\(\hat m\\) are configuration of the
/// kernel (chain `c` is tethered to `targets[c * k..(c + 1) * k]`), so the chain state stays a
/// plain [`RbmChains`] and [`crate::run()`], observers and tempering work unchanged. The order
/// parameter \\(m(v)\\) is recomputed from scratch at the start of every sweep
/// (\\(O(k N_v)\\), negligible next to the \\(O(N_v N_h)\\) matrix products) and then updated
/// incrementally over the sweep's \\(N_v\\) proposals; recomputing each sweep also removes any
/// rounding drift. The value after the step is returned in [`TetheredInfo::order`], from
/// which time averages (the paper's Eq. 19) are accumulated.
///
/// Chain `c` consumes only `rngs[c]`; results do not depend on [`Par`] or the thread count.
#[derive(Clone, Debug)]
pub struct Tethered<T: Tether> {
    order: OrderParameter,
    tether: T,
    targets: Vec<f64>,
    sweeps: usize,
}

/// What a [`Tethered`] step did.
#[derive(Clone, Debug, PartialEq)]
pub struct TetheredInfo {
    /// Visible proposals made (chains x sweeps x visible units).
    pub proposals: u64,
    /// Proposals accepted.
    pub accepted: u64,
    /// The order parameters of every chain after the step, `k` values per chain (chain `c` at
    /// `order[c * k..(c + 1) * k]`), as maintained incrementally by the kernel.
    pub order: Vec<f64>,
}

impl TetheredInfo {
    /// Fraction of visible proposals accepted (0 when none were made).
    pub fn acceptance_rate(&self) -> f64 {
        if self.proposals == 0 {
            0.0
        } else {
            self.accepted as f64 / self.proposals as f64
        }
    }
}

impl<T: Tether> Tethered<T> {
    /// A kernel doing `sweeps` TMC sweeps per step, tethering chain `c` to
    /// `targets[c * k..(c + 1) * k]` with `k = order.k()`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] if `sweeps == 0` or `targets.len()` is not a multiple of
    /// `k`; [`Error::NonFinite`] for a NaN or infinite target.
    pub fn new(order: OrderParameter, tether: T, targets: Vec<f64>, sweeps: usize) -> Result<Self> {
        if sweeps == 0 {
            return Err(Error::InvalidParameter {
                name: "sweeps".into(),
                reason: "0; at least one sweep per step expected".into(),
            });
        }
        if !targets.len().is_multiple_of(order.k()) {
            return Err(Error::InvalidParameter {
                name: "targets".into(),
                reason: format!(
                    "{} values is not a whole number of {}-dimensional targets",
                    targets.len(),
                    order.k()
                ),
            });
        }
        if let Some(index) = targets.iter().position(|x| !x.is_finite()) {
            return Err(Error::NonFinite {
                what: "tether targets".into(),
                index,
                value: targets[index],
            });
        }
        Ok(Self {
            order,
            tether,
            targets,
            sweeps,
        })
    }

    /// The order parameters.
    pub fn order(&self) -> &OrderParameter {
        &self.order
    }

    /// The tether.
    pub fn tether(&self) -> &T {
        &self.tether
    }

    /// The per-chain targets \\(\hat m\\), `k` per chain.
    pub fn targets(&self) -> &[f64] {
        &self.targets
    }

    /// Number of chains the kernel is configured for.
    pub fn n_chains(&self) -> usize {
        self.targets.len() / self.order.k()
    }

    /// Sweeps per step.
    pub fn sweeps(&self) -> usize {
        self.sweeps
    }

    /// The log acceptance probability \\(\min(0, -\Delta)\\) of moving visible unit `i` of `v`
    /// to `new_state` at fixed `h` and target `target`, computed exactly as the kernel does.
    /// Exposed so that tests can build the exact transition matrix of a single-site update.
    ///
    /// # Panics
    /// On wrong lengths, `i` out of range or an invalid state.
    #[allow(clippy::too_many_arguments)]
    pub fn log_acceptance<V, H>(
        &self,
        rbm: &Rbm<V, H>,
        beta: f64,
        v: &[V::Scalar],
        h: &[V::Scalar],
        i: usize,
        new_state: usize,
        target: &[f64],
    ) -> f64
    where
        V: DiscreteLayer,
        H: Layer<Scalar = V::Scalar>,
    {
        let (nv, nh) = (rbm.visible().width(), rbm.hidden().width());
        assert_eq!(v.len(), nv, "log_acceptance: visible length");
        assert_eq!(h.len(), nh, "log_acceptance: hidden length");
        let k = self.order.k();
        assert_eq!(target.len(), k, "log_acceptance: target length");
        let mut phi = vec![V::Scalar::from_f64(0.0); nv];
        matmul(
            MatRef::col_major(rbm.weights().as_slice(), nv, nh),
            MatRef::col_major(h, nh, 1),
            &mut phi,
        );
        let mut m = vec![0.0; k];
        self.order.project(v, &mut m);
        let mut m_new = vec![0.0; k];
        let mut slot = vec![V::Scalar::from_f64(0.0); rbm.visible().unit_width()];
        let (d, _) = self.delta(
            rbm.visible(),
            beta,
            v,
            &phi,
            i,
            new_state,
            &m,
            self.tether.bias(&m, target),
            target,
            &mut m_new,
            &mut slot,
        );
        (-d).min(0.0)
    }

    /// \\(\Delta\\) of moving unit `i` to `new_state` and the proposed bias, given the current
    /// bias `cur_bias`; leaves the proposed slot in `slot` and the proposed order parameters in
    /// `m_new`.
    #[inline(always)]
    #[allow(clippy::too_many_arguments)]
    fn delta<V: DiscreteLayer>(
        &self,
        vis: &V,
        beta: f64,
        v: &[V::Scalar],
        phi: &[V::Scalar],
        i: usize,
        new_state: usize,
        m: &[f64],
        cur_bias: f64,
        target: &[f64],
        m_new: &mut [f64],
        slot: &mut [V::Scalar],
    ) -> (f64, f64) {
        let uw = slot.len();
        let first = i * uw;
        let old = &v[first..first + uw];
        vis.write_unit_state(new_state, slot);
        let mut coupling = 0.0;
        for ((n, o), f) in slot.iter().zip(old).zip(&phi[first..first + uw]) {
            coupling += (n.as_f64() - o.as_f64()) * f.as_f64();
        }
        let de = vis.unit_energy(i, slot) - vis.unit_energy(i, old) - coupling;
        self.order.add_increment(first, old, slot, m, m_new);
        let new_bias = self.tether.bias(m_new, target);
        (beta * de + new_bias - cur_bias, new_bias)
    }
}

/// Replaces the visible layer of every chain by independent uniformly random unit states
/// (chain `c` consuming `rngs[c]`): the non-informative start of TMC runs.
///
/// # Panics
/// If `rngs.len() != x.n_chains()` or the visible width does not match.
pub fn randomize_visible<V, H, R>(rbm: &Rbm<V, H>, x: &mut RbmChains<V::Scalar>, rngs: &mut [R])
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
    R: Rng,
{
    let vis = rbm.visible();
    let (uw, q) = (vis.unit_width(), vis.unit_states());
    assert_eq!(x.visible.nrows(), vis.width(), "randomize_visible: width");
    assert_eq!(x.visible.ncols(), rngs.len(), "randomize_visible: rngs");
    let nv = vis.width().max(1);
    for (col, rng) in x.visible.as_mut_slice().chunks_mut(nv).zip(rngs.iter_mut()) {
        for slot in col.chunks_mut(uw.max(1)) {
            vis.write_unit_state(rng.random_range(0..q), slot);
        }
    }
}

/// Replaces the visible layer of every chain by an independent draw of the product law
/// \\(q_\lambda(v) \propto e^{\lambda\, m(v)}\\) (the uniform law tilted along the one order
/// parameter) whose mean \\(E_{q_\lambda} m\\) is the chain's target: chain `c` gets
/// `targets[c]`, clamped to the range \\(m\\) can take, with \\(\lambda\\) found by bisection (the
/// mean increases with \\(\lambda\\)). Chain `c` consumes only `rngs[c]`.
///
/// This is the start of a tethered chain that needs no travel. A chain started at a uniformly
/// random configuration (\\(m\\) near the middle of its range) and pulled to a distant target by
/// a strong tether reaches it in a sweep, but the sweep's fixed order leaves the units it
/// flipped early in the order, and the configuration keeps that arrangement for hundreds of
/// sweeps when few moves are accepted. The time average of \\(m\\) at the sweeps' ends is biased
/// towards the start meanwhile, by tens of standard errors on the rank-1 models of
/// `tests/tethered_barrier.rs` at \\(\alpha \approx 10^6\\). A tilted product draw has no
/// arrangement to forget.
///
/// # Panics
/// If `order` has more than one direction, its width differs from the visible layer's,
/// `targets.len()` or `rngs.len()` differs from the number of chains, or a target is not finite.
pub fn tilted_visible<V, H, R>(
    rbm: &Rbm<V, H>,
    order: &OrderParameter,
    targets: &[f64],
    x: &mut RbmChains<V::Scalar>,
    rngs: &mut [R],
) where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
    R: Rng,
{
    let vis = rbm.visible();
    let (n_units, uw, q) = (vis.n_units(), vis.unit_width(), vis.unit_states());
    let nv = vis.width();
    assert_eq!(order.k(), 1, "tilted_visible: one order parameter");
    assert_eq!(order.width(), nv, "tilted_visible: order-parameter width");
    assert_eq!(x.visible.ncols(), targets.len(), "tilted_visible: targets");
    assert_eq!(rngs.len(), targets.len(), "tilted_visible: rngs");
    assert!(
        targets.iter().all(|t| t.is_finite()),
        "tilted_visible: targets"
    );
    // g[i * q + s]: the contribution of unit i in state s to m.
    let sigma = order.scaled_direction(0);
    let mut slot = vec![V::Scalar::from_f64(0.0); uw];
    let mut g = vec![0.0; n_units * q];
    for i in 0..n_units {
        for s in 0..q {
            vis.write_unit_state(s, &mut slot);
            g[i * q + s] = slot
                .iter()
                .zip(&sigma[i * uw..(i + 1) * uw])
                .map(|(x, w)| x.as_f64() * w)
                .sum();
        }
    }
    // The unit laws p_i(s) ∝ exp(lambda g_is), written into `p`; returns E[m].
    let tilt = |lambda: f64, p: &mut [f64]| -> f64 {
        let mut mean = 0.0;
        for (gi, pi) in g.chunks(q).zip(p.chunks_mut(q)) {
            let top = gi.iter().fold(f64::NEG_INFINITY, |a, &b| a.max(lambda * b));
            let mut z = 0.0;
            for (pv, &gv) in pi.iter_mut().zip(gi) {
                *pv = (lambda * gv - top).exp();
                z += *pv;
            }
            for (pv, &gv) in pi.iter_mut().zip(gi) {
                *pv /= z;
                mean += *pv * gv;
            }
        }
        mean
    };
    let mut p = vec![0.0; n_units * q];
    for (c, (col, rng)) in x
        .visible
        .as_mut_slice()
        .chunks_mut(nv.max(1))
        .zip(rngs.iter_mut())
        .enumerate()
    {
        // The chains of one target are usually consecutive: their law is computed once.
        let target = targets[c];
        if c > 0 && targets[c - 1] == target {
            draw_units(vis, &p, q, uw, col, rng);
            continue;
        }
        // Bracket the target, then bisect.
        let (mut lo, mut hi) = (-1.0, 1.0);
        while tilt(lo, &mut p) > target && lo > -1e12 {
            lo *= 2.0;
        }
        while tilt(hi, &mut p) < target && hi < 1e12 {
            hi *= 2.0;
        }
        for _ in 0..100 {
            let mid = 0.5 * (lo + hi);
            if tilt(mid, &mut p) < target {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        tilt(0.5 * (lo + hi), &mut p);
        draw_units(vis, &p, q, uw, col, rng);
    }
}

/// Draws every unit of one configuration `col` from its law `p[i * q..(i + 1) * q]`.
fn draw_units<L: DiscreteLayer, R: Rng>(
    layer: &L,
    p: &[f64],
    q: usize,
    uw: usize,
    col: &mut [L::Scalar],
    rng: &mut R,
) {
    for (unit, pi) in col.chunks_mut(uw.max(1)).zip(p.chunks(q)) {
        let u = f64::uniform(rng);
        let mut acc = 0.0;
        let s = pi
            .iter()
            .position(|&v| {
                acc += v;
                u < acc
            })
            .unwrap_or(q - 1);
        layer.write_unit_state(s, unit);
    }
}

impl<V, H, T> Kernel<Rbm<V, H>> for Tethered<T>
where
    V: DiscreteLayer,
    H: Layer<Scalar = V::Scalar>,
    T: Tether,
{
    type Info = TetheredInfo;

    /// # Panics
    /// If the number of chains differs from [`Tethered::n_chains`], `rngs.len()` differs from
    /// it, or the layers' widths do not match the model and the order parameters.
    fn step<R: Rng + Send>(
        &self,
        model: &Rbm<V, H>,
        beta: f64,
        x: &mut RbmChains<V::Scalar>,
        rngs: &mut [R],
        par: Par,
    ) -> TetheredInfo {
        let vis = model.visible();
        let (nv, nh) = (vis.width(), model.hidden().width());
        let (n_units, uw, q) = (vis.n_units(), vis.unit_width(), vis.unit_states());
        let k = self.order.k();
        let n = x.visible.ncols();
        assert_eq!(x.visible.nrows(), nv, "Tethered: visible width");
        assert_eq!(self.order.width(), nv, "Tethered: order-parameter width");
        assert_eq!(n, self.n_chains(), "Tethered: number of chains vs targets");
        assert_eq!(rngs.len(), n, "Tethered: one RNG stream per chain");
        let accepted = AtomicU64::new(0);
        let w = model.weights().as_slice();
        let mut order = vec![0.0; n * k];
        for _ in 0..self.sweeps {
            model.sample_hidden(x, beta, rngs, par);
            let hid = x.hidden.as_slice();
            let mut per_chain: Vec<(&mut R, &mut [f64])> =
                rngs.iter_mut().zip(order.chunks_mut(k)).collect();
            for_each_chain_chunk(
                par,
                nv,
                x.visible.as_mut_slice(),
                &mut per_chain,
                |first, vchunk, chains| {
                    let cols = chains.len();
                    let mut phi = vec![V::Scalar::from_f64(0.0); nv * cols];
                    matmul(
                        MatRef::col_major(w, nv, nh),
                        MatRef::col_major(&hid[first * nh..(first + cols) * nh], nh, cols),
                        &mut phi,
                    );
                    let mut m_new = vec![0.0; k];
                    let mut slot = vec![V::Scalar::from_f64(0.0); uw];
                    let mut acc = 0u64;
                    for (c, (v, (rng, m))) in vchunk
                        .chunks_mut(nv.max(1))
                        .zip(chains.iter_mut())
                        .enumerate()
                    {
                        let target = &self.targets[(first + c) * k..(first + c + 1) * k];
                        let phi = &phi[c * nv..(c + 1) * nv];
                        self.order.project(v, m);
                        let mut bias = self.tether.bias(m, target);
                        for i in 0..n_units {
                            let cur = vis.read_unit_state(&v[i * uw..(i + 1) * uw]);
                            // Binary units: the only other state, without a draw.
                            let s = if q == 2 {
                                1 - cur
                            } else {
                                let s = rng.random_range(0..q - 1);
                                s + usize::from(s >= cur)
                            };
                            let (d, new_bias) = self.delta(
                                vis, beta, v, phi, i, s, m, bias, target, &mut m_new, &mut slot,
                            );
                            let u = f64::uniform(&mut **rng);
                            if d <= 0.0 || u < (-d).exp() {
                                v[i * uw..(i + 1) * uw].copy_from_slice(&slot);
                                m.copy_from_slice(&m_new);
                                bias = new_bias;
                                acc += 1;
                            }
                        }
                    }
                    accepted.fetch_add(acc, Ordering::Relaxed);
                },
            );
        }
        TetheredInfo {
            proposals: (n * self.sweeps * n_units) as u64,
            accepted: accepted.into_inner(),
            order,
        }
    }
}
