//! `responses:` as written: the Responses API's stored responses
//! (`previous_response_id`, `item_reference`, `GET /v1/responses/{id}`).

use schemars::JsonSchema;
use serde::Deserialize;

/// `responses:`
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RawResponses {
    /// Keep the responses of `POST /v1/responses` whose client did not send
    /// `store: false` — OpenAI's default, which the AI SDK's multi-turn
    /// relies on (default true); false keeps none, and what refers to a
    /// stored response is a 400.
    pub store: Option<bool>,
    /// How long a stored response is kept (default `30d`).
    pub retention: Option<String>,
    /// The most responses kept; past it the oldest are deleted (default 100000).
    pub max_stored: Option<u64>,
}
