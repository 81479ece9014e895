//! The stacked sampler of `ebm sample` (`--sampler stacked --stack FILE`): stacked tempering
//! on a stack of RBMs, run by the PT loop of the other tempering samplers.
//!
//! Stack files (a JSON manifest and one RBM file per RBM) are read by `ebm-io`
//! ([`ebm_io::load_stack`]).

use std::path::Path;

use ebm_core::Par;
use ebm_models::Stack;
use ebm_samplers::tempering::{StackLadder, StackedTempering};

use super::{SampleOutcome, SamplerRun, TemperedRun, initial_chains, outcome, tempering};
use crate::cli::{SampleArgs, ScheduleArg};
use crate::error::CliError;
use crate::error::Result;
use crate::models::{KindsTask, UnitLayer, visible_data, with_kinds};
use crate::record::Context;
use crate::tempering::{PtNames, schedule_of};
use crate::trace;

/// Loads the stack in `path` ([`ebm_io::load_stack`]) and runs `task` on it, with the unit
/// types named in the bottom RBM's file (the upper RBMs must have the bottom's hidden kind on
/// both sides).
fn with_stack<T: StackTask>(path: &Path, task: T) -> Result<T::Output> {
    struct Load<'a, T> {
        path: &'a Path,
        task: T,
    }
    impl<T: StackTask> KindsTask for Load<'_, T> {
        type Output = T::Output;
        type Error = CliError;
        fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(self) -> Result<T::Output> {
            let stack: Stack<V, H> = ebm_io::load_stack(self.path)?;
            self.task.run(stack, self.path)
        }
    }
    let first = ebm_io::read_stack_manifest(path)?.swap_remove(0);
    let info = ebm_io::read_rbm_info(&first)?;
    with_kinds(&info.visible, &info.hidden, &first, Load { path, task })
}

/// Work to do with a loaded stack, generic over its unit types.
trait StackTask {
    type Output;
    fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
        self,
        stack: Stack<V, H>,
        path: &Path,
    ) -> Result<Self::Output>;
}

/// Runs `--steps` iterations of stacked tempering on the stack in `path` (`--sweeps` AGS steps
/// per RBM, then the exchanges of the schedule, default deterministic even/odd, each followed
/// by its exact refresh) with the PT rounds, diagnostics and warnings of the other tempering
/// samplers ([`tempering`]); the samples are the bottom RBM's visible configurations. Under
/// `mpirun -n K` the RBMs are sharded over the K processes by rung, and rank 0, which holds
/// the bottom RBM, returns what one process would; the other ranks return `None`.
pub(super) fn sample(
    args: &SampleArgs,
    ctx: &Context,
    data: Option<ebm_data::Dataset>,
    path: &Path,
) -> Result<Option<SampleOutcome>> {
    struct Run<'a> {
        args: &'a SampleArgs,
        ctx: &'a Context,
        data: Option<ebm_data::Dataset>,
    }
    impl StackTask for Run<'_> {
        type Output = Option<SampleOutcome>;
        fn run<V: UnitLayer<Scalar = f64>, H: UnitLayer<Scalar = f64>>(
            self,
            stack: Stack<V, H>,
            _path: &Path,
        ) -> Result<Option<SampleOutcome>> {
            let Run { args, ctx, data } = self;
            let bottom = stack.bottom().clone();
            let data = match (data, &args.data) {
                (Some(ds), Some(p)) => Some(visible_data(bottom.visible(), ds, p)?),
                _ => None,
            };
            let start = initial_chains(&bottom, args, data.as_ref())?;
            let (schedule, schedule_name) = schedule_of(args.schedule.unwrap_or(ScheduleArg::Deo));
            let mut st = StackedTempering::new(schedule);
            st.pt.kernel.sweeps = args.sweeps;
            let depth = stack.len();
            let ladder = StackLadder::new(stack);
            let state = st.init(&ladder, &start.visible, args.seed, Par::Rayon)?;
            let mut tracer = trace::tracer(args, data.as_ref())?;
            tracer.record(0, &state.rungs()[depth - 1].visible)?;
            let engine = st.engine(&ladder);
            let names = PtNames {
                schedule: schedule_name,
                rung0: "gibbs",
            };
            let Some(TemperedRun {
                target,
                summary: mut pt,
                warnings,
            }) = tempering(args, ctx, (&engine, &ladder), state, &mut tracer, names)?
            else {
                return Ok(None);
            };
            pt.betas = vec![1.0; depth];
            let description = format!("ST ({schedule_name}, {depth} RBMs)");
            let run = SamplerRun::tempered(target.visible, 1.0, args.sweeps, description, pt);
            let mut out = outcome(args, &bottom, run, tracer, warnings)?;
            out.model = format!("stack of {depth} RBMs, bottom {}", out.model);
            Ok(Some(out))
        }
    }
    with_stack(path, Run { args, ctx, data })
}
