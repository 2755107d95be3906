//! A small parser for the Prometheus text exposition format (0.0.4), used by
//! the `vllm_metrics` load monitor on each scrape, never on the request path.
//!
//! Why hand-written: the gateway only reads a handful of gauges from one
//! endpoint, and the crates that parse this format either pull in a regex
//! engine or a PEG parser generator for a grammar that is one line long, or
//! get label escaping wrong (`prometheus-parse` splits on `,` and `"`
//! without handling `\"`). `prometheus-client`, which the gateway uses to
//! *expose* its metrics, has no parser. The grammar below is the whole
//! format, so the risk of doing it here is small, and it is fuzzable.
//!
//! What it accepts, per line (`\n` or `\r\n` separated):
//! - blank lines and `#` lines (`# HELP`, `# TYPE`, OpenMetrics `# EOF`, plain
//!   comments) are skipped: the load formula needs only sample values;
//! - `name{label="value",…} value [timestamp_ms]`, with blanks or tabs between
//!   tokens, an optional trailing comma in the label set, the escapes `\\`,
//!   `\"` and `\n` in label values, values such as `8.0`, `1e-3`, `NaN`,
//!   `+Inf`, `-Inf`, and an integer timestamp in milliseconds;
//! - the Prometheus 3 forms with quoted names (`{"my.metric",a="b"} 1`,
//!   `m{"label.name"="v"} 1`);
//! - an OpenMetrics exemplar (`… # {trace_id="x"} 1`) after the value, ignored.
//!
//! Anything else is an error for the whole scrape, as in Prometheus.

use std::borrow::Cow;

use super::error::LoadError;

/// One sample line. Borrowed from the scraped text; a label value is owned
/// only when it had escapes to undo.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample<'a> {
    /// Metric name, e.g. `vllm:num_requests_running`.
    pub name: Cow<'a, str>,
    /// Label pairs in the order they appeared.
    pub labels: Vec<(Cow<'a, str>, Cow<'a, str>)>,
    /// The value; may be NaN or infinite.
    pub value: f64,
    /// Optional timestamp, milliseconds since the Unix epoch.
    pub timestamp_ms: Option<i64>,
}

impl Sample<'_> {
    /// The value of label `name`, if the sample has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_ref())
    }
}

/// Iterates over the samples of `text`, skipping comments and blank lines.
/// Stops being useful at the first `Err`; callers should fail the scrape.
pub fn samples(text: &str) -> impl Iterator<Item = Result<Sample<'_>, LoadError>> {
    text.lines().enumerate().filter_map(|(i, line)| {
        let line = line.trim_start_matches([' ', '\t']);
        if line.is_empty() || line.starts_with('#') {
            return None;
        }
        Some(parse_line(line).map_err(|reason| LoadError::Parse { line: i + 1, reason }))
    })
}

/// Parses every sample of `text`, failing on the first malformed line.
pub fn parse(text: &str) -> Result<Vec<Sample<'_>>, LoadError> {
    samples(text).collect()
}

/// A byte cursor over one line. All the delimiters are ASCII, so slicing at
/// their positions always lands on UTF-8 character boundaries.
struct Cursor<'a> {
    s: &'a str,
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.s.as_bytes().get(self.pos).copied()
    }

    fn eat(&mut self, b: u8) -> bool {
        let hit = self.peek() == Some(b);
        if hit {
            self.pos += 1;
        }
        hit
    }

    /// Skips blanks and tabs; returns whether there were any.
    fn blanks(&mut self) -> bool {
        let start = self.pos;
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
        self.pos > start
    }

    /// A legacy name: `[a-zA-Z_:][a-zA-Z0-9_:]*` (`colons` false for labels).
    fn name(&mut self, colons: bool) -> Option<&'a str> {
        let start = self.pos;
        while let Some(b) = self.peek() {
            let ok = b.is_ascii_alphabetic()
                || b == b'_'
                || (colons && b == b':')
                || (self.pos > start && b.is_ascii_digit());
            if !ok {
                break;
            }
            self.pos += 1;
        }
        (self.pos > start).then(|| &self.s[start..self.pos])
    }

    /// A double-quoted string with `\\`, `\"`, `\n` escapes; the opening
    /// quote must be next.
    fn quoted(&mut self) -> Result<Cow<'a, str>, &'static str> {
        if !self.eat(b'"') {
            return Err("expected '\"'");
        }
        let start = self.pos;
        let mut escaped = false;
        loop {
            match self.peek() {
                None => return Err("unterminated quoted string"),
                Some(b'\\') => {
                    escaped = true;
                    self.pos += 2;
                }
                Some(b'"') => break,
                Some(_) => self.pos += 1,
            }
        }
        let raw = self.s.get(start..self.pos).ok_or("unterminated quoted string")?;
        self.pos += 1;
        if !escaped {
            return Ok(Cow::Borrowed(raw));
        }
        let mut out = String::with_capacity(raw.len());
        let mut chars = raw.chars();
        while let Some(c) = chars.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some('\\') => out.push('\\'),
                Some('"') => out.push('"'),
                Some('n') => out.push('\n'),
                _ => return Err("invalid escape in quoted string"),
            }
        }
        Ok(Cow::Owned(out))
    }

    /// The next run of non-blank bytes.
    fn token(&mut self) -> &'a str {
        let start = self.pos;
        while matches!(self.peek(), Some(b) if b != b' ' && b != b'\t') {
            self.pos += 1;
        }
        &self.s[start..self.pos]
    }
}

fn parse_line(line: &str) -> Result<Sample<'_>, &'static str> {
    let mut c = Cursor { s: line, pos: 0 };
    let mut name = c.name(true).map(Cow::Borrowed);
    let mut labels = Vec::new();
    // Blanks may separate the name from its labels, and must separate a
    // bare name from the value (after `}` they are optional, as in
    // Prometheus's own parser).
    let mut blank = c.blanks();
    if c.eat(b'{') {
        loop {
            c.blanks();
            if c.eat(b'}') {
                break;
            }
            let quoted = c.peek() == Some(b'"');
            let key = if quoted { c.quoted()? } else { Cow::Borrowed(c.name(false).ok_or("expected a label name")?) };
            c.blanks();
            if c.eat(b'=') {
                c.blanks();
                labels.push((key, c.quoted()?));
            } else if name.is_none() && quoted {
                // Prometheus 3: a quoted metric name alone inside the braces.
                name = Some(key);
            } else {
                return Err("expected '=' after a label name");
            }
            c.blanks();
            if !c.eat(b',') {
                if c.eat(b'}') {
                    break;
                }
                return Err("expected ',' or '}' in the label set");
            }
        }
        c.blanks();
        blank = true;
    }
    let name = name.ok_or("expected a metric name")?;
    if !blank {
        return Err("expected a blank before the value");
    }
    let value = parse_value(c.token()).ok_or("invalid sample value")?;
    let mut timestamp_ms = None;
    if c.blanks() {
        match c.peek() {
            None | Some(b'#') => {}
            Some(_) => {
                timestamp_ms = Some(c.token().parse().map_err(|_| "invalid timestamp")?);
                c.blanks();
            }
        }
    }
    // Whatever remains may only be an OpenMetrics exemplar.
    if !matches!(c.peek(), None | Some(b'#')) {
        return Err("unexpected text after the sample");
    }
    Ok(Sample { name, labels, value, timestamp_ms })
}

/// Go's `ParseFloat` spellings as Prometheus writes them. Rust's parser is
/// case-insensitive for `nan`/`inf`, which is what we want, but also takes
/// `infinity`; harmless.
fn parse_value(token: &str) -> Option<f64> {
    if token.is_empty() {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(line: &str) -> Sample<'_> {
        let mut all = parse(line).unwrap();
        assert_eq!(all.len(), 1, "{line}");
        all.remove(0)
    }

    #[test]
    fn plain_and_labelled_samples() {
        let s = one("process_open_fds 12");
        assert_eq!((s.name.as_ref(), s.value, s.labels.len()), ("process_open_fds", 12.0, 0));
        let s = one("vllm:num_requests_running{engine=\"0\",model_name=\"t-lite\"} 8.0");
        assert_eq!(s.name, "vllm:num_requests_running");
        assert_eq!(s.label("model_name"), Some("t-lite"));
        assert_eq!(s.label("engine"), Some("0"));
        assert_eq!(s.label("nope"), None);
        assert_eq!(s.value, 8.0);
    }

    #[test]
    fn special_values_and_timestamps() {
        assert!(one("a NaN").value.is_nan());
        assert_eq!(one("a +Inf").value, f64::INFINITY);
        assert_eq!(one("a -Inf").value, f64::NEG_INFINITY);
        assert_eq!(one("a 1.5e-3").value, 0.0015);
        let s = one("a{b=\"c\"} 3 1712345678901");
        assert_eq!(s.timestamp_ms, Some(1_712_345_678_901));
        assert_eq!(one("a 3 -5").timestamp_ms, Some(-5));
    }

    #[test]
    fn escapes_blanks_and_trailing_comma() {
        let s = one(r#"m{path="C:\\dir",msg="say \"hi\"\nbye",} 1"#);
        assert_eq!(s.label("path"), Some(r"C:\dir"));
        assert_eq!(s.label("msg"), Some("say \"hi\"\nbye"));
        let s = one("m { a = \"1\" , b=\"}\" }\t2");
        assert_eq!((s.label("a"), s.label("b"), s.value), (Some("1"), Some("}"), 2.0));
        assert_eq!(one("m{} 4").labels.len(), 0);
        assert_eq!(one("m{a=\"1\"}5").value, 5.0);
        assert_eq!(one("m{a=\"ünïcødé ✓\"} 1").label("a"), Some("ünïcødé ✓"));
    }

    #[test]
    fn quoted_names_and_exemplars() {
        let s = one(r#"{"my.metric",a="b"} 1"#);
        assert_eq!((s.name.as_ref(), s.label("a")), ("my.metric", Some("b")));
        let s = one(r#"m{"label.name"="v"} 2"#);
        assert_eq!(s.label("label.name"), Some("v"));
        let s = one(r#"m_bucket{le="1"} 3 # {trace_id="abc"} 0.5"#);
        assert_eq!((s.value, s.timestamp_ms), (3.0, None));
    }

    #[test]
    fn comments_and_blank_lines_are_skipped() {
        let text = "# HELP m A help text with \"quotes\".\n# TYPE m gauge\n\n  \r\nm 1\r\n# EOF\n";
        let all = parse(text).unwrap();
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].value, 1.0);
    }

    #[test]
    fn malformed_lines_fail_with_their_line_number() {
        let cases = [
            ("m", "expected a blank before the value"),
            ("m abc", "invalid sample value"),
            ("m{a=\"1\" 2", "expected ',' or '}' in the label set"),
            ("m{a=1} 2", "expected '\"'"),
            ("m{a=\"1} 2", "unterminated quoted string"),
            ("m{a=\"\\x\"} 2", "invalid escape in quoted string"),
            ("m{=\"1\"} 2", "expected a label name"),
            ("m{a} 2", "expected '=' after a label name"),
            ("9m 1", "expected a metric name"),
            ("m 1 12.5", "invalid timestamp"),
            ("m 1 2 3", "unexpected text after the sample"),
            ("m{a=\"1\"}", "invalid sample value"),
        ];
        for (line, reason) in cases {
            let text = format!("ok 1\n{line}\n");
            assert_eq!(parse(&text).unwrap_err(), LoadError::Parse { line: 2, reason }, "{line}");
        }
    }
}
