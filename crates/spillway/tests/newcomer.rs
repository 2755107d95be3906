//! What a newcomer does right after the quick start, against the real
//! binary (issue 28 §3, §4): the demo prints the console's address and a
//! token, and `spillway status` works at once; `serve --listen` and host
//! names in `listen`; a non-loopback address without client keys is
//! refused by `serve` and `check` alike, with the one setting that allows
//! it; the `/ui` page's advice, followed to the letter, turns the console on.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn tempdir(tag: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("spillway-newcomer-{tag}-{}-{}", std::process::id(), fastrand::u64(..)));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn spillway(dir: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_spillway"));
    cmd.current_dir(dir).env_remove("SPILLWAY_CONFIG").env_remove("SPILLWAY_ADMIN_TOKEN");
    cmd.env("NO_PROXY", "127.0.0.1").env("no_proxy", "127.0.0.1");
    cmd
}

fn run(dir: &Path, args: &[&str]) -> (i32, String) {
    let out = spillway(dir).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    (out.status.code().unwrap_or(-1), text)
}

/// A `spillway serve` child, killed on drop.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn serve(dir: &Path, args: &[&str], port: u16) -> Served {
    // Its log is kept beside the test's files, to read when a test fails.
    let log = std::fs::File::create(dir.join("serve.log")).unwrap();
    let child = spillway(dir).arg("serve").args(args).stdout(Stdio::piped()).stderr(log).spawn().unwrap();
    let served = Served(child);
    for _ in 0..3000 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return served;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    panic!("the gateway never listened on {port}");
}

/// `GET path` over plain HTTP/1.1: the status and body.
fn get(port: u16, path: &str, token: Option<&str>) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let auth = token.map(|t| format!("authorization: Bearer {t}\r\n")).unwrap_or_default();
    write!(s, "GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}connection: close\r\n\r\n").unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    let status = text.split(' ').nth(1).unwrap().parse().unwrap();
    (status, text.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default())
}

#[test]
fn the_demo_shows_its_console_and_status_works_at_once() {
    // No spillway.yaml here: `serve` runs the embedded demo.
    let dir = tempdir("demo");
    let port = free_port();
    let mut served = serve(&dir, &["--listen", &format!("localhost:{port}")], port);
    let mut line = String::new();
    BufReader::new(served.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    assert!(line.contains(&format!("http://127.0.0.1:{port}/ui")), "{line}");
    let token = line.split("loopback only): ").nth(1).unwrap().trim().to_string();
    assert!(token.starts_with("demo-") && token.len() > 20, "{line}");
    let (status, page) = get(port, "/ui", None);
    let log = std::fs::read_to_string(dir.join("serve.log")).unwrap_or_default();
    assert_eq!(status, 200, "{page}\n{log}");
    assert_eq!(get(port, "/admin/state", Some(&token)).0, 200);
    // `spillway status` from the same folder finds the token by itself.
    let (code, out) = run(&dir, &["status", "--url", &format!("http://127.0.0.1:{port}")]);
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("Cascade chat"), "{out}");
    drop(served);
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_public_address_without_client_keys_is_refused_unless_allowed() {
    let dir = tempdir("open");
    let mock = "providers:\n  m:\n    kind: mock\n    models: [{ id: a }]\ncascades:\n  c:\n    models: [m/a]\n";
    std::fs::write(dir.join("open.yaml"), format!("server:\n  listen: 0.0.0.0:4000\n{mock}")).unwrap();
    std::fs::write(dir.join("keys.yaml"), format!("server:\n  listen: 0.0.0.0:4000\n  api_keys: [k]\n{mock}")).unwrap();
    std::fs::write(
        dir.join("allowed.yaml"),
        format!("server:\n  listen: 0.0.0.0:4000\n  allow_unauthenticated: true\n{mock}"),
    )
    .unwrap();
    std::fs::write(dir.join("local.yaml"), mock).unwrap();
    let (code, out) = run(&dir, &["check", "--config", "open.yaml"]);
    assert_eq!(code, 1, "{out}");
    for needle in [
        "server.listen",
        "`0.0.0.0:4000` is not a loopback address",
        "server.api_keys",
        "server.allow_unauthenticated: true",
    ] {
        assert!(out.contains(needle), "missing `{needle}` in:\n{out}");
    }
    for ok in ["keys.yaml", "allowed.yaml", "local.yaml"] {
        let (code, out) = run(&dir, &["check", "--config", ok]);
        assert_eq!(code, 0, "{ok}: {out}");
    }
    // `serve` says the same, before binding anything; for `--listen` too.
    let (code, out) = run(&dir, &["serve", "--config", "open.yaml"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("allow_unauthenticated"), "{out}");
    let (code, out) = run(&dir, &["serve", "--config", "local.yaml", "--listen", "0.0.0.0:4000"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("is not a loopback address") && out.contains("allow_unauthenticated"), "{out}");
    let (code, out) = run(&dir, &["serve", "--config", "local.yaml", "--listen", "nowhere"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("expected host:port"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn the_console_advice_followed_to_the_letter_turns_it_on() {
    let dir = tempdir("ui");
    let port = free_port();
    let base = format!(
        "state:\n  data_dir: {}\nproviders:\n  m:\n    kind: mock\n    models: [{{ id: a }}]\ncascades:\n  c:\n    models: [m/a]\n",
        dir.join("data").display()
    );
    let file = dir.join("g.yaml");
    std::fs::write(&file, format!("server:\n  listen: localhost:{port}\n{base}")).unwrap();
    let served = serve(&dir, &["--config", "g.yaml"], port);
    let (status, page) = get(port, "/ui", None);
    assert_eq!(status, 404);
    // The page's own example, as a person would copy it.
    let example = page.split("<pre>").nth(1).unwrap().split("</pre>").next().unwrap().replace("&quot;", "\"");
    assert!(example.contains("admin_token:"), "{page}");
    std::fs::write(&file, format!("{}\n  listen: localhost:{port}\n{base}", example.trim_end())).unwrap();
    assert!(page.contains("kill -HUP"), "{page}");
    let sent = Command::new("kill").args(["-HUP", &served.0.id().to_string()]).status().unwrap();
    assert!(sent.success());
    let token = "a-long-random-string";
    let mut on = false;
    for _ in 0..500 {
        if get(port, "/ui", None).0 == 200 {
            on = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(on, "the console is still off after the reload");
    assert_eq!(get(port, "/admin/state", Some(token)).0, 200);
    drop(served);
    let _ = std::fs::remove_dir_all(dir);
}
