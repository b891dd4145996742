//! `cargo xtask matrix`: the runtime matrix. For each runtime under
//! `harness/runtimes/<name>/runtime.toml` it installs the pinned packages (cached; or, with
//! `e2e_install`, its e2e adapter's install through `normfuzz install`), runs
//! `normfuzz conform` against the runtime's protocol shim (the unit level), reads the campaign's
//! `index.json` and judges each rule against the runtime's baseline of known findings; a runtime
//! with an e2e adapter (`<name>/e2e.toml`) then runs `normfuzz e2e` with the same install, judged
//! against its e2e baseline (the end-to-end level, a row of its own). The real servers' results
//! (`corpus/real-servers/*.jsonl`) go through the same unit campaign as `conform --inputs`,
//! judged against the same unit baseline: the row `(real servers)`. One table (runtime@version
//! × rule) goes to `reports/matrix/matrix.md` and `matrix.json`.

pub(crate) mod install;
mod render;
mod runtime;
mod table;

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use table::{Baseline, Row};

pub(crate) use runtime::load_all;
pub use runtime::{Install, Runtime};

pub struct Options {
    /// Only these runtimes (folder names); all when empty.
    pub runtimes: Vec<String>,
    pub cases: u64,
    /// E2e turns per runtime with an e2e adapter.
    pub e2e_cases: u64,
    pub seed: u64,
    pub jobs: usize,
    /// Run only shard K of N (1-based) of each campaign, into `reports/matrix/shards/`.
    pub shard: Option<(u64, u64)>,
    /// Instead of running, join each runtime's shard reports (`normfuzz merge-reports`).
    pub merge: bool,
}

/// `K/N` with 1 <= K <= N.
pub fn parse_shard(text: &str) -> Result<(u64, u64), String> {
    let parsed = text
        .split_once('/')
        .and_then(|(k, n)| Some((k.parse::<u64>().ok()?, n.parse::<u64>().ok()?)));
    match parsed {
        Some((k, n)) if (1..=n).contains(&k) => Ok((k, n)),
        _ => Err(format!("a shard is K/N with 1 <= K <= N, not {text:?}")),
    }
}

/// Runs the matrix with the `normfuzz` binary; returns the exit code: 0 when every finding is
/// known, 1 when any is new or a runtime could not be run.
pub fn matrix(root: &Path, normfuzz: &Path, options: &Options) -> Result<i32> {
    let runtimes = load_all(&root.join("harness/runtimes"), &options.runtimes)?;
    let real_servers = real_server_files(&root.join(REAL_SERVERS))?;
    let cache = crate::fs::cache_root();
    let out = root.join("reports/matrix");
    let mut rows = Vec::new();
    for (dir, runtime) in &runtimes {
        let baseline = Baseline::load(&dir.join(&runtime.baseline))?;
        let slug = format!("{}-{}", runtime.name, runtime.version);
        let shards = out.join("shards").join(&slug);
        let report = match options.shard {
            Some((k, n)) => shards.join(format!("{k}of{n}")),
            None => out.join(&slug),
        };
        let result = if options.merge {
            merge_shards(normfuzz, &shards, &report)
        } else {
            let cases = Cases::Generated(options.cases);
            run_one(normfuzz, dir, runtime, &cache, &report, options, &cases)
        };
        let row = match result {
            Ok(index) => Row::from_index(runtime, &index, &baseline, &report_link(&out, &report)),
            Err(err) => {
                eprintln!("{}: {err:#}", runtime.label());
                Row::failed(runtime, &format!("{err:#}"))
            }
        };
        eprintln!("{}", row.summary());
        rows.push(row);
        // The real servers' results are a few dozen cases, one batch: shard 1 runs them all, as
        // a shard of one, so `--merge` finds them complete.
        if !real_servers.is_empty() && options.shard.is_none_or(|(k, _)| k == 1) {
            let name = format!("{slug}-real-servers");
            let shards = out.join("shards").join(&name);
            let report = match options.shard {
                Some(_) => shards.join("1of1"),
                None => out.join(&name),
            };
            let result = if options.merge {
                merge_shards(normfuzz, &shards, &report)
            } else {
                let cases = Cases::Inputs(&real_servers);
                run_one(normfuzz, dir, runtime, &cache, &report, options, &cases)
            };
            let row = match result {
                Ok(index) => Row::from_real_servers_index(
                    runtime,
                    &index,
                    &baseline,
                    &report_link(&out, &report),
                ),
                Err(err) => {
                    eprintln!("{} (real servers): {err:#}", runtime.label());
                    Row::failed_real_servers(runtime, &format!("{err:#}"))
                }
            };
            eprintln!("{}", row.summary());
            rows.push(row);
        }
        let adapter = dir.join(E2E_ADAPTER);
        if adapter.is_file() {
            for scenario in scenarios(&adapter) {
                let run = E2eRun {
                    runtime,
                    adapter: &adapter,
                    cache: &cache,
                    out: &out,
                    slug: &slug,
                    scenario,
                };
                rows.push(run.row(normfuzz, options));
            }
        }
    }
    if options.shard.is_some() {
        // One shard's table would be partial: the table comes from `--merge` once every shard
        // has run; a new finding still fails this run.
        return Ok(if rows.iter().all(Row::green) { 0 } else { 1 });
    }
    let date = today();
    let command = command_line(options);
    crate::fs::write_atomic(
        &out.join("matrix.json"),
        format!("{:#}\n", render::to_json(&rows, &date, &command)).as_bytes(),
    )?;
    let markdown = render::markdown(&rows, &date, &command);
    crate::fs::write_atomic(&out.join("matrix.md"), markdown.as_bytes())?;
    println!("{markdown}");
    eprintln!("matrix written to {}", out.join("matrix.md").display());
    Ok(if rows.iter().all(Row::green) { 0 } else { 1 })
}

/// Turns per scenario row at most: its seed scenarios (a fallback turn that retries before it
/// falls back takes minutes, openclaw's up to 180 s; a vision turn about a minute).
fn scenario_cases_max(scenario: &str) -> u64 {
    match scenario {
        "vision" => 4,
        _ => 9,
    }
}

/// The e2e rows of an adapter: its tool-result cases, then one row per scenario whose section
/// it has (`[fallback]`: `e2e --scenario fallback`; `[vision]`: `e2e --scenario vision`).
fn scenarios(adapter: &Path) -> Vec<Option<&'static str>> {
    let table = std::fs::read_to_string(adapter)
        .ok()
        .and_then(|text| toml::from_str::<toml::Table>(&text).ok())
        .unwrap_or_default();
    std::iter::once(None)
        .chain(
            ["fallback", "vision"]
                .into_iter()
                .filter(|s| table.contains_key(*s))
                .map(Some),
        )
        .collect()
}

/// One e2e row of a runtime: its tool-result cases, or with a scenario (`fallback`) those.
struct E2eRun<'a> {
    runtime: &'a Runtime,
    adapter: &'a Path,
    cache: &'a Path,
    out: &'a Path,
    slug: &'a str,
    scenario: Option<&'a str>,
}

impl E2eRun<'_> {
    /// Runs `normfuzz e2e` (or joins its shards' reports) and judges it into a row: against the
    /// runtime's e2e baseline, which `normfuzz e2e` reads itself.
    fn row(&self, normfuzz: &Path, options: &Options) -> Row {
        let name = match self.scenario {
            Some(scenario) => format!("{}-e2e-{scenario}", self.slug),
            None => format!("{}-e2e", self.slug),
        };
        let shards = self.out.join("shards").join(&name);
        let report = match options.shard {
            Some((k, n)) => shards.join(format!("{k}of{n}")),
            None => self.out.join(&name),
        };
        let result = if options.merge {
            // An e2e report is written in place: the previous merge's goes first.
            remove_report(&report).and_then(|()| merge_shards(normfuzz, &shards, &report))
        } else {
            let (cases, extra) = match self.scenario {
                Some(scenario) => (
                    options.e2e_cases.min(scenario_cases_max(scenario)),
                    vec!["--scenario", scenario],
                ),
                None => (options.e2e_cases, Vec::new()),
            };
            run_e2e(
                normfuzz,
                self.adapter,
                self.cache,
                &report,
                options,
                cases,
                &extra,
            )
        };
        let row = match result {
            Ok(index) => Row::from_e2e_index(self.runtime, &index, &report_link(self.out, &report)),
            Err(err) => {
                eprintln!("{} {name}: {err:#}", self.runtime.label());
                Row::failed_e2e(self.runtime, &format!("{err:#}"))
            }
        };
        eprintln!("{}", row.summary());
        row
    }
}

/// A runtime's e2e adapter, next to its `runtime.toml`.
pub(crate) const E2E_ADAPTER: &str = "e2e.toml";

/// Runs `cases` e2e turns (with `extra` arguments: a scenario) of a runtime already installed
/// (its adapter reuses the unit install) into `report`, only shard K of N of them under
/// `--shard`; returns its `index.json`.
fn run_e2e(
    normfuzz: &Path,
    adapter: &Path,
    cache: &Path,
    report: &Path,
    options: &Options,
    cases: u64,
    extra: &[&str],
) -> Result<serde_json::Value> {
    eprintln!("==> normfuzz e2e --adapter {}", adapter.display());
    let mut command = Command::new(normfuzz);
    command
        .arg("e2e")
        .arg("--adapter")
        .arg(adapter)
        .arg("--cache")
        .arg(cache)
        .args(extra);
    // 0: green against the baseline, 1: new or stale findings (judged in the table).
    run_into_report(command, &Cases::Generated(cases), options, report)
}

/// What a campaign of the matrix runs.
enum Cases<'a> {
    /// This many generated cases (of shard K of N under `--shard`).
    Generated(u64),
    /// Exactly the results of these files (`conform --inputs`), whole in any shard.
    Inputs(&'a [PathBuf]),
}

/// Runs a `normfuzz` campaign command with the matrix's cases, seed, jobs, shard and report
/// folder, and returns the report's `index.json`. Exit 0 and 1 are judgements (read from the
/// report against the baseline); anything else is the run itself failing.
fn run_into_report(
    mut command: Command,
    cases: &Cases,
    options: &Options,
    report: &Path,
) -> Result<serde_json::Value> {
    match cases {
        Cases::Generated(n) => command
            .args(["--cases", &n.to_string()])
            .args(options.shard.map(|(k, n)| format!("--shard={k}/{n}"))),
        Cases::Inputs(files) => command.args(
            files
                .iter()
                .flat_map(|f| [OsStr::new("--inputs"), f.as_os_str()]),
        ),
    };
    let status = command
        .args(["--seed", &options.seed.to_string()])
        .args(["--jobs", &options.jobs.to_string()])
        .arg("--report")
        .arg(report)
        .status()
        .with_context(|| format!("cannot run {command:?}"))?;
    if !matches!(status.code(), Some(0 | 1)) {
        bail!("{command:?} failed ({status})");
    }
    let index = report.join("index.json");
    let text = std::fs::read_to_string(&index)
        .with_context(|| format!("cannot read {}", index.display()))?;
    serde_json::from_str(&text).with_context(|| format!("invalid {}", index.display()))
}

/// The real servers' results, replayed against each runtime as a row of its own.
const REAL_SERVERS: &str = "corpus/real-servers";

/// The `*.jsonl` files of `dir`, in name order (none when it does not exist).
fn real_server_files(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        return Ok(Vec::new());
    }
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let path = entry?.path();
        if path.extension().is_some_and(|ext| ext == "jsonl") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Installs `runtime`, runs the campaign of `cases` into `report`, and returns its `index.json`.
fn run_one(
    normfuzz: &Path,
    dir: &Path,
    runtime: &Runtime,
    cache: &Path,
    report: &Path,
    options: &Options,
    cases: &Cases,
) -> Result<serde_json::Value> {
    let installed = install_runtime(normfuzz, dir, runtime, cache)?;
    let argv: Vec<String> = runtime
        .command
        .iter()
        .map(|word| {
            word.replace("${cache}", &installed.display().to_string())
                .replace("${adapter}", &dir.display().to_string())
        })
        .collect();
    let sut = argv
        .iter()
        .map(|w| shell_quote(w))
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("==> normfuzz conform --sut {sut} ({})", runtime.label());
    let mut command = Command::new(normfuzz);
    command
        .arg("conform")
        .args(["--sut", &sut])
        // Recorded in the report, where `normfuzz upstream` finds the runtime's repro template.
        .args(["--runtime", &runtime.label()])
        // Each finding's impact class is derived with the runtime's own conventions.
        .arg("--profile")
        .arg(dir.join("profile.toml"))
        // Known findings are judged by conform itself (and not shrunk again).
        .arg("--baseline")
        .arg(dir.join(&runtime.baseline))
        .args(
            runtime
                .handshake_timeout_ms
                .map(|ms| format!("--handshake-timeout-ms={ms}")),
        )
        // The shim reports its runtime's coverage of these (the protocol's coverage extension).
        .env("NORMFUZZ_COVERAGE", runtime.coverage.join("\n"));
    // 0: no gate failure, 1: some (judged against the baseline), 2: the run itself failed.
    run_into_report(command, cases, options, report)
}

/// Installs `runtime` (folder `dir`) into the cache root `cache`, or finds it there; returns its
/// install folder, the shim's `${cache}`.
fn install_runtime(
    normfuzz: &Path,
    dir: &Path,
    runtime: &Runtime,
    cache: &Path,
) -> Result<PathBuf> {
    if let Install::Packages { .. } = runtime.install {
        return install::ensure(runtime, cache);
    }
    let adapter = dir.join(E2E_ADAPTER);
    let out = Command::new(normfuzz)
        .arg("install")
        .arg("--adapter")
        .arg(&adapter)
        .arg("--cache")
        .arg(cache)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("cannot run normfuzz install")?;
    if !out.status.success() {
        bail!(
            "normfuzz install --adapter {} failed ({})",
            adapter.display(),
            out.status
        );
    }
    let folder = String::from_utf8(out.stdout).context("normfuzz install printed no path")?;
    Ok(PathBuf::from(folder.trim_end_matches('\n')))
}

/// Removes the report folder `dir` (one of the matrix's own, under `reports/matrix/`) if it
/// holds a report.
fn remove_report(dir: &Path) -> Result<()> {
    if dir.join("index.json").is_file() {
        std::fs::remove_dir_all(dir).with_context(|| format!("cannot remove {}", dir.display()))?;
    }
    Ok(())
}

/// Joins the shard reports under `shards` (folders `KofN`, every K of one N) into `report` with
/// `normfuzz merge-reports`; returns the merged `index.json`.
fn merge_shards(normfuzz: &Path, shards: &Path, report: &Path) -> Result<serde_json::Value> {
    let mut found: Vec<(u64, u64, PathBuf)> = Vec::new();
    for entry in std::fs::read_dir(shards)
        .with_context(|| format!("no shard reports in {}", shards.display()))?
    {
        let path = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let shard = name
            .split_once("of")
            .and_then(|(k, n)| parse_shard(&format!("{k}/{n}")).ok())
            .with_context(|| format!("{} is not a shard folder (KofN)", path.display()))?;
        found.push((shard.0, shard.1, path));
    }
    found.sort();
    let count = found.first().map_or(0, |f| f.1);
    let complete = found.len() as u64 == count
        && found
            .iter()
            .enumerate()
            .all(|(i, (k, n, _))| *k == i as u64 + 1 && *n == count);
    if !complete {
        let names: Vec<String> = found.iter().map(|(k, n, _)| format!("{k}/{n}")).collect();
        bail!(
            "incomplete shards in {}: {}",
            shards.display(),
            names.join(", ")
        );
    }
    let status = Command::new(normfuzz)
        .arg("merge-reports")
        .arg("--out")
        .arg(report)
        .args(found.iter().map(|(_, _, p)| p))
        .status()
        .context("cannot run normfuzz merge-reports")?;
    if !matches!(status.code(), Some(0 | 1)) {
        bail!("normfuzz merge-reports failed ({status})");
    }
    let index = report.join("index.json");
    let text = std::fs::read_to_string(&index)
        .with_context(|| format!("cannot read {}", index.display()))?;
    serde_json::from_str(&text).with_context(|| format!("invalid {}", index.display()))
}

/// A word for `--sut`, which splits like a POSIX shell: single quotes unless plain.
fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-=@:+,".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// `report` relative to the table's folder, for the table's links.
fn report_link(out: &Path, report: &Path) -> String {
    report
        .strip_prefix(out)
        .unwrap_or(report)
        .display()
        .to_string()
}

fn command_line(options: &Options) -> String {
    if options.merge {
        return "cargo xtask matrix --merge (the runtimes' shard reports joined)".into();
    }
    let mut line = format!("cargo xtask matrix --cases {}", options.cases);
    if options.e2e_cases != options.cases {
        line.push_str(&format!(" --e2e-cases {}", options.e2e_cases));
    }
    if !options.runtimes.is_empty() {
        line.push_str(&format!(" --runtimes {}", options.runtimes.join(",")));
    }
    if options.seed != 1 {
        line.push_str(&format!(" --seed {}", options.seed));
    }
    if options.jobs != 1 {
        line.push_str(&format!(" --jobs {}", options.jobs));
    }
    line
}

/// Today's UTC date, `YYYY-MM-DD` (civil-from-days, so no date crate is needed).
fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let days = i64::try_from(secs / 86_400).unwrap_or(0);
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Howard Hinnant's algorithm: days since 1970-01-01 → (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use install::{Ecosystem, PythonVersion};

    #[test]
    fn dates_and_quoting() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_781), (2026, 11, 24));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
        assert_eq!(shell_quote("/a/b.mjs"), "/a/b.mjs");
        assert_eq!(shell_quote("a b'c"), r"'a b'\''c'");
        assert_eq!(parse_shard("2/3"), Ok((2, 3)));
        for bad in ["0/3", "4/3", "3", "1/0"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    /// A runtime.toml names exactly one install: packages (both keys) or its e2e adapter's.
    #[test]
    fn runtime_install_is_packages_or_e2e_adapter() {
        let head = "name = \"x\"\npackage = \"x\"\nversion = \"1\"\nfunction = \"f\"\n\
                    command = [\"node\"]\nbaseline = \"b.toml\"\n";
        let parse = |rest: &str| Runtime::parse(&format!("{head}{rest}"));
        let packages = parse("ecosystem = \"npm\"\ninstall = [\"x@1\"]\n").unwrap();
        assert!(matches!(packages.install, Install::Packages { .. }));
        let e2e = parse("e2e_install = true\n").unwrap();
        assert!(matches!(e2e.install, Install::E2eAdapter));
        let pypi =
            parse("ecosystem = \"pypi\"\ninstall = [\"x==1\"]\npython = \"3.12\"\n").unwrap();
        let Install::Packages { python, .. } = pypi.install else {
            panic!("not packages: {pypi:?}")
        };
        assert_eq!(python, Some(PythonVersion { minor: 12 }));
        let plain = parse("ecosystem = \"pypi\"\ninstall = [\"x==1\"]\n").unwrap();
        assert!(matches!(
            plain.install,
            Install::Packages { python: None, .. }
        ));
        for (rest, says) in [
            ("", "or by its e2e"),
            ("e2e_install = false\n", "or by its e2e"),
            ("ecosystem = \"npm\"\n", "or by its e2e"),
            ("install = [\"x@1\"]\n", "or by its e2e"),
            (
                "e2e_install = true\necosystem = \"npm\"\n",
                "must be absent",
            ),
            (
                "e2e_install = true\necosystem = \"npm\"\ninstall = [\"x@1\"]\n",
                "must be absent",
            ),
            ("e2e_install = true\nunit_install = true\n", "unknown field"),
            (
                "ecosystem = \"npm\"\ninstall = [\"x@1\"]\npython = \"3.12\"\n",
                "only for `ecosystem = \"pypi\"`",
            ),
            (
                "ecosystem = \"pypi\"\ninstall = [\"x==1\"]\npython = \"3\"\n",
                "is not a Python version",
            ),
            (
                "ecosystem = \"pypi\"\ninstall = [\"x==1\"]\npython = \"2.7\"\n",
                "is not a Python version",
            ),
        ] {
            let err = format!("{:#}", parse(rest).unwrap_err());
            assert!(err.contains(says), "{rest:?}: {err}");
        }
    }

    /// Each shim whose runtime is already in the cache (installed by `cargo xtask matrix`; none
    /// is installed here) speaks the protocol: its handshake offers `coerce_tool_result`, and a
    /// pipelined batch is answered in order, the text block with U+2028 and U+0085 (escaped in
    /// the request as the harness escapes them) intact and the bare string refused or coerced.
    #[test]
    fn cached_shims_answer_the_protocol() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/runtimes");
        let cache = crate::fs::cache_root();
        for (path, runtime) in load_all(&dir, &[]).unwrap() {
            // An e2e adapter's install folder has no `unit-` prefix (e2e/install.rs).
            let prefix = match runtime.install {
                Install::Packages { .. } => "unit-",
                Install::E2eAdapter => "",
            };
            let installed = cache
                .join("runtimes")
                .join(format!("{prefix}{}-{}", runtime.name, runtime.version));
            if !installed.join(".normfuzz-installed.json").is_file() {
                eprintln!("{}: not cached, skipped", runtime.label());
                continue;
            }
            let argv: Vec<String> = runtime
                .command
                .iter()
                .map(|w| {
                    w.replace("${cache}", &installed.display().to_string())
                        .replace("${adapter}", &path.display().to_string())
                })
                .collect();
            let lines = shim_answers(
                Command::new(&argv[0])
                    .args(&argv[1..])
                    .env("NORMFUZZ_COVERAGE", runtime.coverage.join("\n")),
                concat!(
                    r#"{"id":7,"op":"coerce_tool_result","input":{"content":[{"type":"text","text":"a\u2028b\u0085MEDIA:/x"}]}}"#,
                    "\n",
                    r#"{"id":8,"op":"coerce_tool_result","input":"text"}"#,
                    "\n",
                ),
            );
            assert_eq!(lines.len(), 3, "{}: {lines:?}", runtime.label());
            assert_eq!(lines[0]["normfuzz"], 1);
            assert!(
                lines[0]["ops"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|o| o == "coerce_tool_result")
            );
            assert_eq!(lines[1]["id"], 7);
            assert_eq!(
                lines[1]["output"]["content"][0]["text"],
                "a\u{2028}b\u{85}MEDIA:/x",
                "{}",
                runtime.label()
            );
            assert_eq!(lines[1]["output"]["isError"], false);
            assert_eq!(lines[2]["id"], 8);
            assert!(lines[2]["error"].is_string() || lines[2]["output"].is_object());
            // The coverage extension: a unit per scope `runtime.toml` names, and the first
            // case reached some of them.
            let units = lines[0]["coverage"]["units"].as_array().cloned();
            let units = units.unwrap_or_else(|| panic!("{}: no coverage offer", runtime.label()));
            let names: Vec<&str> = units.iter().filter_map(|u| u["name"].as_str()).collect();
            for scope in &runtime.coverage {
                let function = scope.rsplit(':').next().unwrap_or(scope);
                assert!(
                    names.iter().any(|n| n.ends_with(&format!(":{function}"))),
                    "{}: {scope} is not measured (units {names:?})",
                    runtime.label()
                );
            }
            assert!(
                lines[1]["coverage"].is_object(),
                "{}: the first case reached nothing",
                runtime.label()
            );
        }
    }

    /// Starts a shim, sends it `requests` and closes its stdin; its lines (the handshake, then
    /// one answer a request), once it exited successfully.
    fn shim_answers(shim: &mut Command, requests: &str) -> Vec<serde_json::Value> {
        use std::io::{BufRead, BufReader, Write};
        let mut child = shim
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(requests.as_bytes())
            .unwrap();
        let lines = BufReader::new(child.stdout.take().unwrap())
            .lines()
            .map(|l| serde_json::from_str(&l.unwrap()).unwrap())
            .collect();
        assert!(child.wait().unwrap().success(), "{shim:?}");
        lines
    }

    /// pydantic-ai's shim runs the runtime's MCP client for real (lib/shim_server.py): the case
    /// reaches `MCPToolset._call_tool_checked`, and the SDK session's own validation refuses a
    /// structuredContent that is not an object, which `mcp.types.CallToolResult` alone accepts.
    #[test]
    fn pydantic_ai_shim_calls_the_mcp_session() {
        let runtimes = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/runtimes");
        let (dir, runtime) = load_all(&runtimes, &["pydantic-ai".into()])
            .unwrap()
            .remove(0);
        let installed = crate::fs::cache_root()
            .join("runtimes")
            .join(format!("unit-{}-{}", runtime.name, runtime.version));
        if !installed.join(".normfuzz-installed.json").is_file() {
            eprintln!("{}: not cached, skipped", runtime.label());
            return;
        }
        let lines = shim_answers(
            Command::new(installed.join("venv/bin/python"))
                .arg(dir.join("shim.py"))
                .env(
                    "NORMFUZZ_COVERAGE",
                    "pydantic_ai/mcp.py:MCPToolset._call_tool_checked",
                ),
            concat!(
                r#"{"id":1,"op":"coerce_tool_result","input":{"content":[{"type":"text","text":"a"}]}}"#,
                "\n",
                r#"{"id":2,"op":"coerce_tool_result","input":{"content":[],"structuredContent":""}}"#,
                "\n",
            ),
        );
        assert_eq!(lines[1]["output"]["content"][0]["text"], "a", "{lines:?}");
        assert!(
            lines[1]["coverage"]["0"]["lines"]
                .as_array()
                .is_some_and(|l| !l.is_empty())
        );
        let refused = lines[2]["error"].as_str().unwrap_or_default();
        assert!(refused.contains("structuredContent"), "{lines:?}");
    }

    /// Every runtime file in the repository parses, names its folder, pins each package and has
    /// its baseline next to it.
    #[test]
    fn runtime_files_are_complete() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../harness/runtimes");
        let runtimes = load_all(&dir, &[]).unwrap();
        assert!(runtimes.len() >= 5, "{} runtimes", runtimes.len());
        for (path, runtime) in &runtimes {
            assert!(
                !runtime.coverage.is_empty(),
                "{}: `coverage` names none of the functions under test",
                runtime.name
            );
            assert_eq!(
                path.file_name().unwrap().to_str(),
                Some(runtime.name.as_str())
            );
            let e2e = path.join(E2E_ADAPTER);
            let adapter: Option<toml::Table> = e2e
                .is_file()
                .then(|| toml::from_str(&std::fs::read_to_string(&e2e).unwrap()).unwrap());
            // The specs that install the package under test: the runtime's own, pinned, or its
            // e2e adapter's npm steps (`package = "name@version"`).
            let specs: Vec<String> =
                match &runtime.install {
                    Install::Packages {
                        ecosystem,
                        packages,
                        ..
                    } => {
                        for spec in packages {
                            let pinned = match ecosystem {
                                Ecosystem::Npm => spec.rsplit_once('@').is_some_and(|(n, v)| {
                                    !n.is_empty()
                                        && v.chars().next().is_some_and(|c| c.is_ascii_digit())
                                }),
                                Ecosystem::Pypi => spec.contains("=="),
                            };
                            assert!(pinned, "{}: {spec} is not pinned", runtime.name);
                        }
                        packages.clone()
                    }
                    Install::E2eAdapter => adapter.as_ref().unwrap_or_else(|| {
                        panic!("{}: e2e_install without e2e.toml", runtime.name)
                    })["install"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|step| step["package"].as_str().unwrap().to_string())
                        .collect(),
                };
            assert!(
                specs
                    .iter()
                    .any(|s| *s == format!("{}@{}", runtime.package, runtime.version)
                        || s.contains(&runtime.version)),
                "{}: the package under test is not installed at {}",
                runtime.name,
                runtime.version
            );
            Baseline::load(&path.join(&runtime.baseline)).unwrap();
            // An e2e adapter names the same runtime and version and shares one install: the
            // unit level's (`unit_install`) or its own (`e2e_install` here).
            if let Some(adapter) = &adapter {
                assert_eq!(adapter["name"].as_str(), Some(runtime.name.as_str()));
                assert_eq!(adapter["version"].as_str(), Some(runtime.version.as_str()));
                let unit_install = adapter.get("unit_install").and_then(toml::Value::as_bool);
                let shared = match runtime.install {
                    Install::Packages { .. } => unit_install == Some(true),
                    Install::E2eAdapter => unit_install.is_none(),
                };
                assert!(shared, "{}: two installs", runtime.name);
            }
        }
    }
}
