//! A target's routing children: `url "…" weight=N` (repeatable: several URLs behind one
//! target), `route "round-robin"|"by-session"|"by-weight"` and `affinity-header "NAME"`.
//! Gathered while `target.rs` reads the block, then checked together once it is read.

use kdl::KdlNode;
use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::error::suggest;
use super::model::{Endpoint, Target};
use super::written::Spanned;
use crate::protocol::{RoutePolicy, RoutedUrl, Routes};

/// The most URLs one target may list: far beyond a rack of replicas, low enough that a
/// generated scenario cannot make the run open thousands of pools.
const MAX_URLS: usize = 64;

/// Headers the client sets itself, or that frame the request: an affinity header by one of
/// these names would be sent twice or break the request.
pub(super) const RESERVED: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "transfer-encoding",
    "connection",
    "authorization",
    "accept",
];

/// What the routing children said, in file order.
#[derive(Default)]
pub(super) struct Routing {
    urls: Vec<(Spanned<String>, u32, Option<SourceSpan>)>,
    policy: Option<(RoutePolicy, SourceSpan)>,
}

impl Routing {
    /// Whether the block lists any `url`: a target with no argument is then a URL target.
    pub(super) fn listed(node: &KdlNode) -> bool {
        node.children()
            .is_some_and(|c| c.nodes().iter().any(|n| n.name().value() == "url"))
    }

    /// `url "…" [weight=N]`.
    pub(super) fn url(&mut self, ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) {
        let v = one_arg(ctx, r, "an http(s) URL");
        let weight = r.prop(ctx, "weight").and_then(|w| {
            let n = ctx.uint(&w, "weight", 1, 1_000_000)?;
            Some((n as u32, w.span))
        });
        let Some(v) = v else { return };
        let Some(url) = ctx.string(&v, "url") else {
            return;
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            ctx.error(
                v.span,
                "invalid url",
                format!("expected an http(s) URL, got {}", v.shown()),
                Some("write e.g. url \"http://10.0.0.1:8000/v1\"".into()),
            );
            return;
        }
        if self.urls.iter().any(|(u, _, _)| u.value == url) {
            ctx.error(
                v.span,
                "the same url twice",
                "listed already",
                Some("list each URL once; give it a larger weight= to send it more".into()),
            );
            return;
        }
        if self.urls.len() == MAX_URLS {
            ctx.error(
                v.span,
                "too many urls",
                format!("a target lists at most {MAX_URLS}"),
                None,
            );
            return;
        }
        let (w, span) = weight.map_or((1, None), |(w, s)| (w, Some(s)));
        self.urls.push((Spanned::new(url, v.span), w, span));
    }

    /// `route "…"`.
    pub(super) fn policy(&mut self, ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) {
        let expected = "\"round-robin\", \"by-session\" or \"by-weight\"";
        let Some(v) = one_arg(ctx, r, expected) else {
            return;
        };
        let Some(s) = ctx.name_string(&v, "route") else {
            return;
        };
        match RoutePolicy::from_name(&s) {
            Some(p) => self.policy = Some((p, v.span)),
            None => ctx.error(
                v.span,
                format!("unknown route `{s}`"),
                format!("expected {expected}"),
                Some(suggest(&s, &RoutePolicy::NAMES, "route")),
            ),
        }
    }

    /// Checks the children together once the block is read and sets the target's endpoint
    /// when it lists URLs. `arg` is the target's own argument (`"sim"`, a URL), when it has
    /// one.
    pub(super) fn finish(self, ctx: &mut Ctx<'_>, t: &mut Target, arg: bool) {
        let policy = self.policy.map_or(RoutePolicy::default(), |(p, _)| p);
        if arg && let Some((first, _, _)) = self.urls.first() {
            ctx.error(
                first.span,
                "`url` in a target that names where requests go already",
                "a second way to say where requests go",
                Some("write `target { url \"…\"; url \"…\" }` with every URL as a `url`".into()),
            );
            return;
        }
        let weighted = self.urls.iter().find_map(|u| u.2);
        match (weighted, self.policy) {
            (Some(span), Some((p, _))) if !p.weighs() => ctx.error(
                span,
                "`weight=` with route \"round-robin\"",
                "round-robin sends every URL the same share",
                Some("write route \"by-weight\" or \"by-session\", or remove weight=".into()),
            ),
            (Some(span), None) if self.urls.len() > 1 => ctx.error(
                span,
                "`weight=` without a route",
                "the default route, round-robin, sends every URL the same share",
                Some("add route \"by-weight\" (or \"by-session\")".into()),
            ),
            _ => {}
        }
        if self.urls.is_empty() {
            if let Some((_, span)) = self.policy {
                ctx.error(
                    span,
                    "`route` without urls",
                    "there is one place to send requests",
                    Some("list the target's URLs as `url \"…\"` children".into()),
                );
            }
            return;
        }
        t.endpoint = if self.urls.len() == 1 {
            let (url, _, _) = self.urls.into_iter().next().expect("one url");
            Endpoint::Url(url)
        } else {
            Endpoint::Urls(Routes {
                urls: self
                    .urls
                    .into_iter()
                    .map(|(u, weight, _)| RoutedUrl {
                        url: u.value,
                        weight,
                    })
                    .collect(),
                policy,
            })
        };
    }
}

/// `affinity-header "x-session-id"`: a header name the client does not set itself and the
/// target's `header`s do not name.
pub(super) fn affinity(ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>, t: &mut Target) {
    let Some(v) = one_arg(ctx, r, "a header name like \"x-session-id\"") else {
        return;
    };
    let Some(name) = ctx.name_string(&v, "affinity-header") else {
        return;
    };
    let lower = name.to_ascii_lowercase();
    let problem = super::header_name_problem(&name).or_else(|| {
        RESERVED
            .contains(&lower.as_str())
            .then(|| format!("`{name}` is a header the client sets itself"))
    });
    match problem {
        Some(p) => ctx.error(
            v.span,
            "invalid affinity-header",
            p,
            Some("write e.g. affinity-header \"x-session-id\"".into()),
        ),
        None => t.request.affinity_header = Some(lower),
    }
}

/// A `header` of the same name as the affinity header would be sent twice.
pub(super) fn check_headers(ctx: &mut Ctx<'_>, node: &KdlNode, t: &Target) {
    let Some(name) = &t.request.affinity_header else {
        return;
    };
    if t.request
        .headers
        .iter()
        .any(|(h, _)| h.eq_ignore_ascii_case(name))
    {
        ctx.error(
            ctx.name_span(node),
            format!("`header \"{name}\"` and `affinity-header \"{name}\"`"),
            "the same header twice",
            Some("the affinity header carries a value per session; remove the `header`".into()),
        );
    }
}
