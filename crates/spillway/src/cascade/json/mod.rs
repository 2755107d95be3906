//! Applying the normalization layer (SPEC §7) to an attempt's answer.
//!
//! When the request asks for JSON (`response_format` `json_object` or
//! `json_schema`), the answer's content is extracted, repaired, renamed
//! toward the schema and validated; the client receives the clean JSON.
//! Tool-call `arguments` are checked the same way against each tool's
//! `parameters`. An answer that stays invalid is an `invalid_output`
//! attempt failure: the next model is tried, the breaker is not touched.
//!
//! A streamed JSON answer is validated first, then streamed (SPEC §7): the
//! upstream stream is read to its end and the client gets the clean JSON as
//! a short stream. Streams without `response_format` are never buffered.
//!
//! - `assembled`: a streamed answer put back together, and the buffered
//!   stream of a JSON answer ([`buffered`]).
//! - this file: the plan, the instruction, the checks of a whole answer
//!   and of streamed tool calls, the counts.

mod assembled;

pub use assembled::buffered;
pub(super) use assembled::Assembled;

use super::plan::Target;
use crate::api::{ApiError, ChatRequest};
use crate::metrics::NormalizeLabels;
use crate::normalize::{self, Expected, NormalizeResult, SchemaCache};
use crate::outcome::{AttemptError, Failure};
use crate::quality::{Signal, Signals};
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::Arc;

/// What a request expects of its answers' JSON.
#[derive(Debug, Default)]
pub struct JsonPlan {
    /// The content must be JSON (`response_format`).
    pub content: Option<Expected>,
    /// Tool name → what its arguments must be (shared with the tickets
    /// that judge a streamed answer's tool calls at its end).
    pub tools: Arc<HashMap<String, Expected>>,
    /// The instruction added for models without native `response_format`.
    pub instruction: Option<String>,
    /// The same in Russian, used after a Russian system prompt.
    pub instruction_ru: Option<String>,
}

impl JsonPlan {
    /// Reads the request; `None` when it asks for no JSON at all. A
    /// malformed schema is the client's error (400).
    pub fn of(req: &ChatRequest, cache: &SchemaCache) -> Result<Option<Self>, ApiError> {
        let bad = |e: normalize::ResponseFormatError| ApiError::InvalidField {
            param: "response_format".into(),
            message: format!("invalid response_format: {e}"),
        };
        if !req.shapes_output {
            return Ok(None);
        }
        let rf = req.body().get("response_format").filter(|v| !v.is_null());
        let content = match rf {
            Some(rf) => normalize::expected_from_response_format(rf, cache).map_err(bad)?,
            None => None,
        };
        let mut tools = HashMap::new();
        for tool in req.body().get("tools").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default() {
            let Some(name) = tool.get("function").and_then(|f| f.get("name")).and_then(Value::as_str) else {
                continue;
            };
            let expected = normalize::expected_from_tool(tool, cache).map_err(|e| ApiError::InvalidField {
                param: "tools".into(),
                message: format!("invalid parameters schema of tool `{name}`: {e}"),
            })?;
            tools.insert(name.to_string(), expected);
        }
        if content.is_none() && tools.is_empty() {
            return Ok(None);
        }
        let instruction = content.as_ref().and(rf).and_then(normalize::schema_instruction);
        let instruction_ru =
            content.as_ref().and(rf).and_then(|rf| normalize::schema_instruction_in(rf, normalize::Lang::Ru));
        Ok(Some(Self { content, tools: Arc::new(tools), instruction, instruction_ru }))
    }

    /// Streams must be read whole before they are forwarded.
    pub fn buffers_streams(&self) -> bool {
        self.content.is_some()
    }
}

/// For a provider without native `response_format`: drop the field (it may
/// be rejected) and put the schema into the prompt as an instruction.
pub fn instruct(body: &mut Map<String, Value>, plan: &JsonPlan) {
    let Some(instruction) = &plan.instruction else {
        return;
    };
    body.remove("response_format");
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let first_system =
        messages.iter_mut().find(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")));
    match first_system.and_then(|m| m.get_mut("content")) {
        Some(Value::String(s)) => {
            // In the system prompt's language when that is Russian.
            let text = match &plan.instruction_ru {
                Some(ru) if normalize::is_russian(s) => ru,
                _ => instruction,
            };
            s.push_str("\n\n");
            s.push_str(text);
        }
        _ => messages.insert(0, json!({"role": "system", "content": instruction})),
    }
}

fn count(target: &Target, result: NormalizeResult) {
    target.metrics.normalized(result.metric_label());
}

/// Normalizes a whole completion in place, every choice (`n` > 1 asks for
/// several, and each must keep the promise); `Err` is an `invalid_output`
/// failure.
/// What the checks found for the quality judge goes into `signals`
/// (repaired, invalid content, invalid tool arguments).
pub fn check_completion(
    v: &mut Value,
    plan: &JsonPlan,
    target: &Target,
    signals: &mut Signals,
) -> Result<(), AttemptError> {
    let Some(choices) = v.get_mut("choices").and_then(Value::as_array_mut) else {
        return Ok(());
    };
    for message in choices.iter_mut().filter_map(|c| c.get_mut("message")) {
        check_message(message, plan, target, signals)?;
    }
    Ok(())
}

fn check_message(
    message: &mut Value,
    plan: &JsonPlan,
    target: &Target,
    signals: &mut Signals,
) -> Result<(), AttemptError> {
    let has_calls = message.get("tool_calls").and_then(Value::as_array).is_some_and(|c| !c.is_empty());
    if let (Some(expected), false) = (&plan.content, has_calls) {
        let text = message.get("content").and_then(Value::as_str).unwrap_or_default().to_string();
        match normalize::normalize(&text, expected) {
            Ok(n) => {
                count(target, n.result);
                if n.result == NormalizeResult::Repaired {
                    signals.add(Signal::JsonRepaired);
                }
                message["content"] = Value::String(n.json);
            }
            Err(e) => {
                count(target, NormalizeResult::Invalid);
                signals.add(Signal::JsonInvalid);
                return Err(AttemptError::new(Failure::InvalidOutput, format!("content: {e}")));
            }
        }
    }
    if let Some(calls) = message.get_mut("tool_calls").and_then(Value::as_array_mut) {
        for call in calls {
            let Some(f) = call.get_mut("function") else { continue };
            let name = f.get("name").and_then(Value::as_str).unwrap_or_default().to_string();
            let Some(expected) = plan.tools.get(&name) else {
                if !plan.tools.is_empty() {
                    signals.add(Signal::ToolArgsInvalid);
                    return Err(AttemptError::new(Failure::InvalidOutput, format!("call of unknown tool `{name}`")));
                }
                continue;
            };
            let args = f.get("arguments").and_then(Value::as_str).unwrap_or_default();
            // A tool without parameters may be called with no arguments at all.
            let args = if args.trim().is_empty() { "{}" } else { args };
            match normalize::normalize(args, expected) {
                Ok(n) => {
                    count(target, n.result);
                    if n.result == NormalizeResult::Repaired {
                        signals.add(Signal::JsonRepaired);
                    }
                    f["arguments"] = Value::String(n.json);
                }
                Err(e) => {
                    count(target, NormalizeResult::Invalid);
                    signals.add(Signal::ToolArgsInvalid);
                    return Err(AttemptError::new(Failure::InvalidOutput, format!("arguments of `{name}`: {e}")));
                }
            }
        }
    }
    Ok(())
}

/// Judges the tool calls a stream sent as they were (name, arguments),
/// at its end: a stream without JSON content is forwarded, not buffered,
/// so its calls reached the client unchecked — it cannot be taken back,
/// but the model's quality window learns of it. A call of an unknown
/// tool, or arguments that are not valid for the tool's schema as sent
/// (needing repair counts: the client got them unrepaired), is
/// `tool_args_invalid`.
pub fn judge_streamed_calls(calls: &[(String, String)], tools: &HashMap<String, Expected>) -> Signals {
    let invalid = calls.iter().any(|(name, args)| match tools.get(name) {
        None => !tools.is_empty(),
        Some(expected) => {
            // A tool without parameters may be called with no arguments at all.
            let args = if args.trim().is_empty() { "{}" } else { args };
            !matches!(normalize::normalize(args, expected), Ok(n) if n.result == NormalizeResult::Valid)
        }
    });
    if invalid {
        Signals::NONE.with(Signal::ToolArgsInvalid)
    } else {
        Signals::NONE
    }
}

/// The per-model normalization counts for `/admin/state`: valid, repaired, invalid.
pub fn counts(metrics: &crate::metrics::Metrics, provider: &str, model: &str) -> [u64; 3] {
    crate::metrics::NORMALIZE_RESULTS.map(|result| {
        metrics
            .normalize
            .get_or_create(&NormalizeLabels { provider: provider.into(), model: model.into(), result })
            .get()
    })
}

#[cfg(test)]
mod tests;
