use super::*;

#[test]
fn gsm8k_takes_the_number_after_the_last_marker() {
    assert_eq!(gsm8k_reference("3 + 4 = 7\n#### 7"), Some("7".into()));
    assert_eq!(gsm8k_reference("… #### 1,234"), Some("1234".into()));
    assert_eq!(
        gsm8k_reference("#### 2 then #### -3.5"),
        Some("-3.5".into())
    );
    assert_eq!(gsm8k_reference("no marker 7"), None);
    assert_eq!(gsm8k_reference("#### seven"), None);
    assert_eq!(gsm8k_reference("#### "), None);
}

#[test]
fn records_carry_a_reference_in_the_scorers_form() {
    let g = Recipe::Gsm8k
        .record(&json!({"question": "Tom has 3 …", "answer": "3*2=6\n#### 6"}))
        .unwrap();
    assert_eq!(g["reference"], "6");
    assert!(g["prompt"].as_str().unwrap().starts_with("Tom has 3 …"));
    let m = Recipe::Mmlu
        .record(&json!({"question": "2+2?", "subject": "math", "choices": ["3", "4", "5", "6"], "answer": 1}))
        .unwrap();
    assert_eq!(m["reference"], "B");
    assert_eq!(m["choices"], json!(["3", "4", "5", "6"]));
    // The subject is not kept: any other key would be sent in the request's body.
    assert!(m.get("subject").is_none());
    for bad in [
        json!({"question": "q", "choices": ["a", "b"], "answer": 2}),
        json!({"question": "q", "choices": ["a"], "answer": 0}),
        json!({"question": "", "choices": ["a", "b"], "answer": 0}),
        json!({"question": "q", "choices": ["a", 3], "answer": 0}),
        json!({"question": "q", "choices": ["a", "b"], "answer": -1}),
    ] {
        assert_eq!(Recipe::Mmlu.record(&bad), None, "{bad}");
    }
}

#[test]
fn a_jsonl_copy_converts_and_its_bad_rows_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("test.jsonl");
    std::fs::write(
        &src,
        "{\"question\": \"A <b>x</b>?\", \"answer\": \"#### 12\"}\n\n\
         {\"question\": \"B?\", \"answer\": \"no number\"}\n",
    )
    .unwrap();
    let out = dir.path().join("gsm8k.jsonl");
    let done = Recipe::Gsm8k.convert(&src, &out).unwrap();
    assert_eq!((done.records, done.skipped), (1, 1));
    let text = std::fs::read_to_string(&out).unwrap();
    let row: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(row["reference"], "12");

    // Nothing usable: an error naming the file, and no output.
    let other = dir.path().join("none.jsonl");
    let e = Recipe::Mmlu.convert(&src, &other).unwrap_err();
    assert!(
        e.to_string()
            .contains("no row has what the mmlu recipe needs"),
        "{e}"
    );
    assert!(!other.exists());
    std::fs::write(&src, "{\"question\": \n").unwrap();
    let e = Recipe::Gsm8k.convert(&src, &other).unwrap_err();
    assert!(e.to_string().contains("test.jsonl:1: not JSON"), "{e}");
}

#[cfg(feature = "parquet")]
mod parquet_source {
    use std::sync::Arc;

    use parquet::data_type::{ByteArray, ByteArrayType, Int64Type};
    use parquet::file::properties::WriterProperties;
    use parquet::file::writer::SerializedFileWriter;
    use parquet::schema::parser::parse_message_type;

    use super::*;

    /// A Parquet file shaped like the Hub's `cais/mmlu` (a list of choices, an index).
    fn mmlu_parquet(path: &Path, rows: &[(&str, &[&str], i64)]) {
        let schema = parse_message_type(
            "message schema {
                required binary question (UTF8);
                required group choices (LIST) {
                    repeated group list { required binary element (UTF8); }
                }
                required int64 answer;
            }",
        )
        .unwrap();
        let props = Arc::new(WriterProperties::builder().build());
        let file = std::fs::File::create(path).unwrap();
        let mut w = SerializedFileWriter::new(file, Arc::new(schema), props).unwrap();
        let mut g = w.next_row_group().unwrap();
        let text = |s: &str| ByteArray::from(s);
        let questions: Vec<ByteArray> = rows.iter().map(|r| text(r.0)).collect();
        let mut c = g.next_column().unwrap().unwrap();
        c.typed::<ByteArrayType>()
            .write_batch(&questions, None, None)
            .unwrap();
        c.close().unwrap();
        let (mut values, mut defs, mut reps) = (Vec::new(), Vec::new(), Vec::new());
        for (_, choices, _) in rows {
            for (i, choice) in choices.iter().enumerate() {
                values.push(text(choice));
                defs.push(1);
                reps.push(i16::from(i > 0));
            }
        }
        let mut c = g.next_column().unwrap().unwrap();
        c.typed::<ByteArrayType>()
            .write_batch(&values, Some(&defs), Some(&reps))
            .unwrap();
        c.close().unwrap();
        let answers: Vec<i64> = rows.iter().map(|r| r.2).collect();
        let mut c = g.next_column().unwrap().unwrap();
        c.typed::<Int64Type>()
            .write_batch(&answers, None, None)
            .unwrap();
        c.close().unwrap();
        g.close().unwrap();
        w.close().unwrap();
    }

    #[test]
    fn the_hubs_parquet_converts_row_by_row() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("test-00000-of-00001.parquet");
        mmlu_parquet(
            &src,
            &[
                ("Largest?", &["1", "9", "4"], 1),
                ("Out of range", &["a", "b"], 5),
                ("First?", &["x", "y", "z", "w"], 0),
            ],
        );
        let out = dir.path().join("mmlu.jsonl");
        let done = Recipe::Mmlu.convert(&src, &out).unwrap();
        assert_eq!((done.records, done.skipped), (2, 1));
        let rows: Vec<Value> = std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows[0]["choices"], json!(["1", "9", "4"]));
        assert_eq!(rows[0]["reference"], "B");
        assert_eq!(rows[1]["reference"], "A");
        // A file that is not Parquet is named, not a panic.
        std::fs::write(&src, "not parquet").unwrap();
        let e = Recipe::Mmlu.convert(&src, &out).unwrap_err();
        assert!(e.to_string().contains("not a Parquet file"), "{e}");
    }
}
