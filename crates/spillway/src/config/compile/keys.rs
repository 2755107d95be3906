//! `keys:`: virtual client keys. The secret is hashed here (SHA-256), so
//! the compiled config never holds it.

use super::*;
use crate::config::raw_keys::{RawKey, RawKeyBudget, RawUserLimits};
use crate::config::FairnessConfig;

/// The longest key id (it is a metric label value and part of store keys).
const MAX_ID: usize = 64;

pub(super) fn compile_keys(
    cx: &mut Ctx,
    raw: Vec<RawKey>,
    cascades: &IndexMap<String, CascadeConfig>,
    api_keys: &[Secret],
) -> Vec<KeySpec> {
    let mut out: Vec<KeySpec> = Vec::new();
    let mut ids = HashSet::new();
    let mut hashes = HashSet::new();
    for (i, k) in raw.into_iter().enumerate() {
        let at = format!("keys[{i}]");
        if let Err(e) = check_id(&k.id) {
            cx.err(format!("{at}.id"), e);
        } else if !ids.insert(k.id.clone()) {
            cx.err(format!("{at}.id"), format!("`{}` is used by an earlier key", k.id));
        }
        let secret_sha256 = crate::secret::sha256_hex(&k.key);
        if k.key.trim().is_empty() {
            cx.err(format!("{at}.key"), "empty key (is its variable set to an empty value?)");
        } else if k.key.len() < 8 {
            cx.err(format!("{at}.key"), "too short: use at least 8 characters (better: 32 random ones)");
        } else if !hashes.insert(secret_sha256.clone()) || api_keys.iter().any(|a| a.expose() == k.key) {
            cx.err(format!("{at}.key"), "the same secret as another key (each key needs its own)");
        }
        if let Some(list) = &k.cascades {
            for (j, c) in list.iter().enumerate() {
                if !cascades.contains_key(c) && !c.contains('/') {
                    cx.err(
                        format!("{at}.cascades[{j}]"),
                        format!("no cascade named `{c}` (a cascade name or a `provider/model` ref)"),
                    );
                }
            }
        }
        let limits = Limits {
            rpm: positive(cx, &format!("{at}.rpm"), k.rpm),
            tpm: positive(cx, &format!("{at}.tpm"), k.tpm),
            max_parallel: positive(cx, &format!("{at}.max_parallel"), k.max_parallel),
            budget: k.budget.map(|b| budget(cx, &format!("{at}.budget"), b)),
        };
        let per_user = k.per_user.map(|u| user_limits(cx, &format!("{at}.per_user"), u)).unwrap_or_default();
        let expires_at_ms = k.expires_at.as_deref().and_then(|t| match parse_instant(t) {
            Ok(ms) => Some(ms),
            Err(e) => {
                cx.err(format!("{at}.expires_at"), e);
                None
            }
        });
        let on_store_down = match k.on_store_down.as_deref() {
            None | Some("allow") => StoreDown::Allow,
            Some("deny") => StoreDown::Deny,
            Some(other) => {
                cx.err(format!("{at}.on_store_down"), format!("expected `allow` or `deny`, got `{other}`"));
                StoreDown::Allow
            }
        };
        out.push(KeySpec {
            name: k.id.clone(),
            id: k.id,
            secret_sha256,
            cascades: k.cascades,
            limits,
            per_user,
            expires_at_ms,
            metadata: k.metadata,
            on_store_down,
        });
    }
    out
}

pub(super) fn compile_fairness(cx: &mut Ctx, f: crate::config::raw_keys::RawFairness) -> FairnessConfig {
    let d = FairnessConfig::default();
    let over_share = f.over_share.unwrap_or(d.over_share);
    if !(over_share.is_finite() && over_share >= 1.0) {
        cx.err("fairness.over_share", format!("expected a factor of 1 or more, got {over_share}"));
    }
    if f.load_profiles == Some(true) && f.enabled == Some(false) {
        cx.err("fairness.load_profiles", "needs fair shares on: `fairness.enabled: false` turns every fair share off");
    }
    let window = cx.duration("fairness.window", f.window.as_ref(), d.window);
    if window.is_zero() {
        cx.err("fairness.window", "must be longer than 0");
    }
    FairnessConfig {
        enabled: f.enabled.unwrap_or(d.enabled),
        load_profiles: f.load_profiles.unwrap_or(d.load_profiles),
        low_quota: cx.share("fairness.low_quota", f.low_quota, d.low_quota),
        over_share: if over_share.is_finite() { over_share.max(1.0) } else { d.over_share },
        window: if window.is_zero() { d.window } else { window },
    }
}

/// A key id: 1–64 of letters, digits, `-`, `_`, `.`.
pub(crate) fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id.len() > MAX_ID {
        return Err(format!("must be 1 to {MAX_ID} characters long"));
    }
    if !id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
        return Err(format!("`{id}` may hold only letters, digits, `-`, `_` and `.`"));
    }
    Ok(())
}

fn positive(cx: &mut Ctx, path: &str, v: Option<u64>) -> Option<u64> {
    if v == Some(0) {
        cx.err(path, "must be greater than 0 (leave it out for no limit)");
    }
    v.filter(|&n| n > 0)
}

fn budget(cx: &mut Ctx, path: &str, b: RawKeyBudget) -> KeyBudget {
    if !(b.usd.is_finite() && b.usd >= 0.0) {
        cx.err(format!("{path}.usd"), format!("expected a USD amount of 0 or more, got {}", b.usd));
    }
    let per = match b.per.as_deref() {
        None => BudgetPeriod::Month,
        Some(p) => BudgetPeriod::parse(p).unwrap_or_else(|| {
            cx.err(format!("{path}.per"), format!("expected `day`, `month` or `total`, got `{p}`"));
            BudgetPeriod::Month
        }),
    };
    KeyBudget { usd: b.usd.max(0.0), per }
}

fn user_limits(cx: &mut Ctx, path: &str, u: RawUserLimits) -> Limits {
    Limits {
        rpm: positive(cx, &format!("{path}.rpm"), u.rpm),
        tpm: positive(cx, &format!("{path}.tpm"), u.tpm),
        max_parallel: None,
        budget: u.budget.map(|b| budget(cx, &format!("{path}.budget"), b)),
    }
}

/// Unix ms of `2027-01-01T00:00:00Z`, `2027-01-01T00:00:00+02:00` or `2027-01-01` (UTC midnight).
pub(crate) fn parse_instant(text: &str) -> Result<u64, String> {
    let bad =
        || format!("expected an RFC 3339 time such as 2027-01-01T00:00:00Z or a date such as 2027-01-01, got `{text}`");
    let t = text.trim();
    let (date, rest) = t.split_at(t.len().min(10));
    let mut parts = date.split('-').map(|p| p.parse::<u64>().ok());
    let (Some(Some(y)), Some(Some(m)), Some(Some(d)), None) = (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad());
    };
    if date.len() != 10 || !(1970..=9999).contains(&y) || !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(bad());
    }
    let days = days_from_civil(y, m, d);
    if rest.is_empty() {
        return Ok(days * 86_400_000);
    }
    let rest = rest.strip_prefix(['T', 't', ' ']).ok_or_else(bad)?;
    if rest.len() < 9 {
        return Err(bad());
    }
    let (clock, zone) = rest.split_at(8);
    let hms: Vec<Option<u64>> = clock.split(':').map(|p| p.parse().ok()).collect();
    let [Some(h), Some(mi), Some(s)] = hms[..] else { return Err(bad()) };
    if h > 23 || mi > 59 || s > 60 {
        return Err(bad());
    }
    // Fractional seconds are dropped.
    let zone = zone.strip_prefix('.').map_or(zone, |z| z.trim_start_matches(|c: char| c.is_ascii_digit()));
    let offset_s: i64 = match zone {
        "Z" | "z" => 0,
        z if z.len() == 6 && (z.starts_with('+') || z.starts_with('-')) => {
            let oh: i64 = z[1..3].parse().map_err(|_| bad())?;
            let om: i64 = z[4..6].parse().map_err(|_| bad())?;
            let sign = if z.starts_with('-') { -1 } else { 1 };
            sign * (oh * 3600 + om * 60)
        }
        _ => return Err(bad()),
    };
    let secs = i64::try_from(days * 86_400 + h * 3600 + mi * 60 + s).map_err(|_| bad())? - offset_s;
    u64::try_from(secs).map(|s| s * 1000).map_err(|_| bad())
}

/// Days since 1970-01-01 of a proleptic Gregorian date (the inverse of
/// `health::clock::civil_day`).
pub(crate) fn days_from_civil(y: u64, m: u64, d: u64) -> u64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y / 400;
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;

    const BASE: &str = "providers:\n  p: { kind: mock, models: [{ id: a }] }\ncascades:\n  chat: { models: [p/a] }\n";

    #[test]
    fn instants() {
        assert_eq!(parse_instant("1970-01-02"), Ok(86_400_000));
        assert_eq!(parse_instant("2000-03-01T00:00:00Z"), Ok(days_from_civil(2000, 3, 1) * 86_400_000));
        assert_eq!(crate::health::clock::civil_day(days_from_civil(2027, 2, 28)), (2027, 2, 28));
        assert_eq!(parse_instant("1970-01-01T01:00:00+01:00"), Ok(0));
        assert_eq!(parse_instant("1970-01-01T00:00:01.5Z"), Ok(1000));
        for bad in ["", "2027", "2027-13-01", "2027-01-01T25:00:00Z", "2027-01-01T00:00:00", "tomorrow"] {
            assert!(parse_instant(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn keys_compile_with_their_secret_hashed() {
        let yaml = format!(
            "{BASE}keys:\n  - id: team-a\n    key: sk-team-a-secret\n    cascades: [chat]\n    rpm: 30\n    budget: {{ usd: 5, per: day }}\n    per_user: {{ rpm: 2 }}\n    expires_at: 2030-01-01\n    metadata: {{ team: a }}\n"
        );
        let c = load_str(&yaml, None, &|_| None).unwrap();
        let k = &c.keys[0];
        assert_eq!(k.id, "team-a");
        assert_eq!(k.secret_sha256, crate::secret::sha256_hex("sk-team-a-secret"));
        assert_eq!(k.limits.rpm, Some(30));
        assert_eq!(k.limits.budget, Some(KeyBudget { usd: 5.0, per: BudgetPeriod::Day }));
        assert_eq!(k.per_user.rpm, Some(2));
        assert_eq!(k.on_store_down, StoreDown::Allow);
        assert!(!format!("{c:?}").contains("sk-team-a-secret"), "the secret is not kept");
    }

    #[test]
    fn every_mistake_is_reported_with_its_path() {
        let yaml = format!(
            "{BASE}keys:\n  - id: 'bad id'\n    key: short\n    cascades: [nope]\n    rpm: 0\n    budget: {{ usd: -1, per: week }}\n    expires_at: soon\n    on_store_down: maybe\n  - id: a\n    key: same-secret-1\n  - id: a\n    key: same-secret-1\n"
        );
        let e = load_str(&yaml, None, &|_| None).unwrap_err().to_string();
        for path in [
            "keys[0].id:",
            "keys[0].key:",
            "keys[0].cascades[0]:",
            "keys[0].rpm:",
            "keys[0].budget.usd:",
            "keys[0].budget.per:",
            "keys[0].expires_at:",
            "keys[0].on_store_down:",
            "keys[2].id:",
            "keys[2].key:",
        ] {
            assert!(e.contains(path), "{path} missing in:\n{e}");
        }
    }

    #[test]
    fn keys_alone_guard_an_exposed_listener() {
        let yaml = format!("server: {{ listen: '0.0.0.0:8080' }}\n{BASE}keys:\n  - {{ id: a, key: sk-a-secret }}\n");
        assert!(load_str(&yaml, None, &|_| None).is_ok());
        let yaml = format!("server: {{ listen: '0.0.0.0:8080' }}\n{BASE}");
        assert!(load_str(&yaml, None, &|_| None).is_err());
    }

    #[test]
    fn fair_degradation_is_on_by_default_and_needs_fair_shares() {
        let c = load_str(BASE, None, &|_| None).unwrap();
        assert!(c.fairness.enabled && c.fairness.load_profiles);
        let c = load_str(&format!("{BASE}fairness: {{ load_profiles: false }}\n"), None, &|_| None).unwrap();
        assert!(c.fairness.enabled && !c.fairness.load_profiles);
        let e = load_str(&format!("{BASE}fairness: {{ enabled: false, load_profiles: true }}\n"), None, &|_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("fairness.load_profiles: needs fair shares on"), "{e}");
        let e = load_str(&format!("{BASE}fairness: {{ load_profiles: sometimes }}\n"), None, &|_| None)
            .unwrap_err()
            .to_string();
        assert!(e.contains("fairness.load_profiles"), "{e}");
    }
}
