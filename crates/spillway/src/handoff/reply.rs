//! The client's answer when its request was queued for a person: a normal
//! completion whose content is `handoff.reply` — one `chat.completion`, or
//! a short stream (role, content, finish, optional usage, `[DONE]`) — so an
//! OpenAI client needs no special case, plus the `x-spillway-handoff-id`
//! header that `GET /v1/handoff/{id}` takes.

use crate::api::sse;
use crate::api::wire::{self, Stamp};
use crate::api::ChatRequest;
use crate::cascade::{CascadePlan, Served, ServedBody};
use crate::outcome::Tier;
use bytes::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};
use std::convert::Infallible;

/// The `model` of the body and the `x-spillway-model` header: no upstream
/// model answered.
pub const MODEL: &str = "spillway/handoff";

/// Builds the served handoff answer.
pub fn served(plan: &CascadePlan, req: &ChatRequest, reply: &str, id: String, calls: u32) -> Served {
    let stamp = Stamp::new(MODEL.to_string());
    let usage = json!({"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0});
    let body = if req.stream {
        let mut chunks = vec![
            chunk(&stamp, json!({"role": "assistant", "content": ""}), None),
            chunk(&stamp, json!({"content": reply}), None),
            chunk(&stamp, json!({}), Some("stop")),
        ];
        if req.include_usage {
            let mut u = json!({"choices": [], "usage": usage});
            wire::chunk(&mut u, &stamp);
            chunks.push(u);
        }
        let mut events: Vec<Result<Bytes, Infallible>> = chunks.iter().map(|c| Ok(sse::encode_json(c))).collect();
        events.push(Ok(sse::done()));
        ServedBody::Canned(futures_util::stream::iter(events).boxed())
    } else {
        let mut v = json!({
            "choices": [{"index": 0, "message": {"role": "assistant", "content": reply}, "finish_reason": "stop"}],
            "usage": usage,
        });
        // Our own body: stamping fills the required fields and cannot fail.
        let _ = wire::completion(&mut v, &stamp);
        ServedBody::Complete(v.into())
    };
    Served {
        quality: crate::quality::Signals::NONE,
        cascade: plan.name.clone(),
        model: MODEL.to_string(),
        tier: Tier::Handoff,
        rank: None,
        attempts: calls,
        load_profile: None,
        upstream_request_id: None,
        handoff_id: Some(id),
        escalated: false,
        prompt_tokens: 0,
        body,
    }
}

fn chunk(stamp: &Stamp, delta: Value, finish: Option<&str>) -> Value {
    let mut v = json!({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]});
    wire::chunk(&mut v, stamp);
    v
}
