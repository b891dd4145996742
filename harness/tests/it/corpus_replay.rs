//! Every corpus file (seeds and minimized regressions) and every real server's result
//! (corpus/real-servers/) replays through the reference with no gate failure, judged by the same
//! checkers `conform` uses.

use std::path::{Path, PathBuf};

use normfuzz::protocol::Op;
use normfuzz::sut::ReferenceSut;
use serde_json::Value;

fn corpus_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            corpus_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            out.push(path);
        }
    }
}

#[test]
fn every_corpus_file_passes_the_reference() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus");
    let mut files = Vec::new();
    corpus_files(&root, &mut files);
    assert!(
        files.len() >= 8,
        "corpus missing? found {} files under {}",
        files.len(),
        root.display()
    );
    for file in &files {
        let text =
            std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let stored: Value =
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let op = stored["op"]
            .as_str()
            .and_then(Op::parse)
            .unwrap_or_else(|| panic!("{}: no known op", file.display()));
        let (_, _, violations) =
            normfuzz::campaign::replay(&mut ReferenceSut, op, &stored["input"])
                .expect("reference answers");
        let gate: Vec<_> = violations.iter().filter(|v| v.gate).collect();
        assert!(gate.is_empty(), "{}: {gate:?}", file.display());
    }
}

#[test]
fn every_real_server_result_passes_the_reference() {
    let corpus = normfuzz::generate::real_servers::corpus();
    assert!(corpus.len() >= 30, "{} real results", corpus.len());
    for capture in corpus {
        let (_, _, violations) =
            normfuzz::campaign::replay(&mut ReferenceSut, Op::CoerceToolResult, &capture.result)
                .expect("reference answers");
        let gate: Vec<_> = violations.iter().filter(|v| v.gate).collect();
        assert!(gate.is_empty(), "{}: {gate:?}", capture.source());
    }
}

#[test]
fn seed_expectations() {
    let call = |op, input: &str| {
        normfuzz::reference::call(op, &serde_json::from_str(input).unwrap()).unwrap()
    };
    assert_eq!(
        call(Op::CheckMediaUrl, r#"{"url":"https://127.0.0.1/x.png"}"#)["allowed"],
        false
    );
    assert_eq!(
        call(Op::CheckMediaUrl, r#"{"url":"https://example.com/a.png"}"#)["allowed"],
        true
    );
    assert_eq!(
        call(
            Op::CheckMediaUrl,
            r#"{"url":"https://2852039166/latest/meta-data/"}"#
        )["allowed"],
        false
    );
}
