//! A borrowed JSON tree for reading a request once, and one reading
//! interface over it and [`serde_json::Value`].
//!
//! [`Json`] borrows every string without escapes from the body it was read
//! from and keeps objects as vectors of entries: reading a typical chat
//! request allocates a handful of vectors instead of a map node and a string
//! per key. The request path validates clients' bodies on it; code that
//! also runs on `Value`s (tests, rewritten bodies) is written once against
//! [`JsonView`].

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
    use serde_json::json;

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
