//! The MPI transport end to end: `mpirun -n N ebm-mpi-check` on 1, 2 and 3 processes (more
//! than this machine's cores: oversubscribed) writes byte-identical outputs, each equal to the
//! one-process run. Needs the feature `mpi` and `mpirun` on the PATH (`.ci/run` installs MPICH).
#![cfg(feature = "mpi")]

use std::process::Command;

fn check_on(ranks: usize, out: &std::path::Path) -> Vec<u8> {
    let result = Command::new("mpirun")
        .args(["-n", &ranks.to_string()])
        .arg(env!("CARGO_BIN_EXE_ebm-mpi-check"))
        .arg(out)
        .output()
        .expect("mpirun runs (install MPICH: apt-get install mpich libmpich-dev)");
    let stdout = String::from_utf8_lossy(&result.stdout);
    let stderr = String::from_utf8_lossy(&result.stderr);
    assert!(
        result.status.success(),
        "{ranks} ranks: {}\n{stdout}\n{stderr}",
        result.status
    );
    assert!(
        stdout.contains(&format!("{ranks} ranks:")) && stdout.contains("identical"),
        "{stdout}"
    );
    std::fs::read(out).expect("rank 0 wrote the outputs")
}

#[test]
fn outputs_are_byte_identical_on_one_two_and_three_processes() {
    let dir = std::env::temp_dir().join(format!("ebm-mpi-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let one = check_on(1, &dir.join("1.bin"));
    assert!(one.len() > 100_000, "the check wrote {} bytes", one.len());
    for ranks in [2, 3] {
        let other = check_on(ranks, &dir.join(format!("{ranks}.bin")));
        assert!(other == one, "{ranks} ranks wrote other bytes than 1");
    }
    std::fs::remove_dir_all(&dir).ok();
}
