//! `${VAR}` and `${VAR:-default}` substitution over the parsed YAML tree.
//!
//! Substitution runs on string scalars after parsing (not on the raw text),
//! so a value can never inject YAML structure and every missing variable is
//! reported with the path of the scalar that named it. `$${` writes a literal
//! `${`. A scalar that is exactly one `${…}` and whose value reads as a
//! number or boolean becomes that number or boolean, so
//! `max_concurrent_requests: ${MAX}` works; each such conversion is
//! recorded ([`Typed`]) so that a field that wants a string (a Telegram
//! `chat_id` of `-100…`, an all-digit key) gets the text back
//! (`shape::parse` undoes the conversion where the type does not fit).

use super::ConfigError;
use serde_yaml_ng::Value;

/// Looks variables up; the process environment in production, a map in tests.
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Scalars a substitution turned into numbers or booleans: their paths
/// (as `shape::render` writes them) and their text.
pub type Typed = Vec<(String, String)>;

/// Replaces variables in every string scalar of `value`, collecting errors;
/// returns the scalars it re-read as numbers or booleans.
pub fn substitute(value: &mut Value, lookup: Lookup<'_>, errors: &mut Vec<ConfigError>) -> Typed {
    let mut converted = Vec::new();
    walk(value, String::new(), lookup, errors, &mut converted);
    converted
}

fn walk(value: &mut Value, path: String, lookup: Lookup<'_>, errors: &mut Vec<ConfigError>, converted: &mut Typed) {
    match value {
        Value::String(s) => {
            if !s.contains('$') {
                return;
            }
            match expand(s, lookup) {
                Ok((expanded, true)) => {
                    *value = typed(expanded.clone());
                    if !value.is_string() {
                        converted.push((path, expanded));
                    }
                }
                Ok((expanded, false)) => *value = Value::String(expanded),
                Err(msg) => errors.push(ConfigError::new(&path, msg)),
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, format!("{path}[{i}]"), lookup, errors, converted);
            }
        }
        Value::Mapping(map) => {
            for (k, v) in map.iter_mut() {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml_ng::to_string(other).unwrap_or_default().trim().to_string(),
                };
                let child = if path.is_empty() { key } else { format!("{path}.{key}") };
                walk(v, child, lookup, errors, converted);
            }
        }
        Value::Tagged(tagged) => walk(&mut tagged.value, path, lookup, errors, converted),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Re-reads a fully substituted scalar as a number or boolean when it is one.
fn typed(s: String) -> Value {
    if let Ok(n) = s.parse::<u64>() {
        return Value::Number(n.into());
    }
    if let Ok(n) = s.parse::<i64>() {
        return Value::Number(n.into());
    }
    if let Ok(f) = s.parse::<f64>() {
        if f.is_finite() {
            return Value::Number(f.into());
        }
    }
    match s.as_str() {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::String(s),
    }
}

/// Expands one scalar; the flag says whether it was exactly one `${…}`.
fn expand(s: &str, lookup: Lookup<'_>) -> Result<(String, bool), String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut vars = 0;
    let mut literal = false;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            literal = true;
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let end = tail.find('}').ok_or_else(|| format!("unclosed `${{` in `{s}`"))?;
            let expr = &tail[..end];
            let (name, default) = match expr.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (expr, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!("invalid variable name `{name}` in `${{{expr}}}`"));
            }
            match (lookup(name), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "environment variable {name} is not set (and `${{{name}}}` has no `:-default`)"
                    ))
                }
            }
            vars += 1;
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    let whole = vars == 1 && !literal && s.starts_with("${") && s.ends_with('}') && s.matches("${").count() == 1;
    Ok((out, whole))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "KEY" => Some("sk-1".into()),
            "NUM" => Some("42".into()),
            _ => None,
        }
    }

    fn run(yaml: &str) -> (Value, Vec<ConfigError>) {
        let mut v: Value = serde_yaml_ng::from_str(yaml).unwrap();
        let mut errors = Vec::new();
        substitute(&mut v, &env, &mut errors);
        (v, errors)
    }

    #[test]
    fn substitutes_defaults_and_types() {
        let (v, errors) = run("a: ${KEY}\nb: x-${KEY}-y\nc: ${MISSING:-dflt}\nd: ${NUM}\ne: $${KEY}\nf: a$b");
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(v["a"], Value::String("sk-1".into()));
        assert_eq!(v["b"], Value::String("x-sk-1-y".into()));
        assert_eq!(v["c"], Value::String("dflt".into()));
        assert_eq!(v["d"], Value::Number(42u64.into()));
        assert_eq!(v["e"], Value::String("${KEY}".into()));
        assert_eq!(v["f"], Value::String("a$b".into()));
    }

    #[test]
    fn missing_variables_are_reported_with_paths() {
        let (_, errors) = run("providers:\n  groq:\n    api_key: ${GROQ_API_KEY}\nlist: [ok, '${NOPE}']");
        let text: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        assert_eq!(text.len(), 2, "{text:?}");
        assert!(text[0].starts_with("providers.groq.api_key: environment variable GROQ_API_KEY is not set"));
        assert!(text[1].starts_with("list[1]: environment variable NOPE"));
    }
}
