//! Values kept per latency metric: [`PerMetric`], an array indexed by [`LatencyMetric`], for the
//! metrics of one [`MetricSet`]. In `results.json` it is an object with one member per metric of
//! the set, named by its key (`ttft_ms`…) in the vocabulary's order, exactly as the struct with
//! a field per metric it replaces wrote it; its JSON Schema is built from the same rows.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Index, IndexMut};

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::def::ApiScope;
use super::latency::LatencyMetric;

/// Which latency metrics a [`PerMetric`] holds, and its name in the JSON Schema.
pub trait MetricSet {
    /// Its `$defs` name in the JSON Schema.
    const NAME: &'static str;
    /// What the JSON Schema says of it.
    const DOC: Option<&'static str> = None;
    fn holds(metric: LatencyMetric) -> bool;
    /// What the JSON Schema says of one member.
    fn note(_metric: LatencyMetric) -> Option<&'static str> {
        None
    }
    /// A member added to the set after its metric was (so absent from results written
    /// before): written only once it holds something, and its absence says nothing of the
    /// stage. A metric added after schema 2 is that in every set.
    fn added_later(metric: LatencyMetric) -> bool {
        metric.spec().optional
    }
    /// The metrics held, in the vocabulary's order.
    fn metrics() -> impl Iterator<Item = LatencyMetric> {
        LatencyMetric::ALL.into_iter().filter(|m| Self::holds(*m))
    }
}

/// A stage's distributions: every metric with a summary (`latency`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summarised;

impl MetricSet for Summarised {
    const NAME: &'static str = "Latency";
    fn holds(m: LatencyMetric) -> bool {
        m.spec().summary
    }
    fn note(m: LatencyMetric) -> Option<&'static str> {
        m.spec().schema_note
    }
}

/// A stage's histograms: every latency metric (`histograms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recorded;

impl MetricSet for Recorded {
    const NAME: &'static str = "StageHistograms";
    const DOC: Option<&'static str> = Some(
        "Every latency histogram of a stage, each as `stats::hist::encode` writes it: base64 of the HDR\n\
         V2 deflate form. Recorded values are **microseconds** (1 µs .. 1 day, 3 significant\n\
         digits); the keys end in `_ms` after the `latency` fields they back.",
    );
    fn holds(_: LatencyMetric) -> bool {
        true
    }
}

/// The latencies a late client can raise, net of what it may have added (`client_net`):
/// every metric with a [`super::LatencySpec::net`] measure. ITL and TPOT joined it in a later
/// schema-3 release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Net;

impl MetricSet for Net {
    const NAME: &'static str = "NetLatency";
    const DOC: Option<&'static str> = Some(
        "The latencies a late client can raise, each request's taken net of what the client\n\
         may have added to it: its send lag and a bound on how late it read (ms, or in\n\
         `histograms` µs).",
    );
    fn holds(m: LatencyMetric) -> bool {
        m.spec().net.is_some()
    }
    fn added_later(m: LatencyMetric) -> bool {
        m.spec().optional || matches!(m, LatencyMetric::Itl | LatencyMetric::Tpot)
    }
}

/// A turn index's distributions (flattened into `per_turn[]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerTurn;

impl MetricSet for PerTurn {
    const NAME: &'static str = "TurnLatency";
    fn holds(m: LatencyMetric) -> bool {
        m.spec().per_turn
    }
}

/// A turn index's histograms (`per_turn[].histograms`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PerTurnRecorded;

impl MetricSet for PerTurnRecorded {
    const NAME: &'static str = "TurnHistograms";
    const DOC: Option<&'static str> = Some(
        "A turn index's histograms (µs, as `StageHistograms`): TTFT and E2E, the metrics kept per\n\
         turn.",
    );
    fn holds(m: LatencyMetric) -> bool {
        m.spec().per_turn
    }
}

/// One `T` per latency metric of the set `S`. Indexing a metric outside the set gives
/// `T::default()`, which is never written. Of a pooling API's stage (`whole`: its answers
/// come whole) the metrics only a stream has (TTFT, ITL…) are not written either: they have
/// no sample, and no row pretends they do.
pub struct PerMetric<T, S> {
    values: [T; LatencyMetric::COUNT],
    whole: bool,
    set: PhantomData<S>,
}

impl<T: Default, S: MetricSet> PerMetric<T, S> {
    /// `f(m)` for every metric `m` of the set.
    pub fn from_fn(mut f: impl FnMut(LatencyMetric) -> T) -> Self {
        PerMetric {
            values: std::array::from_fn(|i| {
                let m = LatencyMetric::ALL[i];
                if S::holds(m) { f(m) } else { T::default() }
            }),
            whole: false,
            set: PhantomData,
        }
    }

    /// `f(m)` for every metric `m` of the set, or the first error.
    pub fn try_from_fn<E>(mut f: impl FnMut(LatencyMetric) -> Result<T, E>) -> Result<Self, E> {
        let mut out = Self::default();
        for m in S::metrics() {
            out.values[m as usize] = f(m)?;
        }
        Ok(out)
    }
}

impl<T, S: MetricSet> PerMetric<T, S> {
    /// Marked as a pooling API's (`whole`): the streamed-only metrics are not written.
    pub fn answered_whole(mut self, whole: bool) -> Self {
        self.whole = whole;
        self
    }

    /// Whether it is a pooling API's, whose streamed-only metrics are not written.
    pub fn is_whole(&self) -> bool {
        self.whole
    }

    /// The value of `metric`, when the set holds it.
    pub fn get(&self, metric: LatencyMetric) -> Option<&T> {
        S::holds(metric).then(|| &self.values[metric as usize])
    }

    pub fn get_mut(&mut self, metric: LatencyMetric) -> Option<&mut T> {
        S::holds(metric).then(|| &mut self.values[metric as usize])
    }

    /// Every metric of the set with its value, in the vocabulary's order.
    pub fn iter(&self) -> impl Iterator<Item = (LatencyMetric, &T)> {
        S::metrics().map(|m| (m, &self.values[m as usize]))
    }
}

impl<T, S> Index<LatencyMetric> for PerMetric<T, S> {
    type Output = T;
    fn index(&self, metric: LatencyMetric) -> &T {
        &self.values[metric as usize]
    }
}

impl<T, S> IndexMut<LatencyMetric> for PerMetric<T, S> {
    fn index_mut(&mut self, metric: LatencyMetric) -> &mut T {
        &mut self.values[metric as usize]
    }
}

impl<T: Default, S> Default for PerMetric<T, S> {
    fn default() -> Self {
        PerMetric {
            values: std::array::from_fn(|_| T::default()),
            whole: false,
            set: PhantomData,
        }
    }
}

impl<T: Clone, S> Clone for PerMetric<T, S> {
    fn clone(&self) -> Self {
        PerMetric {
            values: self.values.clone(),
            whole: self.whole,
            set: PhantomData,
        }
    }
}

impl<T: Copy, S> Copy for PerMetric<T, S> {}

impl<T: PartialEq, S> PartialEq for PerMetric<T, S> {
    fn eq(&self, other: &Self) -> bool {
        self.values == other.values && self.whole == other.whole
    }
}

impl<T: fmt::Debug, S: MetricSet> fmt::Debug for PerMetric<T, S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(m, v)| (m.key(), v)))
            .finish()
    }
}

/// A member is written unless it is a streamed-only metric of a pooling API's stage
/// (`whole`), or it was added to the set later (see [`MetricSet::added_later`]) and holds
/// nothing.
fn written<T: Default + PartialEq, S: MetricSet>(m: LatencyMetric, v: &T, whole: bool) -> bool {
    if whole && m.def().scope == ApiScope::Streamed {
        return false;
    }
    !S::added_later(m) || *v != T::default()
}

impl<T: Serialize + Default + PartialEq, S: MetricSet> Serialize for PerMetric<T, S> {
    fn serialize<Z: Serializer>(&self, serializer: Z) -> Result<Z::Ok, Z::Error> {
        let members = || {
            self.iter()
                .filter(|(m, v)| written::<T, S>(*m, *v, self.whole))
        };
        let mut map = serializer.serialize_map(Some(members().count()))?;
        for (m, v) in members() {
            map.serialize_entry(m.key(), v)?;
        }
        map.end()
    }
}

impl<'de, T: Deserialize<'de> + Default, S: MetricSet> Deserialize<'de> for PerMetric<T, S> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(Members(PhantomData))
    }
}

struct Members<T, S>(PhantomData<(T, S)>);

impl<'de, T: Deserialize<'de> + Default, S: MetricSet> Visitor<'de> for Members<T, S> {
    type Value = PerMetric<T, S>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "an object of {}", S::NAME)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = PerMetric::<T, S>::default();
        let mut seen = [false; LatencyMetric::COUNT];
        while let Some(key) = map.next_key_seed(Key::<S>(PhantomData))? {
            // Unknown members are skipped, as the structs this replaces skipped them.
            let Some(m) = key else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if std::mem::replace(&mut seen[m as usize], true) {
                return Err(de::Error::duplicate_field(m.key()));
            }
            out.values[m as usize] = map.next_value()?;
        }
        if let Some(m) = S::metrics().find(|m| !seen[*m as usize] && m.always_written()) {
            return Err(de::Error::missing_field(m.key()));
        }
        // A required streamed-only member is absent only from a pooling API's stage.
        out.whole = S::metrics().any(|m| {
            !seen[m as usize] && !S::added_later(m) && m.def().scope == ApiScope::Streamed
        });
        Ok(out)
    }
}

/// A member's name: the metric of the set it names, if any.
struct Key<S>(PhantomData<S>);

impl<'de, S: MetricSet> DeserializeSeed<'de> for Key<S> {
    type Value = Option<LatencyMetric>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_identifier(self)
    }
}

impl<S: MetricSet> Visitor<'_> for Key<S> {
    type Value = Option<LatencyMetric>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(S::metrics().find(|m| m.key() == key))
    }
}

impl<T: JsonSchema, S: MetricSet> JsonSchema for PerMetric<T, S> {
    fn schema_name() -> Cow<'static, str> {
        S::NAME.into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let mut properties = serde_json::Map::new();
        let mut required = Vec::new();
        for m in S::metrics() {
            let mut member = generator.subschema_for::<T>();
            if let Some(note) = S::note(m) {
                member.insert("description".into(), note.into());
            }
            properties.insert(m.key().into(), member.into());
            if m.always_written() {
                required.push(serde_json::Value::from(m.key()));
            }
        }
        let mut schema = schemars::json_schema!({
            "type": "object",
            "properties": properties,
            "required": required,
        });
        if let Some(doc) = S::DOC {
            schema.insert("description".into(), doc.into());
        }
        schema
    }
}
