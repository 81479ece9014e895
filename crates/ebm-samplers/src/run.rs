use ebm_core::{ChainState, EnergyModel, Kernel, Observer, Par, Result};

/// What [`run`] reports to its observer after each step.
#[derive(Clone, Debug)]
pub struct StepInfo<'a, I, S> {
    /// The kernel's info for this step.
    pub kernel: &'a I,
    /// The chains after the step.
    pub chains: &'a S,
}

/// Applies `kernel` `steps` times to `state` at inverse temperature `beta`, calling
/// `observer.observe(step, info)` after each step (steps are numbered from
/// `state.steps + 1`), and returns the info of the last step (`None` if `steps == 0`).
///
/// The result depends only on the model, the kernel, `beta`, the initial state (including its
/// RNG streams) and `steps`; not on `par` nor the thread count. Stopping after `n` steps,
/// saving `state` and resuming for `m` steps gives the same chains as `n + m` steps at once.
///
/// # Errors
/// The first error an observer returns; the state then holds the chains of the step just
/// observed.
pub fn run<M, K, O>(
    model: &M,
    kernel: &K,
    beta: f64,
    state: &mut ChainState<M::State>,
    steps: u64,
    par: Par,
    mut observer: O,
) -> Result<Option<K::Info>>
where
    M: EnergyModel,
    K: Kernel<M>,
    O: for<'a> Observer<StepInfo<'a, K::Info, M::State>>,
{
    let mut last = None;
    for _ in 0..steps {
        let info = kernel.step(
            model,
            beta,
            &mut state.chains,
            state.rngs.as_mut_slice(),
            par,
        );
        state.steps += 1;
        observer.observe(
            state.steps,
            &StepInfo {
                kernel: &info,
                chains: &state.chains,
            },
        )?;
        last = Some(info);
    }
    Ok(last)
}
