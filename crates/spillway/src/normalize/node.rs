//! The tree the repairer builds and the compact writer that turns it back
//! into JSON text.
//!
//! Where it sits: [`super::repair`] produces a [`Node`], [`super::rename`]
//! edits its keys, and [`write_compact`] writes what the client receives and
//! what [`super::validate`] checks.

use std::borrow::Cow;

/// A parsed JSON value. Objects keep their members in the model's order
/// (`serde_json::Map` would sort them), numbers keep their normalized text
/// (no float round-trip). Strings, keys and numbers borrow from the answer
/// unless a repair changed them: allocation was most of the repair path's
/// time.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Node<'a> {
    Null,
    Bool(bool),
    Num(Cow<'a, str>),
    Str(Cow<'a, str>),
    Arr(Vec<Node<'a>>),
    Obj(Vec<(Cow<'a, str>, Node<'a>)>),
}

/// Writes a tree as compact JSON.
pub(crate) fn write_compact(node: &Node<'_>, out: &mut String) {
    match node {
        Node::Null => out.push_str("null"),
        Node::Bool(true) => out.push_str("true"),
        Node::Bool(false) => out.push_str("false"),
        Node::Num(n) => out.push_str(n),
        Node::Str(s) => write_str(s, out),
        Node::Arr(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_compact(item, out);
            }
            out.push(']');
        }
        Node::Obj(members) => {
            out.push('{');
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_str(k, out);
                out.push(':');
                write_compact(v, out);
            }
            out.push('}');
        }
    }
}

fn write_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Turns the tree into a `serde_json::Value` for validation, moving the
/// strings rather than writing and re-reading text (that re-read was a third
/// of the repair path's time). `None` only for a number `serde_json` cannot
/// hold (`1e400`). A duplicated key keeps its last value, as `serde_json`
/// does when it reads the text the client receives.
pub(crate) fn into_value(node: Node<'_>) -> Option<serde_json::Value> {
    use serde_json::Value;
    Some(match node {
        Node::Null => Value::Null,
        Node::Bool(b) => Value::Bool(b),
        Node::Num(n) => Value::Number(n.parse().ok()?),
        Node::Str(s) => Value::String(s.into_owned()),
        Node::Arr(items) => Value::Array(items.into_iter().map(into_value).collect::<Option<Vec<_>>>()?),
        Node::Obj(members) => {
            let mut map = serde_json::Map::new();
            for (k, v) in members {
                map.insert(k.into_owned(), into_value(v)?);
            }
            Value::Object(map)
        }
    })
}
