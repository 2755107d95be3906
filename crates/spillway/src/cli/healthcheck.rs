//! `spillway healthcheck [--url URL]`: exit 0 when a running gateway's
//! `/readyz` answers 200, 1 otherwise (503 while draining, no answer).
//! It is the container image's `HEALTHCHECK`: a distroless image has no
//! curl or wget, and the binary already has an HTTP client.
//!
//! The URL defaults to `/readyz` on the config's listen address (an
//! unspecified address such as `0.0.0.0` probed on loopback), else on
//! `127.0.0.1:8080`. A config that no longer loads does not fail the probe:
//! the running gateway is what is asked.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

/// The whole probe, connection included; Docker's own timeout is longer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(3);

/// `http://HOST:PORT/readyz` for a listen address, loopback for an unspecified one.
fn readyz_url(listen: SocketAddr) -> String {
    let ip = match listen.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    format!("http://{}/readyz", SocketAddr::new(ip, listen.port()))
}

/// Runs the command.
pub fn run(config_path: &Path, url: Option<String>) -> ExitCode {
    let url = url.unwrap_or_else(|| match super::load(config_path) {
        Ok(config) => readyz_url(config.server.listen),
        Err(_) => "http://127.0.0.1:8080/readyz".to_string(),
    });
    let runtime = match super::client_runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let probe = async {
        let client = reqwest::Client::builder().no_proxy().timeout(PROBE_TIMEOUT).build().map_err(|e| e.to_string())?;
        let resp = client.get(&url).send().await.map_err(|e| super::reach_error(&url, &e))?;
        let status = resp.status().as_u16();
        let body: serde_json::Value = resp.json().await.unwrap_or_default();
        let said = body["status"].as_str().unwrap_or("no status").to_string();
        if status == 200 {
            Ok(said)
        } else {
            Err(format!("{url} answered HTTP {status} ({said})"))
        }
    };
    match runtime.block_on(probe) {
        Ok(said) => {
            println!("{said}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn an_unspecified_listen_address_is_probed_on_loopback() {
        let url = |s: &str| super::readyz_url(s.parse().unwrap());
        assert_eq!(url("0.0.0.0:8080"), "http://127.0.0.1:8080/readyz");
        assert_eq!(url("[::]:9000"), "http://[::1]:9000/readyz");
        assert_eq!(url("10.1.2.3:80"), "http://10.1.2.3:80/readyz");
    }
}
