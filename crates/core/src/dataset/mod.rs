//! Request content: what a scenario says about it ([`LengthDist`], [`ContextSpec`],
//! [`TokenizerSpec`], …), loading ShareGPT, JSONL, agentic and trace files into items
//! ([`DatasetSource`]), tokenizers, and the prompts themselves: the plan decides *how long* each
//! request is and which item it uses; [`PromptFactory`] turns that into text at send time.

mod agent_gen;
mod agent_task;
mod agentic;
mod agentic_import;
mod agentic_load;
mod batch;
mod compose;
mod error;
mod image;
mod item_images;
mod items;
mod jsonl;
mod judge;
mod length;
mod prompt;
mod quality;
mod score;
mod session;
mod session_tools;
mod sharegpt;
mod source;
mod spec;
mod tokenizer;
mod trace;
mod words;

pub use agent_gen::{
    AgenticShape, MAX_GENERATED_TASKS, MAX_GENERATED_TURNS, SHAPE_LIMITS, generate_agentic,
};
pub use agent_task::{
    AgentSession, AgentTask, AgentTurn, MAX_DEPTH, MAX_FORKS, MAX_TASK_SESSIONS, MAX_TURN_TOKENS,
    MAX_WAIT_MS,
};
pub use agentic_import::{Imported, import_dynamo_agentic};
pub use agentic_load::load_agentic;
pub use compose::{SALT_WORDS, Salt, salt_domain};
pub use error::DatasetError;
pub use image::{
    EncodedImage, ImageDraw, ImageError, ImageFormat, ImageSize, ImageSizeError, ImageSpec,
    MAX_IMAGE_PIXELS, MAX_IMAGE_SIDE, MAX_IMAGES_PER_REQUEST, WeightedFormat, parse_size, render,
};
pub use item_images::{ImageLineError, ItemImage, MAX_ITEM_IMAGE_BYTES};
pub use items::{
    ChatMessage, DataItem, DatasetSource, ItemFormat, ItemPrompt, LoadReport, TraceRow, TurnTokens,
};
pub use jsonl::load_jsonl;
pub use judge::{
    DEFAULT_JUDGE_CACHE, JudgePrice, JudgeSpec, MAX_JUDGED_BYTES, MIN_JUDGE_SAMPLE, cache_key,
    clip_judged, judge_body, parse_score,
};
pub use length::{LengthError, validate_length};
pub use prompt::{Prompt, PromptFactory};
pub use quality::{
    Answer, MAX_SCORED_BYTES, QualityCheck, QualitySpec, Reference, RepetitionSpec, ScoreSpec,
    repeated_share,
};
pub use score::{JsonTop, ROUGE_MAX_TOKENS, rouge_l};
pub use session_tools::{tool_results, with_tool_results};
pub use sharegpt::{Loaded, load_sharegpt};
pub use source::MAX_LINE_BYTES;
pub use spec::{
    ContextSpec, History, LengthDist, MAX_TURNS, Retrieved, SessionState, ShareGptFilters,
    SharedPrefix, TokenizerSpec, TraceFormat,
};
pub use tokenizer::Tokenizer;
pub use trace::load_trace;
