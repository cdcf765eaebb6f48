//! The Hugging Face `tokenizer.json` fixture: a scenario using it compiles, its prompts have
//! exactly the requested token count under it (checked with the `tokenizers` crate itself),
//! and `infermeter plan` names it.
#![cfg(feature = "hf-tokenizers")]

use std::path::Path;

use infermeter_core::plan::compile;
use infermeter_core::scenario::parse_str;

const SCENARIO: &str = r#"
scenario "hf" { seed 4 }
target "sim"
tokenizer "tokenizer.json"
dataset "d" { synthetic { input-tokens "uniform" min=1 max=300; output-tokens 8 } }
stage "s" { dataset "d"; arrival "concurrency" clients=1; requests 50 }
"#;

/// Where the scenario "lives": relative paths resolve against tests/data/tokenizers/, beside
/// the fixture (a directory the repository holds, so `..` never walks through a missing one).
fn scenario_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenizers/hf.kdl")
}

#[test]
fn prompts_have_exact_token_counts_under_the_fixture() {
    let path = scenario_path();
    let scenario = parse_str(&path, SCENARIO, &[]).unwrap();
    let plan = compile(&scenario).unwrap();
    let factory = plan.prompt_factory(path.parent().unwrap()).unwrap();
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenizers/tokenizer.json");
    let hf = tokenizers::Tokenizer::from_file(&fixture).unwrap();
    let stage = &plan.stages[0];
    for i in 0..50 {
        let recipe = plan.request(stage, i);
        let text = factory
            .prompt(stage.dataset, recipe.input_tokens, recipe.item)
            .as_text()
            .to_string();
        let n = hf.encode(text.as_str(), false).unwrap().get_ids().len();
        assert_eq!(n, recipe.input_tokens as usize, "request {i}: {text}");
    }
}

#[test]
fn plan_reports_the_tokenizer() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tokenizers");
    let text = SCENARIO.replace(
        "\"tokenizer.json\"",
        &format!("{:?}", fixture.join("tokenizer.json").display().to_string()),
    );
    let path = dir.path().join("hf.kdl");
    std::fs::write(&path, text).unwrap();
    let out = crate::support::command()
        .arg("plan")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find(|l| l.starts_with("tokenizer"))
        .unwrap_or_else(|| panic!("no tokenizer line in\n{stdout}"));
    assert!(line.ends_with("tokenizers/tokenizer.json"), "{line}");
}
