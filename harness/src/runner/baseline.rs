//! Known findings of a SUT (`--baseline FILE`), as in the MCP conformance suite's
//! expected-failures file: a finding of an (op, rule) the baseline lists keeps the run green and
//! is counted, not shrunk again; a new one fails the run; a listed one the run did not reach is
//! reported (a fuzz campaign that missed a finding has not shown it fixed: a longer run, or the
//! fix's own test, tells). `cargo xtask matrix` passes each runtime's unit baseline here, so the
//! matrix, `normfuzz conform` and a runtime's own CI judge with this one code; the e2e level's
//! baselines, keyed by scenario case and layer, are `runner::e2e::baseline`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::protocol::Op;
use crate::rule::Rule;
use crate::runner::campaign::Finding;
use crate::runner::impact::{Class, Impact};

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub known: Vec<Known>,
}

/// One known finding: the findings of `rule` on `op` of the listed kinds, or of every kind when
/// none is listed (the matrix's hand-written entries: one per op and rule).
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Known {
    #[serde(default = "default_op")]
    pub op: Op,
    pub rule: Rule,
    /// The finding kinds it keeps green (a finding's `kind`, the dedup key's data-free part):
    /// a new way to break a known rule is then new. `--write-baseline` lists them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub kinds: Vec<String>,
    /// The impact class read in the SUT's code (`runner::impact`).
    pub class: Class,
    /// The root cause, a short id shared by the entries of one behaviour.
    pub cause: String,
    pub reason: String,
}

/// The op of an entry that names none: the matrix's first baselines were all of tool results.
fn default_op() -> Op {
    Op::CoerceToolResult
}

/// A finding's standing against the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Standing {
    Known,
    New,
}

/// What a campaign's findings are against a baseline: kept in the report and its `index.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Judgement {
    /// The baseline file, as given.
    pub file: String,
    pub known: u64,
    pub new: u64,
    /// Entries whose op the campaign judged and whose finding it did not show.
    pub not_reached: Vec<Known>,
}

impl Judgement {
    /// Counts the known and new among `findings`, by the standing each was given.
    pub fn recount(&mut self, findings: &[Finding]) {
        let standing = |s| findings.iter().filter(|f| f.baseline == Some(s)).count() as u64;
        (self.known, self.new) = (standing(Standing::Known), standing(Standing::New));
    }

    /// `N new, N known, N not reached`, as every report's headline says it.
    pub fn counts(&self) -> String {
        format!(
            "{} new, {} known, {} not reached",
            self.new,
            self.known,
            self.not_reached.len()
        )
    }
}

impl Baseline {
    pub fn load(path: &Path) -> Result<Baseline> {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read baseline {}", path.display()))?;
        Self::parse(&text).with_context(|| format!("invalid baseline {}", path.display()))
    }

    pub fn parse(text: &str) -> Result<Baseline> {
        let baseline: Baseline = toml::from_str(text)?;
        for k in &baseline.known {
            anyhow::ensure!(
                is_cause_id(&k.cause),
                "{} {}: cause {:?} is not a short id (letters, digits, - and _)",
                k.op,
                k.rule,
                k.cause
            );
        }
        Ok(baseline)
    }

    /// The entry that knows findings of `rule` on `op` of `kind`.
    pub fn entry(&self, op: Op, rule: Rule, kind: &str) -> Option<&Known> {
        self.known.iter().find(|k| k.covers(op, rule, kind))
    }

    pub fn knows(&self, op: Op, rule: Rule, kind: &str) -> bool {
        self.entry(op, rule, kind).is_some()
    }

    /// Judges `findings` of a campaign that judged `ops`: each gate finding is known or new (a
    /// divergence is neither), and a known one takes the class and cause read in the SUT's
    /// code, which outrank the ones derived from evidence; `file` names the baseline in the
    /// report.
    pub fn judge(&self, file: &str, findings: &mut [Finding], ops: &BTreeSet<Op>) -> Judgement {
        for f in findings.iter_mut().filter(|f| f.gate) {
            let Some(known) = self.entry(f.op, f.rule, &f.kind) else {
                f.baseline = Some(Standing::New);
                continue;
            };
            f.baseline = Some(Standing::Known);
            f.impact = Some(Impact {
                class: known.class,
                why: format!("known ({}): {}", known.cause, known.reason),
            });
        }
        let not_reached = self
            .known
            .iter()
            .filter(|k| ops.contains(&k.op))
            .filter(|k| !findings.iter().any(|f| k.covers(f.op, f.rule, &f.kind)))
            .cloned()
            .collect();
        let mut judged = Judgement {
            file: file.to_string(),
            known: 0,
            new: 0,
            not_reached,
        };
        judged.recount(findings);
        judged
    }
}

impl Known {
    fn covers(&self, op: Op, rule: Rule, kind: &str) -> bool {
        self.op == op
            && self.rule == rule
            && (self.kinds.is_empty() || self.kinds.iter().any(|k| k == kind))
    }
}

/// A baseline that knows every gate finding of a run (`--write-baseline`): the entries of
/// `existing` (the baseline the run read) kept as they are, reasons and all, then one new entry
/// per (op, rule) of the findings it did not know, listing their kinds, its class the derived
/// one, its cause and reason to be filled in from the SUT's code (a baseline whose reasons
/// nobody read is a list of ignored bugs).
pub fn draft(findings: &[Finding], command: &str, existing: Option<&Baseline>) -> String {
    let mut out = format!(
        "# Known findings of `{command}`, drafted by `normfuzz conform --write-baseline`.\n\
         # For each entry, read the SUT's code and replace `cause` (a short id shared by the\n\
         # entries of one root cause) and `reason` (why it is real, or why it is accepted);\n\
         # `class` is the one derived from the run's evidence: correct it if the code says\n\
         # otherwise (bug, hardening or spec: see the spec's \"Impact classes\"). `kinds` are the\n\
         # ways of breaking the rule it keeps green (another is new); without it, every kind.\n"
    );
    for known in existing.into_iter().flat_map(|b| &b.known) {
        let entry = toml::to_string(known).unwrap_or_default();
        let _ = write!(out, "\n[[known]]\n{entry}");
    }
    let knows = |f: &Finding| existing.is_some_and(|b| b.knows(f.op, f.rule, &f.kind));
    let new: Vec<&Finding> = findings.iter().filter(|f| f.gate && !knows(f)).collect();
    let mut seen = BTreeSet::new();
    for f in &new {
        if !seen.insert((f.op, f.rule)) {
            continue;
        }
        let kinds: Vec<&str> = new
            .iter()
            .filter(|g| (g.op, g.rule) == (f.op, f.rule))
            .map(|g| g.kind.as_str())
            .collect();
        let class = f.impact.as_ref().map_or(Class::Bug, |i| i.class);
        let known = Known {
            op: f.op,
            rule: f.rule,
            kinds: kinds.iter().map(|k| k.to_string()).collect(),
            class,
            cause: cause_id(&f.kind),
            reason: format!(
                "TODO: read in the SUT's code. Found, e.g.: {} (finding {})",
                crate::excerpt::bounded(&f.detail, 200),
                f.id
            ),
        };
        let entry = toml::to_string(&known).unwrap_or_default();
        let _ = write!(out, "\n[[known]]\n{entry}");
    }
    out
}

/// A finding kind as a cause id: lower-case letters, digits and dashes.
fn cause_id(kind: &str) -> String {
    let mut id = String::new();
    for c in kind.chars() {
        if c.is_ascii_alphanumeric() {
            id.push(c.to_ascii_lowercase());
        } else if !id.ends_with('-') && !id.is_empty() {
            id.push('-');
        }
        if id.len() >= 60 {
            break;
        }
    }
    let id = id.trim_end_matches('-').to_string();
    if id.is_empty() { "unknown".into() } else { id }
}

fn is_cause_id(cause: &str) -> bool {
    !cause.is_empty()
        && cause
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::Answer;

    fn finding(op: Op, rule: Rule, gate: bool, kind: &str) -> Finding {
        crate::runner::shrink::finding(
            op,
            crate::oracle::judge::Violation {
                rule,
                gate,
                kind: kind.into(),
                detail: "a kept MEDIA: line".into(),
            },
            serde_json::json!({"text": "x"}),
            Answer::Output(serde_json::json!({})),
            Answer::Output(serde_json::json!({})),
            1,
            0,
        )
    }

    #[test]
    fn known_new_and_not_reached() {
        let baseline = Baseline::parse(
            "[[known]]\nop = \"neutralize_text\"\nrule = \"S1\"\nclass = \"hardening\"\n\
             cause = \"keeps-lines\"\nreason = \"r\"\n\
             [[known]]\nrule = \"F1\"\nclass = \"bug\"\ncause = \"drops-images\"\nreason = \"r\"\n\
             [[known]]\nop = \"parse_reply\"\nrule = \"S3\"\nclass = \"bug\"\ncause = \"c\"\n\
             reason = \"r\"\n",
        )
        .unwrap();
        assert!(baseline.knows(Op::NeutralizeText, Rule::S1, "any kind"));
        assert!(
            baseline.knows(Op::CoerceToolResult, Rule::F1, "k"),
            "an entry without op is of coerce_tool_result"
        );
        assert!(!baseline.knows(Op::CoerceToolResult, Rule::S1, "k"));
        let mut findings = [
            finding(Op::NeutralizeText, Rule::S1, true, "kept"),
            finding(Op::NeutralizeText, Rule::S1, true, "other kind, same rule"),
            finding(Op::CoerceToolResult, Rule::S2, true, "new"),
            finding(
                Op::CoerceToolResult,
                Rule::C4,
                false,
                "a divergence is never new",
            ),
        ];
        let ops = BTreeSet::from([Op::NeutralizeText, Op::CoerceToolResult]);
        let judged = baseline.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new), (2, 1));
        // Each finding carries its standing; a known one the class and cause read in the code.
        assert_eq!(findings[0].baseline, Some(Standing::Known));
        let impact = findings[0].impact.as_ref().unwrap();
        assert_eq!(impact.class, Class::Hardening);
        assert!(
            impact.why.starts_with("known (keeps-lines)"),
            "{}",
            impact.why
        );
        assert_eq!(findings[2].baseline, Some(Standing::New));
        assert_eq!(findings[3].baseline, None, "a divergence is neither");
        // F1 was judged and not found; parse_reply did not run, so its entry is not listed.
        assert_eq!(judged.not_reached.len(), 1);
        assert_eq!(judged.not_reached[0].rule, Rule::F1);
    }

    /// An entry that lists kinds keeps only those green: another way to break the rule is new.
    #[test]
    fn listed_kinds_narrow_an_entry() {
        let baseline = Baseline::parse(
            "[[known]]\nop = \"neutralize_text\"\nrule = \"S1\"\nkinds = [\"kept\"]\n\
             class = \"hardening\"\ncause = \"keeps-lines\"\nreason = \"r\"\n",
        )
        .unwrap();
        assert!(baseline.knows(Op::NeutralizeText, Rule::S1, "kept"));
        assert!(!baseline.knows(Op::NeutralizeText, Rule::S1, "another kind"));
        let ops = BTreeSet::from([Op::NeutralizeText]);
        let mut other = [finding(Op::NeutralizeText, Rule::S1, true, "another kind")];
        let judged = baseline.judge("b.toml", &mut other, &ops);
        assert_eq!((judged.known, judged.new), (0, 1));
        assert_eq!(judged.not_reached.len(), 1, "its own kind was not seen");
        // Drafting again keeps the entry and adds one for the new kind only.
        let again = Baseline::parse(&draft(&other, "sut", Some(&baseline))).unwrap();
        assert_eq!(again.known.len(), 2);
        assert_eq!(again.known[1].kinds, ["another kind"]);
    }

    #[test]
    fn bad_baselines_are_refused_with_their_reason() {
        let missing_class = "[[known]]\nrule = \"F1\"\ncause = \"c\"\nreason = \"r\"\n";
        assert!(Baseline::parse(missing_class).is_err());
        let bad_rule = "[[known]]\nrule = \"Z9\"\nclass = \"bug\"\ncause = \"c\"\nreason = \"r\"\n";
        assert!(Baseline::parse(bad_rule).is_err());
        let bad_cause =
            "[[known]]\nrule = \"F1\"\nclass = \"bug\"\ncause = \"a b\"\nreason = \"r\"\n";
        let err = Baseline::parse(bad_cause).unwrap_err();
        assert!(format!("{err:#}").contains("short id"), "{err:#}");
    }

    #[test]
    fn a_drafted_baseline_knows_the_run_it_came_from() {
        let mut findings = [
            finding(Op::NeutralizeText, Rule::S1, true, "kept_directive: MEDIA"),
            finding(Op::NeutralizeText, Rule::S1, true, "another kind"),
            finding(Op::CoerceToolResult, Rule::C4, false, "divergence"),
        ];
        let text = draft(&findings, "python3 shim.py", None);
        let baseline = Baseline::parse(&text).unwrap();
        assert_eq!(
            baseline.known.len(),
            1,
            "one entry per (op, rule), gate only"
        );
        assert_eq!(baseline.known[0].cause, "kept-directive-media");
        assert!(baseline.known[0].reason.starts_with("TODO"));
        // Drafted again over a baseline whose reason was filled in: the entry is kept as
        // written, and only a finding it does not know gets a new one.
        let mut read = baseline.clone();
        read.known[0].reason = "read in neutralize.js: accepted".into();
        let more = [
            finding(Op::NeutralizeText, Rule::S1, true, "kept_directive: MEDIA"),
            finding(Op::CoerceToolResult, Rule::S2, true, "image without data"),
        ];
        let again = Baseline::parse(&draft(&more, "python3 shim.py", Some(&read))).unwrap();
        assert_eq!(again.known.len(), 2);
        assert_eq!(again.known[0], read.known[0]);
        assert_eq!(
            (again.known[1].op, again.known[1].rule),
            (Op::CoerceToolResult, Rule::S2)
        );
        let ops = BTreeSet::from([Op::NeutralizeText, Op::CoerceToolResult]);
        let judged = baseline.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new), (2, 0));
        assert!(judged.not_reached.is_empty());
    }
}
