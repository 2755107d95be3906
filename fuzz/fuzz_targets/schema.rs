//! Fuzzes every component that walks a client's JSON Schema: compiling it
//! (the bounds, the draft, the validator), the mock's sampler, and the
//! normalizer's renaming and validation of an answer against it. Nothing may
//! panic or run unbounded (libFuzzer's `-timeout` catches a hang, `-rss_limit_mb`
//! a blow-up such as the `$ref` cycle this target was written for), and a
//! sample the schema accepts must come through normalization unchanged.
//!
//! Input: a JSON Schema, a newline, then a model's answer.
#![no_main]

use libfuzzer_sys::fuzz_target;
use spillway::normalize::{normalize, sample, CompiledSchema, Expected, NormalizeResult};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (schema, answer) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(schema) = serde_json::from_str::<serde_json::Value>(schema) else {
        return;
    };
    let Ok(compiled) = CompiledSchema::compile(&schema) else {
        return;
    };
    let compiled = std::sync::Arc::new(compiled);
    let expected = Expected::Schema { compiled: compiled.clone(), strict: false };
    let _ = normalize(answer, &expected);
    let value = sample(&compiled);
    let text = value.to_string();
    if let Ok(done) = normalize(&text, &expected) {
        if done.result == NormalizeResult::Valid {
            assert_eq!(done.json, text);
        }
    }
});
