//! Known findings of a SUT (`--baseline FILE`), as in the MCP conformance suite's
//! expected-failures file, remembered by cause: an entry matches a finding's signature (its
//! kind, what the SUT did and the features of the input that trigger it, `oracle::signature`),
//! not its rule, so a second bug under a known rule is new and fails the run. A known finding is
//! counted, not shrunk again; an entry the run did not reach is reported (a fuzz campaign that
//! missed a finding has not shown it fixed: a longer run, or the fix's own test, tells). An entry
//! never lowers the class of a finding whose evidence says bug, unless it cites the page, setting
//! or thread where the runtime documents the behaviour (`docs`: the spec's hardening). `cargo xtask matrix` passes each runtime's unit baseline here, so the
//! matrix, `normfuzz conform` and a runtime's own CI judge with this one code; the e2e level's
//! baselines, keyed by scenario case and layer, are `e2e::baseline`.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::finding::{Finding, Standing};
use crate::campaign::impact::{Class, Impact};
use crate::oracle::signature::Signature;
use crate::protocol::Op;
use crate::rule::Rule;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    #[serde(default)]
    pub known: Vec<Known>,
}

/// One known cause: the findings of `rule` on `op` that its signature covers.
#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Known {
    #[serde(default = "default_op")]
    pub op: Op,
    pub rule: Rule,
    /// The impact class read in the SUT's code (`campaign::impact`).
    pub class: Class,
    /// The root cause, a short id shared by the entries of one behaviour.
    pub cause: String,
    pub reason: String,
    /// Where in the SUT's code the behaviour was read (file and function).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub evidence: String,
    /// For a documented behaviour (hardening): the doc page, setting or tracker thread, and
    /// what a user should change.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub docs: String,
    /// The findings it knows: kind, action, and the features their input must have. Without
    /// one, the entry knows every finding of its op and rule (written before signatures; the
    /// report counts what such entries cover).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
}

/// The op of an entry that names none: the matrix's first baselines were all of tool results.
fn default_op() -> Op {
    Op::CoerceToolResult
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
    /// Known findings whose class derived from the run's evidence is not the entry's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disagreements: Vec<Disagreement>,
    /// Known findings matched by an entry without a signature (rule-wide).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub rule_wide: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// A known finding whose evidence gives another class than its entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Disagreement {
    pub finding: String,
    pub cause: String,
    pub entry: Class,
    pub derived: Class,
    /// The class the finding keeps: the entry's, unless that would lower a bug without a
    /// documented reason.
    pub kept: Class,
}

impl Judgement {
    /// Counts the known and new among `findings`, by the standing each was given.
    pub fn recount(&mut self, findings: &[Finding]) {
        let standing = |s| findings.iter().filter(|f| f.baseline == Some(s)).count() as u64;
        (self.known, self.new) = (standing(Standing::Known), standing(Standing::New));
    }

    /// `N new, N known, N not reached`, as every report's headline says it (and the class
    /// disagreements, when there are some).
    pub fn counts(&self) -> String {
        let mut counts = format!(
            "{} new, {} known, {} not reached",
            self.new,
            self.known,
            self.not_reached.len()
        );
        if !self.disagreements.is_empty() {
            let _ = write!(counts, ", {} class disagreements", self.disagreements.len());
        }
        counts
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

    /// The index of the entry that knows a finding of `rule` on `op` with `signature`.
    pub fn position(&self, op: Op, rule: Rule, signature: &Signature) -> Option<usize> {
        self.known
            .iter()
            .position(|k| k.covers(op, rule, signature))
    }

    pub fn entry(&self, op: Op, rule: Rule, signature: &Signature) -> Option<&Known> {
        self.position(op, rule, signature).map(|i| &self.known[i])
    }

    /// The entry that knows `f`: every feature set its cases showed is covered (the first set's
    /// entry names it). One case no entry covers makes the finding new.
    pub fn entry_of(&self, f: &Finding) -> Option<&Known> {
        let cases = case_signatures(f);
        cases
            .iter()
            .all(|s| self.position(f.op, f.rule, s).is_some())
            .then(|| self.entry(f.op, f.rule, &cases[0]))
            .flatten()
    }

    /// Judges `findings` of a campaign that judged `ops`: each gate finding is known or new (a
    /// divergence is neither). A known one takes its entry's cause, and its class unless the
    /// evidence says bug and the entry cites no documented behaviour; a new one keeps its derived
    /// class and gets a cause drafted from its signature. `file` names the baseline in reports.
    pub fn judge(&self, file: &str, findings: &mut [Finding], ops: &BTreeSet<Op>) -> Judgement {
        let mut disagreements = Vec::new();
        let mut rule_wide = 0;
        for f in findings.iter_mut().filter(|f| f.gate) {
            let Some(known) = self.entry_of(f) else {
                f.baseline = Some(Standing::New);
                f.cause = Some(drafted_cause(&f.signature));
                continue;
            };
            f.baseline = Some(Standing::Known);
            f.cause = Some(known.cause.clone());
            rule_wide += u64::from(known.signature.is_none());
            let derived = f.impact.as_ref().map(|i| i.class);
            let lowers_a_bug =
                derived == Some(Class::Bug) && known.class != Class::Bug && known.docs.is_empty();
            let kept = if lowers_a_bug {
                Class::Bug
            } else {
                known.class
            };
            if let Some(derived) = derived.filter(|d| *d != known.class) {
                disagreements.push(Disagreement {
                    finding: f.id.clone(),
                    cause: known.cause.clone(),
                    entry: known.class,
                    derived,
                    kept,
                });
            }
            let why = match lowers_a_bug {
                true => format!(
                    "known ({}), but its evidence says bug and the entry ({}) cites no documented \
                     behaviour: {}",
                    known.cause,
                    known.class,
                    f.impact.as_ref().map_or("", |i| i.why.as_str())
                ),
                false => format!("known ({}): {}", known.cause, known.reason),
            };
            f.impact = Some(Impact { class: kept, why });
        }
        let not_reached = self
            .known
            .iter()
            .filter(|k| ops.contains(&k.op))
            .filter(|k| {
                !findings
                    .iter()
                    .any(|f| case_signatures(f).iter().any(|s| k.covers(f.op, f.rule, s)))
            })
            .cloned()
            .collect();
        let mut judged = Judgement {
            file: file.to_string(),
            known: 0,
            new: 0,
            not_reached,
            disagreements,
            rule_wide,
        };
        judged.recount(findings);
        judged
    }
}

impl Known {
    fn covers(&self, op: Op, rule: Rule, signature: &Signature) -> bool {
        self.op == op
            && self.rule == rule
            && self.signature.as_ref().is_none_or(|s| s.covers(signature))
    }
}

/// The signatures of a finding's cases: its kind and action with each of its trigger sets (its
/// own features for a finding without any, as in reports from before triggers).
fn case_signatures(f: &Finding) -> Vec<Signature> {
    let sets = match f.triggers.is_empty() {
        true => vec![f.signature.features.clone()],
        false => f.triggers.clone(),
    };
    sets.into_iter()
        .map(|features| Signature {
            features,
            ..f.signature.clone()
        })
        .collect()
}

/// A cause id for a finding no entry knows: its kind and what the SUT did.
pub fn drafted_cause(signature: &Signature) -> String {
    cause_id(&format!("{} {}", signature.kind, signature.action.as_str()))
}

/// A baseline that knows every gate finding of a run that fails it (`--write-baseline`): the
/// entries of `existing` (the baseline the run read) kept as they are, reasons and all, then one
/// new entry per distinct signature of the findings it did not know, its class the derived one,
/// its cause, evidence and reason to be filled in from the SUT's code (a baseline whose reasons
/// nobody read is a list of ignored bugs). A spec-class finding (the information kept in another
/// form) fails no run and gets no entry.
///
/// With `rekey` (normfuzz's features changed since `existing` was written), a new entry takes
/// the cause, class, reason, evidence and docs of the one existing entry of its op, rule, kind
/// and action whose features it shares most, and says so in its reason for review; one that
/// matches none, or several causes equally, is drafted as without.
pub fn draft(
    findings: &[Finding],
    command: &str,
    existing: Option<&Baseline>,
    rekey: bool,
) -> String {
    let mut out = format!(
        "# Known findings of `{command}`, drafted by `normfuzz conform --write-baseline`.\n\
         # One entry per cause: its signature is the finding's kind, what the SUT did (`action`)\n\
         # and the features of the minimal input that trigger it; a finding it does not cover is\n\
         # new, even under a known rule. For each entry, read the SUT's code and fill in `cause`\n\
         # (a short id shared by the entries of one root cause), `evidence` (the code path) and\n\
         # `reason` (why it is real, or why it is accepted). `class` is the one derived from the\n\
         # run's evidence: correct it if the code says otherwise (bug, hardening or spec: see the\n\
         # spec's \"Impact classes\"); a bug becomes hardening only with `docs` (the page,\n\
         # setting or tracker thread that documents the behaviour, and what a user should change).\n"
    );
    for known in existing.into_iter().flat_map(|b| &b.known) {
        out += &entry_toml(known);
    }
    // Re-keying turns rule-wide entries into signatures: they know nothing until then.
    let known_by = |op, rule, s: &Signature| {
        existing.is_some_and(|b| {
            b.known
                .iter()
                .any(|k| k.covers(op, rule, s) && !(rekey && k.signature.is_none()))
        })
    };
    let class = |f: &Finding| f.impact.as_ref().map_or(Class::Bug, |i| i.class);
    // One entry per feature set a case needed that no entry covers, the fewest features first.
    let mut wanted: Vec<(&Finding, Signature)> = findings
        .iter()
        .filter(|f| f.gate && class(f) != Class::Spec)
        .flat_map(|f| case_signatures(f).into_iter().map(move |s| (f, s)))
        .filter(|(f, s)| !known_by(f.op, f.rule, s))
        .collect();
    wanted.sort_by_key(|(_, s)| s.features.len());
    let mut drafted: Vec<(Op, Rule, Signature)> = Vec::new();
    for (f, signature) in wanted {
        if drafted
            .iter()
            .any(|(op, rule, d)| (*op, *rule) == (f.op, f.rule) && d.covers(&signature))
        {
            continue;
        }
        let inherited = rekey
            .then(|| existing.and_then(|b| nearest(b, f.op, f.rule, &signature)))
            .flatten();
        let known = match inherited {
            Some(old) => Known {
                reason: format!(
                    "RE-KEYED from the entry of features [{}] (review): {}",
                    old.signature
                        .as_ref()
                        .map_or(String::new(), |s| s.features.join(", ")),
                    old.reason
                ),
                signature: Some(signature.clone()),
                ..old.clone()
            },
            None => Known {
                op: f.op,
                rule: f.rule,
                class: class(f),
                cause: drafted_cause(&signature),
                reason: format!(
                    "TODO: read in the SUT's code. Found, e.g.: {} (finding {})",
                    crate::excerpt::bounded(&f.detail, 200),
                    f.id
                ),
                evidence: "TODO: the SUT's file and function".into(),
                docs: String::new(),
                signature: Some(signature.clone()),
            },
        };
        out += &entry_toml(&known);
        drafted.push((f.op, f.rule, signature));
    }
    out
}

/// The entry of `op`, `rule` and `signature`'s kind and action that shares most features with
/// it, else the rule-wide entry of `op` and `rule`, when one cause alone qualifies.
fn nearest<'a>(
    baseline: &'a Baseline,
    op: Op,
    rule: Rule,
    signature: &Signature,
) -> Option<&'a Known> {
    let shared = |k: &Known| {
        k.signature.as_ref().map_or(0, |s| {
            s.features
                .iter()
                .filter(|f| signature.features.contains(f))
                .count()
        })
    };
    let of_rule = || {
        baseline
            .known
            .iter()
            .filter(move |k| k.op == op && k.rule == rule)
    };
    let same: Vec<&Known> = of_rule()
        .filter(|k| {
            k.signature
                .as_ref()
                .is_some_and(|s| s.kind == signature.kind && s.action == signature.action)
        })
        .collect();
    let best: Vec<&Known> = match same.iter().map(|k| shared(k)).max() {
        Some(most) => same.into_iter().filter(|k| shared(k) == most).collect(),
        None => of_rule().filter(|k| k.signature.is_none()).collect(),
    };
    let first = best.first()?;
    best.iter()
        .all(|k| k.cause == first.cause)
        .then_some(*first)
}

/// One entry as TOML, its signature a `[known.signature]` table under its `[[known]]`.
fn entry_toml(known: &Known) -> String {
    #[derive(Serialize)]
    struct One<'a> {
        known: [&'a Known; 1],
    }
    format!(
        "\n{}",
        toml::to_string(&One { known: [known] }).unwrap_or_default()
    )
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
    use crate::oracle::signature::Action;
    use crate::protocol::Answer;

    fn sig(kind: &str, action: Action, features: &[&str]) -> Signature {
        Signature {
            kind: kind.into(),
            action,
            features: features.iter().map(|f| f.to_string()).collect(),
        }
    }

    fn finding(op: Op, rule: Rule, gate: bool, signature: Signature) -> Finding {
        let mut f = crate::campaign::shrink::finding(
            op,
            crate::oracle::judge::Violation {
                rule,
                gate,
                kind: signature.kind.clone(),
                detail: "a kept MEDIA: line".into(),
            },
            signature,
            serde_json::json!({"text": "x"}),
            Answer::Output(serde_json::json!({})),
            Answer::Output(serde_json::json!({})),
            1,
            0,
        );
        f.id = crate::campaign::shrink::finding_id(f.op, f.rule, &f.signature, None);
        f
    }

    fn entry(rule: Rule, class: &str, cause: &str, signature: Option<&Signature>) -> String {
        let mut text = format!(
            "[[known]]\nrule = \"{rule}\"\nclass = \"{class}\"\ncause = \"{cause}\"\nreason = \"r\"\n"
        );
        if let Some(s) = signature {
            text += &format!("[known.signature]\n{}", toml::to_string(s).unwrap());
        }
        text
    }

    /// The bug the issue names: a second cause under a known rule and kind passes as known when
    /// entries are rule-wide; with signatures it is new, and the first one stays known.
    #[test]
    fn a_second_cause_under_a_known_rule_is_new() {
        let wrapped = sig(
            "text lost or changed",
            Action::JsonWrapped,
            &["block:text", "structuredContent"],
        );
        let baseline =
            Baseline::parse(&entry(Rule::F2, "spec", "wraps-json", Some(&wrapped))).unwrap();
        let ops = BTreeSet::from([Op::CoerceToolResult]);
        let mut with_meta = wrapped.clone();
        with_meta.features.push("_meta".into());
        let lost = |action, features: &[&str]| {
            let text = sig("text lost or changed", action, features);
            finding(Op::CoerceToolResult, Rule::F2, true, text)
        };
        let mut findings = [
            // Its own cause, on an input with one more feature: known.
            finding(Op::CoerceToolResult, Rule::F2, true, with_meta),
            // The same kind, the text really lost: new.
            lost(Action::Dropped, &["block:text", "isError"]),
            // The same kind and action, another trigger: new.
            lost(Action::JsonWrapped, &["block:text", "_meta"]),
        ];
        let judged = baseline.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new), (1, 2));
        assert_eq!(findings[0].cause.as_deref(), Some("wraps-json"));
        assert_eq!(findings[1].baseline, Some(Standing::New));
        assert_eq!(
            findings[1].cause.as_deref(),
            Some("text-lost-or-changed-dropped")
        );
        assert!(judged.not_reached.is_empty());
        // A rule-wide entry (no signature) knows them all, and the report counts it.
        let wide = Baseline::parse(&entry(Rule::F2, "spec", "old", None)).unwrap();
        let judged = wide.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new, judged.rule_wide), (3, 0, 3));
    }

    /// A finding is known only when an entry covers each feature set its cases showed.
    #[test]
    fn every_case_of_a_known_finding_is_covered() {
        let folded = sig("kept", Action::Kept, &["word:case-folded"]);
        let baseline = Baseline::parse(&entry(Rule::S1, "bug", "c", Some(&folded))).unwrap();
        let ops = BTreeSet::from([Op::CoerceToolResult]);
        let mut f = finding(Op::CoerceToolResult, Rule::S1, true, folded.clone());
        f.triggers = vec![vec!["word:case-folded".into()], vec!["lead:control".into()]];
        let mut findings = [f];
        let judged = baseline.judge("b.toml", &mut findings, &ops);
        assert_eq!(
            (judged.known, judged.new),
            (0, 1),
            "a lead:control case is another bug"
        );
        // Its draft over the baseline adds the uncovered set only, and then knows the finding.
        let again = Baseline::parse(&draft(&findings, "sut", Some(&baseline), false)).unwrap();
        assert_eq!(again.known.len(), 2);
        assert_eq!(
            again.known[1].signature.as_ref().unwrap().features,
            ["lead:control"]
        );
        let judged = again.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new), (1, 0));
    }

    #[test]
    fn known_new_and_not_reached() {
        let kept = sig("directive line in a text", Action::Kept, &["lead:none"]);
        let text = entry(Rule::S1, "hardening", "keeps-lines", Some(&kept))
            .replace("[[known]]\n", "[[known]]\nop = \"neutralize_text\"\n")
            + &entry(
                Rule::F1,
                "bug",
                "drops-images",
                Some(&sig("k", Action::Dropped, &[])),
            )
            + &entry(Rule::S3, "bug", "c", Some(&sig("k", Action::Kept, &[])))
                .replace("[[known]]\n", "[[known]]\nop = \"parse_reply\"\n");
        let baseline = Baseline::parse(&text).unwrap();
        let mut findings = [
            finding(Op::NeutralizeText, Rule::S1, true, kept.clone()),
            finding(
                Op::CoerceToolResult,
                Rule::S2,
                true,
                sig("new", Action::Kept, &[]),
            ),
            finding(
                Op::CoerceToolResult,
                Rule::C4,
                false,
                sig("a divergence is never new", Action::Other, &[]),
            ),
        ];
        let ops = BTreeSet::from([Op::NeutralizeText, Op::CoerceToolResult]);
        let judged = baseline.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new), (1, 1));
        let impact = findings[0].impact.as_ref().unwrap();
        assert_eq!(impact.class, Class::Hardening);
        assert!(
            impact.why.starts_with("known (keeps-lines)"),
            "{}",
            impact.why
        );
        assert_eq!(findings[2].baseline, None, "a divergence is neither");
        // F1 was judged and not found; parse_reply did not run, so its entry is not listed.
        assert_eq!(judged.not_reached.len(), 1);
        assert_eq!(judged.not_reached[0].rule, Rule::F1);
    }

    /// An entry never lowers a finding whose evidence says bug, unless it cites the documented
    /// behaviour; every difference is a disagreement the report shows.
    #[test]
    fn an_entry_never_lowers_a_bug_without_docs() {
        let s = sig("text lost or changed", Action::Dropped, &["block:text"]);
        let ops = BTreeSet::from([Op::CoerceToolResult]);
        let derived_bug = || {
            let mut f = finding(Op::CoerceToolResult, Rule::F2, true, s.clone());
            f.impact = Some(Impact {
                class: Class::Bug,
                why: "text lost".into(),
            });
            [f]
        };
        let spec = Baseline::parse(&entry(Rule::F2, "spec", "c", Some(&s))).unwrap();
        let mut findings = derived_bug();
        let judged = spec.judge("b.toml", &mut findings, &ops);
        assert_eq!(findings[0].impact.as_ref().unwrap().class, Class::Bug);
        assert_eq!(judged.disagreements.len(), 1);
        assert_eq!(judged.disagreements[0].kept, Class::Bug);
        assert!(
            judged.counts().ends_with("1 class disagreements"),
            "{}",
            judged.counts()
        );
        let documented = entry(Rule::F2, "hardening", "c", Some(&s)).replace(
            "reason = \"r\"\n",
            "reason = \"r\"\ndocs = \"docs/settings.md: keep_text\"\n",
        );
        let documented = Baseline::parse(&documented).unwrap();
        let mut findings = derived_bug();
        let judged = documented.judge("b.toml", &mut findings, &ops);
        assert_eq!(findings[0].impact.as_ref().unwrap().class, Class::Hardening);
        assert_eq!(judged.disagreements[0].kept, Class::Hardening);
        let undocumented = Baseline::parse(&entry(Rule::F2, "hardening", "c", Some(&s))).unwrap();
        let mut findings = derived_bug();
        undocumented.judge("b.toml", &mut findings, &ops);
        assert_eq!(findings[0].impact.as_ref().unwrap().class, Class::Bug);
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
        let bad_action = format!(
            "{}[known.signature]\nkind = \"k\"\naction = \"vanished\"\n",
            entry(Rule::F1, "bug", "c", None)
        );
        assert!(Baseline::parse(&bad_action).is_err());
    }

    #[test]
    fn a_drafted_baseline_knows_the_run_it_came_from() {
        let kept = sig(
            "kept_directive: MEDIA",
            Action::Kept,
            &["lead:none", "word:lower"],
        );
        let mut findings = [
            finding(Op::NeutralizeText, Rule::S1, true, kept.clone()),
            finding(Op::NeutralizeText, Rule::S1, true, kept.clone()),
            finding(
                Op::NeutralizeText,
                Rule::S1,
                true,
                sig("kept_directive: MEDIA", Action::Kept, &["lead:control"]),
            ),
            finding(
                Op::CoerceToolResult,
                Rule::C4,
                false,
                sig("divergence", Action::Other, &[]),
            ),
        ];
        let mut spec = finding(
            Op::CoerceToolResult,
            Rule::F2,
            true,
            sig("t", Action::JsonWrapped, &[]),
        );
        spec.impact = Some(Impact {
            class: Class::Spec,
            why: "another form".into(),
        });
        let text = draft(
            &[&findings[..], &[spec]].concat(),
            "python3 shim.py",
            None,
            false,
        );
        let baseline = Baseline::parse(&text).unwrap();
        assert_eq!(
            baseline.known.len(),
            2,
            "one entry per signature, gate only, no spec entry:\n{text}"
        );
        let first = baseline
            .known
            .iter()
            .find(|k| k.signature.as_ref() == Some(&kept))
            .expect("an entry of the first signature");
        assert_eq!(first.cause, "kept-directive-media-kept");
        assert!(first.reason.starts_with("TODO"));
        // Drafted again over a baseline whose reason was filled in: the entry is kept as
        // written, and only a finding it does not know gets a new one.
        let mut read = baseline.clone();
        read.known[0].reason = "read in neutralize.js: accepted".into();
        let more = [
            finding(Op::NeutralizeText, Rule::S1, true, kept.clone()),
            finding(
                Op::CoerceToolResult,
                Rule::S2,
                true,
                sig("image without data", Action::Kept, &[]),
            ),
        ];
        let again = Baseline::parse(&draft(&more, "python3 shim.py", Some(&read), false)).unwrap();
        assert_eq!(again.known.len(), 3);
        assert_eq!(again.known[0], read.known[0]);
        assert_eq!(
            (again.known[2].op, again.known[2].rule),
            (Op::CoerceToolResult, Rule::S2)
        );
        let ops = BTreeSet::from([Op::NeutralizeText, Op::CoerceToolResult]);
        let judged = baseline.judge("b.toml", &mut findings, &ops);
        assert_eq!((judged.known, judged.new), (3, 0));
        assert!(judged.not_reached.is_empty());
    }

    /// Re-keyed after a change of features: a finding no entry covers takes the cause and class
    /// of the entry of its kind and action that shares most features, marked for review; one
    /// whose action no entry has, or that two causes share equally, is drafted as new.
    #[test]
    fn a_rekeyed_draft_inherits_the_nearest_cause_of_the_same_action() {
        let old = |cause: &str, features: &[&str]| {
            let s = sig("k", Action::Dropped, features);
            entry(Rule::F2, "hardening", cause, Some(&s)).replace(
                "[known.signature]",
                "docs = \"the page\"\n[known.signature]",
            )
        };
        let baseline = Baseline::parse(
            &[
                old("wrapper", &["block:text", "isError", "mime:none"]),
                old("other", &["block:audio"]),
            ]
            .concat(),
        )
        .unwrap();
        let renamed = finding(
            Op::CoerceToolResult,
            Rule::F2,
            true,
            sig("k", Action::Dropped, &["block:text", "isError"]),
        );
        let unrelated = finding(
            Op::CoerceToolResult,
            Rule::F2,
            true,
            sig("k", Action::Merged, &["block:text"]),
        );
        let tied = finding(
            Op::CoerceToolResult,
            Rule::F2,
            true,
            sig("k", Action::Dropped, &["block:image"]),
        );
        let text = draft(&[renamed, unrelated, tied], "sut", Some(&baseline), true);
        let drafted = Baseline::parse(&text).unwrap();
        let new = &drafted.known[2..];
        assert_eq!(new.len(), 3, "{text}");
        let by = |features: &[&str]| {
            new.iter()
                .find(|k| k.signature.as_ref().unwrap().features == features)
                .unwrap()
        };
        let rekeyed = by(&["block:text", "isError"]);
        assert_eq!(
            (rekeyed.cause.as_str(), rekeyed.class),
            ("wrapper", Class::Hardening)
        );
        assert!(rekeyed.reason.starts_with("RE-KEYED"), "{}", rekeyed.reason);
        assert_eq!(rekeyed.docs, "the page");
        assert!(by(&["block:text"]).reason.starts_with("TODO"));
        assert!(by(&["block:image"]).reason.starts_with("TODO"));
        // Without --rekey nothing is inherited.
        let plain = Baseline::parse(&draft(
            &[finding(
                Op::CoerceToolResult,
                Rule::F2,
                true,
                sig("k", Action::Dropped, &["block:text", "isError"]),
            )],
            "sut",
            Some(&baseline),
            false,
        ))
        .unwrap();
        assert!(plain.known[2].reason.starts_with("TODO"));
    }

    /// Re-keying turns a rule-wide entry into signatures: the findings it covered are drafted
    /// with its cause, and it no longer counts as knowing them while the draft is made.
    #[test]
    fn a_rekeyed_draft_signs_a_rule_wide_entry() {
        let wide = Baseline::parse(&entry(Rule::C4, "bug", "drops-links", None)).unwrap();
        let f = finding(
            Op::CoerceToolResult,
            Rule::C4,
            true,
            sig("k", Action::DroppedLabel, &["block:resource_link"]),
        );
        let drafted =
            Baseline::parse(&draft(std::slice::from_ref(&f), "sut", Some(&wide), true)).unwrap();
        assert_eq!(drafted.known.len(), 2);
        assert_eq!(drafted.known[1].cause, "drops-links");
        assert_eq!(drafted.known[1].signature, Some(f.signature.clone()));
        let kept = Baseline::parse(&draft(&[f], "sut", Some(&wide), false)).unwrap();
        assert_eq!(
            kept.known.len(),
            1,
            "without --rekey the rule-wide entry knows it"
        );
    }
}
