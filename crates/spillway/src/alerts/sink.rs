//! Alert sinks and their delivery: the Telegram Bot API (`sendMessage`)
//! and a JSON webhook.
//!
//! Each sink has its own bounded queue and worker ([`Worker`]), so a sink
//! that hangs or fails delays only its own messages. A message is retried
//! with doubling backoff ([`RETRIES`] times after the first try) and then
//! dropped with a warning. Errors are logged without URLs: a Telegram URL
//! holds the bot token, webhook URLs often hold one too.

use crate::config::Secret;
use serde_json::{json, Value};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Retries after the first failed try.
pub const RETRIES: u32 = 3;
/// First backoff; doubled each retry.
pub const BACKOFF: Duration = Duration::from_secs(1);
/// Per-try deadline.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Messages queued per sink before new ones are dropped.
pub const QUEUE: usize = 256;

/// Where a message goes.
#[derive(Debug, Clone)]
pub enum Sink {
    /// `POST {api_base}/bot{token}/sendMessage`.
    Telegram {
        /// Bot token.
        token: Secret,
        /// Chat id.
        chat_id: String,
        /// API base, without a trailing `/`.
        api_base: String,
    },
    /// `POST url` with a JSON body.
    Webhook {
        /// The URL.
        url: Secret,
    },
}

impl Sink {
    /// A label for logs (no secrets).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Telegram { .. } => "telegram",
            Self::Webhook { .. } => "webhook",
        }
    }
}

/// One message for one sink.
#[derive(Debug, Clone)]
pub struct Message {
    /// Human text (Telegram's message; the webhook's `text`).
    pub text: String,
    /// The webhook body (ignored by Telegram).
    pub body: Value,
}

async fn deliver(client: &reqwest::Client, sink: &Sink, msg: &Message) -> Result<(), String> {
    let req = match sink {
        Sink::Telegram { token, chat_id, api_base } => client
            .post(format!("{}/bot{}/sendMessage", api_base.trim_end_matches('/'), token.expose()))
            .json(&json!({"chat_id": chat_id, "text": msg.text, "disable_web_page_preview": true})),
        Sink::Webhook { url } => client.post(url.expose()).json(&msg.body),
    };
    let resp = req.timeout(TIMEOUT).send().await.map_err(|e| e.without_url().to_string())?;
    if resp.status().is_success() {
        Ok(())
    } else {
        Err(format!("HTTP {}", resp.status().as_u16()))
    }
}

/// The delivery worker of one sink.
pub struct Worker {
    /// The sink.
    pub sink: Sink,
    /// Its queue.
    pub rx: mpsc::Receiver<Message>,
    /// Shared HTTP client.
    pub client: reqwest::Client,
}

impl Worker {
    /// A worker and the sender that feeds it.
    pub fn new(sink: Sink, client: reqwest::Client) -> (mpsc::Sender<Message>, Self) {
        let (tx, rx) = mpsc::channel(QUEUE);
        (tx, Self { sink, rx, client })
    }
}

impl crate::supervisor::BackgroundJob for Worker {
    fn name(&self) -> &'static str {
        match self.sink {
            Sink::Telegram { .. } => "alerts-telegram",
            Sink::Webhook { .. } => "alerts-webhook",
        }
    }

    async fn run(mut self, shutdown: CancellationToken) {
        loop {
            let msg = tokio::select! {
                m = self.rx.recv() => match m { Some(m) => m, None => return },
                () = shutdown.cancelled() => return,
            };
            let mut backoff = BACKOFF;
            for attempt in 0..=RETRIES {
                let sent = tokio::select! {
                    r = deliver(&self.client, &self.sink, &msg) => r,
                    () = shutdown.cancelled() => return,
                };
                match sent {
                    Ok(()) => break,
                    Err(e) if attempt == RETRIES => {
                        tracing::warn!(sink = self.sink.label(), error = %e, "Alert dropped after retries.");
                    }
                    Err(e) => {
                        tracing::debug!(sink = self.sink.label(), error = %e, "Alert delivery failed; retrying.");
                        tokio::select! {
                            () = tokio::time::sleep(backoff) => {}
                            () = shutdown.cancelled() => return,
                        }
                        backoff *= 2;
                    }
                }
            }
        }
    }
}
