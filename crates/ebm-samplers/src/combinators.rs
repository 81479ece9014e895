//! Kernels built from kernels: [`Cycle`] (one after the other), [`Mixture`] (one or the other,
//! at random, per chain) and [`Repeat`] (the same kernel several times).
//!
//! Each leaves \\(p_\beta\\) invariant when its parts do: invariance is preserved by composition
//! and by convex combination of transition kernels, \\(p T_1 = p T_2 = p \Rightarrow
//! p\, T_1 T_2 = p\,(\lambda T_1 + (1 - \lambda) T_2) = p\\). Detailed balance is preserved by
//! mixtures but not by cycles: a cycle of reversible kernels is in general only invariant.

use ebm_core::{ChainRng, Chains, EnergyModel, Error, Kernel, Par, Scalar};
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// `first`, then `second`, at the same \\(\beta\\) on the same chains: the transition
/// \\(T_{\text{first}} T_{\text{second}}\\). Nest cycles for more than two kernels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cycle<A, B> {
    /// Applied first.
    pub first: A,
    /// Applied second.
    pub second: B,
}

impl<A, B> Cycle<A, B> {
    /// `first`, then `second`.
    pub fn new(first: A, second: B) -> Self {
        Self { first, second }
    }
}

impl<M, A, B> Kernel<M> for Cycle<A, B>
where
    M: EnergyModel,
    A: Kernel<M>,
    B: Kernel<M>,
{
    type Info = (A::Info, B::Info);

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info {
        let a = self.first.step(model, beta, x, rngs, par);
        let b = self.second.step(model, beta, x, rngs, par);
        (a, b)
    }
}

/// With probability `p_first`, `first`; otherwise `second` — chosen independently for every
/// chain: the transition \\(\lambda T_{\text{first}} + (1 - \lambda) T_{\text{second}}\\),
/// \\(\lambda\\) = `p_first`. Nest mixtures for more than two kernels.
///
/// A kernel acts on the whole batch, so a step runs both kernels on all chains (the second on
/// a copy) and keeps, for each chain, the result of the kernel its coin chose: the cost of both
/// kernels plus a copy of the chains. Chain `i` draws its coin and two seeds from `rngs[i]`;
/// the two kernels run on streams seeded from them, so the choice is independent of the moves
/// and the run is reproducible whatever the thread count.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Mixture<A, B> {
    first: A,
    second: B,
    p_first: f64,
}

impl<A, B> Mixture<A, B> {
    /// `first` with probability `p_first`, else `second`.
    ///
    /// # Errors
    /// [`Error::InvalidParameter`] unless \\(0 \le\\) `p_first` \\(\le 1\\).
    pub fn new(first: A, second: B, p_first: f64) -> ebm_core::Result<Self> {
        if !(0.0..=1.0).contains(&p_first) {
            return Err(Error::InvalidParameter {
                name: "p_first".into(),
                reason: format!("a mixture weight is a probability in [0, 1], got {p_first}"),
            });
        }
        Ok(Self {
            first,
            second,
            p_first,
        })
    }

    /// The probability of the first kernel.
    pub fn p_first(&self) -> f64 {
        self.p_first
    }
}

/// What a [`Mixture`] step did: both kernels' reports (each ran on every chain) and how many
/// chains kept the first kernel's move.
#[derive(Clone, Debug, PartialEq)]
pub struct MixtureInfo<A, B> {
    /// The first kernel's report.
    pub first: A,
    /// The second kernel's report.
    pub second: B,
    /// Chains that kept the first kernel's move.
    pub chose_first: usize,
}

impl<M, A, B> Kernel<M> for Mixture<A, B>
where
    M: EnergyModel,
    A: Kernel<M>,
    B: Kernel<M>,
{
    type Info = MixtureInfo<A::Info, B::Info>;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info {
        let n = x.n_chains();
        assert_eq!(rngs.len(), n, "Mixture: one RNG per chain");
        let mut take_first = Vec::with_capacity(n);
        let mut first_rngs = Vec::with_capacity(n);
        let mut second_rngs = Vec::with_capacity(n);
        for rng in rngs.iter_mut() {
            take_first.push(f64::uniform(rng) < self.p_first);
            first_rngs.push(ChainRng::seed_from_u64(rng.random()));
            second_rngs.push(ChainRng::seed_from_u64(rng.random()));
        }
        let mut y = x.clone();
        let first = self.first.step(model, beta, x, &mut first_rngs, par);
        let second = self.second.step(model, beta, &mut y, &mut second_rngs, par);
        for (i, &keep) in take_first.iter().enumerate() {
            if !keep {
                x.swap_chain(&mut y, i);
            }
        }
        MixtureInfo {
            first,
            second,
            chose_first: take_first.iter().filter(|&&t| t).count(),
        }
    }
}

/// `kernel` applied `times` times per step: \\(T^{\text{times}}\\).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repeat<K> {
    /// The repeated kernel.
    pub kernel: K,
    /// Applications per step.
    pub times: usize,
}

impl<K> Repeat<K> {
    /// `kernel`, `times` times per step.
    pub fn new(kernel: K, times: usize) -> Self {
        Self { kernel, times }
    }
}

impl<M: EnergyModel, K: Kernel<M>> Kernel<M> for Repeat<K> {
    /// The report of each application, in order.
    type Info = Vec<K::Info>;

    fn step<R: Rng + Send>(
        &self,
        model: &M,
        beta: f64,
        x: &mut M::State,
        rngs: &mut [R],
        par: Par,
    ) -> Self::Info {
        (0..self.times)
            .map(|_| self.kernel.step(model, beta, x, rngs, par))
            .collect()
    }
}
