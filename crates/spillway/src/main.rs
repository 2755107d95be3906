//! The `spillway` binary: parse the command line, run the command.

use std::process::ExitCode;

// glibc's allocator showed up at ~12% of the gateway's CPU under load
// (small JSON maps and header buffers churn per request); mimalloc's
// thread-local free lists cut that.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // First of all: a SIGHUP (a reload request) that arrives while the
    // process starts must not kill it, which is the signal's default action.
    spillway::cli::hold_hangups();
    spillway::cli::main()
}
