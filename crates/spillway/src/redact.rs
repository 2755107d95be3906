//! Redaction of upstream text before it reaches a client or a log.
//!
//! An upstream's error body and messages are passed on (a 400/422 goes back
//! to the client as is; a 5xx message lands in the `all_models_failed`
//! list and in the attempt log), and an upstream that echoes the request
//! headers back would hand the provider's key to whoever reads them. Every
//! attempt error leaves its provider through [`Redactor::attempt_error`]
//! (in `Provider::call`; a stream's errors as the cascade reads them, in its
//! one layer over every stream), which replaces with `***`:
//!
//! - every secret of the provider's config (`api_key`, `headers` values,
//!   `auth_key`, `iam_token`, and the password and query values of its
//!   `base_url`), also when an excerpt cut it short at its end;
//! - whatever follows `Bearer`/`Basic` or an `Authorization` name: tokens
//!   the gateway obtained at run time (GigaChat's OAuth token) are in no
//!   config.
//!
//! The error's structure stays: a JSON body keeps its type, code, param and
//! message, with only the secret text inside its strings replaced.

use crate::config::ProviderConfig;
use crate::outcome::{AttemptError, Failure};
use serde_json::Value;
use std::borrow::Cow;

/// What replaces a secret.
pub const MASK: &str = "***";

/// A secret shorter than this is not looked for: it would match ordinary
/// words (and a key that short protects nothing anyway).
const MIN_SECRET: usize = 6;

/// The secrets of one provider, and the redaction rules.
#[derive(Debug, Default, Clone)]
pub struct Redactor {
    /// Longest first, so a secret containing another is masked whole.
    secrets: Vec<String>,
}

impl Redactor {
    /// Redacts `secrets` (and the `Authorization` forms, always).
    pub fn new<I, S>(secrets: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut secrets: Vec<String> =
            secrets.into_iter().map(Into::into).filter(|s| s.chars().count() >= MIN_SECRET).collect();
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        secrets.dedup();
        Self { secrets }
    }

    /// The redactor of a provider: every secret its config holds.
    pub fn for_provider(config: &ProviderConfig) -> Self {
        let aws = config.aws.as_ref();
        let mut secrets: Vec<String> = [&config.api_key, &config.auth_key, &config.iam_token]
            .into_iter()
            .chain(aws.map(|a| &a.secret_access_key))
            .chain(aws.map(|a| &a.session_token))
            .flatten()
            .chain(config.headers.iter().map(|(_, v)| v))
            .map(|s| s.expose().to_owned())
            .collect();
        if let Some(url) = config.base_url.as_deref().and_then(|u| url::Url::parse(u).ok()) {
            secrets.extend(url.password().map(str::to_owned));
            secrets.extend(url.query_pairs().map(|(_, v)| v.into_owned()));
        }
        Self::new(secrets)
    }

    /// `text` with every secret and `Authorization` value masked.
    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let mut out = Cow::Borrowed(text);
        for secret in &self.secrets {
            if out.contains(secret.as_str()) {
                out = Cow::Owned(out.replace(secret.as_str(), MASK));
            }
            if let Some(cut) = cut_secret(&out, secret) {
                let mut owned = out.into_owned();
                owned.replace_range(cut, MASK);
                out = Cow::Owned(owned);
            }
        }
        match mask_credentials(&out) {
            Some(masked) => Cow::Owned(masked),
            None => out,
        }
    }

    /// A JSON body with every string redacted (its bytes unchanged when
    /// nothing was secret); a body that is not JSON, redacted as text.
    pub fn redact_body(&self, body: &bytes::Bytes) -> bytes::Bytes {
        match serde_json::from_slice::<Value>(body) {
            Ok(mut v) => {
                if self.redact_value(&mut v) {
                    serde_json::to_vec(&v).map(bytes::Bytes::from).unwrap_or_else(|_| body.clone())
                } else {
                    body.clone()
                }
            }
            Err(_) => match self.redact(&String::from_utf8_lossy(body)) {
                Cow::Borrowed(_) if std::str::from_utf8(body).is_ok() => body.clone(),
                text => bytes::Bytes::from(text.into_owned()),
            },
        }
    }

    /// Redacts the strings of `v` in place; whether any changed.
    fn redact_value(&self, v: &mut Value) -> bool {
        match v {
            Value::String(s) => match self.redact(s) {
                Cow::Borrowed(_) => false,
                Cow::Owned(r) => {
                    *s = r;
                    true
                }
            },
            Value::Array(items) => items.iter_mut().fold(false, |changed, i| self.redact_value(i) | changed),
            Value::Object(map) => map.values_mut().fold(false, |changed, i| self.redact_value(i) | changed),
            _ => false,
        }
    }

    /// An attempt error with its detail and any body it carries redacted.
    pub fn attempt_error(&self, mut e: AttemptError) -> AttemptError {
        if let Cow::Owned(d) = self.redact(&e.detail) {
            e.detail = d;
        }
        if let Failure::InvalidRequest { body: Some(body), .. } = &mut e.failure {
            *body = self.redact_body(body);
        }
        e
    }
}

/// A URL as it may be shown (`spillway check`, logs): credentials in its
/// userinfo and its whole query string (`?key=…`) become `***`, the rest
/// stays so an operator can still tell which endpoint it is. Text that is
/// not a URL is shown as `***` entirely: it cannot be taken apart safely.
pub fn display_url(raw: &str) -> String {
    let Ok(url) = url::Url::parse(raw) else {
        return MASK.to_owned();
    };
    let mut out = format!("{}://", url.scheme());
    if !url.username().is_empty() || url.password().is_some() {
        out.push_str(MASK);
        out.push('@');
    }
    out.push_str(url.host_str().unwrap_or_default());
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    // `Url` writes `/` for an empty path; keep what was written.
    if url.path() != "/" || raw.trim_end_matches(['?', '#']).ends_with('/') {
        out.push_str(url.path());
    }
    if url.query().is_some() {
        out.push('?');
        out.push_str(MASK);
    }
    out
}

/// Where `text` ends with the start of `secret` (at least [`MIN_SECRET`]
/// characters of it, and perhaps an ellipsis after): an excerpt cut there
/// holds a prefix of the key that plain matching would miss.
fn cut_secret(text: &str, secret: &str) -> Option<std::ops::Range<usize>> {
    let body = text.trim_end_matches(['…', '.']).trim_end();
    let mut ends = secret.char_indices().map(|(i, _)| i).skip(MIN_SECRET).collect::<Vec<_>>();
    ends.reverse();
    ends.into_iter().find_map(|end| {
        let prefix = secret.get(..end)?;
        body.ends_with(prefix).then(|| body.len() - prefix.len()..body.len())
    })
}

/// The characters of a credential token (RFC 6750's `b64token`, and `%`).
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || "-._~+/=%".contains(c)
}

/// Whether a word after `Bearer`/`Basic` looks like a credential rather
/// than prose ("basic validation failed"): long enough, and with a digit, a
/// punctuation character of tokens, or a capital inside it.
fn looks_like_token(word: &str) -> bool {
    word.len() >= 8
        && (word.contains(|c: char| c.is_ascii_digit() || "-._~+/=%".contains(c))
            || word.chars().skip(1).any(|c| c.is_ascii_uppercase()))
}

/// Masks the value after `Bearer`/`Basic`/`Api-Key` and after an
/// `Authorization` name (`Authorization: x`, `"authorization":"x"`,
/// `authorization=x`); `None` when there is none.
fn mask_credentials(text: &str) -> Option<String> {
    let lower = text.to_ascii_lowercase();
    let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
    for word in ["bearer", "basic", "api-key", "authorization"] {
        let mut from = 0;
        while let Some(at) = lower.get(from..).and_then(|l| l.find(word)).map(|i| i + from) {
            from = at + word.len();
            let before = lower[..at].chars().next_back();
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
                continue; // part of a longer word
            }
            let rest = &text[from..];
            let skip = if word == "authorization" {
                // The separators of a header, a JSON member or a query pair,
                // then an optional scheme (masked on its own round).
                let seps = &rest[..rest.len() - rest.trim_start_matches([' ', '\t', '"', '\'', ':', '=']).len()];
                if !seps.contains([':', '=']) {
                    continue; // prose: "the Authorization header"
                }
                seps.len()
            } else {
                let blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
                if blanks == 0 {
                    continue;
                }
                blanks
            };
            let start = from + skip;
            let len = text[start..].find(|c: char| !is_token_char(c)).unwrap_or(text.len() - start);
            let token = &text[start..start + len];
            // `Authorization: Bearer x`: the scheme is not the secret.
            let scheme = ["bearer", "basic", "api-key"].contains(&token.to_ascii_lowercase().as_str());
            let credential = if word == "authorization" { len > 0 } else { looks_like_token(token) };
            if credential && !scheme && token != MASK {
                spans.push(start..start + len);
            }
        }
    }
    if spans.is_empty() {
        return None;
    }
    spans.sort_by_key(|s| s.start);
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for s in spans {
        if s.start < at {
            continue;
        }
        out.push_str(&text[at..s.start]);
        out.push_str(MASK);
        at = s.end;
    }
    out.push_str(&text[at..]);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r() -> Redactor {
        Redactor::new(["sk-test-SECRET-1234567890", "gc-auth-key-abcdef"])
    }

    #[test]
    fn configured_secrets_are_masked_wherever_they_are() {
        assert_eq!(r().redact("your key sk-test-SECRET-1234567890 is bad"), "your key *** is bad");
        assert_eq!(r().redact("x-api-key=gc-auth-key-abcdef;"), "x-api-key=***;");
        // An excerpt that cut the key short.
        assert_eq!(r().redact("echo: sk-test-SECRET-12…"), "echo: ***…");
        assert_eq!(r().redact("nothing here"), Cow::Borrowed("nothing here"));
        // Too short to look for.
        assert_eq!(Redactor::new(["abc"]).redact("abc abcdef"), "abc abcdef");
    }

    #[test]
    fn authorization_values_are_masked_without_being_configured() {
        let r = Redactor::default();
        assert_eq!(r.redact("Authorization: Bearer eyJ.abc-DEF_1"), "Authorization: Bearer ***");
        assert_eq!(r.redact(r#"{"authorization":"Basic dXNlcjpwYXNz"}"#), r#"{"authorization":"Basic ***"}"#);
        assert_eq!(r.redact("authorization=tok123&x=1"), "authorization=***&x=1");
        assert_eq!(r.redact("got bearer abc.def123, want none"), "got bearer ***, want none");
        assert_eq!(r.redact("Api-Key AQVNxyz123"), "Api-Key ***");
        // Words that only contain the names, names without a value, prose.
        for prose in [
            "unauthorization debearer x1234567890",
            "missing Authorization header",
            "basic validation failed",
            "Bearer tokens are required",
        ] {
            assert_eq!(r.redact(prose), Cow::Borrowed(prose));
        }
    }

    #[test]
    fn urls_are_shown_without_their_credentials() {
        for (raw, shown) in [
            ("https://api.groq.com/openai/v1", "https://api.groq.com/openai/v1"),
            ("https://user:pa55@proxy.example:8443/v1", "https://***@proxy.example:8443/v1"),
            ("https://token@host/v1", "https://***@host/v1"),
            ("https://host/v1?key=abc&x=1", "https://host/v1?***"),
            ("redis://:s3cret@10.0.0.5:6380/2", "redis://***@10.0.0.5:6380/2"),
            ("redis://127.0.0.1:6379", "redis://127.0.0.1:6379"),
            ("rediss://default:pw@cache.example/0?protocol=resp3", "rediss://***@cache.example/0?***"),
            ("not a url with pw", "***"),
        ] {
            assert_eq!(display_url(raw), shown, "{raw}");
        }
    }

    #[test]
    fn a_json_body_keeps_its_shape() {
        let body = bytes::Bytes::from_static(
            br#"{"error":{"message":"bad header Authorization: Bearer sk-test-SECRET-1234567890","type":"invalid_request_error","code":"bad","param":"messages"}}"#,
        );
        let v: Value = serde_json::from_slice(&r().redact_body(&body)).unwrap();
        assert_eq!(v["error"]["message"], "bad header Authorization: Bearer ***");
        assert_eq!(
            (&v["error"]["type"], &v["error"]["code"], &v["error"]["param"]),
            (&Value::from("invalid_request_error"), &Value::from("bad"), &Value::from("messages"))
        );
        let clean = bytes::Bytes::from_static(br#"{ "error": {"message": "fine"} }"#);
        assert_eq!(r().redact_body(&clean), clean, "an unchanged body keeps its bytes");
    }

    #[test]
    fn attempt_errors_lose_detail_and_body_secrets() {
        let body = bytes::Bytes::from_static(br#"{"error":{"message":"sk-test-SECRET-1234567890"}}"#);
        let e = AttemptError::new(
            Failure::InvalidRequest { status: 400, body: Some(body) },
            "HTTP 400: sk-test-SECRET-1234567890",
        );
        let e = r().attempt_error(e);
        assert_eq!(e.detail, "HTTP 400: ***");
        let Failure::InvalidRequest { body: Some(body), .. } = e.failure else { panic!() };
        assert_eq!(&body[..], br#"{"error":{"message":"***"}}"#);
    }
}
