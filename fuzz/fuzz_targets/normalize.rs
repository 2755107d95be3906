//! Fuzzes the JSON normalizer (`spillway::normalize`): whatever a model
//! answers, normalizing must not panic, and a normalized answer must be
//! strict JSON that normalizes to itself, unchanged.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use spillway::normalize::{normalize, Expected, NormalizeResult, SchemaCache};

/// The expectations a request can carry: plain `json_object`, and a schema
/// with nesting, arrays and snake_case names (so renaming runs too).
fn expectations() -> &'static [Expected] {
    static EXPECTED: OnceLock<Vec<Expected>> = OnceLock::new();
    EXPECTED.get_or_init(|| {
        let cache = SchemaCache::default();
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "user_name": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object",
                    "properties": {"unit_price": {"type": "number"}, "quantity": {"type": "integer"}}}}
            }
        });
        let compiled = cache.get_or_compile(&schema).ok();
        let mut out = vec![Expected::Object];
        out.extend(compiled.map(|compiled| Expected::Schema { compiled, strict: false }));
        out
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for expected in expectations() {
        if let Ok(first) = normalize(text, expected) {
            assert!(serde_json::from_str::<serde_json::Value>(&first.json).is_ok());
            let again = normalize(&first.json, expected).ok();
            assert_eq!(
                again.as_ref().map(|a| a.json.as_str()),
                Some(first.json.as_str())
            );
            assert_eq!(again.map(|a| a.result), Some(NormalizeResult::Valid));
        }
    }
});
