//! `server.listen` and what serving on it asks for: a host name or an IP
//! with a port, and client keys on anything but loopback.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::OnceLock;

/// `host:port` as an address: an IP (`127.0.0.1:8080`, `[::1]:8080`),
/// `localhost`, or another host name resolved now (the first IPv4 address,
/// else the first). Used by the config and by `serve --listen`.
pub(crate) fn parse_listen(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(a) = text.parse::<SocketAddr>() {
        return Ok(a);
    }
    let wrong = || format!("expected host:port such as 127.0.0.1:8080 or localhost:4000, got `{text}`");
    let (host, port) = text.rsplit_once(':').ok_or_else(wrong)?;
    let port: u16 = port.parse().map_err(|_| wrong())?;
    if host.is_empty() || host.contains(['/', ' ']) {
        return Err(wrong());
    }
    if host.eq_ignore_ascii_case("localhost") {
        return Ok(SocketAddr::from(([127, 0, 0, 1], port)));
    }
    let found: Vec<SocketAddr> =
        (host, port).to_socket_addrs().map_err(|e| format!("cannot resolve `{host}`: {e}"))?.collect();
    found
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| found.first())
        .copied()
        .ok_or_else(|| format!("`{host}` resolves to no address"))
}

/// Why serving on `listen` must be refused: a non-loopback address without
/// client keys, unless `server.allow_unauthenticated` says so.
pub(crate) fn exposed_without_keys(listen: SocketAddr, has_keys: bool, allowed: bool) -> Option<String> {
    (!listen.ip().is_loopback() && !has_keys && !allowed).then(|| {
        format!(
            "`{listen}` is not a loopback address and neither `server.api_keys` nor `keys` is set: anyone who \
             reaches it could spend your providers' keys. Set `server.api_keys` or `keys`, or \
             `server.allow_unauthenticated: true` to serve it without keys anyway"
        )
    })
}

/// The admin token of `generate_admin_token`: 128 random bits, made once
/// per process, so a reload keeps it.
pub(crate) fn generated_admin_token() -> String {
    static TOKEN: OnceLock<String> = OnceLock::new();
    TOKEN
        .get_or_init(|| {
            let mut bytes = [0u8; 16];
            if getrandom::fill(&mut bytes).is_err() {
                bytes = std::array::from_fn(|_| fastrand::u8(..));
            }
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("demo-{hex}")
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_addresses() {
        assert_eq!(parse_listen("localhost:4000").unwrap(), "127.0.0.1:4000".parse().unwrap());
        assert_eq!(parse_listen("[::1]:80").unwrap(), "[::1]:80".parse().unwrap());
        assert!(parse_listen("nope").unwrap_err().contains("expected host:port"));
        assert!(parse_listen("localhost:http").is_err());
        assert!(exposed_without_keys("0.0.0.0:80".parse().unwrap(), false, false)
            .unwrap()
            .contains("allow_unauthenticated"));
        assert!(exposed_without_keys("0.0.0.0:80".parse().unwrap(), true, false).is_none());
        assert!(exposed_without_keys("0.0.0.0:80".parse().unwrap(), false, true).is_none());
        assert!(exposed_without_keys("127.0.0.1:80".parse().unwrap(), false, false).is_none());
        assert_eq!(generated_admin_token(), generated_admin_token(), "one per process");
    }
}
