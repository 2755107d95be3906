//! `responses:`.

use super::*;

pub(super) fn compile_responses(cx: &mut Ctx, r: RawResponses) -> ResponsesConfig {
    let defaults = ResponsesConfig::default();
    let retention = cx.duration("responses.retention", r.retention.as_ref(), defaults.retention);
    if retention.is_zero() {
        cx.err("responses.retention", "must be longer than 0 (use `store: false` to keep nothing)");
    }
    let max_stored = r.max_stored.unwrap_or(defaults.max_stored);
    if max_stored == 0 {
        cx.err("responses.max_stored", "must be greater than 0 (use `store: false` to keep nothing)");
    }
    ResponsesConfig { store: r.store.unwrap_or(defaults.store), retention, max_stored }
}
