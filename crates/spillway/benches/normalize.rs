//! Times the JSON normalizer on a realistic ~4 KB answer: a Russian preamble,
//! a fenced, slightly broken JSON (trailing commas, single quotes, a Python
//! literal, a renamed field) validated against a nested schema.
//!
//! Run: `cargo bench -p spillway --bench normalize`. Prints the median and
//! the 90th percentile of extract + repair + rename + validate with the
//! compiled schema taken from the cache (as the request path does), and the
//! fast path for an answer that is valid as returned.
#![allow(clippy::disallowed_methods)] // Times real work with std::time::Instant; no runtime here to pause.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A bench main: failing loudly is right.

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use spillway::normalize::{expected_from_response_format, normalize, NormalizeResult, SchemaCache};

const RUNS: usize = 5_000;

fn response_format() -> Value {
    json!({"type": "json_schema", "json_schema": {"name": "order_report", "strict": true, "schema": {
        "type": "object",
        "properties": {
            "report_id": {"type": "string"},
            "customer": {"type": "object", "properties": {
                "full_name": {"type": "string"}, "email": {"type": "string"},
                "vip": {"type": "boolean"}},
                "required": ["full_name", "email", "vip"], "additionalProperties": false},
            "items": {"type": "array", "items": {"type": "object", "properties": {
                "sku": {"type": "string"}, "title": {"type": "string"},
                "quantity": {"type": "integer", "minimum": 1}, "unit_price": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}}},
                "required": ["sku", "title", "quantity", "unit_price", "tags"],
                "additionalProperties": false}},
            "total": {"type": "number"},
            "notes": {"type": ["string", "null"]}
        },
        "required": ["report_id", "customer", "items", "total", "notes"],
        "additionalProperties": false
    }}})
}

/// A ~4 KB answer: prose, a fence, and the usual damage.
fn broken_answer() -> String {
    let mut items = Vec::new();
    for i in 0..24 {
        items.push(format!(
            "    {{'sku': 'SKU-{i:04}', 'title': 'Товар номер {i} — кабель', 'quantity': {q}, \
             'unitPrice': {p}.50, 'tags': ['склад', 'акция',],}}",
            q = i % 5 + 1,
            p = 100 + i * 7
        ));
    }
    format!(
        "Конечно! Вот отчёт по заказу в формате JSON:\n\n```json\n{{\n  \"report_id\": \"R-2024-0042\",\n  \
         \"customer\": {{\"full_name\": \"Иван Петров\", \"email\": \"ivan@example.ru\", \"vip\": True}},\n  \
         \"items\": [\n{}\n  ],\n  \"total\": 12345.5,\n  \"notes\": None,\n}}\n```\n\nЕсли нужно, могу добавить детали.",
        items.join(",\n")
    )
}

fn time(label: &str, text: &str, run: impl Fn(&str)) {
    for _ in 0..500 {
        run(text);
    }
    let mut samples: Vec<Duration> = (0..RUNS)
        .map(|_| {
            let start = Instant::now();
            run(black_box(text));
            start.elapsed()
        })
        .collect();
    samples.sort();
    let median = samples[RUNS / 2];
    let p90 = samples[RUNS * 9 / 10];
    println!("{label}: {} bytes, median {median:?}, p90 {p90:?} over {RUNS} runs", text.len());
}

fn main() {
    let cache = SchemaCache::default();
    let rf = response_format();
    let expected = expected_from_response_format(&rf, &cache).unwrap().unwrap();
    let broken = broken_answer();
    let done = normalize(&broken, &expected).expect("the bench answer must normalize");
    assert_eq!(done.result, NormalizeResult::Repaired);
    let valid = done.json.clone();

    time("broken, fenced (extract+repair+rename+validate)", &broken, |t| {
        black_box(normalize(t, &expected).unwrap());
    });
    time("same, schema looked up in the cache per call", &broken, |t| {
        let expected = expected_from_response_format(&rf, &cache).unwrap().unwrap();
        black_box(normalize(t, &expected).unwrap());
    });
    time("valid as returned (fast path)", &valid, |t| {
        black_box(normalize(t, &expected).unwrap());
    });
}
