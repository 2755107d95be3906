//! A drill of JSON damage: a mock that fences, renames and breaks a share
//! of its answers, behind a clean reserve. The report gives the valid-JSON
//! rate per model as sent and after normalization, and the cascade's
//! valid-output rate once broken answers fell through to the reserve.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)] // tests: fail loudly

use spillway::drill;

#[test]
fn the_report_shows_valid_json_before_and_after_normalization() {
    let text = r##"
gateway:
  providers:
    m:
      kind: mock
      models:
        - { id: sloppy, behavior: { latency: 10ms, json: { fenced: 0.3, renamed: 0.2, broken: 0.06 } } }
        - { id: clean, behavior: { latency: 20ms } }
  cascades:
    extract: { models: [m/sloppy, m/clean] }
seed: 3
duration: 10m
traffic:
  - cascade: extract
    rps: 2
    schema:
      $schema: "http://json-schema.org/draft-07/schema#"
      type: object
      required: [first_name, age]
      additionalProperties: false
      definitions: { Name: { type: string } }
      properties: { first_name: { $ref: "#/definitions/Name" }, age: { type: integer } }
"##;
    let s = drill::load_str(text, None, &|_| None).unwrap_or_else(|e| panic!("invalid scenario: {e}"));
    let run = drill::run(&s).unwrap();
    let r = drill::report::build(&s, &run);
    let sloppy = r.json.iter().find(|j| j.model == "m/sloppy").unwrap();
    assert_eq!(sloppy.answers, 1200);
    assert!((sloppy.valid_as_sent - 0.44).abs() < 0.05, "as sent: {}", sloppy.valid_as_sent);
    assert!((sloppy.valid_after - 0.94).abs() < 0.03, "after: {}", sloppy.valid_after);
    let clean = r.json.iter().find(|j| j.model == "m/clean").unwrap();
    assert_eq!((clean.valid_as_sent, clean.valid_after), (1.0, 1.0), "the reserve answered the broken ones");
    assert_eq!(r.cascades[0].valid_rate, Some(1.0));
    let text = r.text("json");
    assert!(text.contains("JSON answers per model (valid as sent → after normalization):"), "{text}");
}
