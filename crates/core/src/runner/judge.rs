//! The LLM judge of a stage's answers (`quality { judge { … } }`, docs/quality.md): while the
//! stage runs, a bounded sample of its answers is kept (`JudgePool`, the `sample` answers
//! whose seeded key is smallest, so memory stays bounded in run length and the draw does not
//! depend on completion order); once every request of the stage has ended, the sample is
//! judged at the judge's own bounded concurrency, so the judge never loads the client under
//! test. Scores are cached by a hash of (judge model, rubric, scale, prompt, answer,
//! reference) in a JSONL file, so a rerun pays only for what it has not judged.

use std::collections::{BinaryHeap, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use futures_util::StreamExt;
use serde_json::Value;

use crate::dataset::{JudgeSpec, cache_key, clip_judged, judge_body, parse_score};
use crate::metrics::{JudgeCost, JudgeTally};
use crate::protocol::Labels;

/// The most of a judge's answer read: a score is a line; a judge that sends megabytes is a
/// failure, not a memory cost.
const MAX_JUDGE_REPLY_BYTES: usize = 1 << 20;

/// The most of a cache file read; past it the cache is not used (and a warning says so).
const MAX_CACHE_BYTES: u64 = 64 << 20;

/// One answer kept for the judge, with its request's labels (model, class), so that each
/// label's answers are scored apart too.
#[derive(Debug)]
struct Sample {
    key: u64,
    prompt: String,
    answer: String,
    reference: Option<String>,
    labels: Labels,
}

impl Sample {
    fn order(&self) -> (u64, &str, &str, Option<&str>) {
        (
            self.key,
            &self.prompt,
            &self.answer,
            self.reference.as_deref(),
        )
    }
}

// Ordered by key (then text): the heap keeps the smallest keys whatever the labels.
impl PartialEq for Sample {
    fn eq(&self, o: &Self) -> bool {
        self.order() == o.order()
    }
}

impl Eq for Sample {}

impl PartialOrd for Sample {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}

impl Ord for Sample {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        self.order().cmp(&o.order())
    }
}

/// A stage round's answers kept for the judge: at most `spec.sample`.
pub(super) struct JudgePool {
    pub(super) spec: JudgeSpec,
    seed: u64,
    offered: AtomicU64,
    kept: Mutex<BinaryHeap<Sample>>,
}

impl JudgePool {
    pub(super) fn new(spec: JudgeSpec, seed: u64) -> Self {
        JudgePool {
            spec,
            seed,
            offered: AtomicU64::new(0),
            kept: Mutex::new(BinaryHeap::new()),
        }
    }

    /// The pool of answers for `stage`'s judge, when its data set has one; none for the
    /// warm-up, whose answers are not the stage's.
    pub(super) fn for_stage(
        plan: &crate::plan::Plan,
        stage: &crate::plan::StagePlan,
        round: u32,
    ) -> Option<std::sync::Arc<JudgePool>> {
        if plan.warmup.as_ref().is_some_and(|w| w == stage) {
            return None;
        }
        let spec = plan
            .datasets
            .get(stage.dataset)?
            .quality
            .as_ref()?
            .judge
            .clone()?;
        let seed = stage.seed ^ u64::from(round).wrapping_mul(0xD6E8_FEB8_6659_FD93);
        Some(std::sync::Arc::new(JudgePool::new(spec, seed)))
    }

    /// Offers request `index`'s answer (with its labels): kept when its seeded key is among
    /// the `sample` smallest so far. Copies (64 KiB at most of each text) only what is kept.
    pub(super) fn offer(
        &self,
        (index, labels): (u64, Labels),
        prompt: &str,
        answer: &str,
        reference: Option<&str>,
    ) {
        self.offered.fetch_add(1, Ordering::Relaxed);
        let key = splitmix(self.seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let Ok(mut kept) = self.kept.lock() else {
            return;
        };
        let full = kept.len() >= self.spec.sample as usize;
        if full && kept.peek().is_some_and(|top| top.key <= key) {
            return;
        }
        kept.push(Sample {
            key,
            prompt: clip_judged(prompt).to_owned(),
            answer: clip_judged(answer).to_owned(),
            reference: reference
                .filter(|_| self.spec.with_reference)
                .map(|r| clip_judged(r).to_owned()),
            labels,
        });
        if full {
            kept.pop();
        }
    }

    fn take(&self) -> Vec<Sample> {
        let kept = match self.kept.lock() {
            Ok(mut k) => std::mem::take(&mut *k),
            Err(_) => return Vec::new(),
        };
        // Judged in key order: the same sample, the same order, run after run.
        let mut v = kept.into_vec();
        v.sort_by_key(|s| s.key);
        v
    }
}

fn splitmix(mut h: u64) -> u64 {
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// What one judge call gave.
struct Reply {
    score: Option<u32>,
    prompt_tokens: u64,
    completion_tokens: u64,
}

/// What the judge made of one sampled answer.
struct Verdict {
    labels: Labels,
    score: Option<u32>,
    /// Read from the cache (no call made).
    cached: bool,
    /// The tokens of the call made for it, when one was.
    call: Option<(u64, u64)>,
}

/// The judge's verdicts on a stage round's sample: the stage's tally, or one label's.
pub(super) struct Judged {
    model: String,
    scale: u32,
    price: Option<crate::dataset::JudgePrice>,
    verdicts: Vec<Verdict>,
}

impl Judged {
    /// The tally of the verdicts on answers whose labels `keep` holds (all: the stage's).
    pub(super) fn tally(&self, keep: impl Fn(Labels) -> bool) -> JudgeTally {
        let mut t = JudgeTally {
            model: self.model.clone(),
            scale: self.scale,
            counts: vec![0; self.scale as usize],
            cost: self.price.as_ref().map(|p| {
                JudgeCost::priced(
                    p.input_per_million,
                    p.output_per_million,
                    p.currency.clone(),
                )
            }),
            ..JudgeTally::default()
        };
        for v in self.verdicts.iter().filter(|v| keep(v.labels)) {
            t.sampled += 1;
            t.cache_hits += u64::from(v.cached);
            if let Some((prompt, completion)) = v.call {
                t.calls += 1;
                t.prompt_tokens += prompt;
                t.completion_tokens += completion;
            }
            match v.score {
                Some(k) => t.score(k),
                None => t.failures += 1,
            }
        }
        t
    }

    /// The judge's tallies into the stage's quality and, for a stage split by `model` or
    /// `class`, into each label's: every sampled answer counts for its own labels, so each
    /// label's `judge_score` is the mean of its own answers' scores.
    pub(super) fn fill(
        &self,
        summary: &mut crate::metrics::StageSummary,
        stage: &crate::plan::StagePlan,
        confidence: f64,
    ) {
        if let Some(q) = summary.quality.as_mut() {
            q.judge = Some(self.tally(|_| true).finish(confidence));
        }
        for g in &mut summary.groups {
            let Some(q) = g.summary.quality.as_mut() else {
                continue;
            };
            let Some(i) = stage
                .groups
                .iter()
                .find(|p| p.by == g.by)
                .and_then(|p| p.position(&g.label))
            else {
                continue;
            };
            let by = g.by;
            let tally = self.tally(|l| l.get(by).map(usize::from) == Some(i));
            q.judge = Some(tally.finish(confidence));
        }
    }
}

/// Judges the pool's sample against `base` (the judge's API base, `sim` already resolved to
/// the embedded simulator's). Never fails: what could not be judged is counted in `failures`.
pub(super) async fn judge(pool: &JudgePool, base: &str) -> Judged {
    let spec = &pool.spec;
    let samples = pool.take();
    let mut judged = Judged {
        model: spec.model.clone(),
        scale: spec.scale,
        price: spec.price.clone(),
        verdicts: Vec::with_capacity(samples.len()),
    };
    let cache_path = spec.cache_path.as_deref();
    let cache = cache_path.map(load_cache).unwrap_or_default();
    let mut todo = Vec::new();
    for s in &samples {
        let key = cache_key(spec, &s.prompt, &s.answer, s.reference.as_deref());
        match cache.get(&key) {
            Some(&k) if (1..=spec.scale).contains(&k) => judged.verdicts.push(Verdict {
                labels: s.labels,
                score: Some(k),
                cached: true,
                call: None,
            }),
            _ => todo.push((key, s)),
        }
    }
    let http = match client(spec) {
        Ok(h) => h,
        Err(e) => {
            tracing::warn!("the judge's HTTP client: {e}");
            judged.verdicts.extend(todo.iter().map(|(_, s)| Verdict {
                labels: s.labels,
                score: None,
                cached: false,
                call: None,
            }));
            return judged;
        }
    };
    let url = crate::protocol::join(base, "/chat/completions");
    let key = spec
        .api_key_env
        .as_ref()
        .and_then(|v| std::env::var(v).ok());
    let replies: Vec<(String, Labels, Reply)> = futures_util::stream::iter(todo)
        .map(|(k, s)| {
            let body = judge_body(spec, &s.prompt, &s.answer, s.reference.as_deref());
            let (http, url, api_key) = (&http, &url, key.as_deref());
            async move {
                let reply = call(http, url, api_key, &body, spec.scale).await;
                (k, s.labels, reply)
            }
        })
        .buffer_unordered(spec.concurrency.max(1) as usize)
        .collect()
        .await;
    let mut fresh = Vec::new();
    for (k, labels, r) in replies {
        if let Some(score) = r.score {
            fresh.push((k, score));
        }
        judged.verdicts.push(Verdict {
            labels,
            score: r.score,
            cached: false,
            call: Some((r.prompt_tokens, r.completion_tokens)),
        });
    }
    if let (Some(path), false) = (cache_path, fresh.is_empty())
        && let Err(e) = append_cache(path, &fresh)
    {
        tracing::warn!("the judge cache {}: {e}", path.display());
    }
    judged
}

fn client(spec: &JudgeSpec) -> reqwest::Result<reqwest::Client> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .timeout(std::time::Duration::from_millis(spec.timeout_ms))
        .connect_timeout(std::time::Duration::from_millis(spec.timeout_ms))
        .build()
}

/// One judge call: its score (`None` on any failure) and the tokens it reported.
async fn call(
    http: &reqwest::Client,
    url: &str,
    api_key: Option<&str>,
    body: &Value,
    scale: u32,
) -> Reply {
    let failed = Reply {
        score: None,
        prompt_tokens: 0,
        completion_tokens: 0,
    };
    let mut req = http.post(url).json(body);
    if let Some(k) = api_key {
        req = req.bearer_auth(k);
    }
    let Ok(mut resp) = req.send().await else {
        return failed;
    };
    if !resp.status().is_success() {
        return failed;
    }
    let mut bytes = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(c)) if bytes.len() + c.len() <= MAX_JUDGE_REPLY_BYTES => {
                bytes.extend_from_slice(&c)
            }
            Ok(None) => break,
            _ => return failed,
        }
    }
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        return failed;
    };
    let usage = |k: &str| v["usage"][k].as_u64().unwrap_or(0);
    let text = v["choices"][0]["message"]["content"].as_str().unwrap_or("");
    Reply {
        score: parse_score(text, scale),
        prompt_tokens: usage("prompt_tokens"),
        completion_tokens: usage("completion_tokens"),
    }
}

/// The cache's scores by key; a missing file is an empty cache, a malformed line is skipped.
fn load_cache(path: &Path) -> HashMap<String, u32> {
    let text = match crate::files::read_regular_text(path, MAX_CACHE_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return HashMap::new(),
        Err(e) => {
            tracing::warn!("the judge cache {} is not used: {e}", path.display());
            return HashMap::new();
        }
    };
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| {
            let key = v["key"].as_str()?.to_owned();
            let score = u32::try_from(v["score"].as_u64()?).ok()?;
            Some((key, score))
        })
        .collect()
}

/// Appends new scores to the cache, one JSON object a line (`{"key": …, "score": K}`).
fn append_cache(path: &Path, fresh: &[(String, u32)]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut text = String::new();
    for (key, score) in fresh {
        text.push_str(&serde_json::json!({"key": key, "score": score}).to_string());
        text.push('\n');
    }
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    f.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(sample: u32) -> JudgeSpec {
        JudgeSpec {
            url: "sim".into(),
            model: "j".into(),
            api_key_env: None,
            rubric: "r".into(),
            scale: 5,
            concurrency: 2,
            timeout_ms: 1000,
            with_reference: true,
            sample,
            cache: String::new(),
            cache_path: None,
            price: None,
        }
    }

    #[test]
    fn the_smallest_sample_can_decide_the_judge_score() {
        assert_eq!(
            crate::dataset::MIN_JUDGE_SAMPLE,
            crate::metrics::JUDGE_MIN_SCORED
        );
    }

    #[test]
    fn judge_pool_keeps_a_bounded_seeded_sample() {
        let pool = JudgePool::new(spec(10), 7);
        for i in 0..1000 {
            pool.offer((i, Labels::default()), "q", &"x".repeat(100), Some("r"));
        }
        let kept: Vec<u64> = pool.take().iter().map(|s| s.key).collect();
        assert_eq!(kept.len(), 10);
        // The same answers offered in another order keep the same sample.
        let again = JudgePool::new(spec(10), 7);
        for i in (0..1000).rev() {
            again.offer((i, Labels::default()), "q", "x", None);
        }
        let other: Vec<u64> = again.take().iter().map(|s| s.key).collect();
        assert_eq!(kept, other);
    }

    #[test]
    fn each_label_tallies_its_own_answers_and_their_cost() {
        use crate::protocol::Grouping;
        let labelled = |i: u16| {
            let mut l = Labels::default();
            l.set(Grouping::Model, i);
            l
        };
        let verdict = |model: u16, score: Option<u32>, cached: bool| Verdict {
            labels: labelled(model),
            score,
            cached,
            call: (!cached).then_some((100, 3)),
        };
        let judged = Judged {
            model: "j".into(),
            scale: 5,
            price: Some(crate::dataset::JudgePrice {
                input_per_million: 2.0,
                output_per_million: 10.0,
                currency: None,
            }),
            verdicts: vec![
                verdict(0, Some(5), false),
                verdict(0, Some(5), true),
                verdict(1, Some(1), false),
                verdict(1, None, false),
            ],
        };
        let of = |i: u16| {
            judged
                .tally(|l| l.get(Grouping::Model) == Some(i))
                .finish(0.95)
        };
        let (base, worse) = (of(0), of(1));
        assert_eq!((base.sampled, base.scored, base.mean), (2, 2, Some(5.0)));
        assert_eq!((base.calls, base.cache_hits), (1, 1));
        assert_eq!(
            (worse.scored, worse.failures, worse.mean),
            (1, 1, Some(1.0))
        );
        let all = judged.tally(|_| true).finish(0.95);
        assert_eq!((all.sampled, all.calls, all.prompt_tokens), (4, 3, 300));
        let c = all.cost.unwrap();
        assert!(
            (c.total - (300.0 * 2.0 + 9.0 * 10.0) / 1e6).abs() < 1e-15,
            "{c:?}"
        );
        let w = worse.cost.unwrap();
        assert!(
            (w.total - (200.0 * 2.0 + 6.0 * 10.0) / 1e6).abs() < 1e-15,
            "{w:?}"
        );
    }

    #[test]
    fn judge_cache_round_trips_and_skips_garbage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/cache.jsonl");
        append_cache(&path, &[("a".into(), 3), ("b".into(), 5)]).unwrap();
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        f.write_all(b"not json\n{\"key\":1}\n").unwrap();
        let c = load_cache(&path);
        assert_eq!(c.len(), 2);
        assert_eq!(c.get("b"), Some(&5));
        assert!(load_cache(&dir.path().join("none")).is_empty());
    }
}
