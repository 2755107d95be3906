//! Prompt templates compiled like the rest of the config: the MiniJinja
//! environment they run in, what a rule's `output` means, and the check
//! `spillway check` and start-up run on each (syntax, and what it renders
//! for a sample conversation). `prompts/` renders them per request.

use super::TemplateOutput;
use serde_json::{json, Map, Value};

/// Checks a template at config compile time: its syntax, and what it
/// renders for a sample conversation (see the module docs); the error is a
/// sentence to follow the template's file name.
pub fn check_template(source: &str, output: TemplateOutput) -> Result<(), String> {
    let mut env = environment();
    let name = template_name(0, output);
    env.add_template_owned(name.clone(), source.to_owned()).map_err(|e| format!("does not parse: {e}"))?;
    let sample = json!({"messages": [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Hello?"},
    ]});
    let sample = sample.as_object().cloned().unwrap_or_default();
    let rendered = render_text(&env, &name, "provider/model", &sample);
    match output {
        TemplateOutput::Messages => match rendered.and_then(|text| messages_of(&text)) {
            Ok(_) => Ok(()),
            Err(e) => Err(format!(
                "with `output: messages` it must render a JSON list of messages (every {{{{ value }}}} is written \
                 as JSON, so write `\"content\": {{{{ last_user }}}}` without quotes), but for a sample \
                 conversation: {e}"
            )),
        },
        TemplateOutput::Text => match rendered {
            Ok(text) if messages_of(&text).is_ok() => Err("renders a JSON list of messages, which is sent as the \
                 text of one user message unless the rule says `output: messages`; add it (values are then \
                 JSON-escaped)"
                .into()),
            _ => Ok(()),
        },
    }
}

/// The environment every template runs in: JSON auto-escaping for the
/// `messages` templates (named `*.json`, see [`template_name`]), none for
/// text.
pub fn environment() -> minijinja::Environment<'static> {
    let mut env = minijinja::Environment::new();
    env.set_auto_escape_callback(|name| {
        if name.ends_with(".json") {
            minijinja::AutoEscape::Json
        } else {
            minijinja::AutoEscape::None
        }
    });
    env
}

pub fn template_name(i: usize, output: TemplateOutput) -> String {
    match output {
        TemplateOutput::Text => format!("rule{i}"),
        TemplateOutput::Messages => format!("rule{i}.json"),
    }
}

/// Renders template `name` over `body`'s conversation.
pub fn render_text(
    env: &minijinja::Environment<'static>,
    name: &str,
    model_ref: &str,
    body: &Map<String, Value>,
) -> Result<String, String> {
    let messages = body.get("messages").cloned().unwrap_or(Value::Array(Vec::new()));
    let text_of = |m: &Value| match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect(),
        _ => String::new(),
    };
    let list = messages.as_array().map(Vec::as_slice).unwrap_or_default();
    let role = |m: &Value| m.get("role").and_then(Value::as_str).unwrap_or_default().to_string();
    let system: Vec<String> =
        list.iter().filter(|m| matches!(role(m).as_str(), "system" | "developer")).map(text_of).collect();
    let last_user = list.iter().rev().find(|m| role(m) == "user").map(text_of).unwrap_or_default();
    let template = env.get_template(name).map_err(|e| e.to_string())?;
    let ctx = json!({"messages": messages, "system": system.join("\n"), "last_user": last_user, "model": model_ref});
    template.render(ctx).map_err(|e| e.to_string())
}

/// A `messages` template's output as the message list, checked like a
/// client's.
pub fn messages_of(text: &str) -> Result<Vec<Value>, String> {
    let Value::Array(messages) = serde_json::from_str::<Value>(text.trim()).map_err(|e| format!("not JSON: {e}"))?
    else {
        return Err("not a JSON array".into());
    };
    crate::api::request::check_messages(&messages).map_err(|e| match e {
        crate::api::ApiError::InvalidField { param, message } => format!("{param}: {message}"),
        other => other.to_string(),
    })?;
    Ok(messages)
}
