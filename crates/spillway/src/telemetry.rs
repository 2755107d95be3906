//! Logging setup: `tracing` to stderr, human-readable on a terminal, JSON
//! with `SPILLWAY_LOG_FORMAT=json`, level from `SPILLWAY_LOG` or `RUST_LOG`
//! (default `info`).

use std::io::IsTerminal;
use tracing_subscriber::EnvFilter;

/// Installs the global subscriber; a second call is a no-op.
pub fn init() {
    init_with_default("info");
}

/// `filter` with `redis=error` added unless it names the `redis` crate:
/// the cluster client warns at every failed reconnect to every node, and
/// the link already says once that Redis is down and once that it is back.
fn quiet_redis(filter: &str) -> String {
    if filter.split(',').any(|d| d.trim_start().starts_with("redis")) {
        filter.to_string()
    } else {
        format!("{filter},redis=error")
    }
}

/// [`init`] with another level when neither variable sets one (`spillway
/// drill` reports alerts itself, so it logs errors only).
pub fn init_with_default(level: &str) {
    let filter = std::env::var("SPILLWAY_LOG")
        .ok()
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| level.to_string());
    let filter = EnvFilter::try_new(quiet_redis(&filter)).unwrap_or_else(|_| EnvFilter::new(level));
    let json = std::env::var("SPILLWAY_LOG_FORMAT").is_ok_and(|f| f.eq_ignore_ascii_case("json"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let result =
        if json { builder.json().try_init() } else { builder.with_ansi(std::io::stderr().is_terminal()).try_init() };
    // Already installed (tests): keep the first.
    let _ = result;
}

/// The id of one client request: the client's `x-request-id` when it sent
/// a usable one, else one made here. It names the request in every log
/// line about it (the `request` span's `request_id` field), in its
/// response headers, in the handoff item it may become, and in the calls
/// made upstream for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(std::sync::Arc<str>);

impl RequestId {
    /// The longest client id taken as is; a longer one is replaced.
    pub const MAX_LEN: usize = 128;

    /// The client's id when it is 1..=128 visible ASCII characters (what
    /// can go back in a header and into logs unescaped), else a new one.
    pub fn from_client(value: Option<&[u8]>) -> Self {
        match value {
            Some(v) if !v.is_empty() && v.len() <= Self::MAX_LEN && v.iter().all(|b| b.is_ascii_graphic()) => {
                Self(String::from_utf8_lossy(v).into())
            }
            _ => Self::generate(),
        }
    }

    /// A new random id: `req_` and 32 hex digits (the form Anthropic's
    /// clients know from its `request-id`).
    pub fn generate() -> Self {
        Self::of_words(fastrand::u64(..), fastrand::u64(..))
    }

    /// `req_` and the two words in hex, written without the formatter
    /// (a tenth of its cost, on every request).
    fn of_words(hi: u64, lo: u64) -> Self {
        let mut id = *b"req_00000000000000000000000000000000";
        id[4..20].copy_from_slice(&crate::digits::hex_word(hi));
        id[20..].copy_from_slice(&crate::digits::hex_word(lo));
        // Only ASCII was written: the conversion cannot fail.
        Self(std::str::from_utf8(&id).unwrap_or("req_0").into())
    }

    /// The id.
    /// The id, shared (kept without a copy).
    pub fn shared(&self) -> std::sync::Arc<str> {
        self.0.clone()
    }

    /// The id.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a handler learned about a request that its error response
/// carries, written where it is known and read by the server when the
/// response goes out: the id, how many upstream calls were made, and when
/// a model of the cascade will be let back (`Retry-After`). Travels in the
/// request's extensions.
#[derive(Debug)]
pub struct RequestNotes {
    /// The request's id.
    pub id: RequestId,
    /// Upstream calls made; `u32::MAX` while none were counted.
    attempts: std::sync::atomic::AtomicU32,
    /// Seconds until a model may answer again; 0 when unknown.
    retry_after_s: std::sync::atomic::AtomicU64,
    /// The client connection it came on (none for in-process calls): a
    /// streamed answer puts its deadline there.
    link: Option<std::sync::Arc<crate::client_link::ClientLink>>,
    /// The OpenAI rate-limit headers of a virtual key's standing, set at
    /// admission and sent on the answer whatever it is.
    rate_headers: std::sync::OnceLock<Vec<(&'static str, String)>>,
    /// The request's journal, when the request log or traces are on.
    journal: std::sync::OnceLock<std::sync::Arc<crate::journal::Journal>>,
}

impl RequestNotes {
    /// Notes of a request with this id.
    pub fn new(id: RequestId) -> std::sync::Arc<Self> {
        Self::on(id, None)
    }

    /// Notes of a request with this id that came on the connection `link`.
    pub fn on(id: RequestId, link: Option<std::sync::Arc<crate::client_link::ClientLink>>) -> std::sync::Arc<Self> {
        std::sync::Arc::new(Self {
            id,
            attempts: std::sync::atomic::AtomicU32::new(u32::MAX),
            retry_after_s: std::sync::atomic::AtomicU64::new(0),
            link,
            rate_headers: std::sync::OnceLock::new(),
            journal: std::sync::OnceLock::new(),
        })
    }

    /// Keeps the request's journal (the first one given).
    pub fn set_journal(&self, journal: std::sync::Arc<crate::journal::Journal>) {
        let _ = self.journal.set(journal);
    }

    /// The request's journal, when it has one.
    pub fn journal(&self) -> Option<&std::sync::Arc<crate::journal::Journal>> {
        self.journal.get()
    }

    /// The client connection the request came on, when it came on one.
    pub fn link(&self) -> Option<&std::sync::Arc<crate::client_link::ClientLink>> {
        self.link.as_ref()
    }

    /// Records the upstream calls made.
    pub fn set_attempts(&self, n: u32) {
        self.attempts.store(n, std::sync::atomic::Ordering::Relaxed);
    }

    /// The upstream calls recorded; 0 when none were.
    pub fn attempts(&self) -> u32 {
        match self.attempts.load(std::sync::atomic::Ordering::Relaxed) {
            u32::MAX => 0,
            n => n,
        }
    }

    /// Records when a model will be let back, in whole seconds (at least 1).
    pub fn set_retry_after(&self, d: std::time::Duration) {
        let s = d.as_millis().div_ceil(1000).max(1);
        self.retry_after_s.store(u64::try_from(s).unwrap_or(u64::MAX), std::sync::atomic::Ordering::Relaxed);
    }

    /// Records a key's rate-limit headers (the first call wins).
    pub fn set_rate_headers(&self, headers: Vec<(&'static str, String)>) {
        let _ = self.rate_headers.set(headers);
    }

    /// The key's rate-limit headers, if any.
    pub fn rate_headers(&self) -> &[(&'static str, String)] {
        self.rate_headers.get().map_or(&[], Vec::as_slice)
    }

    /// The `Retry-After` seconds recorded, if any.
    pub fn retry_after_s(&self) -> Option<u64> {
        match self.retry_after_s.load(std::sync::atomic::Ordering::Relaxed) {
            0 => None,
            s => Some(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RequestId;

    #[test]
    fn a_usable_client_id_is_kept_and_others_replaced() {
        assert_eq!(RequestId::from_client(Some(b"abc-123")).as_str(), "abc-123");
        for bad in [&b""[..], b"has space", b"\x01ctl", &[b'a'; 129]] {
            let id = RequestId::from_client(Some(bad));
            let hex = id.as_str().strip_prefix("req_").unwrap();
            assert_eq!(hex.len(), 32, "{bad:?}");
            assert!(hex.bytes().all(|b| b.is_ascii_hexdigit()));
        }
        assert_ne!(RequestId::generate(), RequestId::generate());
        for (hi, lo) in [(0, 0), (0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210), (u64::MAX, 1)] {
            assert_eq!(RequestId::of_words(hi, lo).as_str(), format!("req_{hi:016x}{lo:016x}"));
        }
    }

    #[test]
    fn the_redis_clients_reconnect_warnings_are_quiet_unless_asked_for() {
        assert_eq!(super::quiet_redis("info"), "info,redis=error");
        assert_eq!(super::quiet_redis("info,redis=debug"), "info,redis=debug");
    }
}
