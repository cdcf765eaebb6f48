//! Property test of the chunk decoder: generated chunk shapes (known fields of every type,
//! random extra keys and nested unknown values, random key order, whitespace and string
//! escapes) decoded by the scanner, by the serde_json reference and by `parse_chunk`.
//!
//! Whatever the scanner answers must be the reference's answer; `parse_chunk` must succeed
//! exactly when the reference does; and for the shapes the scanner claims to handle (no type
//! errors, escaped keys or repeated keys) it must answer itself, with the fields the generator
//! put in.

use infermeter_core::metrics::{FinishReason, ServerTimings};
use infermeter_core::protocol::{ChunkInfo, parse_chunk, parse_chunk_value, scan_chunk};
use proptest::prelude::*;

/// A JSON value; objects keep their keys in order (the renderer shuffles them).
#[derive(Debug, Clone)]
enum Node {
    Null,
    Bool(bool),
    /// The number's JSON text.
    Num(String),
    Str(String),
    Arr(Vec<Node>),
    Obj(Vec<(String, Node)>),
}

/// A known field: absent, null, a string, or a value of the wrong type.
#[derive(Debug, Clone)]
enum Field {
    Absent,
    Null,
    Str(String),
    Wrong(Node),
}

impl Field {
    fn node(&self) -> Option<Node> {
        match self {
            Field::Absent => None,
            Field::Null => Some(Node::Null),
            Field::Str(s) => Some(Node::Str(s.clone())),
            Field::Wrong(n) => Some(n.clone()),
        }
    }
    fn text(&self) -> Option<&str> {
        match self {
            Field::Str(s) => Some(s),
            _ => None,
        }
    }
    fn clean(&self) -> bool {
        !matches!(self, Field::Wrong(_))
    }
}

/// `usage` as (prompt_tokens, completion_tokens, cached_tokens).
type Counts = (u64, u64, Option<u64>);

/// What a generated chunk says, as the generator knows it.
#[derive(Debug, Clone, Default)]
struct Expected {
    answer: Option<String>,
    reasoning: Option<String>,
    finish_reason: Option<FinishReason>,
    usage: Option<Counts>,
    timings: Option<ServerTimings>,
    error: bool,
    /// No type error anywhere: the reference decodes it, and so must the scanner.
    clean: bool,
}

#[derive(Debug, Clone)]
struct Chunk {
    node: Node,
    expected: Expected,
}

fn chars() -> BoxedStrategy<char> {
    prop_oneof![
        6 => proptest::char::range(' ', '~'),
        2 => prop::sample::select(vec!['"', '\\', '/', '{', '}', '[', ']', ':', ',']),
        1 => proptest::char::range('\u{0}', '\u{1f}'),
        1 => prop::sample::select(vec!['é', '日', '\u{7f}', '\u{2028}', '\u{fffd}', '😀', '\u{10ffff}']),
        1 => any::<char>(),
    ]
    .boxed()
}

fn text() -> BoxedStrategy<String> {
    prop::collection::vec(chars(), 0..10)
        .prop_map(String::from_iter)
        .boxed()
}

/// Number forms beyond what Rust's formatting writes.
#[rustfmt::skip]
const NUMBERS: &[&str] = &[
    "0", "-0", "1e3", "1E+2", "-1.5e-7", "0.0", "1e-400", "123456789012345678901234567890",
];

fn number() -> BoxedStrategy<String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        (-1e6f64..1e6).prop_map(|f| f.to_string()),
        (-1e6f64..1e6).prop_map(|f| format!("{f:e}")),
        (-1e6f64..1e6).prop_map(|f| format!("{f:E}")),
        prop::sample::select(NUMBERS).prop_map(String::from),
    ]
    .boxed()
}

/// Keys for unknown fields: names the scanner reads elsewhere, and any others.
#[rustfmt::skip]
const KEYS: &[&str] = &[
    "id", "object", "model", "created", "index", "logprobs", "role", "x", "meta", "tool_calls",
    "choices", "delta", "content", "text", "usage", "error", "timings", "finish_reason",
    "prompt_tokens", "cached_tokens", "prompt_n", "Content", "",
];

fn key() -> BoxedStrategy<String> {
    prop_oneof![
        prop::sample::select(KEYS).prop_map(String::from),
        "[a-z_]{1,12}",
    ]
    .boxed()
}

fn unknown() -> BoxedStrategy<Node> {
    let leaf = prop_oneof![
        Just(Node::Null),
        any::<bool>().prop_map(Node::Bool),
        number().prop_map(Node::Num),
        text().prop_map(Node::Str),
    ];
    leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Node::Arr),
            prop::collection::vec((key(), inner), 0..4).prop_map(Node::Obj),
        ]
    })
    .boxed()
}

/// Extra keys for an object whose known keys are `known` (renamed out of the way).
fn extras(known: &'static [&'static str]) -> BoxedStrategy<Vec<(String, Node)>> {
    prop::collection::vec((key(), unknown()), 0..4)
        .prop_map(move |kv| {
            kv.into_iter()
                .map(|(k, v)| match known.contains(&k.as_str()) {
                    true => (format!("{k}_"), v),
                    false => (k, v),
                })
                .collect()
        })
        .boxed()
}

/// A value of a type no known string field accepts.
fn wrong() -> BoxedStrategy<Node> {
    prop_oneof![
        number().prop_map(Node::Num),
        any::<bool>().prop_map(Node::Bool),
        Just(Node::Arr(vec![])),
        Just(Node::Obj(vec![])),
    ]
    .boxed()
}

/// A value that is not a number (where any number would be read).
fn not_number() -> BoxedStrategy<Node> {
    prop_oneof![
        Just(Node::Null),
        any::<bool>().prop_map(Node::Bool),
        text().prop_map(Node::Str),
        Just(Node::Arr(vec![Node::Num("1".into())])),
        Just(Node::Obj(vec![])),
    ]
    .boxed()
}

fn field() -> BoxedStrategy<Field> {
    prop_oneof![
        4 => Just(Field::Absent),
        4 => Just(Field::Null),
        16 => text().prop_map(Field::Str),
        1 => wrong().prop_map(Field::Wrong),
    ]
    .boxed()
}

fn obj(known: Vec<(&str, Option<Node>)>, extra: Vec<(String, Node)>) -> Node {
    let mut kv: Vec<(String, Node)> = known
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect();
    kv.extend(extra);
    Node::Obj(kv)
}

fn finish_reason() -> BoxedStrategy<(Option<Node>, Option<FinishReason>)> {
    prop_oneof![
        Just((None, None)),
        Just((Some(Node::Null), None)),
        prop::sample::select(vec!["stop", "length", "tool_calls", "content_filter", ""])
            .prop_map(|r| (Some(Node::Str(r.into())), Some(reason_of(r)))),
        text().prop_map(|s| {
            let reason = reason_of(&s);
            (Some(Node::Str(s)), Some(reason))
        }),
        wrong().prop_map(|n| (Some(n), Some(FinishReason::Other))),
    ]
    .boxed()
}

fn reason_of(s: &str) -> FinishReason {
    match s {
        "stop" => FinishReason::Stop,
        "length" => FinishReason::Length,
        "tool_calls" => FinishReason::ToolCalls,
        _ => FinishReason::Other,
    }
}

/// The first choice, and what it says.
fn choice() -> BoxedStrategy<(Node, Expected)> {
    let delta = (
        field(),
        field(),
        field(),
        // `tool_calls` is read too (its shapes are held by the unit tests in protocol/chunk).
        extras(&["content", "reasoning_content", "reasoning", "tool_calls"]),
    );
    let delta_kind = prop_oneof![1 => Just(0u8), 1 => Just(1), 6 => Just(2), 1 => Just(3)];
    (
        delta_kind,
        delta,
        field(),
        finish_reason(),
        extras(&["delta", "text", "finish_reason"]),
    )
        .prop_map(|(kind, (content, rc, r, dx), text, (fr, reason), cx)| {
            let mut e = Expected {
                finish_reason: reason,
                clean: text.clean(),
                ..Expected::default()
            };
            let delta = match kind {
                0 => None,
                1 => Some(Node::Null),
                2 => {
                    e.clean &= content.clean() && rc.clean() && r.clean();
                    e.answer = content.text().map(String::from);
                    e.reasoning = rc.text().or(r.text()).map(String::from);
                    Some(obj(
                        vec![
                            ("content", content.node()),
                            ("reasoning_content", rc.node()),
                            ("reasoning", r.node()),
                        ],
                        dx,
                    ))
                }
                _ => {
                    e.clean = false;
                    Some(Node::Arr(vec![]))
                }
            };
            e.answer = e.answer.or(text.text().map(String::from));
            let node = obj(
                vec![
                    ("delta", delta),
                    ("text", text.node()),
                    ("finish_reason", fr),
                ],
                cx,
            );
            (node, e)
        })
        .boxed()
}

fn choices() -> BoxedStrategy<(Option<Node>, Expected)> {
    let clean = Expected {
        clean: true,
        ..Expected::default()
    };
    prop_oneof![
        1 => Just((None, clean.clone())),
        1 => Just((Some(Node::Null), clean.clone())),
        1 => Just((Some(Node::Arr(vec![])), clean)),
        6 => (choice(), prop::collection::vec(unknown(), 0..3)).prop_map(|((first, e), rest)| {
            let mut all = vec![first];
            all.extend(rest);
            (Some(Node::Arr(all)), e)
        }),
        // A first element that is not an object is a type error.
        1 => wrong().prop_map(|n| (Some(Node::Arr(vec![n])), Expected::default())),
    ]
    .boxed()
}

/// A token count: an unsigned integer, or (rarely) something the reference rejects.
fn count() -> BoxedStrategy<(Option<Node>, Option<u64>, bool)> {
    prop_oneof![
        2 => Just((None, Some(0), true)),
        12 => any::<u64>().prop_map(|n| (Some(Node::Num(n.to_string())), Some(n), true)),
        1 => prop::sample::select(vec!["-0", "-1", "1e3", "1.0", "18446744073709551616"])
            .prop_map(|s| (Some(Node::Num(s.into())), None, false)),
        1 => Just((Some(Node::Null), None, false)),
    ]
    .boxed()
}

fn cached() -> BoxedStrategy<(Option<Node>, Option<u64>)> {
    prop_oneof![
        1 => Just((None, None)),
        1 => Just((Some(Node::Null), None)),
        4 => any::<u64>().prop_map(|n| (
            Some(obj(vec![("cached_tokens", Some(Node::Num(n.to_string())))], vec![])),
            Some(n)
        )),
        1 => (number(), extras(&["cached_tokens"])).prop_map(|(n, x)| {
            let v = n.parse::<u64>().ok().filter(|_| !n.starts_with('-'));
            (Some(obj(vec![("cached_tokens", Some(Node::Num(n)))], x)), v)
        }),
        1 => not_number().prop_map(|n| (Some(n), None)),
    ]
    .boxed()
}

/// The usage node, the counts it says (prompt, completion, cached), and whether it is clean.
fn usage() -> BoxedStrategy<(Option<Node>, Option<Counts>, bool)> {
    let object = (
        count(),
        count(),
        cached(),
        extras(&[
            "prompt_tokens",
            "completion_tokens",
            "prompt_tokens_details",
        ]),
    )
        .prop_map(|((pn, p, pc), (cn, c, cc), (dn, d), x)| {
            let node = obj(
                vec![
                    ("prompt_tokens", pn),
                    ("completion_tokens", cn),
                    ("prompt_tokens_details", dn),
                ],
                x,
            );
            let clean = pc && cc;
            let u = clean.then(|| (p.unwrap_or(0), c.unwrap_or(0), d));
            (Some(node), u, clean)
        });
    prop_oneof![
        1 => Just((None, None, true)),
        1 => Just((Some(Node::Null), None, true)),
        4 => object,
        1 => Just((Some(Node::Str("x".into())), None, false)),
    ]
    .boxed()
}

fn timings() -> BoxedStrategy<(Option<Node>, Option<ServerTimings>)> {
    let ms = prop_oneof![
        1 => Just((None, None)),
        4 => number().prop_map(|n| {
            let f = serde_json::from_str::<f64>(&n).ok();
            (Some(Node::Num(n)), f)
        }),
        1 => not_number().prop_map(|n| (Some(n), None)),
    ];
    let n = prop_oneof![
        1 => Just((None, None)),
        4 => any::<u32>().prop_map(|n| (Some(Node::Num(n.to_string())), Some(u64::from(n)))),
        1 => not_number().prop_map(|n| (Some(n), None)),
        1 => prop::sample::select(vec!["-0", "-3", "1.0", "2e1", "18446744073709551616"])
            .prop_map(|n| (Some(Node::Num(n.into())), None)),
    ];
    // A speculative llama-server's draft counters are counts like the others.
    let drafts = (n.clone(), n.clone());
    let object = (
        n.clone(),
        ms.clone(),
        n.clone(),
        ms,
        n,
        drafts,
        extras(&[
            "prompt_n",
            "prompt_ms",
            "predicted_n",
            "predicted_ms",
            "cache_n",
            "draft_n",
            "draft_n_accepted",
        ]),
    )
        .prop_map(
            |((pn, p), (pmn, pm), (dn, d), (dmn, dm), (cn, c), ((fn_, f), (an, a)), x)| {
                let node = obj(
                    vec![
                        ("prompt_n", pn),
                        ("prompt_ms", pmn),
                        ("predicted_n", dn),
                        ("predicted_ms", dmn),
                        ("cache_n", cn),
                        ("draft_n", fn_),
                        ("draft_n_accepted", an),
                    ],
                    x,
                );
                let t = ServerTimings {
                    prompt_n: p,
                    prompt_ms: pm,
                    predicted_n: d,
                    predicted_ms: dm,
                    cache_n: c,
                    draft_n: f,
                    draft_n_accepted: a,
                };
                (Some(node), Some(t))
            },
        );
    prop_oneof![
        3 => Just((None, None)),
        2 => object,
        1 => wrong()
            .prop_filter("timings that are not an object", |n| !matches!(n, Node::Obj(_)))
            .prop_map(|n| (Some(n), None)),
    ]
    .boxed()
}

fn error() -> BoxedStrategy<(Option<Node>, bool)> {
    prop_oneof![
        6 => Just((None, false)),
        1 => Just((Some(Node::Null), false)),
        1 => unknown().prop_map(|n| {
            let is_error = !matches!(n, Node::Null);
            (Some(n), is_error)
        }),
    ]
    .boxed()
}

fn chunk() -> BoxedStrategy<Chunk> {
    (
        choices(),
        usage(),
        timings(),
        error(),
        extras(&["choices", "usage", "timings", "error"]),
    )
        .prop_map(|((cn, mut e), (un, u, uclean), (tn, t), (en, err), x)| {
            e.clean &= uclean;
            e.usage = u;
            e.timings = t;
            e.error = err;
            let node = obj(
                vec![
                    ("choices", cn),
                    ("usage", un),
                    ("timings", tn),
                    ("error", en),
                ],
                x,
            );
            Chunk { node, expected: e }
        })
        .boxed()
}

/// Random layout: whitespace between tokens, key order, escapes in strings; optionally
/// escaped keys or a repeated key, which the scanner leaves to serde_json.
struct Style {
    state: u64,
    escape_keys: bool,
    repeat_keys: bool,
}

impl Style {
    fn new(seed: u64) -> Style {
        let mut s = Style {
            state: seed | 1,
            escape_keys: false,
            repeat_keys: false,
        };
        s.escape_keys = s.one_in(16);
        s.repeat_keys = s.one_in(16);
        s
    }
    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn one_in(&mut self, n: u64) -> bool {
        self.next().is_multiple_of(n)
    }
    fn ws(&mut self, out: &mut String) {
        if self.one_in(4) {
            let ws = [" ", "\n", "\t", "\r\n", "  ", " \t "];
            out.push_str(ws[(self.next() % ws.len() as u64) as usize]);
        }
    }
    fn hex(&mut self, out: &mut String, unit: u32) {
        if self.one_in(2) {
            out.push_str(&format!("\\u{unit:04x}"));
        } else {
            out.push_str(&format!("\\u{unit:04X}"));
        }
    }
    fn string(&mut self, s: &str, out: &mut String, key: bool) {
        out.push('"');
        for c in s.chars() {
            let escape = !key && self.one_in(4) || key && self.escape_keys;
            match c {
                '"' | '\\' if self.one_in(2) => {
                    out.push('\\');
                    out.push(c);
                }
                '"' | '\\' => self.hex(out, c as u32),
                '\n' if !escape => out.push_str("\\n"),
                '\t' if !escape => out.push_str("\\t"),
                '\r' if !escape => out.push_str("\\r"),
                '\u{8}' if !escape => out.push_str("\\b"),
                '\u{c}' if !escape => out.push_str("\\f"),
                '/' if escape && self.one_in(2) => out.push_str("\\/"),
                c if (c as u32) < 0x20 || escape => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        self.hex(out, u32::from(*unit));
                    }
                }
                c => out.push(c),
            }
        }
        out.push('"');
    }
    fn render(&mut self, node: &Node, out: &mut String) {
        self.ws(out);
        match node {
            Node::Null => out.push_str("null"),
            Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Node::Num(n) => out.push_str(n),
            Node::Str(s) => self.string(s, out, false),
            Node::Arr(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.render(item, out);
                }
                self.ws(out);
                out.push(']');
            }
            Node::Obj(kv) => {
                let mut order: Vec<&(String, Node)> = kv.iter().collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, (self.next() % (i as u64 + 1)) as usize);
                }
                if self.repeat_keys
                    && let Some(&first) = order.first()
                {
                    // The same key and value again, later: serde_json keeps the last.
                    order.push(first);
                }
                out.push('{');
                for (i, (k, v)) in order.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    self.ws(out);
                    self.string(k, out, true);
                    self.ws(out);
                    out.push(':');
                    self.render(v, out);
                    self.ws(out);
                }
                self.ws(out);
                out.push('}');
            }
        }
        self.ws(out);
    }
}

fn check(text: &str, expected: &Expected, style: &Style) -> Result<(), TestCaseError> {
    let reference = parse_chunk_value(text);
    let scanned = scan_chunk(text);
    let decoded = parse_chunk(text);
    if let Some(s) = &scanned {
        let r = reference.as_ref().map_err(|e| {
            TestCaseError::fail(format!("scanner accepted what serde_json rejects ({e})"))
        })?;
        prop_assert_eq!(s, r);
    }
    prop_assert_eq!(decoded.is_ok(), reference.is_ok());
    if let (Ok(d), Ok(r)) = (&decoded, &reference) {
        prop_assert_eq!(d, r);
    }
    if expected.clean {
        // The generator makes valid JSON, so only a type error makes the reference fail.
        let r = reference.map_err(|e| TestCaseError::fail(format!("reference failed: {e}")))?;
        prop_assert_eq!(&fields(&r), expected);
        if !style.escape_keys && !style.repeat_keys {
            prop_assert!(scanned.is_some(), "the scanner gave up");
        }
    }
    Ok(())
}

/// What the decoder found, in the generator's terms.
fn fields(c: &ChunkInfo<'_>) -> Expected {
    Expected {
        answer: c.answer.as_ref().map(|s| s.decode().into_owned()),
        reasoning: c.reasoning.as_ref().map(|s| s.decode().into_owned()),
        finish_reason: c.finish_reason,
        usage: c
            .usage
            .map(|u| (u.prompt_tokens, u.completion_tokens, u.cached_tokens)),
        timings: c.timings,
        error: c.error,
        clean: true,
    }
}

impl PartialEq for Expected {
    fn eq(&self, other: &Self) -> bool {
        self.answer == other.answer
            && self.reasoning == other.reasoning
            && self.finish_reason == other.finish_reason
            && self.usage == other.usage
            && self.timings == other.timings
            && self.error == other.error
    }
}

/// Text spliced into valid chunks.
#[rustfmt::skip]
const SPLICES: &[&str] = &[
    "\\ud800", "\\udc00", "\\ud800\\u0041", "\\ud83d\\ude00", "\\x", "\\u12", "\\", "\u{1}",
    "\n", "\t", "\u{7f}", "\"", ",", ":", "{", "}", "[", "]", "null", "1e999", "-", "01", "1.",
    "\u{feff}", " ", "\"a\":1,", ",\"b\":[]", "\u{0}",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn scanner_agrees_with_serde_json(chunk in chunk(), seed in any::<u64>()) {
        let mut style = Style::new(seed);
        let mut text = String::new();
        style.render(&chunk.node, &mut text);
        check(&text, &chunk.expected, &style)?;
    }

    /// Valid chunks with something spliced in anywhere, mostly what serde_json rejects (lone
    /// surrogates, raw control characters, bad escapes, stray punctuation): the decoders must
    /// still agree.
    #[test]
    fn spliced_chunks_agree_with_serde_json(
        chunk in chunk(),
        seed in any::<u64>(),
        at in any::<prop::sample::Index>(),
        splice in prop::sample::select(SPLICES),
    ) {
        let mut style = Style::new(seed);
        let mut text = String::new();
        style.render(&chunk.node, &mut text);
        let mut at = at.index(text.len() + 1);
        while !text.is_char_boundary(at) {
            at -= 1;
        }
        text.insert_str(at, splice);
        check(&text, &Expected::default(), &style)?;
    }

    #[test]
    fn cut_chunks_are_errors(chunk in chunk(), seed in any::<u64>(), cut in any::<prop::sample::Index>()) {
        let mut style = Style::new(seed);
        let mut text = String::new();
        style.render(&chunk.node, &mut text);
        let text = text.trim_end();
        let end = cut.index(text.len());
        if let Some(prefix) = text.get(..end) {
            prop_assert!(scan_chunk(prefix).is_none());
            prop_assert!(parse_chunk(prefix).is_err());
        }
    }
}
