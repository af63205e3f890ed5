//! `f64` fields that may not be finite (gauge values, trend sums, a missing target rate), for
//! `#[serde(with)]`: a number when finite and the string `"NaN"`, `"inf"` or `"-inf"` otherwise,
//! because JSON cannot hold those as numbers and results files must round-trip exactly.

use serde::Deserializer;
use serde::de::{self, Visitor};
use serde::ser::Serializer;

/// An `f64` as a number when finite, else `"NaN"`, `"inf"` or `"-inf"` (for `#[serde(with)]`).
pub(crate) mod float {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(value: &f64, s: S) -> Result<S::Ok, S::Error> {
        if value.is_finite() {
            s.serialize_f64(*value)
        } else if value.is_nan() {
            s.serialize_str("NaN")
        } else if *value > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        d.deserialize_any(FloatVisitor)
    }

    pub(super) struct FloatVisitor;

    impl Visitor<'_> for FloatVisitor {
        type Value = f64;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a number, or \"NaN\", \"inf\" or \"-inf\"")
        }
        fn visit_f64<E: de::Error>(self, v: f64) -> Result<f64, E> {
            Ok(v)
        }
        fn visit_u64<E: de::Error>(self, v: u64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_i64<E: de::Error>(self, v: i64) -> Result<f64, E> {
            Ok(v as f64)
        }
        fn visit_str<E: de::Error>(self, v: &str) -> Result<f64, E> {
            match v {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                other => Err(E::invalid_value(de::Unexpected::Str(other), &self)),
            }
        }
    }
}

/// An `Option<f64>` as [`float`] does it, `None` as null (for `#[serde(with)]`).
pub(crate) mod opt_float {
    use super::*;

    pub(crate) fn serialize<S: Serializer>(value: &Option<f64>, s: S) -> Result<S::Ok, S::Error> {
        match value {
            Some(v) => float::serialize(v, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
        struct OptVisitor;
        impl<'de> Visitor<'de> for OptVisitor {
            type Value = Option<f64>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("null or a number")
            }
            fn visit_none<E: de::Error>(self) -> Result<Option<f64>, E> {
                Ok(None)
            }
            fn visit_unit<E: de::Error>(self) -> Result<Option<f64>, E> {
                Ok(None)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Option<f64>, D::Error> {
                float::deserialize(d).map(Some)
            }
        }
        d.deserialize_option(OptVisitor)
    }
}
