//! `images N { size "WxH" weight=W; format "png" weight=W }` in a dataset: synthetic images
//! sent with every request of the data set (chat only), each of a size and a format drawn by
//! weight. Sizes are capped here ([`crate::dataset::parse_size`]), so an enormous or empty
//! image is a diagnostic pointing at it, not a run that runs out of memory.

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader};
use super::error::suggest;
use crate::dataset::{
    ImageFormat, ImageSize, ImageSpec, MAX_IMAGES_PER_REQUEST, WeightedFormat, parse_size,
};

const CHILDREN: &[&str] = &["size", "format"];

/// The spec, or `None` after an error.
pub(crate) fn parse(ctx: &mut Ctx<'_>, node: &KdlNode) -> Option<ImageSpec> {
    let mut r = NodeReader::new(ctx, node);
    let count = match r.arg(ctx, 0) {
        Some(v) => ctx.uint(&v, "images", 1, u64::from(MAX_IMAGES_PER_REQUEST)),
        None => {
            ctx.error(
                ctx.name_span(node),
                "`images` needs a count",
                "how many images each request carries",
                Some("write images 1 { size \"512x512\"; format \"png\"; }".into()),
            );
            None
        }
    };
    let mut spec = ImageSpec {
        count: count.unwrap_or(1) as u32,
        sizes: Vec::new(),
        formats: Vec::new(),
    };
    let mut ok = count.is_some();
    for child in r.children() {
        ok &= match child.name().value() {
            "size" => choice(
                ctx,
                child,
                |ctx, v, weight, spec: &mut ImageSpec| {
                    let text = ctx.string(v, "size")?;
                    match parse_size(&text) {
                        Ok((width, height)) => {
                            spec.sizes.push(ImageSize {
                                width,
                                height,
                                weight,
                            });
                            Some(())
                        }
                        Err(e) => {
                            ctx.error(
                                v.span,
                                format!("invalid image size `{text}`"),
                                e.to_string(),
                                Some("write e.g. size \"512x512\"".into()),
                            );
                            None
                        }
                    }
                },
                &mut spec,
            ),
            "format" => choice(
                ctx,
                child,
                |ctx, v, weight, spec: &mut ImageSpec| {
                    let name = ctx.name_string(v, "format")?;
                    match ImageFormat::from_name(&name) {
                        Some(format) => {
                            spec.formats.push(WeightedFormat { format, weight });
                            Some(())
                        }
                        None => {
                            ctx.error(
                                v.span,
                                format!("unknown image format `{name}`"),
                                "expected \"png\" or \"jpeg\"",
                                Some(suggest(&name, &ImageFormat::NAMES, "format")),
                            );
                            None
                        }
                    }
                },
                &mut spec,
            ),
            _ => {
                ctx.unknown_node(child, "`images`", CHILDREN);
                false
            }
        };
    }
    r.finish(ctx);
    ok.then_some(spec)
}

/// One `size`/`format` child: its value (through `read`) and its `weight=` (default 1).
fn choice(
    ctx: &mut Ctx<'_>,
    node: &KdlNode,
    read: impl FnOnce(&mut Ctx<'_>, &super::ctx::Val, f64, &mut ImageSpec) -> Option<()>,
    spec: &mut ImageSpec,
) -> bool {
    let mut r = NodeReader::new(ctx, node);
    let weight = match r.prop(ctx, "weight") {
        Some(v) => ctx.number_min(&v, "weight", 0.0, true),
        None if r.node.entry("weight").is_some() => None,
        None => Some(1.0),
    };
    let value = super::ctx::one_arg(ctx, &mut r, "a value");
    let ok = match (value, weight) {
        (Some(v), Some(w)) => read(ctx, &v, w, spec).is_some(),
        _ => false,
    };
    r.finish(ctx);
    ok
}
