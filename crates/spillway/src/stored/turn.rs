//! One `POST /v1/responses` against the store: the conversation it
//! continues and the items it names put in place before it runs
//! ([`Turn::expand`]), and its answer kept after ([`Keeper::keep`]).

use super::{Archive, Limits, Record, Shelf, StoreError};
use crate::api::responses::history::{self, Refs};
use crate::api::ApiError;
use crate::config::{ResponsesConfig, StateConfig};
use crate::secret::Secret;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The store as one caller sees it.
pub struct Turn {
    shelf: Arc<dyn Shelf>,
    owner: String,
    limits: Limits,
}

/// What opening the store needs.
pub struct Stores<'a> {
    pub archive: &'a Archive,
    pub desk: &'a crate::handoff::Desk,
    pub state: &'a StateConfig,
    pub config: &'a ResponsesConfig,
}

/// The store could not be reached: a 503 to a request that needs it.
pub fn unavailable(e: &StoreError) -> ApiError {
    tracing::warn!(error = %e, "The response store is unavailable.");
    ApiError::StoreUnavailable
}

impl Turn {
    /// Opens the store for `caller` (a plain key) or virtual key `key_id`.
    pub async fn open(s: Stores<'_>, caller: Option<&Secret>, key_id: Option<&str>) -> Result<Self, StoreError> {
        let shelf = s.archive.shelf(s.state).await?;
        let owner = super::owner(s.desk, s.state, caller, key_id).await?;
        Ok(Self { shelf, owner, limits: s.config.into() })
    }

    /// The shelf and owner (for the read routes).
    pub fn parts(&self) -> (&dyn Shelf, &str) {
        (self.shelf.as_ref(), &self.owner)
    }

    /// `body` with the conversation before it and the items it references
    /// in its `input`; with its own items (to store) and the response it
    /// continues. An unknown `previous_response_id` is a 400
    /// `previous_response_not_found`, an unknown item a 400 naming it.
    pub async fn expand(
        &self,
        body: Map<String, Value>,
        refs: &Refs,
    ) -> Result<(Map<String, Value>, Vec<Value>), ApiError> {
        let found = super::items(self.shelf.as_ref(), &self.owner, &refs.items).await.map_err(|e| unavailable(&e))?;
        let own = history::own_items(&body, &found)?;
        let before = match &refs.previous {
            None => Vec::new(),
            Some(id) => {
                match super::history(self.shelf.as_ref(), &self.owner, id).await.map_err(|e| unavailable(&e))? {
                    Some(items) => items,
                    None => return Err(ApiError::PreviousResponseNotFound(id.chars().take(200).collect())),
                }
            }
        };
        Ok((history::expand(body, before, &own), own))
    }

    /// What keeps this turn's answer once it is made.
    pub fn keeper(self, id: String, previous: Option<String>, input: Vec<Value>) -> Keeper {
        Keeper { turn: self, id, previous, input }
    }
}

/// Keeps one answered response.
pub struct Keeper {
    turn: Turn,
    id: String,
    previous: Option<String>,
    input: Vec<Value>,
}

impl Keeper {
    /// Stores `response` (the object the client got). A failure is logged:
    /// the client has its answer, only a later reference to it will miss.
    pub async fn keep(self, response: Value) {
        let output = response.get("output").and_then(Value::as_array).cloned().unwrap_or_default();
        let record = Record {
            id: self.id,
            owner: self.turn.owner,
            created_ms: crate::health::clock::now_ms(),
            previous: self.previous,
            input: self.input,
            output,
            response,
        };
        let id = record.id.clone();
        if let Err(e) = self.turn.shelf.put(record, self.turn.limits).await {
            tracing::warn!(id = %id, error = %e, "Cannot store a response; later references to it will fail.");
        }
    }
}
