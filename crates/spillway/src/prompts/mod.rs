//! Per-model prompt variants (SPEC §7): the `prompts:` rules.
//!
//! Each attempt looks up the first rule whose glob matches its model ref
//! and rewrites that model's copy of the request: a `system_prefix` is
//! prepended to the system message (or becomes one), and a MiniJinja
//! `template` renders the conversation anew. Templates were parsed when the
//! config was compiled, so a syntax error or a missing file never reaches a
//! request. The rule's match pattern and version label a metric, so each
//! variant's results can be compared.
//!
//! A template sees `messages` (the request's messages), `system` (the
//! system text joined), `last_user` (the last user message's text) and
//! `model` (the model ref). Its output replaces the messages: when it is a
//! JSON array of messages it is used as such, otherwise the text becomes
//! the one user message (for models that want a fixed prompt layout).

use crate::config::PromptRule;
use serde_json::{json, Map, Value};

/// The compiled prompt rules of one config.
#[derive(Debug)]
pub struct Prompts {
    rules: Vec<PromptRule>,
    env: minijinja::Environment<'static>,
}

/// What a matching rule did to a request, for metrics.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The rule's pattern (bounded: it comes from the config).
    pub variant: String,
    /// Its version label (`-` when unset).
    pub version: String,
}

impl Prompts {
    /// Compiles the rules; a template that does not parse (only possible if
    /// the config compiler was bypassed) is dropped with an error log.
    pub fn build(rules: &[PromptRule]) -> Self {
        let mut env = minijinja::Environment::new();
        let mut kept = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            if let Some(source) = &rule.template_source {
                if let Err(e) = env.add_template_owned(format!("rule{i}"), source.clone()) {
                    tracing::error!(pattern = %rule.pattern, error = %e, "Prompt template does not parse; rule ignored.");
                    continue;
                }
            }
            kept.push((i, rule.clone()));
        }
        // Keep the template names aligned with the kept rules' original positions.
        let rules = kept.into_iter().map(|(i, mut r)| {
            r.template_name = r.template_source.as_ref().map(|_| format!("rule{i}"));
            r
        });
        Self { rules: rules.collect(), env }
    }

    /// No rules at all (the common case costs nothing).
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// Whether a rule matches `model_ref` (so its body must be rewritten).
    pub fn matches(&self, model_ref: &str) -> bool {
        self.rules.iter().any(|r| glob_match(&r.pattern, model_ref))
    }

    /// Applies the first rule matching `model_ref` to `body`.
    pub fn apply(&self, model_ref: &str, body: &mut Map<String, Value>) -> Option<Applied> {
        let rule = self.rules.iter().find(|r| glob_match(&r.pattern, model_ref))?;
        if let Some(name) = &rule.template_name {
            match self.render(name, model_ref, body) {
                Ok(messages) => {
                    body.insert("messages".into(), Value::Array(messages));
                }
                Err(e) => {
                    tracing::warn!(model = model_ref, pattern = %rule.pattern, error = %e, "Prompt template failed; the request is sent unchanged.")
                }
            }
        }
        if let Some(prefix) = &rule.system_prefix {
            prepend_system(body, prefix);
        }
        Some(Applied {
            variant: rule.pattern.clone(),
            version: rule.version.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
        })
    }

    fn render(&self, name: &str, model_ref: &str, body: &Map<String, Value>) -> Result<Vec<Value>, String> {
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
        let template = self.env.get_template(name).map_err(|e| e.to_string())?;
        let ctx =
            json!({"messages": messages, "system": system.join("\n"), "last_user": last_user, "model": model_ref});
        let out = template.render(ctx).map_err(|e| e.to_string())?;
        match serde_json::from_str::<Value>(out.trim()) {
            Ok(Value::Array(msgs)) if msgs.iter().all(|m| m.get("role").is_some()) => Ok(msgs),
            _ => Ok(vec![json!({"role": "user", "content": out.trim()})]),
        }
    }
}

/// Prepends `prefix` to the first system/developer message, or inserts one.
fn prepend_system(body: &mut Map<String, Value>, prefix: &str) {
    let Some(Value::Array(messages)) = body.get_mut("messages") else {
        return;
    };
    let first =
        messages.iter_mut().find(|m| matches!(m.get("role").and_then(Value::as_str), Some("system" | "developer")));
    match first.and_then(|m| m.get_mut("content")) {
        Some(Value::String(s)) => *s = format!("{prefix}\n\n{s}"),
        _ => messages.insert(0, json!({"role": "system", "content": prefix})),
    }
}

/// `*` matches any run of characters (`/` included), `?` one character.
/// Written by hand: model refs are short, patterns few, and a glob crate
/// would treat `/` as a path separator, which model refs are not.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    let (mut pi, mut ti, mut star, mut mark) = (0, 0, None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(pattern: &str, prefix: Option<&str>, template: Option<&str>) -> PromptRule {
        PromptRule {
            pattern: pattern.into(),
            version: Some(3),
            system_prefix: prefix.map(str::to_string),
            template: None,
            template_source: template.map(str::to_string),
            template_name: None,
        }
    }

    #[test]
    fn globs() {
        assert!(glob_match("yandex/*", "yandex/yandexgpt/latest"));
        assert!(glob_match("*:free", "openrouter/google/gemma-3-27b-it:free"));
        assert!(glob_match("local/t-?ite", "local/t-lite"));
        assert!(!glob_match("yandex/*", "groq/llama"));
        assert!(glob_match("*", "anything/at/all"));
    }

    #[test]
    fn first_match_wins_and_prefix_is_prepended() {
        let p = Prompts::build(&[rule("yandex/*", Some("Return JSON only."), None), rule("*", Some("other"), None)]);
        let mut body =
            json!({"messages": [{"role": "system", "content": "Be kind."}, {"role": "user", "content": "hi"}]});
        let applied = p.apply("yandex/gpt", body.as_object_mut().unwrap()).unwrap();
        assert_eq!(applied, Applied { variant: "yandex/*".into(), version: "3".into() });
        assert_eq!(body["messages"][0]["content"], "Return JSON only.\n\nBe kind.");
        let mut body = json!({"messages": [{"role": "user", "content": "hi"}]});
        p.apply("groq/x", body.as_object_mut().unwrap());
        assert_eq!(body["messages"][0], json!({"role": "system", "content": "other"}));
    }

    #[test]
    fn templates_render_the_conversation() {
        let t = "<|system|>{{ system }}<|user|>{{ last_user }}<|model|>{{ model }}";
        let p = Prompts::build(&[rule("local/*", None, Some(t))]);
        let mut body = json!({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "Q"}]});
        p.apply("local/t-lite", body.as_object_mut().unwrap());
        assert_eq!(body["messages"], json!([{"role": "user", "content": "<|system|>S<|user|>Q<|model|>local/t-lite"}]));
        let t = r#"[{"role": "user", "content": {{ last_user | tojson }}}]"#;
        let p = Prompts::build(&[rule("*", None, Some(t))]);
        let mut body =
            json!({"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": "say \"hi\""}]});
        p.apply("a/b", body.as_object_mut().unwrap());
        assert_eq!(body["messages"], json!([{"role": "user", "content": "say \"hi\""}]));
    }
}
