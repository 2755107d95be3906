//! Parsing GigaChat's OAuth token response.
//!
//! The gateway core POSTs to `ngw.devices.sberbank.ru:9443/api/v2/oauth`,
//! caches the token per (key, scope) and refreshes it ahead of expiry; this
//! module only reads the 2xx body it gets back (reference §5.1).

use serde_json::Value;

use super::shared::{as_count, malformed};
use crate::providers::translate::TranslateError;

const FORMAT: &str = "gigachat";

/// Below this an expiry cannot be milliseconds: as ms it would be March 1973,
/// as seconds it is the year 5138. Any real expiry in seconds is far below it
/// and any real one in milliseconds far above it.
const SECONDS_CEILING: i64 = 100_000_000_000;

/// Reads `{"access_token", "expires_at"}` (or the password flow's
/// `{"tok", "exp"}`) and returns the token with its expiry as Unix time in
/// **milliseconds**.
///
/// GigaChat documents milliseconds; an expiry that is obviously seconds (see
/// [`SECONDS_CEILING`]) is converted, so a changed unit cannot make the cache
/// think a fresh token expired in 1970. A numeric string is accepted too.
pub fn parse_token(body: &[u8]) -> Result<(String, i64), TranslateError> {
    let parsed: Value =
        serde_json::from_slice(body).map_err(|e| malformed(FORMAT, format!("token response is not JSON: {e}")))?;
    let token = parsed
        .get("access_token")
        .or_else(|| parsed.get("tok"))
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| malformed(FORMAT, "token response without `access_token`"))?;
    let expires = as_count(parsed.get("expires_at").or_else(|| parsed.get("exp")))
        .and_then(|v| i64::try_from(v).ok())
        .ok_or_else(|| malformed(FORMAT, "token response without a numeric `expires_at`"))?;
    let expires_ms = if expires < SECONDS_CEILING { expires.saturating_mul(1000) } else { expires };
    Ok((token.to_owned(), expires_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::providers::gigachat::test_support::fixture;

    #[test]
    fn reads_milliseconds() {
        let (token, expires) = parse_token(&fixture("gigachat/token.json")).unwrap();
        assert!(token.starts_with("eyJ"));
        assert_eq!(expires, 1_760_001_800_000);
    }

    #[test]
    fn converts_seconds_and_reads_password_flow() {
        let (_, expires) = parse_token(br#"{"access_token":"t","expires_at":1760001800}"#).unwrap();
        assert_eq!(expires, 1_760_001_800_000);
        let (token, expires) = parse_token(br#"{"tok":"p","exp":"1760001800000"}"#).unwrap();
        assert_eq!((token.as_str(), expires), ("p", 1_760_001_800_000));
    }

    #[test]
    fn rejects_broken_bodies() {
        for body in [
            &b"not json"[..],
            br#"{"code":5,"message":"scope is empty"}"#,
            br#"{"access_token":"","expires_at":1}"#,
            br#"{"access_token":"t"}"#,
            br#"{"access_token":"t","expires_at":-5}"#,
        ] {
            assert!(matches!(parse_token(body), Err(TranslateError::Malformed { .. })));
        }
    }
}
