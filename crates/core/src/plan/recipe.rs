//! Request recipes, drawn on demand: request `i` of a stage depends only on the stage's seed,
//! its dataset and `i`, so nothing per request is stored and a closed-loop worker can ask for
//! request `i` whenever it gets there.

use super::seed::{item_seed, label_draw, recipe_rng};
use crate::protocol::Labels;
use std::path::Path;

use super::{Load, Plan, RequestRecipe, StagePlan};
use crate::dataset::{DatasetError, DatasetSource, PromptFactory, Tokenizer};

impl Plan {
    /// The recipe of request `index` of `stage` (a stage of this plan, or its warm-up).
    pub fn request(&self, stage: &StagePlan, index: u64) -> RequestRecipe {
        let mut rng = recipe_rng(stage.seed, index);
        let mut item = item_seed(stage.seed, index);
        let labels = stage.labels(index);
        let dataset = stage.dataset_of(labels);
        let (input_tokens, output_tokens) = match self.datasets.get(dataset) {
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
            labels,
            dataset,
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
    /// Request `index`'s label in each of the stage's groups: a weighted draw keyed by the
    /// stage's seed, the grouping and the index alone, so every shard of a distributed run
    /// (which splits a stage by index) and every turn of a session draws the same.
    pub fn labels(&self, index: u64) -> Labels {
        let mut labels = Labels::default();
        for g in &self.groups {
            labels.set(g.by, g.pick(label_draw(self.seed, g.by as u64, index)));
        }
        labels
    }

    /// The data set a request with `labels` takes its prompt from: its class's own, else
    /// the stage's.
    pub fn dataset_of(&self, labels: Labels) -> usize {
        self.groups
            .iter()
            .filter_map(|g| {
                let l = g.labels.get(usize::from(labels.get(g.by)?))?;
                l.dataset
            })
            .next()
            .unwrap_or(self.dataset)
    }

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
