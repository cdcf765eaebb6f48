//! Synthetic prompt tests: exact token counts and determinism (prompts drawn through a plan are
//! tested in `plan/prompt_tests.rs`).

use super::*;

fn factory(tokenizer: Tokenizer) -> PromptFactory {
    PromptFactory::with_tokenizer(tokenizer, vec![]).unwrap()
}

#[test]
fn exact_token_counts_under_builtin_encodings() {
    for tok in [Tokenizer::cl100k_base(), Tokenizer::o200k_base()] {
        let f = factory(tok.clone());
        assert!(f.exact_by_construction, "{}", tok.name());
        for n in [1u32, 2, 3, 4, 5, 7, 128, 1000, 4096] {
            for item in [0u64, 1, 42, u64::MAX, 0x0123_4567_89ab_cdef] {
                let text = f.synthetic(n, item);
                assert_eq!(
                    tok.count(&text),
                    n as usize,
                    "{} n={n} item={item}",
                    tok.name()
                );
            }
        }
    }
}

#[test]
fn prompts_differ_beyond_the_opening() {
    let f = factory(Tokenizer::o200k_base());
    let a = f.synthetic(64, 7);
    let b = f.synthetic(64, 8);
    let shared = a
        .split(' ')
        .zip(b.split(' '))
        .filter(|(x, y)| x == y)
        .count();
    assert!(shared < 16, "{shared} of 64 words equal");
}

/// A 65-token stage once made a later 512-token stage of the same seed 13 % cached on vLLM:
/// the same item at another length, or in another data set, must not share a prefix.
#[test]
fn other_lengths_and_data_sets_share_no_prefix() {
    use crate::dataset::LengthDist;
    let first = |t: &str| t.split(' ').next().unwrap().to_string();
    let f = factory(Tokenizer::cl100k_base());
    for item in [0u64, 7, u64::MAX] {
        let (short, long) = (f.synthetic(65, item), f.synthetic(512, item));
        assert_ne!(first(&short), first(&long), "item {item}");
        assert_eq!(f.synthetic(65, item), short, "deterministic");
    }
    let synthetic = |n: u32| DatasetSource::Synthetic {
        input_tokens: LengthDist::Fixed { value: n },
        output_tokens: LengthDist::Fixed { value: 8 },
    };
    let f = PromptFactory::with_tokenizer(
        Tokenizer::cl100k_base(),
        vec![synthetic(64), synthetic(65), synthetic(64)],
    )
    .unwrap();
    let p = |d: usize| f.prompt(d, 64, 3).as_text().to_string();
    assert_ne!(first(&p(0)), first(&p(1)), "another data set");
    assert_eq!(p(0), p(2), "the same definition gives the same text");
}

/// Pins the text itself: a change here changes every synthetic workload, so it must come with
/// a PLAN_FORMAT bump (see `plan::tests::draws_are_pinned_across_versions`).
#[test]
fn synthetic_text_is_pinned_across_versions() {
    let f = factory(Tokenizer::cl100k_base());
    let got = f.synthetic(12, 42);
    assert_eq!(
        got, "stop reg conv ben enh rev package woman net actually find been",
        "text changed: bump PLAN_FORMAT and update this value"
    );
}

#[cfg(feature = "hf-tokenizers")]
#[test]
fn exact_counts_with_a_hugging_face_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("tok.json"),
        super::super::words::test_hf_json(),
    )
    .unwrap();
    let tok = Tokenizer::load(
        &crate::dataset::TokenizerSpec::File("tok.json".into()),
        dir.path(),
    )
    .unwrap();
    let f = factory(tok.clone());
    assert!(!f.exact_by_construction, "files are checked per prompt");
    for n in [1u32, 2, 7, 128, 1000] {
        assert_eq!(tok.count(&f.synthetic(n, 99)), n as usize);
    }
}
