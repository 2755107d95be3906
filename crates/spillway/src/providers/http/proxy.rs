//! Outbound HTTP proxies for the request path's client (this folder's
//! [`Endpoint`](super::Endpoint)), from the conventional environment
//! variables, read once when a provider is built (`openai_compat`):
//!
//! - `https_proxy` / `HTTPS_PROXY` for `https` upstreams, `http_proxy` /
//!   `HTTP_PROXY` for `http` ones, `all_proxy` / `ALL_PROXY` for either
//!   (the lower-case name wins; an empty value counts as unset);
//! - `no_proxy` / `NO_PROXY`: a comma-separated list of hosts that go
//!   direct — `*` for all, a domain (`example.com` or `.example.com`
//!   matches it and its subdomains), an IP address or a CIDR block
//!   (`10.0.0.0/8`); loopback hosts (`localhost`, `127.0.0.0/8`, `::1`)
//!   always go direct.
//!
//! The proxy is an `http://[user:password@]host[:port]` URL (a URL without
//! a scheme means `http://`; the port defaults to 80). An `https`
//! upstream is reached through a `CONNECT` tunnel ([`super::tunnel`]), TLS
//! running end to end inside it; an `http` one gets its requests in absolute form. Credentials
//! go as `Proxy-Authorization: Basic` and are never logged or shown.

use base64::Engine as _;
use http::HeaderValue;
use std::net::IpAddr;

/// The variables' reader (the process environment, or a test's map).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// An HTTP proxy.
#[derive(Clone)]
pub struct Proxy {
    pub host: String,
    pub port: u16,
    /// `Basic …` when the URL carried credentials.
    pub auth: Option<HeaderValue>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self}")
    }
}

impl std::fmt::Display for Proxy {
    /// `http://host:port`, without the credentials.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.host.contains(':') {
            write!(f, "http://[{}]:{}", self.host, self.port)
        } else {
            write!(f, "http://{}:{}", self.host, self.port)
        }
    }
}

/// The first non-empty value among `names`.
fn var(env: Lookup<'_>, names: &[&str]) -> Option<(String, String)> {
    names.iter().find_map(|n| env(n).filter(|v| !v.trim().is_empty()).map(|v| ((*n).to_string(), v)))
}

/// The proxy for requests to `url` (`None`: go direct). `Err` names the
/// variable whose value cannot be used (without its credentials).
pub fn for_url(url: &url::Url, env: Lookup<'_>) -> Result<Option<Proxy>, String> {
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Ok(None),
    };
    if is_loopback(&host) {
        return Ok(None);
    }
    if let Some((_, list)) = var(env, &["no_proxy", "NO_PROXY"]) {
        if bypassed(&host, &list) {
            return Ok(None);
        }
    }
    let names: &[&str] = match url.scheme() {
        "https" => &["https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"],
        _ => &["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"],
    };
    let Some((name, value)) = var(env, names) else { return Ok(None) };
    parse(value.trim()).map(Some).map_err(|e| format!("{name}: {e}"))
}

/// Parses a proxy URL.
fn parse(value: &str) -> Result<Proxy, String> {
    let with_scheme = if value.contains("://") { value.to_string() } else { format!("http://{value}") };
    let url = url::Url::parse(&with_scheme).map_err(|e| format!("not a proxy URL ({e})"))?;
    if url.scheme() != "http" {
        return Err(format!(
            "`{}://` proxies are not supported on the request path (an http:// proxy is; HTTPS to the upstream \
             runs through its CONNECT tunnel)",
            url.scheme()
        ));
    }
    let host = match url.host() {
        Some(url::Host::Domain(d)) => d.to_string(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => ip.to_string(),
        None => return Err("the proxy URL has no host".into()),
    };
    let auth = if url.username().is_empty() {
        None
    } else {
        let decode = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
        let pair = format!("{}:{}", decode(url.username()), decode(url.password().unwrap_or_default()));
        let value = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair));
        let mut header = HeaderValue::from_str(&value).map_err(|_| "invalid proxy credentials".to_string())?;
        header.set_sensitive(true);
        Some(header)
    };
    Ok(Proxy { host, port: url.port().unwrap_or(80), auth })
}

fn is_loopback(host: &str) -> bool {
    host == "localhost" || host.ends_with(".localhost") || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// Whether `host` matches an entry of a `NO_PROXY` list.
fn bypassed(host: &str, list: &str) -> bool {
    let ip = host.parse::<IpAddr>().ok();
    list.split(',').map(|e| e.trim().to_ascii_lowercase()).filter(|e| !e.is_empty()).any(|entry| {
        if entry == "*" {
            return true;
        }
        if let Some(ip) = ip {
            return match entry.split_once('/') {
                Some((net, bits)) => in_block(ip, net, bits),
                None => entry.trim_matches(|c| c == '[' || c == ']').parse::<IpAddr>() == Ok(ip),
            };
        }
        // A port in the entry does not narrow it (as curl does).
        let name = entry.rsplit_once(':').filter(|(_, p)| p.parse::<u16>().is_ok()).map_or(entry.as_str(), |(h, _)| h);
        let name = name.trim_start_matches('.');
        host == name || host.strip_suffix(name).is_some_and(|rest| rest.ends_with('.'))
    })
}

/// Whether `ip` is inside `net/bits`.
fn in_block(ip: IpAddr, net: &str, bits: &str) -> bool {
    let (Ok(net), Ok(bits)) = (net.parse::<IpAddr>(), bits.parse::<u32>()) else { return false };
    match (ip, net) {
        (IpAddr::V4(a), IpAddr::V4(n)) if bits <= 32 => {
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(a) & mask == u32::from(n) & mask
        }
        (IpAddr::V6(a), IpAddr::V6(n)) if bits <= 128 => {
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(a) & mask == u128::from(n) & mask
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn proxy_for(url: &str, vars: &[(&str, &str)]) -> Result<Option<Proxy>, String> {
        let map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
        for_url(&url::Url::parse(url).unwrap(), &|name: &str| map.get(name).cloned())
    }

    fn shown(r: Result<Option<Proxy>, String>) -> Option<String> {
        r.unwrap().map(|p| p.to_string())
    }

    #[test]
    fn each_scheme_takes_its_own_variable_then_all_proxy() {
        let vars = [("https_proxy", "http://s:3128"), ("HTTP_PROXY", "plain:8080"), ("ALL_PROXY", "http://all:1")];
        assert_eq!(shown(proxy_for("https://api.groq.com/v1", &vars)).as_deref(), Some("http://s:3128"));
        assert_eq!(shown(proxy_for("http://vllm.internal:8000/v1", &vars)).as_deref(), Some("http://plain:8080"));
        let only_all = [("ALL_PROXY", "http://all:1"), ("https_proxy", " ")];
        assert_eq!(shown(proxy_for("https://api.groq.com/v1", &only_all)).as_deref(), Some("http://all:1"));
        assert_eq!(shown(proxy_for("https://api.groq.com/v1", &[])), None);
        // The lower-case name wins, as curl reads it.
        let both = [("https_proxy", "http://lower:1"), ("HTTPS_PROXY", "http://upper:2")];
        assert_eq!(shown(proxy_for("https://x.example/v1", &both)).as_deref(), Some("http://lower:1"));
        assert_eq!(proxy_for("https://x.example/v1", &[("https_proxy", "http://p")]).unwrap().unwrap().port, 80);
    }

    #[test]
    fn no_proxy_and_loopback_go_direct() {
        let proxy = ("https_proxy", "http://p:3128");
        let direct = |url: &str, list: &str| shown(proxy_for(url, &[proxy, ("NO_PROXY", list)])).is_none();
        assert!(direct("https://api.openai.com/v1", "*"));
        assert!(direct("https://api.openai.com/v1", "openai.com"));
        assert!(direct("https://api.openai.com/v1", " .openai.com , other"));
        assert!(direct("https://openai.com/v1", ".openai.com"));
        assert!(direct("https://api.openai.com:443/v1", "api.openai.com:8443"));
        assert!(!direct("https://notopenai.com/v1", "openai.com"));
        assert!(direct("https://10.1.2.3/v1", "10.0.0.0/8"));
        assert!(!direct("https://11.1.2.3/v1", "10.0.0.0/8"));
        assert!(direct("https://192.168.0.7/v1", "192.168.0.7"));
        assert!(direct("https://[fd00::5]/v1", "fd00::/8"));
        assert!(!direct("https://api.groq.com/v1", "openai.com,10.0.0.0/8"));
        for local in ["http://localhost:8000/v1", "http://127.0.0.1:11434/v1", "http://[::1]:8000/v1"] {
            let vars = [("http_proxy", "http://p:3128"), ("https_proxy", "http://p:3128")];
            assert!(shown(proxy_for(local, &vars)).is_none(), "{local}");
        }
    }

    #[test]
    fn credentials_become_basic_auth_and_are_never_shown() {
        let p = proxy_for("https://x.example/v1", &[("https_proxy", "http://al%40ice:s3cr%3At@proxy.corp:3128")])
            .unwrap()
            .unwrap();
        let expected = format!("Basic {}", base64::engine::general_purpose::STANDARD.encode("al@ice:s3cr:t"));
        assert_eq!(p.auth.as_ref().unwrap().to_str().unwrap(), expected);
        assert!(p.auth.as_ref().unwrap().is_sensitive());
        assert_eq!(p.to_string(), "http://proxy.corp:3128");
        assert!(!format!("{p:?}").contains("s3cr"));
    }

    #[test]
    fn unusable_proxies_are_errors_that_name_the_variable_not_the_secret() {
        let e = proxy_for("https://x.example/v1", &[("HTTPS_PROXY", "socks5://user:hunter2@p:1080")]).unwrap_err();
        assert!(e.starts_with("HTTPS_PROXY: `socks5://` proxies are not supported"), "{e}");
        assert!(!e.contains("hunter2"));
        let e = proxy_for("http://x.example/v1", &[("http_proxy", "http://")]).unwrap_err();
        assert!(e.starts_with("http_proxy: "), "{e}");
    }
}
