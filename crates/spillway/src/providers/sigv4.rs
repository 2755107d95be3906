//! AWS Signature Version 4 for Bedrock's requests (round3.md §3.5, as
//! botocore signs them): the canonical request, the string to sign, the
//! key derived from the secret by four HMAC-SHA256 steps, and the
//! `Authorization` header.
//!
//! Written by hand on `ring` (already the TLS stack's crypto) rather than
//! pulling in the AWS SDK's `aws-sigv4` and its dependency tree for one
//! header; checked against AWS's published test-suite vectors
//! (`get-vanilla`, `get-vanilla-query-order-key-case`, `post-vanilla`,
//! `get-utf8`) in the tests below.
//!
//! Per attempt, right before it is sent: the Bedrock adapter signs the
//! method, the URL, the headers it sends (`content-type`, `host`,
//! `x-amz-date`, `x-amz-security-token` for temporary credentials) and the
//! body's SHA-256, and adds the result. The secret never leaves this
//! module; the header names only the key id.

use crate::secret::Secret;
use ring::{digest, hmac};
use std::time::SystemTime;

/// AWS credentials: from the environment (`AWS_ACCESS_KEY_ID`,
/// `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`) or the provider's config.
#[derive(Debug, Clone)]
pub struct Credentials {
    pub access_key_id: Secret,
    pub secret_access_key: Secret,
    /// Temporary credentials' token, sent as `x-amz-security-token`.
    pub session_token: Option<Secret>,
}

/// What is signed for: credentials, region and service.
#[derive(Debug, Clone)]
pub struct Signer {
    pub credentials: Credentials,
    pub region: String,
    pub service: &'static str,
}

/// The headers a signed request carries beyond its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// `x-amz-date`: `20150830T123600Z`.
    pub amz_date: String,
    /// `x-amz-security-token`, for temporary credentials.
    pub security_token: Option<String>,
    /// `Authorization: AWS4-HMAC-SHA256 Credential=…, SignedHeaders=…, Signature=…`.
    pub authorization: String,
}

/// One request as it is signed.
#[derive(Debug, Clone, Copy)]
pub struct Request<'a> {
    pub method: &'a str,
    /// The `host` header as sent (`host:port` for a port that is not the
    /// scheme's).
    pub host: &'a str,
    /// The path as sent on the wire (already percent-encoded: it is encoded
    /// once more, as botocore does for every service but S3).
    pub path: &'a str,
    /// The query, without `?`.
    pub query: &'a str,
    /// Headers to sign besides `host`, `x-amz-date` and the token
    /// (`content-type`).
    pub headers: &'a [(&'a str, &'a str)],
    pub body: &'a [u8],
}

/// Characters SigV4 leaves unencoded (RFC 3986's unreserved set).
const UNRESERVED: &percent_encoding::AsciiSet =
    &percent_encoding::NON_ALPHANUMERIC.remove(b'-').remove(b'_').remove(b'.').remove(b'~');
/// The same, keeping `/` (the canonical URI's segments).
const PATH: &percent_encoding::AsciiSet = &UNRESERVED.remove(b'/');

impl Signer {
    /// Signs `req` at `now`.
    pub fn sign(&self, req: &Request<'_>, now: SystemTime) -> Signed {
        self.sign_at(req, &amz_date(now))
    }

    /// Signs `req` for the time `amz_date` names (`20150830T123600Z`): what
    /// a test checking a recorded request's signature needs.
    pub fn sign_at(&self, req: &Request<'_>, amz_date: &str) -> Signed {
        let Request { method, host, path, query, headers, body } = *req;
        let amz_date = amz_date.to_owned();
        let date = amz_date.get(..8).unwrap_or_default();
        let token = self.credentials.session_token.as_ref().map(|t| t.expose().to_owned());
        let mut signed: Vec<(String, String)> = headers
            .iter()
            .map(|(k, v)| (k.to_ascii_lowercase(), v.split_whitespace().collect::<Vec<_>>().join(" ")))
            .collect();
        signed.push(("host".into(), host.to_owned()));
        signed.push(("x-amz-date".into(), amz_date.clone()));
        if let Some(t) = &token {
            signed.push(("x-amz-security-token".into(), t.clone()));
        }
        signed.sort();
        let names = signed.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
        let mut canonical = format!("{method}\n{}\n{}\n", canonical_uri(path), canonical_query(query));
        for (k, v) in &signed {
            canonical.push_str(k);
            canonical.push(':');
            canonical.push_str(v);
            canonical.push('\n');
        }
        canonical.push('\n');
        canonical.push_str(&names);
        canonical.push('\n');
        canonical.push_str(&hex(digest::digest(&digest::SHA256, body).as_ref()));
        let scope = format!("{date}/{}/{}/aws4_request", self.region, self.service);
        let to_sign = format!(
            "AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}",
            hex(digest::digest(&digest::SHA256, canonical.as_bytes()).as_ref())
        );
        let key = self.signing_key(date);
        let signature = hex(hmac::sign(&key, to_sign.as_bytes()).as_ref());
        let authorization = format!(
            "AWS4-HMAC-SHA256 Credential={}/{scope}, SignedHeaders={names}, Signature={signature}",
            self.credentials.access_key_id.expose()
        );
        Signed { amz_date, security_token: token, authorization }
    }

    /// `kSigning` for `date` (`YYYYMMDD`): HMAC chain from `"AWS4" + secret`.
    fn signing_key(&self, date: &str) -> hmac::Key {
        let secret = format!("AWS4{}", self.credentials.secret_access_key.expose());
        let step = |key: &[u8], data: &str| hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes());
        let k_date = step(secret.as_bytes(), date);
        let k_region = step(k_date.as_ref(), &self.region);
        let k_service = step(k_region.as_ref(), self.service);
        let k_signing = step(k_service.as_ref(), "aws4_request");
        hmac::Key::new(hmac::HMAC_SHA256, k_signing.as_ref())
    }
}

/// The path encoded once more (only unreserved characters and `/` kept).
fn canonical_uri(path: &str) -> String {
    let path = if path.is_empty() { "/" } else { path };
    percent_encoding::utf8_percent_encode(path, PATH).to_string()
}

/// Query pairs decoded, RFC 3986-encoded, sorted by key then value.
fn canonical_query(query: &str) -> String {
    let mut pairs: Vec<(String, String)> = query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let enc = |s: &str| {
                let raw = percent_encoding::percent_decode_str(s).decode_utf8_lossy();
                percent_encoding::utf8_percent_encode(&raw, UNRESERVED).to_string()
            };
            (enc(k), enc(v))
        })
        .collect();
    pairs.sort();
    pairs.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join("&")
}

/// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
fn amz_date(now: SystemTime) -> String {
    let secs = now.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (y, m, d) = crate::health::clock::civil_day(secs / 86_400);
    let s = secs % 86_400;
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", s / 3600, s / 60 % 60, s % 60)
}

fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 15)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// The test suite's credentials, scope and time (2015-08-30 12:36:00Z).
    fn suite() -> (Signer, SystemTime) {
        let signer = Signer {
            credentials: Credentials {
                access_key_id: Secret::new("AKIDEXAMPLE"),
                secret_access_key: Secret::new("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"),
                session_token: None,
            },
            region: "us-east-1".into(),
            service: "service",
        };
        (signer, SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160))
    }

    fn signature(method: &str, path: &str, query: &str) -> String {
        let (signer, at) = suite();
        let req = Request { method, host: "example.amazonaws.com", path, query, headers: &[], body: b"" };
        let signed = signer.sign(&req, at);
        assert_eq!(signed.amz_date, "20150830T123600Z");
        assert!(signed.authorization.starts_with(
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature="
        ));
        signed.authorization.rsplit('=').next().unwrap_or_default().to_owned()
    }

    #[test]
    fn aws_test_suite_vectors() {
        assert_eq!(signature("GET", "/", ""), "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31");
        assert_eq!(
            signature("GET", "/", "Param2=value2&Param1=value1"),
            "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"
        );
        assert_eq!(signature("POST", "/", ""), "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b");
        // get-utf8: the suite gives the path unencoded (`/ሴ`).
        assert_eq!(signature("GET", "/ሴ", ""), "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85");
    }

    #[test]
    fn a_bedrock_model_id_s_colon_is_signed_encoded_twice() {
        assert_eq!(
            canonical_uri("/model/anthropic.claude-3-5-sonnet-20240620-v1%3A0/converse"),
            "/model/anthropic.claude-3-5-sonnet-20240620-v1%253A0/converse"
        );
        assert_eq!(canonical_query("b=2&a=1&a=0&c"), "a=0&a=1&b=2&c=");
    }

    #[test]
    fn a_session_token_is_signed_and_sent() {
        let (mut signer, at) = suite();
        signer.credentials.session_token = Some(Secret::new("tok//en"));
        let headers = [("Content-Type", "application/json")];
        let req = Request { method: "POST", host: "h", path: "/", query: "", headers: &headers, body: b"{}" };
        let signed = signer.sign(&req, at);
        assert_eq!(signed.security_token.as_deref(), Some("tok//en"));
        assert!(
            signed.authorization.contains("SignedHeaders=content-type;host;x-amz-date;x-amz-security-token,"),
            "{}",
            signed.authorization
        );
        assert!(!signed.authorization.contains("wJalr"), "the secret is never in the header");
    }

    #[test]
    fn dates_are_utc() {
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_399);
        assert_eq!(amz_date(at), "20000228T235959Z");
    }
}
