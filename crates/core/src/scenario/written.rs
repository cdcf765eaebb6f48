//! A value as the file wrote it: with where it was written ([`Spanned`]), and what a param
//! may stand for ([`ParamValue`]). The model and the readers both use them.

use miette::SourceSpan;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A value together with where it was written, so a later stage can point at it.
#[derive(Debug, Clone, PartialEq)]
pub struct Spanned<T> {
    pub value: T,
    pub span: SourceSpan,
}

impl<T> Spanned<T> {
    pub fn new(value: T, span: impl Into<SourceSpan>) -> Self {
        Spanned {
            value,
            span: span.into(),
        }
    }
}

/// Serialized as the bare value: spans are for diagnostics only.
impl<T: Serialize> Serialize for Spanned<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.value.serialize(s)
    }
}

impl<T: JsonSchema> JsonSchema for Spanned<T> {
    fn inline_schema() -> bool {
        T::inline_schema()
    }
    fn schema_name() -> std::borrow::Cow<'static, str> {
        T::schema_name()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        T::schema_id()
    }
    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        T::json_schema(generator)
    }
}

/// A param's value: params may stand wherever a number, duration or string goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum ParamValue {
    Int(i64),
    Float(f64),
    String(String),
    Bool(bool),
}
