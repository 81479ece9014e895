//! The processes a command runs on: this one alone, or the ranks of `mpirun -n K` when the
//! program was given the MPI transport ([`crate::run_program`]; the root package's feature
//! `mpi`).

use ebm_mpi::{Collective, Solo};

use crate::error::{CliError, Result};

/// How a program joins the MPI world: initialises MPI and returns its world, or `None` when
/// MPI was already initialised in this process. The root package passes
/// `ebm_mpi_transport::Mpi::init` (its feature `mpi`) to [`crate::run_program`].
pub type MpiInit = fn() -> Option<Box<dyn Collective>>;

/// The processes of this run: the MPI world when an MPI launcher started the program and it
/// has the MPI transport (`mpi`), otherwise this process alone.
///
/// # Errors
/// When a launcher started several processes of a program without the transport (built
/// without the feature `mpi`): each would run the whole command and write the same outputs.
pub(crate) fn world(mpi: Option<MpiInit>) -> Result<Box<dyn Collective>> {
    let launched = ebm_mpi::launch();
    if let (Some(_), Some(init)) = (launched, mpi) {
        return init().ok_or_else(|| CliError::new("MPI was already initialised in this process"));
    }
    if let Some(l) = launched.filter(ebm_mpi::Launch::is_several) {
        return Err(CliError::new(format!(
            "this ebm is {}, but it was built without the feature `mpi`: each process would \
             run the whole command and write the same outputs. Build it with `cargo build \
             --release --features mpi` (see the book's chapter on scale) or run it without \
             the launcher",
            l.one_of()
        )));
    }
    Ok(Box::new(Solo))
}

/// This process alone, for a program that never runs sharded (a custom model's command line,
/// [`crate::custom`]): `what` refuses to run as one of several processes of an MPI launcher,
/// each of which would run the whole command and write the same outputs.
pub(crate) fn one_process(what: &str) -> Result<Box<dyn Collective>> {
    Ok(Box::new(ebm_mpi::one_process(what, ebm_mpi::launch())?))
}
