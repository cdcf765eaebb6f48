//! Hooks in the runner: `mutate` and `request` while a body is built, `validate` once a
//! response is complete. A failing hook marks its request as a `hook` error; a rejected
//! response as `invalid`. The run goes on either way.

use std::sync::Arc;

use bytes::Bytes;

use crate::client::BodyTemplate;
use crate::dataset::{Prompt, PromptFactory};
use crate::hooks::{HookCtx, Hooks};
use crate::metrics::{ErrorKind, RequestRecord};
use crate::plan::{Plan, RequestRecipe, StagePlan};

/// The stage's compiled hooks (already checked when the plan was compiled).
pub(super) fn stage_hooks(plan: &Plan, stage: &StagePlan) -> Option<Arc<Hooks>> {
    let h = plan.datasets.get(stage.dataset)?.hooks.as_ref()?;
    Hooks::compile(&h.source, &h.path).ok().map(Arc::new)
}

fn ctx<'a>(stage: &'a StagePlan, recipe: &RequestRecipe) -> HookCtx<'a> {
    HookCtx {
        index: recipe.index,
        stage: &stage.name,
        item: recipe.item,
        input_tokens: recipe.input_tokens,
        output_tokens: recipe.output_tokens,
        // Same request, same draws: mutated prompts are as deterministic as the plan.
        seed: stage.seed ^ recipe.index.wrapping_mul(0xA076_1D64_78BD_642F),
    }
}

/// The request body and its input token count, through `mutate` and `request` when the
/// script defines them.
pub(super) fn body(
    hooks: Option<&Hooks>,
    factory: &PromptFactory,
    template: &BodyTemplate,
    stage: &StagePlan,
    recipe: &RequestRecipe,
) -> Result<(Bytes, u32), String> {
    body_for(
        hooks,
        factory,
        template,
        stage,
        recipe,
        factory.prompt(stage, recipe),
    )
}

/// Like [`body`], for a prompt built elsewhere (a session's turn).
pub(super) fn body_for(
    hooks: Option<&Hooks>,
    factory: &PromptFactory,
    template: &BodyTemplate,
    stage: &StagePlan,
    recipe: &RequestRecipe,
    prompt: Prompt,
) -> Result<(Bytes, u32), String> {
    let extra = factory.item_extra(stage, recipe);
    let Some(h) = hooks else {
        let bytes = super::body::build_body(template, &prompt, recipe.output_tokens, extra);
        return Ok((bytes, recipe.input_tokens));
    };
    let c = ctx(stage, recipe);
    let mut input = recipe.input_tokens;
    let prompt = if h.has_mutate {
        let p = h.mutate(prompt, &c).map_err(|e| e.to_string())?;
        // A mutated prompt is counted again, so the server's usage is compared with it.
        let t = factory.tokenizer();
        input = match &p {
            Prompt::Text(text) => t.count(text),
            Prompt::Messages(ms) => ms.iter().map(|m| t.count(&m.content)).sum(),
        }
        .min(u32::MAX as usize) as u32;
        p
    } else {
        prompt
    };
    let bytes = super::body::build_body(template, &prompt, recipe.output_tokens, extra);
    if !h.has_request {
        return Ok((bytes, input));
    }
    let value: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| e.to_string())?;
    let value = h.request(value, &c).map_err(|e| e.to_string())?;
    serde_json::to_vec(&value)
        .map(|b| (Bytes::from(b), input))
        .map_err(|e| e.to_string())
}

/// Runs `validate` on a successful response.
pub(super) fn validate(
    hooks: Option<&Hooks>,
    stage: &StagePlan,
    recipe: &RequestRecipe,
    text: &str,
    rec: &mut RequestRecord,
) {
    let Some(h) = hooks.filter(|h| h.has_validate) else {
        return;
    };
    if !rec.ok() {
        return;
    }
    match h.validate(text, &ctx(stage, recipe)) {
        Ok(None) => {}
        Ok(Some(why)) => {
            tracing::debug!(index = recipe.index, "invalid response: {why}");
            rec.error = Some(ErrorKind::Invalid);
        }
        Err(e) => {
            tracing::debug!(index = recipe.index, "{e}");
            rec.error = Some(ErrorKind::Hook);
        }
    }
}
