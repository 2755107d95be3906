//! The schemas real clients send (`testdata/schemas/clients.json`: openai-node's
//! zodResponseFormat, pydantic v2, the AI SDK, older drafts), each with
//! answers that must pass and answers that must fail, run through
//! validation, renaming and the mock's sampler.

use serde_json::Value;

use crate::normalize::{normalize, sample, Expected, NormalizeResult, SchemaCache};

const CLIENTS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/schemas/clients.json"));

fn fixtures() -> Vec<Value> {
    serde_json::from_str::<Vec<Value>>(CLIENTS).unwrap()
}

fn expected(schema: &Value, cache: &SchemaCache) -> Expected {
    Expected::Schema { compiled: cache.get_or_compile(schema).unwrap(), strict: true }
}

#[test]
fn every_draft_is_validated_as_it_names_itself() {
    let cache = SchemaCache::default();
    for f in fixtures() {
        let name = f["name"].as_str().unwrap();
        let compiled = cache.get_or_compile(&f["schema"]).unwrap();
        for ok in f["valid"].as_array().unwrap() {
            assert_eq!(compiled.check(ok), Ok(()), "{name}: {ok}");
        }
        for bad in f["invalid"].as_array().unwrap() {
            assert!(compiled.check(bad).is_err(), "{name}: {bad} must be invalid");
            // And it is an invalid answer, not a repaired one.
            let err = normalize(&bad.to_string(), &expected(&f["schema"], &cache));
            assert!(err.is_err(), "{name}: {bad} normalized to {err:?}");
        }
    }
}

#[test]
fn renamed_keys_are_repaired_in_every_draft() {
    let cache = SchemaCache::default();
    for f in fixtures().iter().filter(|f| f.get("renamed").is_some()) {
        let name = f["name"].as_str().unwrap();
        let answer = f["renamed"]["answer"].as_str().unwrap();
        let done = normalize(answer, &expected(&f["schema"], &cache)).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(done.result, NormalizeResult::Repaired, "{name}");
        let got: Value = serde_json::from_str(&done.json).unwrap();
        assert_eq!(got, f["renamed"]["expect"], "{name}");
    }
}

#[test]
fn the_mock_sample_validates_for_every_fixture() {
    let cache = SchemaCache::default();
    for f in fixtures() {
        let compiled = cache.get_or_compile(&f["schema"]).unwrap();
        let value = sample(&compiled);
        assert_eq!(compiled.check(&value), Ok(()), "{}: {value}", f["name"]);
        // The sample goes through the normalizer untouched.
        let done = normalize(&value.to_string(), &expected(&f["schema"], &cache)).unwrap();
        assert_eq!(done.result, NormalizeResult::Valid);
    }
}
