//! The `ebm` command line; see `ebm --help` and the crate `ebm-cli`.

fn main() -> std::process::ExitCode {
    let program = ebm_cli::Program {
        mpi: mpi(),
        // Set by build.rs in a git checkout of the workspace.
        commit: option_env!("EBM_GIT_COMMIT"),
    };
    ebm_cli::run_program(std::env::args_os(), program)
}

/// The MPI transport, with the feature `mpi`: `mpirun -n K ebm ...` runs sharded.
#[cfg(feature = "mpi")]
fn mpi() -> Option<ebm_cli::MpiInit> {
    Some(|| {
        let world = ebm_mpi_transport::Mpi::init()?;
        Some(Box::new(world) as Box<dyn ebm_mpi::Collective>)
    })
}

/// Without the feature `mpi`, a program started as one of several MPI processes refuses.
#[cfg(not(feature = "mpi"))]
fn mpi() -> Option<ebm_cli::MpiInit> {
    None
}
