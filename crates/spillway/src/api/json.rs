//! A borrowed JSON tree for reading a request once, and one reading
//! interface over it and [`serde_json::Value`].
//!
//! [`Json`] borrows every string without escapes from the body it was read
//! from and keeps objects as vectors of entries: reading a typical chat
//! request allocates a handful of vectors instead of a map node and a string
//! per key. The request path validates clients' bodies on it; code that
//! also runs on `Value`s (tests, rewritten bodies) is written once against
//! [`JsonView`].

use super::lex::{Lex, MAX_DEPTH};
use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use std::borrow::Cow;
use std::fmt;

/// A JSON value borrowing its strings from the text it was read from.
#[derive(Debug, Clone, PartialEq)]
pub enum Json<'a> {
    /// `null`.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A number.
    Number(serde_json::Number),
    /// A string (borrowed unless it had escapes).
    String(Cow<'a, str>),
    /// An array.
    Array(Vec<Json<'a>>),
    /// An object's entries in the order given (a repeated key: the last
    /// one counts, as in `Value`).
    Object(Vec<(Cow<'a, str>, Json<'a>)>),
}

/// The kind of a JSON value, with what the validator reads of it.
pub enum Kind<'v, J> {
    /// `null`.
    Null,
    /// A boolean.
    Bool(bool),
    /// A number.
    Number,
    /// A string.
    String(&'v str),
    /// An array.
    Array(&'v [J]),
    /// An object.
    Object,
}

/// Read access shared by [`Json`] and [`Value`].
pub trait JsonView: Sized {
    /// What kind of value this is.
    fn kind(&self) -> Kind<'_, Self>;
    /// An object's field (the last one of that name).
    fn get(&self, key: &str) -> Option<&Self>;
    /// A number that fits `u64`.
    fn as_u64(&self) -> Option<u64>;
    /// A number as `f64`.
    fn as_f64(&self) -> Option<f64>;
    /// The length of its compact JSON text.
    fn encoded_len(&self) -> usize;

    /// A string's text.
    fn as_str(&self) -> Option<&str> {
        match self.kind() {
            Kind::String(s) => Some(s),
            _ => None,
        }
    }
    /// An array's items.
    fn as_array(&self) -> Option<&[Self]> {
        match self.kind() {
            Kind::Array(items) => Some(items),
            _ => None,
        }
    }
    /// `null`.
    fn is_null(&self) -> bool {
        matches!(self.kind(), Kind::Null)
    }
    /// A string.
    fn is_string(&self) -> bool {
        matches!(self.kind(), Kind::String(_))
    }
}

impl JsonView for Value {
    fn kind(&self) -> Kind<'_, Self> {
        match self {
            Value::Null => Kind::Null,
            Value::Bool(b) => Kind::Bool(*b),
            Value::Number(_) => Kind::Number,
            Value::String(s) => Kind::String(s),
            Value::Array(items) => Kind::Array(items),
            Value::Object(_) => Kind::Object,
        }
    }
    fn get(&self, key: &str) -> Option<&Self> {
        self.as_object()?.get(key)
    }
    fn as_u64(&self) -> Option<u64> {
        Value::as_u64(self)
    }
    fn as_f64(&self) -> Option<f64> {
        Value::as_f64(self)
    }
    fn encoded_len(&self) -> usize {
        self.to_string().len()
    }
}

impl JsonView for Json<'_> {
    fn kind(&self) -> Kind<'_, Self> {
        match self {
            Json::Null => Kind::Null,
            Json::Bool(b) => Kind::Bool(*b),
            Json::Number(_) => Kind::Number,
            Json::String(s) => Kind::String(s),
            Json::Array(items) => Kind::Array(items),
            Json::Object(_) => Kind::Object,
        }
    }
    fn get(&self, key: &str) -> Option<&Self> {
        match self {
            Json::Object(entries) => entries.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
    fn as_u64(&self) -> Option<u64> {
        match self {
            Json::Number(n) => n.as_u64(),
            _ => None,
        }
    }
    fn as_f64(&self) -> Option<f64> {
        match self {
            Json::Number(n) => n.as_f64(),
            _ => None,
        }
    }
    fn encoded_len(&self) -> usize {
        serde_json::to_vec(self).map_or(0, |v| v.len())
    }
}

impl<'a> Json<'a> {
    /// Reads `text` with the byte scanner ([`super::lex`]): what serde
    /// reads of it, or `None` when the scanner is not sure — not JSON,
    /// nesting past its limit — and serde should read it (and word the
    /// error).
    pub fn scan(text: &'a str) -> Option<Self> {
        let mut lx = Lex::new(text);
        let value = scan_value(&mut lx, 0)?;
        lx.at_end().then_some(value)
    }
}

fn scan_value<'a>(lx: &mut Lex<'a>, depth: usize) -> Option<Json<'a>> {
    Some(match lx.peek()? {
        b'"' => Json::String(lx.string()?.1),
        b'{' if depth < MAX_DEPTH => {
            let mut entries = Vec::with_capacity(4);
            if !lx.open(b'{', b'}')? {
                loop {
                    let (_, key) = lx.string()?;
                    lx.eat(b':')?;
                    entries.push((key, scan_value(lx, depth + 1)?));
                    if !lx.more(b'}')? {
                        break;
                    }
                }
            }
            Json::Object(entries)
        }
        b'[' if depth < MAX_DEPTH => {
            let mut items = Vec::with_capacity(4);
            lx.elements(|lx| {
                items.push(scan_value(lx, depth + 1)?);
                Some(())
            })?;
            Json::Array(items)
        }
        b'{' | b'[' => return None,
        b'n' | b't' | b'f' => match lx.word()? {
            b"null" => Json::Null,
            word => Json::Bool(word == b"true"),
        },
        _ => match lx.number_text()? {
            (_, Some(n)) => Json::Number(n.into()),
            // A sign, a fraction or an exponent: serde reads the number
            // (its float parsing is its own; rare in a request).
            (text, None) => serde_json::from_str(text).ok()?,
        },
    })
}

impl<'de: 'a, 'a> Deserialize<'de> for Json<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Json<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_unit<E>(self) -> Result<Self::Value, E> {
                Ok(Json::Null)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
                Ok(Json::Bool(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
                Ok(Json::Number(v.into()))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Self::Value, E> {
                // serde_json hands finite numbers only.
                Ok(serde_json::Number::from_f64(v).map_or(Json::Null, Json::Number))
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Json::String(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Json::String(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Json::String(Cow::Owned(v)))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Json::Array(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut entries = Vec::with_capacity(map.size_hint().unwrap_or(4));
                while let Some(Key(key)) = map.next_key()? {
                    let value = map.next_value()?;
                    entries.push((key, value));
                }
                Ok(Json::Object(entries))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// An object key, borrowed unless it had escapes (serde's own `Cow`
/// always copies).
struct Key<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Key<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Key<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
                Ok(Key(Cow::Owned(v)))
            }
        }
        d.deserialize_str(V(std::marker::PhantomData))
    }
}

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => s.serialize_unit(),
            Json::Bool(b) => s.serialize_bool(*b),
            Json::Number(n) => n.serialize(s),
            Json::String(v) => s.serialize_str(v),
            Json::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(k.as_ref(), v)?;
                }
                map.end()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// Any JSON value a client might send, odd numbers and strings included.
    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<u64>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
            "[a-z \"\\\\\n\t\u{1}\u{e9}\u{1F600}]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 6, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                proptest::collection::vec(("[a-z\"\\\\\u{e9}]{0,6}", inner), 0..5)
                    .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// The scanner's tree is serde's, and where serde refuses a text
        /// the scanner does too: over written values, compact or pretty,
        /// and the same text with a character inserted, removed or cut.
        #[test]
        fn the_scanner_reads_a_body_as_serde_does(
            v in value(),
            pretty in any::<bool>(),
            at in any::<usize>(),
            edit in 0u8..5,
            c in proptest::sample::select(vec!['"', '\\', '{', '}', '[', ']', ',', ':', '0', '-', '.', 'e', 'E', '+', 'n', 't', ' ', '\u{1}', 'é']),
        ) {
            let mut text = if pretty { serde_json::to_string_pretty(&v) } else { serde_json::to_string(&v) }.unwrap();
            let mut at = at % (text.len() + 1);
            while !text.is_char_boundary(at) {
                at -= 1;
            }
            match edit {
                1 => text.insert(at, c),
                2 if at < text.len() => {
                    text.remove(at);
                }
                3 => text.truncate(at),
                4 => text.insert_str(at, " 1e400 "),
                _ => {}
            }
            let serde: Option<Json<'_>> = serde_json::from_str(&text).ok();
            let scanned = Json::scan(&text);
            if edit == 0 {
                prop_assert!(scanned.is_some(), "{}", text);
            }
            prop_assert!(scanned.is_none() || scanned == serde, "{}", text);
            prop_assert!(serde.is_some() || scanned.is_none(), "{}", text);
        }
    }

    #[test]
    fn numbers_read_as_serde_reads_them() {
        for text in [
            "0",
            "-0",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775808",
            "-9223372036854775809",
            "1.5",
            "-1.5e-3",
            "1E+2",
            "0.1",
            "01",
            "1.",
            "-",
            "1e400",
            "[1,2,]",
            "\"a\u{1}b\"",
            "\"a\u{1f}\"",
            "\"tab\there\"",
            "\"\\x\"",
            "\"\\ud800\"",
            "\"\\ud83d\\ude00\"",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{\"a\":1 \"b\":2}",
            "[1 2]",
            "nul",
            "truee",
            "{\"k\\u0041\":[]}",
        ] {
            let serde: Option<Json<'_>> = serde_json::from_str(text).ok();
            assert!(Json::scan(text).is_none() || Json::scan(text) == serde, "{text}");
            assert_eq!(Json::scan(text).is_some(), serde.is_some(), "{text}");
        }
        // Deeper than the scanner goes: serde reads it.
        let deep = format!("{}{}", "[".repeat(120), "]".repeat(120));
        assert!(Json::scan(&deep).is_none());
        assert!(serde_json::from_str::<Json<'_>>(&deep).is_ok());
    }

    #[test]
    fn reads_like_value() {
        let text = r#"{"a":[1,-2,3.5,"x\n",null,true],"b":{"c":"d"},"a2":"plain","b":{"c":"e"}}"#;
        let j: Json<'_> = serde_json::from_str(text).unwrap();
        let v: Value = serde_json::from_str(text).unwrap();
        for key in ["a", "b", "a2", "missing"] {
            assert_eq!(j.get(key).map(|x| serde_json::to_value(x).unwrap()), v.get(key).cloned(), "{key}");
        }
        // A repeated key: the last one counts, as in Value.
        assert_eq!(j.get("b").and_then(|b| b.get("c")).and_then(JsonView::as_str), Some("e"));
        assert!(matches!(j.get("a2"), Some(Json::String(Cow::Borrowed("plain")))));
        let Json::Object(entries) = &j else { panic!("an object") };
        assert!(matches!(entries[0].0, Cow::Borrowed("a")), "keys are borrowed");
        let a = j.get("a").and_then(JsonView::as_array).unwrap();
        assert_eq!((a[0].as_u64(), a[1].as_u64(), a[2].as_f64()), (Some(1), None, Some(3.5)));
        assert_eq!(j.get("a").unwrap().encoded_len(), v["a"].encoded_len());
        assert_eq!(v["a"].encoded_len(), json!([1, -2, 3.5, "x\n", null, true]).to_string().len());
    }
}
