//! Spillway: an OpenAI-compatible LLM gateway that spills traffic over to
//! the next model instead of failing.
//!
//! The life of a request, by module: [`server`] accepts it, [`api`]
//! validates it, [`gateway`] resolves its cascade, [`cascade`] runs the
//! attempts through [`providers`] (with [`health`] deciding what to skip),
//! and [`api::wire`] stamps what goes back. [`config`] compiles the YAML
//! every part is built from; [`metrics`] holds every exported metric. See
//! `ARCHITECTURE.md` for the diagram.

pub mod alerts;
pub mod api;
pub mod app;
pub mod cascade;
pub mod cli;
pub mod client_link;
pub mod config;
pub mod digits;
pub mod discovery;
pub mod drill;
pub mod escalation;
pub mod export;
pub mod gateway;
pub mod handoff;
pub mod health;
pub mod journal;
pub mod load;
pub mod metrics;
pub mod normalize;
pub mod outcome;
pub mod prompts;
pub mod providers;
pub mod quality;
pub mod redact;
pub mod secret;
pub mod server;
pub mod state;
pub mod stored;
pub mod supervisor;
pub mod telemetry;
pub mod tenancy;
pub mod usage;
