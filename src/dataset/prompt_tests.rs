//! Synthetic prompt tests: exact token counts and determinism (prompts drawn through a plan are
//! tested in `plan/prompt_tests.rs`).

use super::*;
use crate::dataset::TokenizerSpec;

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
    assert!(f.synthetic(64, 7).starts_with(&f.synthetic(4, 7)));
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
    let tok = Tokenizer::load(&TokenizerSpec::File("tok.json".into()), dir.path()).unwrap();
    let f = factory(tok.clone());
    assert!(!f.exact_by_construction, "files are checked per prompt");
    for n in [1u32, 2, 7, 128, 1000] {
        assert_eq!(tok.count(&f.synthetic(n, 99)), n as usize);
    }
}
