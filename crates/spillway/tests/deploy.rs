//! The deployment files under `deploy/` and the `Dockerfile` against the
//! binary they run: the probes, ports, paths and mounts they name are the
//! ones `spillway serve` really uses, and the binary started with the
//! Kubernetes manifest's arguments, config and environment (paths moved
//! under a temporary directory, the port to a free one, Redis to one the
//! test starts) becomes ready, reloads an updated ConfigMap by itself, and
//! drains on SIGTERM. What needs tools outside Rust (hadolint,
//! `docker-compose config`, `systemd-analyze verify`) is in
//! `scripts/deploy-check.sh`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::disallowed_methods)] // tests: fail loudly

mod redis_support;

use redis_support::instance::spawn;
use redis_support::{free_port, TempDir};
use serde_yaml_ng::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(repo().join(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn yaml(rel: &str) -> Value {
    serde_yaml_ng::from_str(&read(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

fn text(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v:?}"))
}

/// The kustomization's resources by kind, and the config its ConfigMap is made from.
struct Kube {
    objects: HashMap<String, Value>,
    /// ConfigMap name → (key, file under deploy/).
    config_maps: HashMap<String, (String, String)>,
}

impl Kube {
    fn load() -> Self {
        let k = yaml("deploy/kustomization.yaml");
        let mut objects = HashMap::new();
        for r in k["resources"].as_sequence().unwrap() {
            let doc = yaml(&format!("deploy/{}", text(r)));
            objects.insert(text(&doc["kind"]).to_string(), doc);
        }
        let mut config_maps = HashMap::new();
        for g in k["configMapGenerator"].as_sequence().unwrap() {
            let file = text(&g["files"][0]).to_string();
            config_maps.insert(text(&g["name"]).to_string(), (file.clone(), file));
        }
        assert_eq!(k["generatorOptions"]["disableNameSuffixHash"], Value::Bool(true), "updated in place, not rolled");
        Self { objects, config_maps }
    }

    fn pod(&self) -> &Value {
        &self.objects["Deployment"]["spec"]["template"]
    }

    fn container(&self) -> &Value {
        &self.pod()["spec"]["containers"][0]
    }

    /// The container's environment: the Secret's values, then its own `env`.
    fn env(&self) -> HashMap<String, String> {
        let mut env: HashMap<String, String> = HashMap::new();
        let secret = &self.objects["Secret"];
        let from = self.container()["envFrom"][0]["secretRef"]["name"].clone();
        assert_eq!(from, secret["metadata"]["name"], "the pod reads the Secret");
        for (k, v) in secret["stringData"].as_mapping().unwrap() {
            env.insert(text(k).to_string(), text(v).to_string());
        }
        for e in self.container()["env"].as_sequence().unwrap() {
            env.insert(text(&e["name"]).to_string(), text(&e["value"]).to_string());
        }
        env
    }

    /// The mount path of the volume named `name`, and the volume.
    fn mount(&self, name: &str) -> (String, &Value) {
        let m = self.container()["volumeMounts"].as_sequence().unwrap().iter().find(|m| m["name"] == name).unwrap();
        assert!(m.get("subPath").is_none(), "{name}: a subPath mount never sees ConfigMap updates");
        let v = self.pod()["spec"]["volumes"].as_sequence().unwrap().iter().find(|v| v["name"] == name).unwrap();
        (text(&m["mountPath"]).to_string(), v)
    }

    fn args(&self) -> Vec<String> {
        self.container()["args"].as_sequence().unwrap().iter().map(|a| text(a).to_string()).collect()
    }
}

fn config_with(env: &HashMap<String, String>) -> spillway::config::Config {
    let lookup = |name: &str| env.get(name).cloned();
    spillway::config::load_str(&read("deploy/spillway.yaml"), None, &lookup).unwrap_or_else(|e| panic!("{e}"))
}

/// `128Mi` → bytes.
fn quantity(q: &str) -> u64 {
    let (n, unit) = q.split_at(q.find(|c: char| !c.is_ascii_digit()).unwrap_or(q.len()));
    n.parse::<u64>().unwrap()
        * match unit {
            "Ki" => 1 << 10,
            "Mi" => 1 << 20,
            "Gi" => 1 << 30,
            other => panic!("unit {other}"),
        }
}

#[test]
fn the_manifests_probe_serve_and_mount_what_the_binary_uses() {
    let kube = Kube::load();
    let config = config_with(&kube.env());
    let port = config.server.listen.port();
    let c = kube.container();
    // The config file: args → the mounted ConfigMap → deploy/spillway.yaml.
    let args = kube.args();
    assert_eq!(args[..2], ["serve", "--config"]);
    let (config_dir, volume) = kube.mount("config");
    let (key, _) = &kube.config_maps[text(&volume["configMap"]["name"])];
    assert_eq!(args[2], format!("{config_dir}/{key}"));
    // Ports and probes.
    let http = &c["ports"][0];
    assert_eq!((http["name"].as_str(), http["containerPort"].as_u64()), (Some("http"), Some(u64::from(port))));
    assert!(config.server.listen.ip().is_unspecified(), "reachable from outside the container");
    for (probe, path) in [("readinessProbe", "/readyz"), ("livenessProbe", "/healthz"), ("startupProbe", "/healthz")] {
        assert_eq!(c[probe]["httpGet"]["path"].as_str(), Some(path), "{probe}");
        assert_eq!(c[probe]["httpGet"]["port"].as_str(), Some("http"), "{probe}");
    }
    // The data directory is the data volume.
    assert_eq!(config.state.data_dir, PathBuf::from(kube.mount("data").0));
    // Draining fits in the pod's grace period.
    let grace = kube.pod()["spec"]["terminationGracePeriodSeconds"].as_u64().unwrap();
    assert!(config.server.drain_delay > Duration::ZERO, "behind a Service the pod drains before closing");
    assert!((config.server.drain_delay + config.server.shutdown_grace).as_secs() < grace);
    // Requests from the measured RSS (docs/PERFORMANCE.md: 78 MiB with 1,000 open streams).
    assert!(quantity(text(&c["resources"]["requests"]["memory"])) >= 96 << 20);
    assert!(quantity(text(&c["resources"]["limits"]["memory"])) >= 256 << 20);
    // The Service and the PodDisruptionBudget select these pods.
    let labels = &kube.pod()["metadata"]["labels"];
    assert_eq!(&kube.objects["Service"]["spec"]["selector"], labels);
    assert_eq!(text(&kube.objects["Service"]["spec"]["ports"][0]["targetPort"]), "http");
    assert_eq!(&kube.objects["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"], labels);
    let replicas = kube.objects["Deployment"]["spec"]["replicas"].as_u64().unwrap();
    assert!((1..replicas).contains(&kube.objects["PodDisruptionBudget"]["spec"]["minAvailable"].as_u64().unwrap()));

    // The image: the same config path, data volume, port and health check.
    let dockerfile = read("Dockerfile");
    let line = |prefix: &str| dockerfile.lines().find(|l| l.starts_with(prefix)).unwrap_or_else(|| panic!("{prefix}"));
    assert!(line("ENV SPILLWAY_CONFIG=").contains(&args[2]));
    assert_eq!(line("VOLUME"), format!("VOLUME [\"{}\"]", config.state.data_dir.display()));
    assert_eq!(line("EXPOSE"), format!("EXPOSE {port}"));
    assert!(dockerfile.contains(&format!("\"healthcheck\", \"--url\", \"http://127.0.0.1:{port}/readyz\"")));
    assert!(line("USER").ends_with("65532:65532"), "non-root");

    // Compose: the file and the data volume at the same places.
    let compose = yaml("deploy/compose.yaml");
    for name in ["spillway-a", "spillway-b"] {
        let s = &compose["services"][name];
        let mounts: Vec<&str> = s["volumes"].as_sequence().unwrap().iter().map(text).collect();
        assert!(mounts.contains(&format!("./spillway.yaml:{}:ro", args[2]).as_str()), "{mounts:?}");
        assert!(mounts.iter().any(|m| m.ends_with(&format!(":{}", config.state.data_dir.display()))), "{mounts:?}");
        assert!(text(&s["ports"][0]).ends_with(&format!(":{port}")));
    }

    // systemd: the same arguments, its state directory is data_dir, reload is SIGHUP.
    let unit = read("deploy/systemd/spillway.service");
    let value =
        |key: &str| unit.lines().find_map(|l| l.strip_prefix(&format!("{key}="))).unwrap_or_else(|| panic!("{key}"));
    assert_eq!(value("ExecStart"), format!("/usr/local/bin/spillway {}", args.join(" ")));
    assert_eq!(Path::new("/var/lib").join(value("StateDirectory")), config.state.data_dir);
    assert_eq!(value("ExecReload"), "/bin/kill -HUP $MAINPID");
    for hardening in ["DynamicUser=yes", "ProtectSystem=strict", "NoNewPrivileges=yes"] {
        assert!(unit.lines().any(|l| l == hardening), "{hardening}");
    }
}

/// A `spillway serve` child, killed on drop.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_spillway")
}

/// `spillway healthcheck --url URL` (the image's HEALTHCHECK): whether it exited 0.
fn healthcheck(url: &str) -> bool {
    Command::new(bin())
        .args(["healthcheck", "--url", url])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap()
        .success()
}

/// Writes `content` as a ConfigMap volume does: `dir/KEY` → `..data/KEY`, `..data` → `..vN`.
fn configmap_version(dir: &Path, key: &str, n: u32, content: &str) {
    let v = dir.join(format!("..v{n}"));
    std::fs::create_dir_all(&v).unwrap();
    std::fs::write(v.join(key), content).unwrap();
    std::os::unix::fs::symlink(format!("..v{n}"), dir.join("..tmp")).unwrap();
    std::fs::rename(dir.join("..tmp"), dir.join("..data")).unwrap();
    if !dir.join(key).exists() {
        std::os::unix::fs::symlink(format!("..data/{key}"), dir.join(key)).unwrap();
    }
}

async fn wait(limit: Duration, mut cond: impl FnMut() -> bool) -> bool {
    let deadline = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < deadline {
        if cond() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_runs_with_the_manifests_arguments_config_and_environment() {
    let Some(redis) = redis_support::own_redis("the_binary_runs_with_the_manifests_arguments").await else { return };
    let kube = Kube::load();
    let mut env = kube.env();
    env.insert("SPILLWAY_REDIS_URL".into(), redis.url());
    let config = config_with(&env);
    // The container's paths under a temporary root, its port on a free one.
    let root = TempDir::new("deploy");
    let (port, listen) = (free_port(), config.server.listen.to_string());
    let (config_dir, data_dir) = (kube.mount("config").0, config.state.data_dir.display().to_string());
    let moved = |s: &str| s.replace(&config_dir, &root.join("etc")).replace(&data_dir, &root.join("data"));
    let content = moved(&read("deploy/spillway.yaml")).replace(&listen, &format!("127.0.0.1:{port}"));
    let etc = PathBuf::from(root.join("etc"));
    std::fs::create_dir_all(&etc).unwrap();
    std::fs::create_dir_all(root.join("data")).unwrap(); // the emptyDir volume
    configmap_version(&etc, "spillway.yaml", 1, &content);
    let args: Vec<String> = kube.args().iter().map(|a| moved(a)).collect();
    let log = root.0.join("stderr.log");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut served = Served(spawn(&args, Some(&env), &log));
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();
    let probe = |path: &str| format!("http://127.0.0.1:{port}{path}");
    let (ready, live) = (probe("/readyz"), probe("/healthz"));
    assert!(wait(Duration::from_secs(15), || healthcheck(&ready)).await, "never ready:\n{}", logs());
    assert!(healthcheck(&live) || reqwest::get(&live).await.is_ok_and(|r| r.status() == 200));

    // A ConfigMap update reaches the running process by itself.
    configmap_version(&etc, "spillway.yaml", 2, &content.replace("  chat:\n", "  assistant:\n"));
    let reloaded = wait(Duration::from_secs(15), || logs().contains("Config reloaded.")).await;
    assert!(reloaded, "the updated ConfigMap was not reloaded:\n{}", logs());
    assert!(logs().contains("cascades.assistant: added"), "{}", logs());

    // SIGTERM: /readyz answers 503 while draining, then the process exits 0.
    let pid = served.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let draining = wait(Duration::from_secs(3), || !healthcheck(&ready)).await;
    assert!(draining, "/readyz still 200 after SIGTERM:\n{}", logs());
    let r = reqwest::Client::new().get(&ready).send().await.unwrap();
    assert_eq!(r.status(), 503, "connections are still taken while draining");
    let grace = Duration::from_secs(kube.pod()["spec"]["terminationGracePeriodSeconds"].as_u64().unwrap());
    let exited = wait(grace, || served.0.try_wait().unwrap().is_some()).await;
    assert!(exited, "did not exit within terminationGracePeriodSeconds:\n{}", logs());
    assert!(served.0.wait().unwrap().success());
    drop(redis);
}

/// SIGTERM: `/readyz` turns 503 at once, connections are still taken for
/// `server.drain_delay`, then the listener closes, and a stream in flight
/// finishes within `server.shutdown_grace`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_turns_readyz_503_first_and_lets_a_stream_in_flight_finish() {
    let root = TempDir::new("drain");
    let port = free_port();
    let yaml = format!(
        "server:\n  listen: 127.0.0.1:{port}\n  drain_delay: 1s\n  shutdown_grace: 10s\nstate:\n  data_dir: {}\n\
         providers:\n  m:\n    kind: mock\n    models:\n      - {{ id: fast }}\n      \
         - {{ id: slow, behavior: {{ first_token: 50ms, tokens_per_s: 10, reply_tokens: 25 }} }}\n\
         cascades:\n  fast: {{ models: [m/fast] }}\n  slow: {{ models: [m/slow] }}\n",
        root.join("data")
    );
    let config = root.0.join("spillway.yaml");
    std::fs::write(&config, yaml).unwrap();
    let log = root.0.join("stderr.log");
    let mut served = Served(spawn(&["serve", "--config", config.to_str().unwrap()], None, &log));
    let logs = || std::fs::read_to_string(&log).unwrap_or_default();
    let base = format!("http://127.0.0.1:{port}");
    assert!(wait(Duration::from_secs(15), || healthcheck(&format!("{base}/readyz"))).await, "{}", logs());
    let client = reqwest::Client::builder().no_proxy().build().unwrap();
    let chat = |cascade: &str, stream: bool| {
        let body =
            serde_json::json!({"model": cascade, "stream": stream, "messages": [{"role": "user", "content": "Hi"}]});
        client.post(format!("{base}/v1/chat/completions")).json(&body).send()
    };
    let slow = chat("slow", true);
    let in_flight = tokio::spawn(async move { slow.await.unwrap().text().await.unwrap() });
    tokio::time::sleep(Duration::from_millis(300)).await;

    let pid = served.0.id().to_string();
    let signalled = tokio::time::Instant::now();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let draining = wait(Duration::from_millis(500), || !healthcheck(&format!("{base}/readyz"))).await;
    assert!(draining, "/readyz turns 503 at once:\n{}", logs());
    let r = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(r.json::<serde_json::Value>().await.unwrap()["status"], "draining");
    let fresh = chat("fast", false).await.unwrap();
    assert_eq!(fresh.status(), 200, "new requests are still served during drain_delay");
    assert!(signalled.elapsed() < Duration::from_secs(1));
    let closed = wait(Duration::from_secs(3), || std::net::TcpStream::connect(("127.0.0.1", port)).is_err()).await;
    assert!(closed && signalled.elapsed() >= Duration::from_secs(1), "the listener closes after drain_delay");
    let text = in_flight.await.unwrap();
    assert!(text.contains("[DONE]"), "the stream in flight finished: {text}");
    let exited = wait(Duration::from_secs(10), || served.0.try_wait().unwrap().is_some()).await;
    assert!(exited && served.0.wait().unwrap().success(), "{}", logs());
}
