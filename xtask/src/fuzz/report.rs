//! The fuzz runs' report, and their figures: `normfuzz fuzz-report` parses the libFuzzer logs
//! (the one parser, `harness/src/report/libfuzzer.rs`) and writes the four report files;
//! the exec/s and coverage xtask prints are read back from the `index.json` it wrote.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, ensure};

/// Where `cargo xtask fuzz` writes its report (`normfuzz fuzz-report` over the runs' logs).
pub enum ReportTo {
    /// `reports/fuzz-<unix time>/`.
    Default,
    Dir(PathBuf),
    Nowhere,
}

impl ReportTo {
    pub fn new(dir: Option<PathBuf>, no_report: bool) -> ReportTo {
        match (dir, no_report) {
            (_, true) => ReportTo::Nowhere,
            (Some(dir), false) => ReportTo::Dir(dir),
            (None, false) => ReportTo::Default,
        }
    }

    /// `dir` instead of `reports/fuzz-<unix time>`.
    pub fn or_default_dir(self, dir: PathBuf) -> ReportTo {
        match self {
            ReportTo::Default => ReportTo::Dir(dir),
            other => other,
        }
    }

    /// The folder, relative to the workspace root unless absolute; `None` for no report.
    fn dir(&self) -> Option<PathBuf> {
        match self {
            ReportTo::Nowhere => None,
            // What `normfuzz fuzz-report` picks without `--out`, named here to read it back.
            ReportTo::Default => {
                let stamp = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs());
                Some(PathBuf::from(format!("reports/fuzz-{stamp}")))
            }
            ReportTo::Dir(dir) => Some(dir.clone()),
        }
    }
}

/// Per target, what `normfuzz fuzz-report` read from its log: the run's average exec/s and the
/// last coverage.
#[derive(Default)]
pub(super) struct Stats(HashMap<String, (Option<u64>, Option<u64>)>);

impl Stats {
    /// From a fuzz report's `index.json` (`targets[].execPerSec`, `targets[].series[-1].cov`).
    fn from_index(index: &serde_json::Value) -> Stats {
        let targets = index["targets"].as_array().map_or(&[][..], Vec::as_slice);
        Stats(
            targets
                .iter()
                .filter_map(|t| {
                    let last = t["series"].as_array().and_then(|s| s.last());
                    let cov = last.and_then(|s| s["cov"].as_u64());
                    Some((
                        t["target"].as_str()?.to_string(),
                        (t["execPerSec"].as_u64(), cov),
                    ))
                })
                .collect(),
        )
    }

    /// exec/s and coverage as printed: `?` where not known (no report, or the log did not say).
    pub(super) fn shown(&self, target: &str) -> (String, String) {
        let shown = |v: Option<u64>| v.map_or_else(|| "?".to_string(), |v| v.to_string());
        let (exec_per_sec, cov) = self.0.get(target).copied().unwrap_or_default();
        (shown(exec_per_sec), shown(cov))
    }
}

/// Writes the four report files from libFuzzer logs with `normfuzz fuzz-report` (`normfuzz` as
/// given, or built in release mode as `cargo xtask conform` builds it) and returns the figures
/// it parsed; nothing, and no build, for `ReportTo::Nowhere`. Its exit 1 only repeats a crash
/// the caller reports itself.
pub(super) fn write_report(
    root: &Path,
    logs: &[&Path],
    to: &ReportTo,
    normfuzz: Option<&Path>,
) -> Result<Stats> {
    let Some(dir) = to.dir() else {
        return Ok(Stats::default());
    };
    let normfuzz = match normfuzz {
        Some(path) => path.to_path_buf(),
        None => crate::build_normfuzz(root)?,
    };
    let status = Command::new(normfuzz)
        .current_dir(root)
        .arg("fuzz-report")
        .arg("--out")
        .arg(&dir)
        .args(logs)
        .status()
        .context("cannot run normfuzz fuzz-report")?;
    ensure!(
        matches!(status.code(), Some(0 | 1)),
        "normfuzz fuzz-report failed ({status})"
    );
    let index = root.join(&dir).join("index.json");
    let text =
        std::fs::read_to_string(&index).with_context(|| format!("reading {}", index.display()))?;
    let json =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", index.display()))?;
    Ok(Stats::from_index(&json))
}

#[cfg(test)]
mod tests {
    use super::Stats;

    #[test]
    fn stats_from_the_report_index() {
        // As `normfuzz fuzz-report` writes it (`FuzzRun`, camelCase), cut to what is read.
        let index = serde_json::json!({
            "kind": "fuzz",
            "targets": [
                {"target": "neutralize", "execPerSec": 3033, "series": [
                    {"execs": 4096, "cov": 812, "execPerSec": 2048},
                    {"execs": 9000, "cov": 815, "execPerSec": 3000},
                ]},
                {"target": "retry", "execPerSec": null, "series": []},
            ],
        });
        let stats = Stats::from_index(&index);
        assert_eq!(stats.shown("neutralize"), ("3033".into(), "815".into()));
        assert_eq!(stats.shown("retry"), ("?".into(), "?".into()));
        // No report (`--no-report`), or a target the report does not hold.
        assert_eq!(
            Stats::default().shown("neutralize"),
            ("?".into(), "?".into())
        );
        assert_eq!(stats.shown(""), ("?".into(), "?".into()));
    }
}
