//! Rule ids of `docs/spec/rules.md`, typed: judges, findings, reports and baselines name a
//! [`Rule`], and it serializes as the spec's id (`S1`, `C8`, `provider`, ...), so report files,
//! JUnit names and baselines keep the ids they always had.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// What breaking a rule costs: a gate failure, unless it is a divergence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    Safety,
    Fidelity,
    Robustness,
    Coercion,
    Directive,
    Url,
    Retry,
    /// A mock provider answered 4xx to what the SUT produced.
    Provider,
    /// The SUT's answer has the wrong shape or cannot be read.
    Protocol,
    /// Differs from the reference and breaks no rule: never a gate failure unless `--strict`.
    Divergence,
}

macro_rules! rules {
    ($($rule:ident = $id:literal, $class:ident, $summary:literal;)*) => {
        /// One rule id of the spec, or one of the harness's own verdicts (`provider`, `protocol`,
        /// `divergence`). Crashes and hangs are `B1` everywhere.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        pub enum Rule {
            $(#[serde(rename = $id)] $rule,)*
        }

        impl Rule {
            /// Every rule, in the spec's order.
            pub const ALL: &'static [Rule] = &[$(Rule::$rule),*];

            /// The id as the spec and every report spell it.
            pub fn as_str(self) -> &'static str {
                match self { $(Rule::$rule => $id,)* }
            }

            pub fn class(self) -> Class {
                match self { $(Rule::$rule => Class::$class,)* }
            }

            /// The rule in a few plain words, for reports.
            pub fn summary(self) -> &'static str {
                match self { $(Rule::$rule => $summary,)* }
            }
        }
    };
}

rules! {
    S1 = "S1", Safety, "no line starts with a media directive";
    S2 = "S2", Safety, "no image block without valid data";
    S3 = "S3", Safety, "no private or non-https URL, no local path outside the roots";
    S4 = "S4", Safety, "no image carried to another provider on a retry";
    S5 = "S5", Safety, "nothing a model or tool names makes the runtime write outside its folders";
    F1 = "F1", Fidelity, "every valid image reaches the output";
    F2 = "F2", Fidelity, "every text reaches the output, changed only by the S1 prefix";
    F3 = "F3", Fidelity, "blocks keep their order and count; isError is kept";
    F4 = "F4", Fidelity, "other blocks become bounded text with label, URI and type, never payload";
    F5 = "F5", Fidelity, "a malformed block never takes its siblings down";
    B1 = "B1", Robustness, "any input is answered: no crash, hang or unbounded memory";
    B2 = "B2", Robustness, "normalizing is idempotent";
    B3 = "B3", Robustness, "streamed output does not depend on the chunking";
    C1 = "C1", Coercion, "text blocks keep their text; a non-string text is malformed";
    C2 = "C2", Coercion, "valid images pass, invalid ones become a named placeholder";
    C3 = "C3", Coercion, "audio becomes a placeholder with its type";
    C4 = "C4", Coercion, "a resource link becomes its title or name and URI";
    C5 = "C5", Coercion, "an embedded resource becomes its text, or its type and URI";
    C6 = "C6", Coercion, "unknown or malformed blocks become bounded compact JSON";
    C7 = "C7", Coercion, "structuredContent without content becomes one text block";
    C8 = "C8", Coercion, "a result that is not an object is described, never an error";
    D1 = "D1", Directive, "untrusted directive lines are prefixed, other lines untouched";
    D2 = "D2", Directive, "a final reply's directives become structured fields";
    D3 = "D3", Directive, "a media target is delivered once per turn";
    U1 = "U1", Url, "URLs are parsed the WHATWG way";
    U2 = "U2", Url, "https only";
    U3 = "U3", Url, "no userinfo";
    U4 = "U4", Url, "IPv4 literals must be globally reachable";
    U5 = "U5", Url, "IPv6 literals and embedded IPv4 must be globally reachable";
    U6 = "U6", Url, "no single-label, local or special-use names";
    U7 = "U7", Url, "wildcard-DNS names are judged by their embedded address";
    U8 = "U8", Url, "every URL verdict carries a reason code";
    R1 = "R1", Retry, "first attempt: images unchanged";
    R2 = "R2", Retry, "after a format error: images stripped";
    R3 = "R3", Retry, "another provider: images stripped";
    R4 = "R4", Retry, "unknown primary provider: images stripped";
    R5 = "R5", Retry, "same provider, other failure: images kept";
    R6 = "R6", Retry, "no images in, none out";
    P1 = "P1", Retry, "partial executions merge their tool names and flags";
    P2 = "P2", Retry, "tool names sanitized, at most 20 of at most 100 characters";
    P3 = "P3", Retry, "the partial-execution warning goes only to a same-provider retry";
    P4 = "P4", Retry, "a tool that completed is not run again by the fallback unless it was told";
    Provider = "provider", Provider, "every mock provider accepts the request";
    Protocol = "protocol", Protocol, "the answer follows the SUT protocol";
    Divergence = "divergence", Divergence, "differs from the reference, breaks no rule";
}

impl Rule {
    /// Whether breaking it fails the gate (everything but a divergence).
    pub fn is_gate(self) -> bool {
        self != Rule::Divergence
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Rule {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Rule::ALL
            .iter()
            .copied()
            .find(|r| r.as_str() == s)
            .ok_or_else(|| format!("unknown rule id {s:?}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip_through_serde_and_from_str() {
        for &rule in Rule::ALL {
            let json = serde_json::to_string(&rule).unwrap();
            assert_eq!(json, format!("\"{}\"", rule.as_str()));
            assert_eq!(serde_json::from_str::<Rule>(&json).unwrap(), rule);
            assert_eq!(rule.as_str().parse::<Rule>().unwrap(), rule);
        }
        assert!("crash".parse::<Rule>().is_err());
        assert_eq!(Rule::ALL.len(), 45);
    }
}
