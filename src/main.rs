//! The `ebm` command line; see `ebm --help` and the crate `ebm-cli`.

fn main() -> std::process::ExitCode {
    ebm_cli::run(std::env::args_os())
}
