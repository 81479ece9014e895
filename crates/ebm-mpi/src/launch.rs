//! Whether a launcher (`mpirun`, `srun`) started this process as one of several, read from
//! the variables launchers set; for programs that must know before (or without) joining MPI.

use std::fmt;

use crate::Solo;

/// The variables through which launchers tell each process how many processes they started:
/// MPICH's Hydra and Intel MPI (whose `mpirun` is Hydra), and Slurm's PMI-2; Open MPI;
/// MVAPICH2; Slurm's `srun`, the tasks of the job step (not `SLURM_NTASKS`, which a batch
/// script, one task of a job of several, also sees).
const LAUNCH_SIZE: [&str; 4] = [
    "PMI_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "MV2_COMM_WORLD_SIZE",
    "SLURM_STEP_NUM_TASKS",
];

/// Variables that bound the number of processes from below where no size variable is set:
/// a PMIx launcher (`srun --mpi=pmix`, `prterun`) gives only this process's rank, `PMIX_RANK`
/// (the size is available through the PMIx library alone), and a rank `r` means at least
/// `r + 1` processes; Hydra's `MPI_LOCALNRANKS` counts the processes on this node.
const LAUNCH_AT_LEAST: [(&str, usize); 2] = [("PMIX_RANK", 1), ("MPI_LOCALNRANKS", 0)];

/// What the environment says about the processes a launcher started, this one among them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Launch {
    /// How many processes (a lower bound unless `exact`).
    pub processes: usize,
    /// Whether `processes` is the number of processes, not a lower bound.
    pub exact: bool,
    /// The variable that said so.
    pub variable: &'static str,
}

/// The launch that the variables `var` describe (`None` outside a launcher).
pub fn launch_in(var: impl Fn(&str) -> Option<String>) -> Option<Launch> {
    let number = |v: &str| var(v)?.trim().parse::<usize>().ok();
    let exact = LAUNCH_SIZE.iter().find_map(|&variable| {
        Some(Launch {
            processes: number(variable)?,
            exact: true,
            variable,
        })
    });
    exact.or_else(|| {
        LAUNCH_AT_LEAST.iter().find_map(|&(variable, add)| {
            Some(Launch {
                processes: number(variable)? + add,
                exact: false,
                variable,
            })
        })
    })
}

/// The launch described by this process's environment (`None` outside a launcher).
pub fn launch() -> Option<Launch> {
    launch_in(|v| std::env::var(v).ok())
}

impl Launch {
    /// Several processes (at least two).
    pub fn is_several(&self) -> bool {
        self.processes > 1
    }

    /// "one of N processes started by an MPI launcher (...; VAR is set)".
    pub fn one_of(&self) -> String {
        format!(
            "one of {}{} processes started by an MPI launcher (mpirun, srun; {} is set)",
            if self.exact { "" } else { "at least " },
            self.processes,
            self.variable
        )
    }
}

/// A program that runs in one process was started as one of several, each of which would do
/// the whole work and write the same outputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotOneProcess {
    /// What refuses to run (e.g. "a custom model's command line").
    pub what: String,
    /// The launch that started it.
    pub launch: Launch,
}

impl fmt::Display for NotOneProcess {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} runs in one process, and this is {}: run it without the launcher",
            self.what,
            self.launch.one_of()
        )
    }
}

impl std::error::Error for NotOneProcess {}

/// This process alone, for `what`, a program that never runs sharded: refuses when `launch`
/// started several processes.
///
/// # Errors
/// [`NotOneProcess`] under a launch of several processes.
pub fn one_process(what: &str, launch: Option<Launch>) -> Result<Solo, NotOneProcess> {
    match launch.filter(Launch::is_several) {
        Some(launch) => Err(NotOneProcess {
            what: what.to_string(),
            launch,
        }),
        None => Ok(Solo),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launch described by the variables `set` alone.
    fn launch(set: &[(&str, &str)]) -> Option<Launch> {
        launch_in(|v| {
            set.iter()
                .find(|(k, _)| *k == v)
                .map(|(_, x)| x.to_string())
        })
    }

    fn exactly(variable: &'static str, processes: usize) -> Option<Launch> {
        Some(Launch {
            processes,
            exact: true,
            variable,
        })
    }

    /// A custom command line under a launcher of several processes refuses, naming itself and
    /// the launch (not the feature `mpi`, which would not help); alone, or as the one process
    /// of `mpirun -n 1`, it runs.
    #[test]
    fn a_program_that_never_shards_refuses_several_processes() {
        let Err(e) = one_process(
            "a custom model's command line",
            launch(&[("PMI_SIZE", "3")]),
        ) else {
            panic!("a custom command line ran as one of 3 processes");
        };
        let e = e.to_string();
        assert!(
            e.contains("a custom model's command line runs in one process")
                && e.contains("one of 3 processes")
                && e.contains("PMI_SIZE")
                && !e.contains("feature"),
            "{e}"
        );
        for alone in [&[][..], &[("PMI_SIZE", "1")][..]] {
            let world = one_process("x", launch(alone)).expect("runs");
            assert_eq!(crate::Collective::size(&world), 1);
        }
    }

    #[test]
    fn no_launcher_variable_is_no_launch() {
        assert_eq!(launch(&[]), None);
        assert_eq!(launch(&[("PMI_SIZE", "many")]), None);
    }

    #[test]
    fn mpich_hydra_and_intel_mpi_set_pmi_size() {
        assert_eq!(launch(&[("PMI_SIZE", "3")]), exactly("PMI_SIZE", 3));
    }

    #[test]
    fn open_mpi_sets_ompi_comm_world_size() {
        assert_eq!(
            launch(&[("OMPI_COMM_WORLD_SIZE", "4"), ("PMIX_RANK", "2")]),
            exactly("OMPI_COMM_WORLD_SIZE", 4)
        );
    }

    #[test]
    fn mvapich_sets_mv2_comm_world_size() {
        assert_eq!(
            launch(&[("MV2_COMM_WORLD_SIZE", "2")]),
            exactly("MV2_COMM_WORLD_SIZE", 2)
        );
    }

    /// `srun -n 2` sets the step's task count; a batch script of a 4-task job sees
    /// `SLURM_NTASKS=4` but is one process, and is no launch.
    #[test]
    fn slurm_srun_sets_the_step_tasks_and_a_batch_script_is_one_process() {
        assert_eq!(
            launch(&[("SLURM_STEP_NUM_TASKS", "2"), ("SLURM_NTASKS", "4")]),
            exactly("SLURM_STEP_NUM_TASKS", 2)
        );
        assert_eq!(
            launch(&[("SLURM_NTASKS", "4"), ("SLURM_PROCID", "0")]),
            None
        );
    }

    /// PMIx gives ranks, not the size: rank 2 is one of at least 3 processes, rank 0 of at
    /// least 1.
    #[test]
    fn pmix_sets_only_the_rank() {
        let at_least = |processes| {
            Some(Launch {
                processes,
                exact: false,
                variable: "PMIX_RANK",
            })
        };
        assert_eq!(launch(&[("PMIX_RANK", "2")]), at_least(3));
        assert_eq!(launch(&[("PMIX_RANK", "0")]), at_least(1));
    }

    #[test]
    fn hydra_sets_the_processes_on_this_node() {
        assert_eq!(
            launch(&[("MPI_LOCALNRANKS", "2")]),
            Some(Launch {
                processes: 2,
                exact: false,
                variable: "MPI_LOCALNRANKS",
            })
        );
    }
}
