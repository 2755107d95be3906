//! What a mock model says: text of a deterministic length, JSON valid
//! against the request's schema (then damaged as configured), or a tool call.
//!
//! Where it sits: [`super::MockProvider::call`] asks [`answer`] once per
//! request, after the failure behaviours (outages, rate limits, injected
//! errors) let it through; [`super::wire`] sends the result.
//!
//! Tokens: a word of a text answer is a token; JSON and tool arguments count
//! four characters a token (they have no spaces to count).
//!
//! Lengths, deterministically:
//! - a text answer's natural length is `reply_tokens` (default: the length
//!   of its one sentence); when the request's system messages carry one of
//!   the provider's load-profile `system_prompt`s, the heaviest such
//!   profile's `max_tokens_factor` shortens it (`ceil(factor × length)`, at
//!   least one) and it still ends with finish reason `stop`, as a model told
//!   to be brief does;
//! - then `max_completion_tokens` / `max_tokens` cut any answer, text or
//!   JSON, with finish reason `length` (a cut JSON answer is truncated JSON).

use serde_json::{json, Map, Value};

use crate::config::{MockBehavior, MockJson};
use crate::normalize::{self, SchemaCache};

/// Choices a mock answers at most (`n`).
const MAX_CHOICES: u64 = 16;

/// Words a text answer is padded with, in turn, up to `reply_tokens`.
const FILLER: &str = "The mock model keeps talking so that its answer has the length the drill configured for it. ";

/// Places in the prompt tried when looking for a JSON Schema.
const MAX_SCHEMA_TRIES: usize = 32;

/// What [`answer`] reads.
pub(super) struct Cx<'a> {
    pub model: &'a str,
    pub behavior: &'a MockBehavior,
    pub body: &'a Map<String, Value>,
    pub schemas: &'a SchemaCache,
    /// Time since start-up (for `bad_windows`).
    pub elapsed: std::time::Duration,
}

/// One choice.
#[derive(Debug)]
pub(super) enum Said {
    /// Message content, in pieces of whole tokens.
    Text {
        /// `(piece, tokens in it)`; concatenated, the content.
        pieces: Vec<(String, u32)>,
        finish: &'static str,
    },
    /// A call of a tool.
    Tool { id: String, name: String, arguments: String },
}

impl Said {
    pub fn tokens(&self) -> u32 {
        match self {
            Said::Text { pieces, .. } => pieces.iter().map(|(_, t)| *t).sum(),
            Said::Tool { arguments, .. } => json_tokens(arguments).max(1),
        }
    }

    pub fn content(&self) -> String {
        match self {
            Said::Text { pieces, .. } => pieces.iter().map(|(p, _)| p.as_str()).collect(),
            Said::Tool { .. } => String::new(),
        }
    }
}

/// A whole answer: one [`Said`] per choice, and the prompt's size.
#[derive(Debug)]
pub(super) struct Answer {
    pub choices: Vec<Said>,
    pub prompt_tokens: u32,
}

impl Answer {
    /// Completion tokens over all choices.
    pub fn completion_tokens(&self) -> u32 {
        self.choices.iter().map(Said::tokens).sum()
    }
}

/// The answer to a request; `profile_factor` is 1 unless the request
/// carries a load profile's prompt (see the module docs).
pub(super) fn answer(cx: &Cx<'_>, profile_factor: f64) -> Answer {
    let b = cx.behavior;
    let n = cx.body.get("n").and_then(Value::as_u64).unwrap_or(1).clamp(1, MAX_CHOICES);
    let empty = b.empty_rate > 0.0 && fastrand::f64() < b.empty_rate;
    let max_tokens = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| cx.body.get(*k).and_then(Value::as_u64))
        .map(|m| u32::try_from(m).unwrap_or(u32::MAX));
    let choices = (0..n)
        .map(|_| {
            if empty {
                return Said::Text { pieces: Vec::new(), finish: "stop" };
            }
            if let Some(call) = tool_call(cx) {
                return call;
            }
            match json_value(cx) {
                Some(value) => json_said(damage(value, b), max_tokens),
                None => text_said(cx, profile_factor, max_tokens),
            }
        })
        .collect();
    Answer { choices, prompt_tokens: estimate_tokens(cx.body) }
}

/// Four characters a token.
fn json_tokens(text: &str) -> u32 {
    u32::try_from(crate::api::tokens::estimate_tokens(text.chars().count())).unwrap_or(u32::MAX)
}

fn text_said(cx: &Cx<'_>, profile_factor: f64, max_tokens: Option<u32>) -> Said {
    if let Some(bad) = bad_text(cx) {
        return Said::Text { pieces: bad.split_inclusive(' ').map(|w| (w.to_owned(), 1)).collect(), finish: "stop" };
    }
    let base = match &cx.behavior.reply {
        Some(r) => r.clone(),
        None => {
            let asked: String = last_user_text(cx.body).chars().take(60).collect();
            format!("This is {}, a mock model, answering: {asked}", cx.model)
        }
    };
    // Words keep their trailing space so the pieces concatenate to the text.
    let mut words: Vec<String> = base.split_inclusive(' ').map(str::to_owned).collect();
    let natural = cx.behavior.reply_tokens.map_or(words.len(), |n| n as usize);
    let natural =
        if profile_factor < 1.0 { ((natural as f64 * profile_factor).ceil() as usize).max(1) } else { natural };
    let mut filler = FILLER.split_inclusive(' ').cycle();
    while words.len() < natural {
        if let Some(last) = words.last_mut().filter(|w| !w.ends_with(' ')) {
            last.push(' ');
        }
        words.extend(filler.next().map(str::to_owned));
    }
    let limit = max_tokens.map_or(usize::MAX, |m| m as usize);
    let finish = if limit < natural { "length" } else { "stop" };
    words.truncate(natural.min(limit));
    if let Some(last) = words.last_mut() {
        let trimmed = last.trim_end().len();
        last.truncate(trimmed);
    }
    if let Some(rest) = continued(cx.body, &words.concat()) {
        words = rest.split_inclusive(' ').map(str::to_owned).collect();
    }
    Said::Text { pieces: words.into_iter().map(|w| (w, 1)).collect(), finish }
}

/// A bad answer, when the behaviour's shares draw one: in the wrong
/// script, near-empty, or looping (a drifting, broken or overloaded model).
fn bad_text(cx: &Cx<'_>) -> Option<String> {
    let (wrong, empty, looping) = cx.behavior.bad_shares(cx.elapsed);
    if wrong + empty + looping <= 0.0 {
        return None;
    }
    let draw = fastrand::f64();
    if draw < wrong {
        let cyrillic = crate::quality::text::PromptFacts::of(&last_user_text(cx.body)).script
            == Some(crate::quality::text::Script::Cyrillic);
        return Some(if cyrillic {
            "Sure! Here is the answer in English, although the question was asked in another language.".into()
        } else {
            "Конечно! Вот ответ по-русски, хотя вопрос задан на другом языке.".into()
        });
    }
    if draw < wrong + empty {
        return Some(".".into());
    }
    (draw < wrong + empty + looping).then(|| "I am not sure, let me think again. ".repeat(12).trim_end().to_string())
}

/// Characters of the partial answer an instructed mock repeats at the seam
/// (so the gateway's seam trimming has something to cut).
const SEAM_REPEAT: usize = 12;

/// A continuation request (SPEC §6): when the mock's own answer starts
/// with the partial answer it is asked to continue, the rest of it — after
/// a prefill as is, after the instruction with the last few characters of
/// the partial answer repeated first, as instructed models often do.
/// `None` for any other request (then the mock answers in full).
fn continued(body: &Map<String, Value>, full: &str) -> Option<String> {
    let (partial, instructed) = crate::api::continuation::read(body)?;
    let rest = full.strip_prefix(partial)?;
    if !instructed {
        return Some(rest.to_string());
    }
    let from = partial.char_indices().rev().nth(SEAM_REPEAT - 1).map_or(0, |(i, _)| i);
    Some(format!("{}{rest}", &partial[from..]))
}

/// JSON text in pieces of four tokens, cut after `max_tokens`.
fn json_said(text: String, max_tokens: Option<u32>) -> Said {
    let chars: Vec<char> = text.chars().collect();
    let keep = max_tokens.map_or(chars.len(), |m| (m as usize).saturating_mul(4).min(chars.len()));
    let finish = if keep < chars.len() { "length" } else { "stop" };
    let pieces = chars[..keep]
        .chunks(16)
        .map(|c| {
            let piece: String = c.iter().collect();
            let tokens = json_tokens(&piece);
            (piece, tokens)
        })
        .collect();
    Said::Text { pieces, finish }
}

/// The value a JSON answer holds, when the request asks for JSON: from the
/// `json_schema` schema; for `json_object`, from a JSON Schema in the prompt
/// when there is one; else a small object naming the model. A request whose
/// `response_format` the gateway moved into the prompt (`native_json:
/// false`) is recognised by the gateway's own instruction; one with no
/// `response_format` at all, by a JSON Schema in its prompt that the prompt
/// asks JSON for (instructor's `MD_JSON` and `JSON` modes, a hand-written
/// "answer in JSON matching this schema").
fn json_value(cx: &Cx<'_>) -> Option<Value> {
    let format = cx.body.get("response_format");
    let kind = format.and_then(|f| f.get("type")).and_then(Value::as_str);
    let schema = match kind {
        Some("json_schema") => format.and_then(|f| f.get("json_schema")).and_then(|j| j.get("schema")).cloned(),
        Some("json_object") => prompt_schema(cx.body),
        _ => {
            let system = system_text(cx.body);
            let instructed = normalize::INSTRUCTION_STARTS.iter().any(|start| system.contains(start));
            let schema = prompt_schema(cx.body);
            if !instructed && (schema.is_none() || !asks_for_json(cx.body)) {
                return None;
            }
            schema
        }
    };
    let sampled = schema.filter(|s| !s.is_null()).and_then(|s| cx.schemas.get_or_compile(&s).ok());
    Some(match sampled {
        Some(compiled) => normalize::sample(&compiled),
        None => json!({"answer": "mock", "model": cx.model}),
    })
}

/// A JSON Schema written into a system or user message: the first JSON
/// object in them (in message order) that looks like one — it has `$schema`,
/// `$defs`/`definitions`, or `properties` whose values are all objects
/// (LangChain's format instructions drop `type` and `title`).
fn prompt_schema(body: &Map<String, Value>) -> Option<Value> {
    let messages = body.get("messages").and_then(Value::as_array)?;
    let texts = messages
        .iter()
        .filter(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer" | "user")))
        .filter_map(|m| m.get("content"))
        .flat_map(content_texts);
    let mut tries = 0;
    for text in texts {
        for (at, _) in text.match_indices('{') {
            tries += 1;
            if tries > MAX_SCHEMA_TRIES {
                return None;
            }
            let mut values = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
            if let Some(Ok(v)) = values.next() {
                if looks_like_schema(&v) {
                    return Some(v);
                }
            }
        }
    }
    None
}

/// Whether the prompt's system or user text says "JSON".
fn asks_for_json(body: &Map<String, Value>) -> bool {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else { return false };
    messages
        .iter()
        .filter(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer" | "user")))
        .filter_map(|m| m.get("content"))
        .flat_map(content_texts)
        .any(|t| t.to_ascii_lowercase().contains("json"))
}

fn looks_like_schema(v: &Value) -> bool {
    let Some(map) = v.as_object() else { return false };
    let props = map.get("properties").and_then(Value::as_object);
    map.contains_key("$schema")
        || map.contains_key("$defs")
        || map.contains_key("definitions")
        || props.is_some_and(|p| !p.is_empty() && p.values().all(Value::is_object))
}

fn content_texts(content: &Value) -> Vec<&str> {
    match content {
        Value::String(s) => vec![s.as_str()],
        Value::Array(parts) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => Vec::new(),
    }
}

/// The text of every system and developer message, joined.
pub(super) fn system_text(body: &Map<String, Value>) -> String {
    let Some(messages) = body.get("messages").and_then(Value::as_array) else {
        return String::new();
    };
    messages
        .iter()
        .filter(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")))
        .filter_map(|m| m.get("content"))
        .flat_map(content_texts)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Draws this answer's damage and writes it. A share of 1 (what a mode
/// name such as `fenced` compiles to) applies without a draw and shares of 0
/// draw nothing, so configs without mixed shares leave the drill's dice as
/// they were.
fn damage(value: Value, b: &MockBehavior) -> String {
    enum Kind {
        Plain,
        Fenced,
        Renamed,
        Broken,
    }
    let MockJson { fenced, renamed, broken } = b.json;
    let kind = if broken >= 1.0 {
        Kind::Broken
    } else if renamed >= 1.0 {
        Kind::Renamed
    } else if fenced >= 1.0 {
        Kind::Fenced
    } else if fenced + renamed + broken <= 0.0 {
        Kind::Plain
    } else {
        let roll = fastrand::f64();
        if roll < broken {
            Kind::Broken
        } else if roll < broken + renamed {
            Kind::Renamed
        } else if roll < broken + renamed + fenced {
            Kind::Fenced
        } else {
            Kind::Plain
        }
    };
    match kind {
        Kind::Plain => value.to_string(),
        // Prose without a bracket: nothing to extract or repair.
        Kind::Broken => "Sorry, I could not put that into the format you asked for. It is about Ada, 36.".to_owned(),
        Kind::Renamed => {
            let mut value = value;
            rename_keys(&mut value);
            value.to_string()
        }
        Kind::Fenced => format!(
            "Sure! Here is the JSON you asked for:\n```json\n{value}\n```\nLet me know if you need anything else."
        ),
    }
}

/// `first_name` → `FirstName`: the kind of damage a weaker model does.
pub(super) fn rename_keys(v: &mut Value) {
    match v {
        Value::Object(map) => {
            let old = std::mem::take(map);
            for (k, mut val) in old {
                rename_keys(&mut val);
                let renamed: String = k
                    .split('_')
                    .map(|w| {
                        let mut c = w.chars();
                        c.next().map(|f| f.to_uppercase().chain(c).collect::<String>()).unwrap_or_default()
                    })
                    .collect();
                map.insert(renamed, val);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(rename_keys),
        _ => {}
    }
}

/// The tool a mock model calls: when the request offers tools, does not
/// say `tool_choice: "none"`, and the conversation does not already end
/// with a tool's result (then it answers in text, as a model would). The
/// named tool of `tool_choice`, else the first; arguments valid against its
/// parameter schema.
fn tool_call(cx: &Cx<'_>) -> Option<Said> {
    let body = cx.body;
    let tools = body.get("tools")?.as_array()?;
    let choice = body.get("tool_choice");
    if choice.and_then(Value::as_str) == Some("none") {
        return None;
    }
    let last_role = body.get("messages")?.as_array()?.last()?.get("role").and_then(Value::as_str);
    if last_role == Some("tool") {
        return None;
    }
    let named = choice.and_then(|c| c.get("function")).and_then(|f| f.get("name")).and_then(Value::as_str);
    let function = tools
        .iter()
        .filter_map(|t| t.get("function"))
        .find(|f| named.is_none_or(|n| f.get("name").and_then(Value::as_str) == Some(n)))?;
    let name = function.get("name")?.as_str()?.to_string();
    let arguments = match function.get("parameters").filter(|p| !p.is_null()) {
        Some(schema) => cx.schemas.get_or_compile(schema).map_or_else(|_| json!({}), |c| normalize::sample(&c)),
        None => json!({}),
    };
    let id = format!("call_mock_{}", fastrand::u32(..));
    Some(Said::Tool { id, name, arguments: arguments.to_string() })
}

/// A rough prompt size: four characters a token.
fn estimate_tokens(body: &Map<String, Value>) -> u32 {
    let chars: usize = body
        .get("messages")
        .and_then(Value::as_array)
        .map(|m| m.iter().map(|m| m.get("content").map(|c| c.to_string().len()).unwrap_or(0)).sum())
        .unwrap_or(0);
    u32::try_from(crate::api::tokens::estimate_tokens(chars).max(1)).unwrap_or(u32::MAX)
}

fn last_user_text(body: &Map<String, Value>) -> String {
    body.get("messages")
        .and_then(Value::as_array)
        .and_then(|m| {
            // A continuation's instruction is the gateway's, not the user's.
            m.iter().rev().find(|m| {
                m.get("role").and_then(Value::as_str) == Some("user")
                    && m.get("content").and_then(Value::as_str) != Some(crate::api::continuation::INSTRUCTION)
            })
        })
        .and_then(|m| m.get("content"))
        .map(|c| match c {
            Value::String(s) => s.clone(),
            // Content parts (what the Responses and Messages APIs and most
            // SDKs send): the text parts' text, as a model reads them.
            Value::Array(parts) => {
                let texts: Vec<&str> = parts
                    .iter()
                    .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect();
                texts.join(" ")
            }
            other => other.to_string(),
        })
        .unwrap_or_default()
}
