//! The cascade runner: the heart of a request's life.
//!
//! For one request it walks the cascade's targets in order ([`run`]).
//! Before each attempt the target must pass the gates ([`gate`]): not dead,
//! breaker admits it, context fits, load allows it, provider bulkhead has
//! room. The attempt itself ([`attempt`]) runs up to the upstream's first
//! token — for streams the response is held until then, so a failure
//! before it falls through to the next model invisibly. With
//! `hedge_after`, a slow first token also starts the next model and the
//! first token wins. After the first byte reaches the client,
//! [`stream::Forward`] passes chunks on as they arrive: a *silent*
//! fallback is no longer possible (the client has part of one model's
//! answer), but a stream that breaks mid-answer is continued on the next
//! model that can take it ([`continuation`]: the partial answer as a
//! prefill, or an instruction to continue), with the seam trimmed and
//! both models named in the last chunk; only when nobody can continue does
//! the client see an error event.
//!
//! A model demoted for the quality of its answers is walked after the
//! healthy ones ([`order`]).
//!
//! Embeddings walk their own cascades with [`embed::run`], through the
//! same gates and the same settlement.
//!
//! Every attempt's outcome is settled exactly once ([`settle`]), whole or
//! streamed; that settlement alone feeds the breaker, dead marks, TTFT and
//! the attempt metrics. The runner reads only a narrow [`Context`] and
//! knows nothing of what follows it: handoff, cost and alerts belong to
//! the handler, which gets an answer ([`Served`]) or the record of a walk
//! without one ([`Unanswered`]).

pub mod attempt;
pub mod context;
pub mod continuation;
pub mod embed;
pub mod gap;
pub mod gate;
pub mod json;
pub mod order;
pub mod pass;
pub mod plan;
pub mod prepare;
pub mod run;
pub mod seam;
pub mod served;
pub mod settle;
pub mod stream;
pub mod walk;
pub mod whole;

pub use context::Context;
pub use plan::{CascadePlan, Target};
pub use run::run;
pub use served::{NoAnswer, Served, ServedBody, Unanswered};
pub use settle::{Finish, RequestOutcome};
