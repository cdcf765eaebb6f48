//! A target's `priority-as "body"|"header"|"both"` and `priority-header "NAME"`: how the
//! server is told a class's `priority`. vLLM reads its `priority` body field; a gateway or
//! router in front of it (llm-d's, a proxy that maps headers to queues) reads a header. The
//! default is the body field, as before; `priority-header` names the header (default
//! [`DEFAULT_PRIORITY_HEADER`]) and is only valid when a header is sent.

use miette::SourceSpan;

use super::ctx::{Ctx, NodeReader, one_arg};
use super::model::Target;
use crate::protocol::DEFAULT_PRIORITY_HEADER;

/// Where a class's priority goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Told {
    Body,
    Header,
    Both,
}

/// What the two children said, checked together once the target is read.
#[derive(Default)]
pub(super) struct PriorityAs {
    told: Option<(Told, SourceSpan)>,
    header: Option<(String, SourceSpan)>,
}

impl PriorityAs {
    /// `priority-as "body"|"header"|"both"`.
    pub(super) fn told(&mut self, ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) {
        let Some(v) = one_arg(ctx, r, "\"body\", \"header\" or \"both\"") else {
            return;
        };
        let Some(s) = ctx.string(&v, "priority-as") else {
            return;
        };
        let told = match s.as_str() {
            "body" => Told::Body,
            "header" => Told::Header,
            "both" => Told::Both,
            _ => {
                ctx.error(
                    v.span,
                    format!("unknown priority-as `{}`", crate::escape::terminal(&s)),
                    "expected \"body\", \"header\" or \"both\"",
                    Some(
                        "\"body\": vLLM's `priority` field; \"header\": the `priority-header` \
                         (default x-request-priority); \"both\": each"
                            .into(),
                    ),
                );
                return;
            }
        };
        self.told = Some((told, v.span));
    }

    /// `priority-header "NAME"`.
    pub(super) fn header(&mut self, ctx: &mut Ctx<'_>, r: &mut NodeReader<'_>) {
        let Some(v) = one_arg(ctx, r, "a header name like \"x-request-priority\"") else {
            return;
        };
        let Some(name) = ctx.name_string(&v, "priority-header") else {
            return;
        };
        let lower = name.to_ascii_lowercase();
        let problem = super::header_name_problem(&name).or_else(|| {
            (super::route::RESERVED.contains(&lower.as_str())
                || ["traceparent", "x-request-id"].contains(&lower.as_str()))
            .then(|| format!("`{name}` is a header the client sets itself"))
        });
        match problem {
            Some(p) => ctx.error(
                v.span,
                "invalid priority-header",
                p,
                Some(format!(
                    "write e.g. priority-header \"{DEFAULT_PRIORITY_HEADER}\""
                )),
            ),
            None => self.header = Some((lower, v.span)),
        }
    }

    /// Sets the target's request settings; a `priority-header` without a header to name, or
    /// naming one the target already sends, is refused.
    pub(super) fn finish(self, ctx: &mut Ctx<'_>, t: &mut Target) {
        let told = self.told.map_or(Told::Body, |(t, _)| t);
        if told == Told::Body {
            if let Some((_, span)) = self.header {
                ctx.error(
                    span,
                    "`priority-header` without a priority header to send",
                    "the priority goes in the body",
                    Some("add priority-as \"header\" (or \"both\") to the target".into()),
                );
            }
            return;
        }
        let (name, span) = match self.header {
            Some((n, s)) => (n, Some(s)),
            None => (DEFAULT_PRIORITY_HEADER.to_string(), None),
        };
        let taken = t.request.affinity_header.as_deref() == Some(name.as_str())
            || t.request
                .headers
                .iter()
                .any(|(h, _)| h.eq_ignore_ascii_case(&name));
        if taken {
            let at = span.or(self.told.map(|(_, s)| s));
            if let Some(at) = at {
                ctx.error(
                    at,
                    format!("the priority header `{name}` is sent already"),
                    "the same header twice",
                    Some(
                        "the priority header carries each class's priority; name another \
                         with priority-header, or remove the `header`"
                            .into(),
                    ),
                );
            }
            return;
        }
        t.request.priority_header = Some(name);
        t.request.priority_body = told == Told::Both;
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::scenario::{Scenario, ScenarioError, parse_str};

    fn parse(target: &str) -> Result<Scenario, ScenarioError> {
        let text = format!(
            "{target}\ndataset \"d\" {{ synthetic {{ input-tokens 8; output-tokens 4; }} }}\n\
             stage \"s\" {{ dataset \"d\"; arrival \"constant\" rate=5; requests 4; \
             class \"a\" priority=0; class \"b\" priority=1; }}\n"
        );
        parse_str(Path::new("t.kdl"), &text, &[])
    }

    fn problem(target: &str) -> String {
        let e = parse(target).expect_err("invalid");
        e.problems()
            .iter()
            .map(|p| format!("{} | {} | {:?}\n", p.message, p.label, p.help))
            .collect()
    }

    #[test]
    fn the_priority_goes_where_the_target_says() {
        let s = parse(r#"target "http://h:1/v1""#).unwrap();
        assert_eq!(s.target.request.priority_header, None);
        assert!(s.target.request.priority_body);
        let s = parse(r#"target "http://h:1/v1" { priority-as "header"; }"#).unwrap();
        assert_eq!(
            s.target.request.priority_header.as_deref(),
            Some("x-request-priority")
        );
        assert!(!s.target.request.priority_body);
        let s = parse(r#"target "sim" { priority-as "both"; priority-header "X-Prio"; }"#).unwrap();
        assert_eq!(s.target.request.priority_header.as_deref(), Some("x-prio"));
        assert!(s.target.request.priority_body);
        // The embedded simulator reads the header the target sends.
        let crate::scenario::Endpoint::Sim(sim) = &s.target.endpoint else {
            panic!("a sim target");
        };
        assert_eq!(sim.priority_header(), "x-prio");
    }

    #[test]
    fn each_way_to_get_it_wrong_is_named() {
        let p = problem(r#"target "sim" { priority-as "headers"; }"#);
        assert!(p.contains("unknown priority-as `headers`"), "{p}");
        let p = problem(r#"target "sim" { priority-header "x-prio"; }"#);
        assert!(p.contains("without a priority header to send"), "{p}");
        assert!(p.contains("priority-as \\\"header\\\""), "{p}");
        let p = problem(r#"target "sim" { priority-as "header"; priority-header "x prio"; }"#);
        assert!(p.contains("invalid priority-header"), "{p}");
        let p =
            problem(r#"target "sim" { priority-as "header"; priority-header "Content-Type"; }"#);
        assert!(p.contains("a header the client sets itself"), "{p}");
        let p =
            problem(r#"target "sim" { priority-as "header"; header "x-request-priority" "1"; }"#);
        assert!(p.contains("is sent already"), "{p}");
    }
}
