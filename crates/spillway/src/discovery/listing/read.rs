//! Tolerant field readers shared by the listing formats.
//!
//! Each reader turns one JSON value into a typed field or "unknown", and
//! pushes a warning when the value was present but unusable. Absent and
//! `null` are silent: many listings simply do not carry the field.

use serde_json::Value;

/// Contexts outside this range are misreadings (0, -1, 1e15 have all been
/// seen in the wild) and become unknown. 100M tokens leaves room for the
/// largest real windows (10M) by an order of magnitude.
pub(super) const CONTEXT_RANGE: std::ops::RangeInclusive<u64> = 256..=100_000_000;

/// A price above this many USD per 1M tokens is a misreading, not a model.
/// The dearest real models cost a few hundred.
pub(super) const MAX_PRICE_PER_1M: f64 = 100_000.0;

/// The entry's id from the first of `fields` that is a usable string.
/// Skips entries that are not objects or have no usable id.
pub(super) fn id(entry: &Value, fields: &[&str], provider: &str, warnings: &mut Vec<String>) -> Option<String> {
    let Some(obj) = entry.as_object() else {
        warnings.push(format!("{provider}: a listing entry is not an object; skipped"));
        return None;
    };
    for field in fields {
        if let Some(s) = obj.get(*field).and_then(Value::as_str) {
            // Whitespace or control characters cannot be sent back as a model
            // name reliably, and an empty id cannot be routed to.
            if !s.is_empty() && !s.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Some(s.to_owned());
            }
        }
    }
    warnings.push(format!(
        "{provider}: a listing entry has no usable `{}`; skipped",
        fields.first().copied().unwrap_or("id")
    ));
    None
}

/// A context length: an integer, an integral float or a numeric string.
pub(super) fn context(v: Option<&Value>, model_ref: &str, field: &str, warnings: &mut Vec<String>) -> Option<u32> {
    let v = v.filter(|v| !v.is_null())?;
    let n = match v {
        Value::Number(n) => {
            n.as_u64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0 && *f >= 0.0).map(|f| f as u64))
        }
        Value::String(s) => s.trim().parse::<u64>().ok(),
        _ => None,
    };
    match n.filter(|n| CONTEXT_RANGE.contains(n)).and_then(|n| u32::try_from(n).ok()) {
        Some(n) => Some(n),
        None => {
            warnings.push(format!("{model_ref}: `{field}` is {v}, not a plausible context; treated as unknown"));
            None
        }
    }
}

/// A price in USD per *single token* (OpenRouter), as a decimal string or a
/// number, converted to USD per 1M tokens. Negative values are a sentinel
/// reported for dynamic routers and mean unknown, as do unparseable and
/// absurd ones (those with a warning).
pub(super) fn price_per_token(
    v: Option<&Value>,
    model_ref: &str,
    field: &str,
    warnings: &mut Vec<String>,
) -> PriceRead {
    let Some(v) = v else {
        return PriceRead::Missing;
    };
    let per_token = match v {
        Value::Null => return PriceRead::Missing,
        Value::String(s) => parse_decimal(s),
        Value::Number(n) => n.as_f64(),
        _ => None,
    };
    let Some(per_token) = per_token.filter(|p| p.is_finite()) else {
        warnings.push(format!("{model_ref}: `{field}` is {v}, not a price; treated as unknown"));
        return PriceRead::Unknown;
    };
    if per_token < 0.0 {
        // Documented as "unknown" rather than a fault: no warning.
        return PriceRead::Unknown;
    }
    let per_1m = round_micro(per_token * 1e6);
    if per_1m > MAX_PRICE_PER_1M {
        warnings.push(format!("{model_ref}: `{field}` is {v} per token, not a plausible price; treated as unknown"));
        return PriceRead::Unknown;
    }
    PriceRead::Known(per_1m)
}

/// What [`price_per_token`] found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum PriceRead {
    /// USD per 1M tokens.
    Known(f64),
    /// Present but negative, unparseable or absurd.
    Unknown,
    /// Absent or `null`.
    Missing,
}

/// Decimal strings like `"0.00000059"` or `"5e-7"`. `f64` is precise
/// enough for prices (15 significant digits); [`round_micro`] removes the
/// binary noise of the ×1e6 (0.59 rather than 0.5900000000000001).
fn parse_decimal(s: &str) -> Option<f64> {
    let s = s.trim();
    // `f64::from_str` also takes "inf" and "NaN"; prices are digits.
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'-' | b'+' | b'e' | b'E')) {
        return None;
    }
    s.parse().ok()
}

/// Rounds to a millionth of a dollar per 1M tokens.
fn round_micro(x: f64) -> f64 {
    (x * 1e6).round() / 1e6
}

/// A boolean field; absent or `null` is `None`, anything else odd warns.
pub(super) fn flag(v: Option<&Value>, model_ref: &str, field: &str, warnings: &mut Vec<String>) -> Option<bool> {
    match v? {
        Value::Null => None,
        Value::Bool(b) => Some(*b),
        other => {
            warnings.push(format!("{model_ref}: `{field}` is {other}, not a boolean; ignored"));
            None
        }
    }
}

/// An array of strings; non-string items are dropped.
pub(super) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
        .unwrap_or_default()
}

/// Appends `s` percent-encoded for a query value (RFC 3986 unreserved
/// characters stay). Written here because it is five lines and discovery
/// has no URL crate; the HTTP client may re-parse the URL anyway.
pub(super) fn percent_encode_into(s: &str, out: &mut String) {
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}
