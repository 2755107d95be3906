//! Model discovery: from the providers' model listings to ordered cascades.
//!
//! Where it sits: a background refresh job (every `discovery.interval`, and
//! on `POST /admin/discovery/refresh` or `spillway discover`) GETs each
//! provider's listing, reads it here, merges the config's static `models:`,
//! builds every discovered cascade, diffs it against the cached one, and
//! publishes the result for the runner to read; the request path never
//! waits on any of this. Steps 1–5 are the pure part of that job — no I/O,
//! no clock, no state store — so all of it is tested with plain data:
//!
//! 1. [`listing`]: [`parse_listing`] turns a listing body of one of the
//!    formats of SPEC §4 into [`ModelMeta`]s plus warnings; [`listing_url`]
//!    says what to GET.
//! 2. [`model`]: [`ModelMeta`], parameter counts read from ids, and
//!    [`apply_hints`] for static models.
//! 3. [`build`]: [`build_cascade`], SPEC §4 "Building a discovered cascade",
//!    with a [`Reason`] on every entry.
//! 4. [`mod@diff`]: [`diff()`] says what changed between two builds, for the
//!    "cascade changed" alert.
//! 5. [`round`]: one round's listings and every cascade built from them
//!    for a config (pure as well).
//!
//! The I/O part: [`fetch`] GETs the listings, [`cache`] keeps rounds in the
//! state store and in `state.data_dir`, [`state`] holds the latest round
//! and the operator events across reloads, and [`refresh`] is the
//! background job that ties them together and swaps the rebuilt plans into
//! the running gateway.

pub mod build;
pub mod cache;
pub mod diff;
pub mod fetch;
pub mod listing;
pub mod model;
pub mod refresh;
pub mod round;
pub mod state;

pub use build::{
    build_cascade, check_filters, BuiltCascade, CascadeEntry, CascadeSpec, Filters, LeftOut, RankKey, Reason,
    Rejection, Strategy, UnknownStrategy,
};
pub use diff::{diff, family_version, CascadeDiff, Move, Upgrade, Version};
pub use listing::{
    listing_path, listing_url, parse_listing, Listing, ListingError, ListingFormat, UnknownFormat, ANTHROPIC_PAGE_LIMIT,
};
pub use model::{apply_hints, apply_provider_price, parse_param_count, Merged, ModelMeta, Source, StaticHint};
pub use round::{ProviderListing, Round};
pub use state::{DiscoveryEvent, DiscoveryState};
