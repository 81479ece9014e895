//! The processes a command runs on: this one alone, or the ranks of `mpirun -n K` when the
//! program was built with the feature `mpi`.

use ebm_mpi::{Collective, Solo};

use crate::error::{CliError, Result};

/// The variables through which MPI launchers tell each process how many processes they
/// started: MPICH's Hydra, then Open MPI.
const LAUNCH_SIZE: [&str; 2] = ["PMI_SIZE", "OMPI_COMM_WORLD_SIZE"];

/// How many processes an MPI launcher started, this one among them (`None` outside a
/// launcher).
fn launched_processes() -> Option<usize> {
    LAUNCH_SIZE
        .iter()
        .find_map(|v| std::env::var(v).ok()?.trim().parse().ok())
}

/// The processes of this run: the MPI world when an MPI launcher started the program and it
/// was built with the feature `mpi`, otherwise this process alone.
///
/// # Errors
/// When a launcher started several processes of a program built without the feature `mpi`:
/// each would run the whole command and write the same outputs.
pub(crate) fn world() -> Result<Box<dyn Collective>> {
    let launched = launched_processes();
    #[cfg(feature = "mpi")]
    {
        if launched.is_some() {
            let world = ebm_mpi::Mpi::init()
                .ok_or_else(|| CliError::new("MPI was already initialised in this process"))?;
            return Ok(Box::new(world));
        }
    }
    if let Some(n) = launched.filter(|&n| n > 1) {
        return Err(CliError::new(format!(
            "this ebm is one of {n} processes started by an MPI launcher (mpirun), but it was \
             built without the feature `mpi`: each process would run the whole command and \
             write the same outputs. Build it with `cargo build --release --features mpi` \
             (see the book's chapter on scale) or run it without mpirun"
        )));
    }
    Ok(Box::new(Solo))
}
