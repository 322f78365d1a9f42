//! Struct bodies are JSON objects, and only objects.
//!
//! A `#[derive(Deserialize)]` struct also takes a JSON array, matched to its fields by position
//! (`["b"]` for `{"name": "b"}`); serde keeps that on purpose (serde-rs/serde#1587). An API
//! whose schema says "object" must refuse it, at the top and in every nested struct, or a
//! mistyped body is acted on. `Strict` wraps a deserializer so that wherever a struct is
//! asked for, an array is a type error; everything else passes straight through, in the same
//! single pass.

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor};

/// `T` read so that no struct anywhere in it accepts an array.
pub(crate) struct StrictBody<T>(pub T);

impl<'de, T: de::Deserialize<'de>> de::Deserialize<'de> for StrictBody<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(Strict(deserializer)).map(StrictBody)
    }
}

/// Reads `T` from JSON bytes the way [`crate::ApiJson`] reads a body: a struct is an object.
pub fn from_slice_strict<T: de::DeserializeOwned>(bytes: &[u8]) -> serde_json::Result<T> {
    serde_json::from_slice::<StrictBody<T>>(bytes).map(|b| b.0)
}

/// A deserializer whose structs refuse arrays, and whose every inner deserializer is one too.
struct Strict<D>(D);

/// A visitor that passes everything to `inner`, keeping what it hands on strict; when it
/// stands for a struct it refuses a sequence.
struct StrictVisitor<V> {
    inner: V,
    is_struct: bool,
}

impl<V> StrictVisitor<V> {
    fn any(inner: V) -> Self {
        Self {
            inner,
            is_struct: false,
        }
    }

    fn structure(inner: V) -> Self {
        Self { inner, is_struct: true }
    }
}

/// A seed whose deserializer is made strict.
struct StrictSeed<S>(S);

impl<'de, S: DeserializeSeed<'de>> DeserializeSeed<'de> for StrictSeed<S> {
    type Value = S::Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        self.0.deserialize(Strict(deserializer))
    }
}

/// Each `deserialize_*` method hands its visitor on wrapped: as a struct's (`structure`, which
/// refuses a sequence) or as anything else's (`any`).
macro_rules! forward {
    ($($method:ident($($arg:ident: $ty:ty),*) $wrap:ident;)*) => {$(
        fn $method<V: Visitor<'de>>(self, $($arg: $ty,)* visitor: V) -> Result<V::Value, D::Error> {
            self.0.$method($($arg,)* StrictVisitor::$wrap(visitor))
        }
    )*};
}

impl<'de, D: Deserializer<'de>> Deserializer<'de> for Strict<D> {
    type Error = D::Error;

    forward! {
        deserialize_any() any; deserialize_bool() any; deserialize_i8() any; deserialize_i16() any;
        deserialize_i32() any; deserialize_i64() any; deserialize_i128() any; deserialize_u8() any;
        deserialize_u16() any; deserialize_u32() any; deserialize_u64() any; deserialize_u128() any;
        deserialize_f32() any; deserialize_f64() any; deserialize_char() any; deserialize_str() any;
        deserialize_string() any; deserialize_bytes() any; deserialize_byte_buf() any;
        deserialize_option() any; deserialize_unit() any; deserialize_seq() any; deserialize_map() any;
        deserialize_identifier() any; deserialize_ignored_any() any;
        deserialize_unit_struct(name: &'static str) any;
        deserialize_newtype_struct(name: &'static str) any;
        deserialize_tuple(len: usize) any;
        deserialize_tuple_struct(name: &'static str, len: usize) any;
        deserialize_struct(name: &'static str, fields: &'static [&'static str]) structure;
        deserialize_enum(name: &'static str, variants: &'static [&'static str]) any;
    }

    fn is_human_readable(&self) -> bool {
        self.0.is_human_readable()
    }
}

macro_rules! forward_visit {
    ($($method:ident: $ty:ty)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<V::Value, E> {
            self.inner.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for StrictVisitor<V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.inner.expecting(f)
    }

    forward_visit! {
        visit_bool: bool visit_i8: i8 visit_i16: i16 visit_i32: i32 visit_i64: i64
        visit_i128: i128 visit_u8: u8 visit_u16: u16 visit_u32: u32 visit_u64: u64
        visit_u128: u128 visit_f32: f32 visit_f64: f64 visit_char: char visit_str: &str
        visit_borrowed_str: &'de str visit_string: String visit_bytes: &[u8]
        visit_borrowed_bytes: &'de [u8] visit_byte_buf: Vec<u8>
    }

    fn visit_none<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_none()
    }

    fn visit_unit<E: de::Error>(self) -> Result<V::Value, E> {
        self.inner.visit_unit()
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_some(Strict(deserializer))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<V::Value, D::Error> {
        self.inner.visit_newtype_struct(Strict(deserializer))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<V::Value, A::Error> {
        if self.is_struct {
            return Err(de::Error::invalid_type(de::Unexpected::Seq, &self));
        }
        self.inner.visit_seq(Strict(seq))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<V::Value, A::Error> {
        self.inner.visit_map(Strict(map))
    }

    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<V::Value, A::Error> {
        self.inner.visit_enum(Strict(data))
    }
}

impl<'de, A: SeqAccess<'de>> SeqAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<Option<T::Value>, A::Error> {
        self.0.next_element_seed(StrictSeed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, A::Error> {
        self.0.next_key_seed(StrictSeed(seed))
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, A::Error> {
        self.0.next_value_seed(StrictSeed(seed))
    }

    fn size_hint(&self) -> Option<usize> {
        self.0.size_hint()
    }
}

impl<'de, A: EnumAccess<'de>> EnumAccess<'de> for Strict<A> {
    type Error = A::Error;
    type Variant = Strict<A::Variant>;

    fn variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<(T::Value, Self::Variant), A::Error> {
        self.0
            .variant_seed(StrictSeed(seed))
            .map(|(value, variant)| (value, Strict(variant)))
    }
}

impl<'de, A: VariantAccess<'de>> VariantAccess<'de> for Strict<A> {
    type Error = A::Error;

    fn unit_variant(self) -> Result<(), A::Error> {
        self.0.unit_variant()
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, A::Error> {
        self.0.newtype_variant_seed(StrictSeed(seed))
    }

    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, A::Error> {
        self.0.tuple_variant(len, StrictVisitor::any(visitor))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, A::Error> {
        self.0.struct_variant(fields, StrictVisitor::structure(visitor))
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::from_slice_strict;

    #[derive(Debug, Deserialize, PartialEq)]
    struct Inner {
        a: u8,
        #[serde(default)]
        b: Option<String>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    enum Choice {
        Unit,
        Wrapped(Inner),
        Fields { x: u8 },
        Pair(u8, u8),
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Outer {
        name: String,
        inner: Inner,
        many: Vec<Inner>,
        maybe: Option<Inner>,
        pair: (u8, u8),
        choices: Vec<Choice>,
    }

    const GOOD: &str = r#"{"name": "n", "inner": {"a": 1}, "many": [{"a": 2, "b": "x"}], "maybe": {"a": 3},
        "pair": [4, 5], "choices": ["Unit", {"Wrapped": {"a": 6}}, {"Fields": {"x": 7}}, {"Pair": [8, 9]}]}"#;

    fn refused(json: &str) -> String {
        let err = from_slice_strict::<Outer>(json.as_bytes()).expect_err(json);
        assert!(err.is_data(), "{json}: a type error, not {err}");
        err.to_string()
    }

    #[test]
    fn objects_arrays_tuples_and_enums_read_as_before() {
        let strict: Outer = from_slice_strict(GOOD.as_bytes()).unwrap();
        let plain: Outer = serde_json::from_str(GOOD).unwrap();
        assert_eq!(strict, plain);
        assert_eq!(strict.choices[3], Choice::Pair(8, 9));
        assert_eq!(from_slice_strict::<Vec<u8>>(b"[1,2]").unwrap(), vec![1, 2]);
    }

    #[test]
    fn an_array_in_place_of_a_struct_is_a_type_error_at_any_depth() {
        // Plain serde takes each of these; the positions fill the fields.
        assert!(serde_json::from_str::<Outer>(r#"["n", [1], [], null, [4, 5], []]"#).is_ok());
        let top = refused(r#"["n", [1], [], null, [4, 5], []]"#);
        assert!(top.contains("invalid type: sequence, expected struct Outer"), "{top}");
        let nested = [
            GOOD.replace(r#""inner": {"a": 1}"#, r#""inner": [1]"#),
            GOOD.replace(r#""many": [{"a": 2, "b": "x"}]"#, r#""many": [[2, "x"]]"#),
            GOOD.replace(r#""maybe": {"a": 3}"#, r#""maybe": [3]"#),
            GOOD.replace(r#"{"Wrapped": {"a": 6}}"#, r#"{"Wrapped": [6]}"#),
            GOOD.replace(r#"{"Fields": {"x": 7}}"#, r#"{"Fields": [7]}"#),
        ];
        for json in &nested {
            assert!(serde_json::from_str::<Outer>(json).is_ok(), "plain serde takes {json}");
            let message = refused(json);
            assert!(message.contains("invalid type: sequence"), "{message}");
        }
    }
}
