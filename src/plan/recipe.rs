//! Request recipes, drawn on demand: request `i` of a stage depends only on the stage's seed,
//! its dataset and `i`, so nothing per request is stored and a closed-loop worker can ask for
//! request `i` whenever it gets there.

use super::seed::{item_seed, recipe_rng};
use std::path::Path;

use super::{Load, Plan, RequestRecipe, StagePlan};
use crate::dataset::{DatasetError, DatasetSource, PromptFactory, Tokenizer};

impl Plan {
    /// The recipe of request `index` of `stage` (a stage of this plan, or its warm-up).
    pub fn request(&self, stage: &StagePlan, index: u64) -> RequestRecipe {
        let mut rng = recipe_rng(stage.seed, index);
        let mut item = item_seed(stage.seed, index);
        let (input_tokens, output_tokens) = match self.datasets.get(stage.dataset) {
            Some(d) => match &d.source {
                DatasetSource::Items { items, .. } if !items.is_empty() => {
                    item = stage.first_item.wrapping_add(index) % items.len() as u64;
                    let it = &items[item as usize];
                    let extra = d.context.extra_tokens();
                    (it.input_tokens.saturating_add(extra), it.output_tokens)
                }
                DatasetSource::Trace { rows, .. } if !rows.is_empty() => {
                    item = stage.first_item.wrapping_add(index) % rows.len() as u64;
                    let row = &rows[item as usize];
                    (row.input_tokens, row.output_tokens)
                }
                DatasetSource::Items { .. } | DatasetSource::Trace { .. } => (1, 1),
                DatasetSource::Synthetic {
                    input_tokens,
                    output_tokens,
                } => {
                    // Input first, then output: the order is part of PLAN_FORMAT.
                    let input = input_tokens.sample(&mut rng);
                    let input = input.saturating_add(d.context.extra_tokens());
                    (input, output_tokens.sample(&mut rng))
                }
            },
            // A compiled plan always has the dataset; a hand-edited one gets minimal requests.
            None => (1, 1),
        };
        RequestRecipe {
            index,
            input_tokens,
            output_tokens,
            item,
        }
    }

    /// The factory that turns this plan's recipes into prompts, under its tokenizer (a file
    /// path resolves against `base_dir`).
    pub fn prompt_factory(&self, base_dir: &Path) -> Result<PromptFactory, DatasetError> {
        self.prompt_factory_with(Tokenizer::load(&self.tokenizer, base_dir)?)
    }

    /// [`prompt_factory`](Self::prompt_factory) with a tokenizer the caller already loaded.
    pub fn prompt_factory_with(&self, tokenizer: Tokenizer) -> Result<PromptFactory, DatasetError> {
        let datasets = self
            .datasets
            .iter()
            .map(|d| (d.source.clone(), d.context))
            .collect();
        PromptFactory::new(tokenizer, datasets)
    }

    /// The warm-up (if any), then the stages, in the order they run.
    pub fn stages_in_order(&self) -> impl Iterator<Item = &StagePlan> {
        self.warmup.iter().chain(self.stages.iter())
    }
}

impl StagePlan {
    /// How many requests the stage sends, when that is known ahead (open loop, or a closed loop
    /// limited by count); `None` for a closed loop limited by time.
    pub fn request_count(&self) -> Option<u64> {
        match &self.load {
            Load::Open { schedule, .. } => Some(schedule.count()),
            Load::Closed { .. } => self.max_requests,
            Load::Search(_) => None,
        }
    }
}
