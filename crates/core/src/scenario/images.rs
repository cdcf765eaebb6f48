//! `images N { size "WxH" weight=W; format "png" weight=W }` in a dataset: synthetic images
//! sent with every request of the data set (chat only), each of a size and a format drawn by
//! weight. Sizes are capped here ([`crate::dataset::parse_size`]), so an enormous or empty
//! image is a diagnostic pointing at it, not a run that runs out of memory.

use kdl::KdlNode;

use super::ctx::{Ctx, NodeReader, Val, one_arg};
use super::error::suggest;
use super::settings::{Entries, Setting, read_children};
use crate::dataset::{
    ImageFormat, ImageSize, ImageSpec, MAX_IMAGES_PER_REQUEST, WeightedFormat, parse_size,
};

/// What an image is drawn from, by weight: its sizes and its formats, each `VALUE [weight=W]`.
const CHILDREN: &[Setting<Entries<ImageRead>>] = &[
    Setting::many("size", |ctx, r, st| {
        st.choice(ctx, r, |ctx, v, weight, spec| {
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
        });
    }),
    Setting::many("format", |ctx, r, st| {
        st.choice(ctx, r, |ctx, v, weight, spec| {
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
        });
    }),
];

/// The spec as its children are read; `ok` until one is invalid.
struct ImageRead {
    spec: ImageSpec,
    ok: bool,
}

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
    let spec = ImageSpec {
        count: count.unwrap_or(1) as u32,
        sizes: Vec::new(),
        formats: Vec::new(),
    };
    let mut st = ImageRead {
        spec,
        ok: count.is_some(),
    };
    st.ok &= read_children(ctx, r.children(), "`images`", &[CHILDREN], &mut st);
    r.finish(ctx);
    st.ok.then_some(st.spec)
}

impl ImageRead {
    /// One `size`/`format` child: its value (through `read`) and its `weight=` (default 1).
    fn choice(
        &mut self,
        ctx: &mut Ctx<'_>,
        r: &mut NodeReader<'_>,
        read: impl FnOnce(&mut Ctx<'_>, &Val, f64, &mut ImageSpec) -> Option<()>,
    ) {
        let weight = match r.prop(ctx, "weight") {
            Some(v) => ctx.number_min(&v, "weight", 0.0, true),
            None if r.node.entry("weight").is_some() => None,
            None => Some(1.0),
        };
        let value = one_arg(ctx, r, "a value");
        self.ok &= match (value, weight) {
            (Some(v), Some(w)) => read(ctx, &v, w, &mut self.spec).is_some(),
            _ => false,
        };
    }
}
