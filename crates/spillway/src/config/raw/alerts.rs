//! `alerts:` (Telegram, webhook, the fallback-share rule) and `handoff:`.

use schemars::JsonSchema;
use serde::Deserialize;

/// `alerts:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawAlerts {
    /// Telegram Bot API sink.
    pub telegram: Option<RawTelegram>,
    /// JSON POST sink.
    pub webhook: Option<RawWebhook>,
    /// Alert when a fallback tier carries too much traffic.
    pub fallback_share: Option<RawFallbackShare>,
    /// The same alert at most this often (default `30m`); repeats within
    /// it are counted and sent as one digest when it ends.
    pub repeat_after: Option<String>,
    /// Language of the message text: `en` (default) or `ru`. Event kinds
    /// and metric names stay English.
    pub language: Option<String>,
}

/// `alerts.telegram`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawTelegram {
    /// Bot token (secret).
    pub bot_token: String,
    /// Chat to post to.
    pub chat_id: String,
    /// Bot API base URL, for a proxy or a test (default `https://api.telegram.org`).
    pub api_base: Option<String>,
}

/// `alerts.webhook`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawWebhook {
    /// URL receiving a JSON POST per alert.
    pub url: String,
}

/// `alerts.fallback_share`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawFallbackShare {
    /// Share (0..1) of a cascade's traffic served by a later tier.
    pub above: f64,
    /// For at least this long.
    #[serde(rename = "for")]
    pub for_: String,
}

/// `handoff:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawHandoff {
    /// The completion text a client receives when its request was queued.
    pub reply: Option<String>,
    /// URL called (JSON POST) for each new item.
    pub webhook: Option<String>,
    /// How long items are kept (default `30d`).
    pub retention: Option<String>,
}
