//! README's tutorial, "Add normfuzz to your runtime's CI" (and the guide's, docs/tutorial.md),
//! followed step by step in a temp folder on a small Node normalizer
//! (`tests/fixtures/tutorial/normalize.mjs`): init, fill the shim, the first run drafts the
//! baseline (red), the second is green, a planted regression turns it red with the finding's
//! annotation. Every command run here is quoted from both, so neither can drift from what works.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const INIT: &str = "normfuzz init --lang node --name demo-runtime";
const DRAFT: &str =
    "normfuzz conform --config normfuzz.toml --write-baseline normfuzz/baseline.toml";
const GATE: &str = "normfuzz conform --config normfuzz.toml";
/// The handlers step 3 shows, as they go into the generated shim.
const IMPORT: &str = "import { neutralizeText, checkMediaUrl } from \"../normalize.mjs\";";
/// The coverage scope step 3 names.
const COVERAGE: &str = "const COVERAGE = \"normalize.mjs\";";
const HANDLERS: [(&str, &str); 2] = [
    (
        "  neutralize_text: null,",
        "  neutralize_text: ({ text }) => ({ text: neutralizeText(text) }),",
    ),
    (
        "  check_media_url: null,",
        "  check_media_url: ({ url }) => checkMediaUrl(url),",
    ),
];

/// README and the guide's tutorial, which both show the commands.
const PAGES: [&str; 2] = ["../README.md", "../docs/tutorial.md"];

/// Runs a README command (`normfuzz ...`) in `dir` with the built binary, as a GitHub Actions
/// step would (annotations on) when `actions` is set.
fn run(dir: &Path, command: &str, actions: bool) -> Output {
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[0], "normfuzz");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_normfuzz"));
    cmd.current_dir(dir)
        .args(&words[1..])
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_ACTIONS");
    if actions {
        cmd.env("GITHUB_ACTIONS", "true");
    }
    cmd.output().unwrap()
}

fn text(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn node() -> bool {
    Command::new("node").arg("--version").output().is_ok()
}

#[test]
fn the_readme_tutorial_goes_from_init_to_red_on_a_planted_regression() {
    if !node() {
        eprintln!("SKIPPED: node not found");
        return;
    }
    for page in PAGES {
        let text =
            std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(page)).unwrap();
        for quoted in [
            INIT,
            DRAFT,
            GATE,
            IMPORT,
            COVERAGE,
            HANDLERS[0].1.trim(),
            HANDLERS[1].1.trim(),
        ] {
            assert!(text.contains(quoted), "{page} no longer shows `{quoted}`");
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tutorial/normalize.mjs"),
        repo.join("normalize.mjs"),
    )
    .unwrap();

    // 2: init writes its files, and never overwrites them.
    let out = run(repo, INIT, false);
    assert!(out.status.success(), "{}", text(&out));
    let written: Vec<PathBuf> = [
        "normfuzz/shim.mjs",
        "normfuzz.toml",
        "normfuzz/profile.toml",
        "normfuzz/baseline.toml",
        ".github/workflows/normfuzz.yml",
    ]
    .iter()
    .map(|f| repo.join(f))
    .collect();
    assert!(written.iter().all(|f| f.is_file()), "{}", text(&out));
    let workflow = std::fs::read_to_string(&written[4]).unwrap();
    assert!(
        workflow.contains("uses: normfuzz/normfuzz@v0"),
        "{workflow}"
    );
    let again = run(repo, INIT, false);
    assert_eq!(again.status.code(), Some(2), "{}", text(&again));
    assert!(text(&again).contains("not overwriting"), "{}", text(&again));

    // 3: fill in the shim as README shows.
    let mut shim = std::fs::read_to_string(&written[0]).unwrap();
    shim = shim.replacen(
        "const handlers = {",
        &format!("{IMPORT}\n\nconst handlers = {{"),
        1,
    );
    for (empty, filled) in HANDLERS
        .into_iter()
        .chain([("const COVERAGE = \"\";", COVERAGE)])
    {
        assert!(shim.contains(empty), "the generated shim has `{empty}`");
        shim = shim.replacen(empty, filled, 1);
    }
    std::fs::write(&written[0], shim).unwrap();

    // 4: the first run finds the normalizer's bugs, all new, and drafts the baseline.
    let out = run(repo, DRAFT, false);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let baseline = std::fs::read_to_string(&written[3]).unwrap();
    assert!(baseline.contains("[[known]]"), "{baseline}");

    // 5: green against it; the report has the normalizer's coverage, from the shim's COVERAGE.
    let out = run(repo, GATE, false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    assert!(text(&out).contains(" 0 new, "), "{}", text(&out));
    let reports: Vec<PathBuf> = std::fs::read_dir(repo.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().path().join("index.json"))
        .collect();
    for index in reports {
        let index: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
        let unit = &index["coverage"][0];
        assert_eq!(
            unit["file"],
            repo.join("normalize.mjs").display().to_string()
        );
        assert!(unit["linesReached"].as_u64() > Some(0), "{unit}");
    }

    // 6: a planted regression (plain http allowed) is new: red, annotated at the shim.
    let normalizer = repo.join("normalize.mjs");
    let code = std::fs::read_to_string(&normalizer).unwrap();
    let planted = code.replace(
        "parsed.protocol !== \"https:\"",
        "![\"https:\", \"http:\"].includes(parsed.protocol)",
    );
    assert_ne!(planted, code, "the regression is planted");
    std::fs::write(&normalizer, planted).unwrap();
    let out = run(repo, GATE, true);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let annotation = stdout
        .lines()
        .find(|l| l.starts_with("::error file=normfuzz/shim.mjs,title=normfuzz U"))
        .unwrap_or_else(|| panic!("no annotation at the shim:\n{stdout}"));
    assert!(annotation.contains("on check_media_url"), "{annotation}");
    assert!(annotation.contains("http://"), "{annotation}");
    assert!(
        annotation.contains("repro: normfuzz repro "),
        "{annotation}"
    );
}

/// The Python starter shim speaks the protocol as generated: with one handler filled in (a
/// pass-through, which keeps MEDIA: lines) a campaign runs and finds S1.
#[test]
fn the_python_starter_shim_speaks_the_protocol() {
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("SKIPPED: python3 not found");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        "normfuzz init --lang python --name py-demo",
        false,
    );
    assert!(out.status.success(), "{}", text(&out));
    let path = dir.path().join("normfuzz/shim.py");
    let shim = std::fs::read_to_string(&path).unwrap();
    let filled = shim.replacen(
        "\"neutralize_text\": None,",
        "\"neutralize_text\": lambda input: {\"text\": input[\"text\"]},",
        1,
    );
    assert_ne!(filled, shim);
    std::fs::write(&path, filled).unwrap();
    let out = run(
        dir.path(),
        "normfuzz conform --config normfuzz.toml --cases 300",
        false,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let out = text(&out);
    assert!(out.contains("against py-demo"), "{out}");
    assert!(out.contains("[S1]"), "{out}");
    assert!(!out.contains("protocol]"), "no protocol finding: {out}");
}
