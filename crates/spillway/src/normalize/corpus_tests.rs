//! Runs the fixture corpus in `testdata/normalize/cases.txt`: realistic
//! broken model answers, each with the result it must produce. The file
//! format is described at its top.

use serde_json::{json, Value};

use crate::normalize::{expected_from_response_format, normalize, Expected, NormalizeResult, SchemaCache};

const CASES: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/normalize/cases.txt"));
const SCHEMAS: &str = include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/testdata/normalize/schemas.json"));

#[derive(Debug, Default)]
struct Case {
    name: String,
    schema: String,
    expect: String,
    fixes: Vec<String>,
    input: String,
    output: String,
}

fn parse_cases(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut current: Option<Case> = None;
    // Which multi-line section the lines belong to.
    let mut section: Option<&'static str> = None;
    let mut lines: Vec<&str> = Vec::new();
    let flush = |case: &mut Case, section: Option<&str>, lines: &mut Vec<&str>| {
        match section {
            Some("input") => case.input = lines.join("\n"),
            Some("output") => case.output = lines.join("\n"),
            _ => {}
        }
        lines.clear();
    };
    for line in text.lines() {
        if let Some(header) = line.strip_prefix("### ") {
            let (key, value) = header.split_once(':').map_or((header, ""), |(k, v)| (k, v.trim()));
            if key == "case" {
                assert!(current.is_none(), "case before {value} has no ### end");
                current = Some(Case { name: value.to_owned(), ..Case::default() });
                continue;
            }
            let case = current.as_mut().unwrap_or_else(|| panic!("{line:?} outside a case"));
            flush(case, section, &mut lines);
            section = None;
            match key {
                "schema" => case.schema = value.to_owned(),
                "expect" => case.expect = value.to_owned(),
                "fixes" => case.fixes = value.split_whitespace().map(str::to_owned).collect(),
                "input" => section = Some("input"),
                "output" => section = Some("output"),
                "end" => cases.push(current.take().unwrap()),
                other => panic!("unknown header {other:?} in {}", case.name),
            }
        } else if section.is_some() {
            lines.push(line);
        }
    }
    assert!(current.is_none(), "the last case has no ### end");
    cases
}

fn expected_for(name: &str, schemas: &Value, cache: &SchemaCache) -> Expected {
    if name == "json_object" {
        return Expected::Object;
    }
    let entry = schemas.get(name).unwrap_or_else(|| panic!("no schema {name:?}"));
    let rf = json!({"type": "json_schema", "json_schema": {
        "name": name, "schema": entry["schema"], "strict": entry["strict"]}});
    expected_from_response_format(&rf, cache).unwrap().unwrap()
}

#[test]
fn corpus() {
    let schemas: Value = serde_json::from_str(SCHEMAS).unwrap();
    let cache = SchemaCache::default();
    let cases = parse_cases(CASES);
    assert!(cases.len() >= 60, "the corpus must hold at least 60 cases, has {}", cases.len());
    let mut names = std::collections::HashSet::new();
    let mut failures = Vec::new();
    for case in &cases {
        assert!(names.insert(case.name.clone()), "duplicate case {}", case.name);
        let expected = expected_for(&case.schema, &schemas, &cache);
        let got = normalize(&case.input, &expected);
        let problem = match (case.expect.split_once(' '), &got) {
            (Some(("invalid", label)), Err(e)) if e.metric_label() == label => None,
            (Some(("invalid", label)), other) => Some(format!("want invalid {label}, got {other:?}")),
            (None, Ok(n)) => {
                let want: Value = serde_json::from_str(&case.output)
                    .unwrap_or_else(|e| panic!("{}: bad expected output: {e}", case.name));
                let got_value: Value = serde_json::from_str(&n.json).unwrap();
                let labels: Vec<&str> = n.fixes.iter().map(|f| f.label()).collect();
                if n.result.metric_label() != case.expect {
                    Some(format!("want {}, got {:?} {labels:?}", case.expect, n.result))
                } else if got_value != want {
                    Some(format!("want {want}, got {}", n.json))
                } else if let Some(missing) = case.fixes.iter().find(|f| !labels.contains(&f.as_str())) {
                    Some(format!("fix {missing} not reported; got {labels:?}"))
                } else if n.result == NormalizeResult::Valid && n.json != case.input.trim() {
                    Some("a valid answer must pass unchanged".to_owned())
                } else {
                    // Normalizing the output again changes nothing.
                    let again = normalize(&n.json, &expected);
                    let stable = again.as_ref().is_ok_and(|a| a.json == n.json && a.result == NormalizeResult::Valid);
                    (!stable).then(|| format!("not idempotent: {again:?}"))
                }
            }
            (None, Err(e)) => Some(format!("want {}, got error {e}", case.expect)),
            (Some(_), _) => Some(format!("bad expect line {:?}", case.expect)),
        };
        if let Some(problem) = problem {
            failures.push(format!("{}: {problem}", case.name));
        }
    }
    assert!(failures.is_empty(), "{} of {} cases failed:\n{}", failures.len(), cases.len(), failures.join("\n"));
}
