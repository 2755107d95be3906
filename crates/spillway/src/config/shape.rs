//! From YAML text to [`RawConfig`] (or any other file's raw type, such as
//! a drill scenario), collecting every shape error.
//!
//! `serde` stops at the first error. To report all of them at once, the
//! parsed tree is deserialized, the offending node is recorded with its
//! path and removed, and deserialization runs again — until it succeeds.
//! A node removed for being wrong is not reported a second time as missing.

use super::{env, ConfigError, ConfigErrors};
use serde::de::DeserializeOwned;
use serde_path_to_error::Segment;
use serde_yaml_ng::Value;

/// Upper bound on distinct errors collected from one file (each costs one
/// deserialization pass).
const MAX_ERRORS: usize = 200;

/// Parses `text` into `T` (a [`RawConfig`](super::raw::RawConfig) for a
/// config file); `Err` when the YAML itself is broken or nothing could be
/// read, otherwise the value plus any shape errors (with missing variables).
pub fn parse<T: DeserializeOwned>(text: &str, lookup: env::Lookup<'_>) -> Result<(T, Vec<ConfigError>), ConfigErrors> {
    let mut value: Value = match serde_yaml_ng::from_str(text) {
        Ok(Value::Null) => Value::Mapping(Default::default()),
        Ok(v) => v,
        Err(e) => {
            let at = e.location().map(|l| format!(" (line {}, column {})", l.line(), l.column())).unwrap_or_default();
            return Err(ConfigErrors(vec![ConfigError::new("", format!("not valid YAML{at}: {e}"))]));
        }
    };
    let mut errors = Vec::new();
    let mut converted = env::substitute(&mut value, &|name| lookup(name), &mut errors);
    let mut removed: Vec<Vec<Segment>> = Vec::new();
    // Sequence items removed so far, as (path of the item when removed), so
    // later paths can be mapped back to the indices the user wrote.
    let mut removed_items: Vec<Vec<Segment>> = Vec::new();
    for _ in 0..MAX_ERRORS {
        match serde_path_to_error::deserialize::<_, T>(value.clone()) {
            Ok(raw) => return Ok((raw, errors)),
            Err(err) => {
                let segments: Vec<Segment> = err.path().iter().cloned().collect();
                let message = clean_message(&err.inner().to_string());
                // A variable's value read as a number or boolean where the
                // field wants text: give the field its text and go on.
                if message.starts_with("invalid type:") {
                    let at = render(&original_indices(&segments, &removed_items));
                    if let Some(i) = converted.iter().position(|(path, _)| *path == at) {
                        let (_, text) = converted.swap_remove(i);
                        if replace(&mut value, &segments, Value::String(text)) {
                            continue;
                        }
                    }
                }
                let suppressed = missing_field(&message)
                    .map(|field| {
                        removed.iter().any(|r| {
                            r.len() == segments.len() + 1
                                && same_path(&r[..segments.len()], &segments)
                                && matches!(r.last(), Some(Segment::Map { key }) if key == field)
                        })
                    })
                    .unwrap_or(false);
                if !suppressed {
                    let original = original_indices(&segments, &removed_items);
                    errors.push(ConfigError::new(&render(&original), message));
                }
                if segments.is_empty() || !remove(&mut value, &segments) {
                    break;
                }
                if matches!(segments.last(), Some(Segment::Seq { .. })) {
                    removed_items.push(segments.clone());
                }
                removed.push(segments);
            }
        }
    }
    if errors.is_empty() {
        errors.push(ConfigError::new("", "the config could not be read"));
    }
    Err(ConfigErrors(errors))
}

/// serde_yaml_ng appends " at line N column M" to some messages; the path
/// already says where, and after removals the position may be stale.
fn clean_message(message: &str) -> String {
    match message.find(" at line ") {
        Some(i) => message[..i].to_string(),
        None => message.to_string(),
    }
}

fn missing_field(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("missing field `")?;
    rest.split('`').next()
}

/// `Segment` has no `PartialEq`; compare paths by their parts.
fn same_path(a: &[Segment], b: &[Segment]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| match (x, y) {
            (Segment::Seq { index: i }, Segment::Seq { index: j }) => i == j,
            (Segment::Map { key: k }, Segment::Map { key: l }) => k == l,
            (Segment::Enum { variant: k }, Segment::Enum { variant: l }) => k == l,
            _ => false,
        })
}

/// Maps indices of a path taken after some sequence items were removed back
/// to the indices in the file, undoing the removals newest first.
fn original_indices(segments: &[Segment], removed_items: &[Vec<Segment>]) -> Vec<Segment> {
    let mut out = segments.to_vec();
    for item in removed_items.iter().rev() {
        let Some((Segment::Seq { index: gone }, parent)) = item.split_last() else {
            continue;
        };
        if out.len() > parent.len() && same_path(&out[..parent.len()], parent) {
            if let Segment::Seq { index } = &mut out[parent.len()] {
                if *index >= *gone {
                    *index += 1;
                }
            }
        }
    }
    out
}

/// Renders a path the way users write it: `cascades.extraction.filters.min_context`, `prompts[0].match`.
pub fn render(segments: &[Segment]) -> String {
    let mut out = String::new();
    for seg in segments {
        match seg {
            Segment::Seq { index } => out.push_str(&format!("[{index}]")),
            Segment::Map { key } | Segment::Enum { variant: key } => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Unknown => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push('?');
            }
        }
    }
    out
}

/// The node at `segments`, when there is one.
fn node_mut<'v>(value: &'v mut Value, segments: &[Segment]) -> Option<&'v mut Value> {
    let mut node = value;
    for seg in segments {
        node = match (seg, node) {
            (Segment::Map { key }, Value::Mapping(m)) => m.get_mut(key.as_str())?,
            (Segment::Seq { index }, Value::Sequence(s)) => s.get_mut(*index)?,
            _ => return None,
        };
    }
    Some(node)
}

/// Replaces the node at `segments`; false when it cannot be found.
fn replace(value: &mut Value, segments: &[Segment], new: Value) -> bool {
    node_mut(value, segments).map(|node| *node = new).is_some()
}

/// Removes the node at `segments`; false when it cannot be found.
fn remove(value: &mut Value, segments: &[Segment]) -> bool {
    let Some((last, parents)) = segments.split_last() else {
        return false;
    };
    let Some(node) = node_mut(value, parents) else {
        return false;
    };
    match (last, node) {
        (Segment::Map { key }, Value::Mapping(m)) => m.shift_remove(key.as_str()).is_some(),
        (Segment::Seq { index }, Value::Sequence(s)) if *index < s.len() => {
            s.remove(*index);
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    fn env(name: &str) -> Option<String> {
        match name {
            "CHAT_ID" => Some("-1001234567890".into()),
            "DIGITS" => Some("12345".into()),
            "YES" => Some("true".into()),
            "MAX" => Some("77".into()),
            _ => None,
        }
    }

    #[test]
    fn a_variable_that_reads_as_a_number_stays_text_where_text_is_wanted() {
        let yaml = r#"
server: { max_concurrent_requests: "${MAX}", admin_token: "${YES}", api_keys: ["${DIGITS}", plain] }
providers:
  p: { kind: openai, base_url: "http://127.0.0.1:1/v1", api_key: "${DIGITS}" }
cascades:
  c: { models: [p/m], handoff: "${YES}" }
alerts:
  telegram: { bot_token: "${DIGITS}", chat_id: "${CHAT_ID}" }
"#;
        let c = load_str(yaml, None, &env).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(c.server.max_concurrent_requests, 77, "numbers still become numbers");
        assert!(c.cascades["c"].handoff, "booleans still become booleans");
        assert_eq!(c.server.admin_token.as_ref().map(|t| t.expose().to_string()).as_deref(), Some("true"));
        assert_eq!(c.server.api_keys.iter().map(|k| k.expose().to_string()).collect::<Vec<_>>(), ["12345", "plain"]);
        assert_eq!(c.providers["p"].api_key.as_ref().map(|k| k.expose().to_string()).as_deref(), Some("12345"));
        let (token, chat, _) = c.alerts.telegram.as_ref().unwrap();
        assert_eq!((token.expose(), chat.as_str()), ("12345", "-1001234567890"));
    }

    #[test]
    fn a_wrong_type_written_in_the_file_is_still_an_error() {
        let yaml = "server: { admin_token: 12345 }\ncascades: {}\n";
        let errors = load_str(yaml, None, &env).unwrap_err();
        assert!(errors.0.iter().any(|e| e.path == "server.admin_token"), "{errors}");
    }
}
