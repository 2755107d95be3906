//! `prompts:`, `escalation:`, `alerts:` and `handoff:` as compiled.

use crate::secret::Secret;
use std::path::PathBuf;
use std::time::Duration;

/// A prompt variant rule.
#[derive(Debug, Clone)]
pub struct PromptRule {
    /// Glob over model refs.
    pub pattern: String,
    /// Version label.
    pub version: Option<u32>,
    /// System prefix.
    pub system_prefix: Option<String>,
    /// Template path, resolved against the config's folder.
    pub template: Option<PathBuf>,
    /// The template's text, read and syntax-checked at compile time.
    pub template_source: Option<String>,
    /// Its name in the prompt environment (set when prompts are built).
    pub template_name: Option<String>,
    /// How the template's output becomes the messages.
    pub output: TemplateOutput,
}

/// What a prompt template renders (`prompts[].output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TemplateOutput {
    /// Text: the one user message sent, whatever it looks like. Client text
    /// in it stays text, even text that looks like a JSON message list.
    #[default]
    Text,
    /// A JSON array of messages. Every `{{ value }}` is written JSON-escaped
    /// (MiniJinja's JSON auto-escaping), so client text can fill a string
    /// but never add a message; the list is then checked like a client's.
    Messages,
}

/// An escalation rule.
#[derive(Debug, Clone)]
pub struct EscalationRule {
    /// From cascade.
    pub from: String,
    /// To cascade.
    pub to: String,
}

/// `alerts:`
#[derive(Debug, Clone, Default)]
pub struct AlertsConfig {
    /// Telegram: bot token, chat id, API base.
    pub telegram: Option<(Secret, String, String)>,
    /// Webhook URL.
    pub webhook: Option<Secret>,
    /// Fallback-share rule: share and duration.
    pub fallback_share: Option<(f64, Duration)>,
    /// Dedup window.
    pub repeat_after: Duration,
    /// Language of the message text.
    pub language: AlertLanguage,
}

/// `alerts.language`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AlertLanguage {
    /// English (default).
    #[default]
    En,
    /// Russian.
    Ru,
}

/// `handoff:`
#[derive(Debug, Clone)]
pub struct HandoffConfig {
    /// Reply text.
    pub reply: String,
    /// Webhook URL.
    pub webhook: Option<Secret>,
    /// Retention.
    pub retention: Duration,
}
