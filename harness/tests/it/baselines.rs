//! Every baseline entry of every runtime (unit and e2e) carries its impact class and root cause,
//! and its class is one the runtime's profile allows for its rule: an S1 entry of a runtime
//! that acts on no directive cannot be a bug, a hang cannot be hardening in a runtime with no
//! time-out, and so on (`campaign::impact::possible`). A run pins the class down from evidence.

use std::path::{Path, PathBuf};

use normfuzz::campaign::baseline::Baseline;
use normfuzz::campaign::impact::{Class, Profile, possible};
use normfuzz::rule::Rule;

fn runtimes() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtimes");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("runtime.toml").is_file())
        .collect();
    out.sort();
    out
}

#[test]
fn every_entry_has_a_class_and_cause_its_profile_allows() {
    let mut checked = 0;
    let mut problems = Vec::new();
    for runtime in runtimes() {
        let profile = Profile::load(&runtime.join(Profile::FILE))
            .unwrap_or_else(|e| panic!("{}: {e:#}", runtime.display()));
        for entry in std::fs::read_dir(&runtime).unwrap() {
            let path = entry.unwrap().path();
            if !path.to_string_lossy().ends_with(".baseline.toml") {
                continue;
            }
            let baseline: toml::Table =
                toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            for known in baseline["known"].as_array().unwrap() {
                checked += 1;
                let rule: Rule = known["rule"].as_str().unwrap().parse().unwrap();
                let at = format!(
                    "{name} {rule} {}",
                    known.get("case").map_or("", |c| c.as_str().unwrap())
                );
                let (Some(class), Some(cause)) = (known.get("class"), known.get("cause")) else {
                    problems.push(format!("{at}: no class or cause"));
                    continue;
                };
                let class: Class = class.clone().try_into().unwrap();
                let cause = cause.as_str().unwrap();
                if cause.is_empty()
                    || !cause
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                {
                    problems.push(format!("{at}: cause {cause:?} is not a short id"));
                }
                let allowed = possible(rule, &profile);
                if !allowed.contains(&class) {
                    problems.push(format!("{at}: {class}, but its profile allows {allowed:?}"));
                }
            }
        }
    }
    assert!(checked > 150, "{checked} entries");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn s1_in_a_runtime_without_directives_is_never_a_bug() {
    // The premise of S1 is missing in an SDK that returns the reply to its app.
    for runtime in runtimes() {
        let profile = Profile::load(&runtime.join(Profile::FILE)).unwrap();
        if !profile.directives {
            assert_eq!(
                possible(Rule::S1, &profile),
                [Class::Hardening],
                "{runtime:?}"
            );
        }
    }
}

/// Every entry of every runtime's unit baseline names its signature, a reason and evidence read
/// in the runtime's code (not a draft's TODO, nor a re-keyed entry nobody reviewed), and a
/// hardening entry the docs that document the behaviour (`Baseline::load` refuses one without
/// class or cause): an entry without a signature would know every finding of its rule, and a
/// hardening one without docs cannot lower a bug.
#[test]
fn unit_baselines_know_findings_by_cause() {
    let mut problems = Vec::new();
    let runtimes = Path::new(env!("CARGO_MANIFEST_DIR")).join("runtimes");
    let mut dirs: Vec<_> = std::fs::read_dir(&runtimes)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|d| d.join("runtime.toml").is_file())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 8, "runtimes: {dirs:?}");
    for dir in dirs {
        let runtime: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("runtime.toml")).unwrap()).unwrap();
        let file = runtime["baseline"].as_str().unwrap();
        let baseline = Baseline::load(&dir.join(file)).unwrap_or_else(|e| panic!("{e:#}"));
        assert!(!baseline.known.is_empty(), "{file}: no entries");
        for k in &baseline.known {
            let at = format!("{file} {} {} ({})", k.op, k.rule, k.cause);
            let unread = |text: &str| {
                let text = text.trim();
                text.is_empty() || text.starts_with("TODO") || text.starts_with("RE-KEYED")
            };
            let missing = [
                ("signature", k.signature.is_none()),
                ("evidence", unread(&k.evidence)),
                ("reason", unread(&k.reason)),
                (
                    "docs",
                    k.class == Class::Hardening && k.docs.trim().is_empty(),
                ),
            ];
            for (what, _) in missing.iter().filter(|(_, m)| *m) {
                problems.push(format!("{at}: no {what}"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
