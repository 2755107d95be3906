//! The `spillway` binary: parse the command line, run the command.

use std::process::ExitCode;

// glibc's allocator showed up at ~12% of the gateway's CPU under load
// (small JSON maps and header buffers churn per request); mimalloc's
// thread-local free lists cut that. Its 2.x line (the crate's `v2`
// feature): the `mimalloc` crate asks for every block with an alignment,
// and mimalloc 3 serves an aligned request whose size class is not a
// power of two by over-allocating from the next class whenever its own
// page's free list is empty — and only that class's generic path, which
// such a request no longer reaches, refills the list, so the size stays
// on the slow path for good (3.7 blocks a passed-through request, ~100
// instructions each more; `docs/PERFORMANCE.md`). mimalloc 2 takes any
// alignment up to 16 bytes as met by every block.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // First of all: a SIGHUP (a reload request) that arrives while the
    // process starts must not kill it, which is the signal's default action.
    spillway::cli::hold_hangups();
    spillway::cli::main()
}
