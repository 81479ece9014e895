//! Parallel tempering: ladders of distributions on one state space, the replica-exchange move
//! written once over the [`Exchange`] trait, and the PT loop with its swap schedules
//! (Kadan, Syed and Wøien, *Lifted parallel tempering for training RBMs*, Béreux et al., *Fast training and sampling of RBMs*).

mod diagnostics;
mod ladder;
mod mixed;
mod pt;
mod run;
mod rung0;
mod selection;
mod stacked;

pub use diagnostics::{IndexProcess, PtDiagnostics};
pub use ladder::{
    Concat, Exchange, KeptProducts, Ladder, ReferenceLadder, Rung, SplitExchange,
    TemperatureLadder, TemperatureSpec, TrajectoryLadder, even_betas, geometric_betas,
    kept_checkpoints, pair_log_accept, validate_betas, validate_betas_to_one,
};
pub use mixed::MixedLadder;
pub use pt::{ParallelTempering, PtInfo, PtState, RungLink, Side, SwapSchedule};
pub use run::{INDEX_SYSTEMS, PtReport, PtSummary, PtWarning, THERMALISATION_TAU_EXP};
pub use rung0::{Rung0, Rung0Limits};
pub use selection::{
    CheckpointSelector, Selection, equalised_schedule, estimated_swap_acceptance, select_rungs,
    swap_acceptance_with_error,
};
pub use stacked::{StInfo, StackLadder, StackedTempering};
