//! Reading an answer as a client would: a whole body or an SSE stream,
//! its usage, its error code, how many attempts it took, and whether its
//! content is valid for the output the traffic asked for.

use crate::drill::scenario::Output;
use serde_json::Value;

/// What an answer said.
#[derive(Debug, Default)]
pub(super) struct Read {
    pub(super) content: String,
    pub(super) usage: Option<(u64, u64)>,
    pub(super) error: Option<String>,
    /// The error says no model was tried (every one was skipped).
    pub(super) unattempted: bool,
    /// Upstream calls an error names (its attempt list, skips left out).
    pub(super) tried: u32,
}

fn usage_of(v: &Value) -> Option<(u64, u64)> {
    let u = v.get("usage")?;
    Some((u.get("prompt_tokens")?.as_u64()?, u.get("completion_tokens")?.as_u64()?))
}

fn error_of(v: &Value) -> Option<String> {
    let e = v.get("error")?;
    Some(
        e.get("code")
            .and_then(Value::as_str)
            .or_else(|| e.get("type").and_then(Value::as_str))
            .unwrap_or("error")
            .into(),
    )
}

/// A whole JSON answer or error body.
pub(super) fn read_whole(bytes: &[u8]) -> Read {
    let Ok(v) = serde_json::from_slice::<Value>(bytes) else {
        return Read { error: Some("unreadable_body".into()), ..Read::default() };
    };
    let message = &v["choices"][0]["message"];
    let content = match message.get("content").and_then(Value::as_str) {
        Some(text) => text.to_string(),
        // A tool call counts as content.
        None => message.get("tool_calls").map(Value::to_string).unwrap_or_default(),
    };
    let (unattempted, tried) = v["error"]["message"].as_str().map_or((false, 0), attempts_of);
    Read { content, usage: usage_of(&v), error: error_of(&v), unattempted, tried }
}

/// Reads `all_models_failed`'s message as a client would: `all models of
/// `c` failed: m/a: skipped_open (…); m/b: upstream_error (…)`, or `…: no
/// model was available`. Returns whether no model was tried at all, and
/// how many were (skips — dead marks, open breakers, full bulkheads, lazy
/// or too-small models — are not calls).
fn attempts_of(message: &str) -> (bool, u32) {
    const SKIPS: [&str; 5] = ["skipped_dead", "skipped_open", "saturated", "skipped_lazy", "skipped_context"];
    let Some((_, list)) = message.split_once(" failed: ") else { return (false, 0) };
    if list == "no model was available" {
        return (true, 0);
    }
    let (mut tried, mut skipped) = (0u32, 0u32);
    for entry in list.split("; ") {
        // Model refs have no `: `; details may.
        let reason = entry.split_once(": ").map_or(entry, |(_, r)| r);
        if SKIPS.iter().any(|s| reason.starts_with(s)) {
            skipped += 1;
        } else {
            tried += 1;
        }
    }
    (tried == 0 && skipped > 0, tried)
}

/// An SSE stream: content deltas, the usage chunk, an error event, `[DONE]`.
pub(super) fn read_stream(bytes: &[u8]) -> Read {
    let text = String::from_utf8_lossy(bytes);
    let mut read = Read::default();
    let mut done = false;
    for data in text.lines().filter_map(|l| l.strip_prefix("data:")).map(str::trim) {
        if data == "[DONE]" {
            done = true;
            continue;
        }
        let Ok(v) = serde_json::from_str::<Value>(data) else { continue };
        if let Some(code) = error_of(&v) {
            read.error = Some(code);
        }
        let delta = &v["choices"][0]["delta"];
        if let Some(piece) = delta.get("content").and_then(Value::as_str) {
            read.content.push_str(piece);
        }
        if let Some(calls) = delta.get("tool_calls") {
            read.content.push_str(&calls.to_string());
        }
        read.usage = usage_of(&v).or(read.usage);
    }
    if !done && read.error.is_none() {
        read.error = Some("stream_cut".into());
    }
    read
}

/// Whether an answer's content is what the traffic asked for.
pub(super) fn valid(output: &Output, content: &str, schemas: &crate::normalize::SchemaCache) -> bool {
    match output {
        Output::Text => !content.trim().is_empty(),
        Output::Json => serde_json::from_str::<Value>(content).is_ok_and(|v| v.is_object()),
        // The gateway's own compiled form: the same draft rules and bounds.
        Output::Schema(schema) => serde_json::from_str::<Value>(content)
            .is_ok_and(|v| schemas.get_or_compile(schema).is_ok_and(|s| s.check(&v).is_ok())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_stream_without_done_is_cut_and_an_error_event_names_its_code() {
        let ok = read_stream(
            b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\ndata: [DONE]\n\n",
        );
        assert_eq!((ok.content.as_str(), ok.usage, ok.error), ("Hi", Some((3, 1)), None));
        let cut = read_stream(b"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n");
        assert_eq!(cut.error.as_deref(), Some("stream_cut"));
        let broken =
            read_stream(b"data: {\"error\":{\"code\":\"upstream_cut\",\"message\":\"x\"}}\n\ndata: [DONE]\n\n");
        assert_eq!(broken.error.as_deref(), Some("upstream_cut"));
    }

    #[test]
    fn an_error_tells_calls_from_skips() {
        let m =
            "all models of `chat` failed: a/x: skipped_open (breaker open); b/y: skipped_dead (provider dead: auth)";
        assert_eq!(attempts_of(m), (true, 0));
        assert_eq!(
            attempts_of("all models of `chat` failed: a/x: upstream_error (HTTP 502: bad); b/y: saturated"),
            (false, 1)
        );
        assert_eq!(attempts_of("all models of `chat` failed: no model was available"), (true, 0));
        assert_eq!(attempts_of("the gateway is at its concurrency limit; retry shortly"), (false, 0));
    }

    #[test]
    fn validity_follows_the_requested_output() {
        let cache = crate::normalize::SchemaCache::default();
        let valid = |o: &Output, c: &str| valid(o, c, &cache);
        assert!(valid(&Output::Text, "hello"));
        assert!(!valid(&Output::Text, "  "));
        assert!(valid(&Output::Json, r#"{"a":1}"#));
        assert!(!valid(&Output::Json, "```json\n{\"a\":1}\n```"));
        assert!(!valid(&Output::Json, "[1]"));
        let schema = json!({"type": "object", "required": ["name"]});
        assert!(valid(&Output::Schema(schema.clone()), r#"{"name":"x"}"#));
        assert!(!valid(&Output::Schema(schema), r#"{"Name":"x"}"#));
        // A draft-07 schema is held to draft-07, as the gateway holds it.
        let zod = json!({"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                         "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string"}}});
        assert!(!valid(&Output::Schema(zod), r#"{"name":"x","extra":1}"#));
    }

    #[test]
    fn an_error_body_gives_its_code() {
        let r = read_whole(br#"{"error":{"message":"m","type":"t","code":"all_models_failed","param":null}}"#);
        assert_eq!(r.error.as_deref(), Some("all_models_failed"));
        assert_eq!(read_whole(b"garbage").error.as_deref(), Some("unreadable_body"));
    }
}
