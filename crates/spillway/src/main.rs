//! The `spillway` binary: parse the command line, run the command.

use std::process::ExitCode;

fn main() -> ExitCode {
    spillway::cli::main()
}
