//! Signals against the real binary: a SIGHUP that arrives the moment the
//! listener accepts connections reloads the config instead of killing the
//! process (its default action), because the handler is installed before
//! the listener is bound.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

use std::process::{Command, Stdio};
use std::time::Duration;

/// The tests of this file run one at a time: each waits for *a* listener
/// on its free port, and another test's gateway taking the same port
/// between `free_port` and the bind answered that wait too early — a
/// SIGHUP then reached a process still starting (a rare failure of the
/// first test, seen once).
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn a_sighup_right_after_start_reloads_instead_of_killing() {
    let _serial = one_at_a_time();
    let dir = std::env::temp_dir().join(format!("spillway-sighup-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    for round in 0..5 {
        let port = free_port();
        let config = dir.join(format!("spillway-{round}.yaml"));
        let yaml = format!(
            "server: {{ listen: 127.0.0.1:{port} }}\nstate: {{ data_dir: {} }}\nproviders:\n  m: {{ kind: mock, models: [{{ id: a }}] }}\ncascades:\n  c: {{ models: [m/a] }}\n",
            dir.join("data").display()
        );
        std::fs::write(&config, yaml).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_spillway"))
            .args(["serve", "--config", config.to_str().unwrap()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // The first moment the port accepts a connection.
        let mut up = false;
        for _ in 0..2000 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                up = true;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        assert!(up, "round {round}: the gateway never listened");
        let sent = Command::new("kill").args(["-HUP", &child.id().to_string()]).status().unwrap();
        assert!(sent.success());
        // Still alive and serving a moment later.
        std::thread::sleep(Duration::from_millis(200));
        assert!(child.try_wait().unwrap().is_none(), "round {round}: SIGHUP killed the process");
        assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_ok(), "round {round}: stopped serving");
        let _ = child.kill();
        let _ = child.wait();
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A SIGHUP that arrives while the process is still starting — here while
/// it waits to read its config, which comes through a FIFO so that moment
/// can be held open — must not kill it: the handler is the first thing
/// `main` installs, before the config is read.
#[test]
fn a_sighup_before_the_config_is_read_does_not_kill() {
    let _serial = one_at_a_time();
    let dir = std::env::temp_dir().join(format!("spillway-sighup0-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    let port = free_port();
    let fifo = dir.join("spillway.yaml");
    assert!(Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let yaml = format!(
        "server: {{ listen: 127.0.0.1:{port} }}\nstate: {{ data_dir: {} }}\nproviders:\n  m: {{ kind: mock, models: [{{ id: a }}] }}\ncascades:\n  c: {{ models: [m/a] }}\n",
        dir.join("data").display()
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["serve", "--config", fifo.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the process catches SIGHUP (bit 0 of SigCgt); a build
    // that installs it only after reading the config never does here, and
    // gets the signal anyway after a while.
    let status = format!("/proc/{}/status", child.id());
    let catches_hup = || {
        let text = std::fs::read_to_string(&status).unwrap_or_default();
        let mask = text.lines().find_map(|l| l.strip_prefix("SigCgt:")).map(str::trim).unwrap_or("0");
        u64::from_str_radix(mask, 16).unwrap_or(0) & 1 == 1
    };
    for _ in 0..3000 {
        if catches_hup() {
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let sent = Command::new("kill").args(["-HUP", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    std::thread::sleep(Duration::from_millis(100));
    assert!(child.try_wait().unwrap().is_none(), "a SIGHUP before the config was read killed the process");
    // Now the config; then once more for the reload the held signal
    // causes (Tokio delivers it to the reload job once that listens).
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::write(&fifo, &yaml).unwrap())
    };
    let mut up = false;
    for _ in 0..5000 {
        if let Some(code) = child.try_wait().unwrap() {
            let mut err = String::new();
            std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
            panic!("the process stopped ({code}): {err}");
        }
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            up = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    writer.join().unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(up, "the gateway never listened");
    let _ = std::fs::remove_dir_all(&dir);
}

/// `spillway serve` on a config of `workers` threads on `port`, started the
/// moment its port accepts a connection; its stderr piped.
fn started(dir: &std::path::Path, port: u16, workers: usize) -> std::process::Child {
    let config = dir.join(format!("spillway-{port}.yaml"));
    let yaml = format!(
        "server: {{ listen: 127.0.0.1:{port}, workers: {workers} }}\nstate: {{ data_dir: {} }}\nproviders:\n  m: {{ kind: mock, models: [{{ id: a }}] }}\ncascades:\n  c: {{ models: [m/a] }}\n",
        dir.join("data").display()
    );
    std::fs::write(&config, yaml).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_spillway"))
        .args(["serve", "--config", config.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..2000 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("the gateway never listened on {port}");
}

#[test]
fn the_drain_is_logged_once_not_once_per_serving_thread() {
    let _serial = one_at_a_time();
    let dir = std::env::temp_dir().join(format!("spillway-drainlog-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    // SIGTERM the moment the port accepts: the handler is already there.
    let child = started(&dir, free_port(), 3);
    let sent = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let out = child.wait_with_output().unwrap();
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(log.matches("Shutting down").count(), 1, "{log}");
    assert_eq!(log.matches("All connections closed").count(), 1, "{log}");
    let _ = std::fs::remove_dir_all(&dir);
}
