//! Several target URLs behind one target (`target { url "…"; url "…"; route "by-session" }`):
//! the URLs, their weights, the policy that sends each request to one of them, and the
//! session-affinity id a request carries. The scenario names them, the plan carries them, the
//! runner follows them and results are kept per URL; the choice is a pure function of the
//! stage's seed, the request's (or session's) index and the turn, so a rerun, and every shard
//! of a distributed run, sends each request where one process would.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How a request's URL is chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RoutePolicy {
    /// Request by request in turn: request (or session) `i`'s turn `k` to URL `(i + k) mod n`,
    /// so a session's turns move from URL to URL.
    #[default]
    RoundRobin,
    /// A session's every turn to one URL, drawn by weight from the seed and the session.
    BySession,
    /// Every request (every turn) to a URL drawn by weight from the seed, index and turn.
    ByWeight,
}

impl RoutePolicy {
    /// The names as KDL writes them, in the order help texts list them.
    pub const NAMES: [&'static str; 3] = ["round-robin", "by-session", "by-weight"];

    pub fn from_name(name: &str) -> Option<RoutePolicy> {
        match name {
            "round-robin" => Some(RoutePolicy::RoundRobin),
            "by-session" => Some(RoutePolicy::BySession),
            "by-weight" => Some(RoutePolicy::ByWeight),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }

    /// Whether the URLs' weights mean anything under this policy.
    pub fn weighs(self) -> bool {
        !matches!(self, RoutePolicy::RoundRobin)
    }
}

/// One URL of a target and its share of the requests under a weighted policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct RoutedUrl {
    /// Serialised with its credentials masked: the plan's JSON is printed.
    #[serde(serialize_with = "redacted")]
    pub url: String,
    /// At least 1; default 1.
    pub weight: u32,
}

fn redacted<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&crate::redact::secrets(url))
}

/// A target's URLs (two or more) and how requests are spread over them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Routes {
    pub urls: Vec<RoutedUrl>,
    pub policy: RoutePolicy,
}

impl Routes {
    /// The URL (index into `urls`) of request or session `index`'s turn `turn`, in a stage
    /// whose seed is `seed` (0 for a plain request).
    pub fn pick(&self, seed: u64, index: u64, turn: u32) -> usize {
        let n = self.urls.len().max(1);
        match self.policy {
            RoutePolicy::RoundRobin => (index.wrapping_add(u64::from(turn)) % n as u64) as usize,
            RoutePolicy::BySession => self.weighted(mix(seed ^ mix(index))),
            RoutePolicy::ByWeight => {
                self.weighted(mix(seed ^ mix(index ^ mix(u64::from(turn) + 1))))
            }
        }
    }

    /// The URLs as results and reports show the endpoint: each masked (see
    /// [`crate::redact`]), with its weight under a weighted policy, then the policy.
    pub fn label(&self) -> String {
        let urls: Vec<String> = self
            .urls
            .iter()
            .map(|u| {
                let url = crate::redact::secrets(&u.url);
                match self.policy.weighs() {
                    true => format!("{url} (weight {})", u.weight),
                    false => url.into_owned(),
                }
            })
            .collect();
        format!("{}; route {}", urls.join(", "), self.policy.as_str())
    }

    /// The URL whose share of the total weight `draw` falls in.
    fn weighted(&self, draw: u64) -> usize {
        let total: u64 = self.urls.iter().map(|u| u64::from(u.weight.max(1))).sum();
        let mut at = draw % total.max(1);
        for (i, u) in self.urls.iter().enumerate() {
            let w = u64::from(u.weight.max(1));
            if at < w {
                return i;
            }
            at -= w;
        }
        0
    }
}

/// The session-affinity id of request or session `index` of a stage seeded `seed`: the same
/// on every turn of a session, different between sessions and stages, and nothing but hex
/// digits (no secret, nothing a user wrote), so it is safe in a header and in a log.
pub fn affinity_id(seed: u64, index: u64) -> String {
    format!("{:016x}", mix(seed ^ mix(index ^ 0x5e55_1011)))
}

/// splitmix64's finaliser: a well-spread 64-bit hash of a 64-bit value.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn routes(policy: RoutePolicy, weights: &[u32]) -> Routes {
        Routes {
            urls: weights
                .iter()
                .enumerate()
                .map(|(i, w)| RoutedUrl {
                    url: format!("http://h{i}:8000/v1"),
                    weight: *w,
                })
                .collect(),
            policy,
        }
    }

    #[test]
    fn round_robin_moves_a_session_from_url_to_url() {
        let r = routes(RoutePolicy::RoundRobin, &[1, 1, 1]);
        let picks: Vec<usize> = (0..4).map(|k| r.pick(7, 5, k)).collect();
        assert_eq!(picks, [2, 0, 1, 2]);
        let plain: Vec<usize> = (0..6).map(|i| r.pick(7, i, 0)).collect();
        assert_eq!(plain, [0, 1, 2, 0, 1, 2]);
    }

    #[test]
    fn by_session_keeps_every_turn_on_one_url_and_spreads_sessions() {
        let r = routes(RoutePolicy::BySession, &[1, 1]);
        let mut used = [0u32; 2];
        for s in 0..200 {
            let first = r.pick(42, s, 0);
            assert!((1..8).all(|k| r.pick(42, s, k) == first));
            used[first] += 1;
        }
        assert!(used.iter().all(|&n| n > 60), "{used:?}");
    }

    #[test]
    fn by_weight_follows_the_weights_and_the_seed() {
        let r = routes(RoutePolicy::ByWeight, &[3, 1]);
        let mut used = [0u32; 2];
        for i in 0..4000 {
            used[r.pick(1, i, 0)] += 1;
        }
        let share = f64::from(used[0]) / 4000.0;
        assert!((0.70..0.80).contains(&share), "{used:?}");
        let a: Vec<usize> = (0..64).map(|i| r.pick(1, i, 0)).collect();
        let b: Vec<usize> = (0..64).map(|i| r.pick(1, i, 0)).collect();
        let other: Vec<usize> = (0..64).map(|i| r.pick(2, i, 0)).collect();
        assert_eq!(a, b);
        assert_ne!(a, other);
    }

    #[test]
    fn affinity_ids_are_stable_hex_and_differ_between_sessions() {
        let a = affinity_id(9, 3);
        assert_eq!(a, affinity_id(9, 3));
        assert_ne!(a, affinity_id(9, 4));
        assert_ne!(a, affinity_id(10, 3));
        assert_eq!(a.len(), 16);
        assert!(a.bytes().all(|b| b.is_ascii_hexdigit()));
    }

    #[test]
    fn a_plan_prints_no_credentials() {
        let mut r = routes(RoutePolicy::RoundRobin, &[1]);
        r.urls[0].url = "http://user:hunter2@h:8000/v1?api_key=sekrit".into();
        let json = serde_json::to_string(&r).unwrap();
        assert!(
            !json.contains("hunter2") && !json.contains("sekrit"),
            "{json}"
        );
    }
}
