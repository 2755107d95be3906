//! The `spillway` binary: parse the command line, run the command.

use std::process::ExitCode;

// glibc's allocator showed up at ~12% of the gateway's CPU under load
// (small JSON maps and header buffers churn per request); mimalloc's
// thread-local free lists cut that.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    spillway::cli::main()
}
