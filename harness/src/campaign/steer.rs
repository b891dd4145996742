//! Coverage steering (`conform --steer`, `--corpus DIR`): an input whose answer reached new
//! runtime coverage (the protocol's coverage extension) joins its op's corpus, and a share of
//! each batch is made by mutating corpus entries instead of generating: generation stays the
//! default share. Mutations are structure-aware, on any op's JSON: an array element (a content
//! block) spliced in from another entry or from a real server's result (`corpus/real-servers/`),
//! a string swapped for a corner value (a directive text, a `lastModified` spelling), a string
//! replaced by the JSON of a sibling value (JSON inside text), a date or media type respelled.
//!
//! `--corpus DIR` keeps the corpus across runs: `DIR/<op>/<hash>.json`, one entry a file, each
//! written atomically and named by its content, so the shards of a run (or runs of several CI
//! jobs) writing into one folder merge by construction.

use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{Context, Result};
use proptest::prelude::Rng;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::Value;

use crate::generate::corners::{Choices, dates, text};
use crate::generate::real_servers;
use crate::protocol::Op;

/// One case in this many of a batch is a mutant, once the op's corpus has an entry.
pub const STEER_SHARE: usize = 4;
/// Entries kept per op: past it, new entries replace random old ones.
const MAX_PER_OP: usize = 2000;

/// Decisions read from the job's mutation RNG, so the corner builders serve here too.
struct Draw<'a>(&'a mut TestRng);

impl Choices for Draw<'_> {
    fn below(&mut self, n: usize) -> usize {
        if n <= 1 {
            0
        } else {
            (self.0.next_u64() % n as u64) as usize
        }
    }
}

/// The per-op corpus of inputs that reached new coverage, shared by a campaign's jobs.
pub struct Corpus {
    dir: Option<PathBuf>,
    entries: Mutex<BTreeMap<Op, Vec<Value>>>,
    /// Content hashes of every entry, to add each input once.
    known: Mutex<HashSet<u64>>,
}

impl Corpus {
    /// An empty corpus, or the one `dir` keeps (a missing folder is an empty corpus).
    pub fn load(dir: Option<&Path>) -> Result<Corpus> {
        let corpus = Corpus {
            dir: dir.map(Path::to_path_buf),
            entries: Mutex::new(BTreeMap::new()),
            known: Mutex::new(HashSet::new()),
        };
        let Some(dir) = dir else {
            return Ok(corpus);
        };
        for op in Op::ALL {
            let folder = dir.join(op.as_str());
            let Ok(files) = std::fs::read_dir(&folder) else {
                continue;
            };
            for file in files {
                let path = file?.path();
                if path.extension().is_none_or(|e| e != "json") {
                    continue;
                }
                let bytes = std::fs::read(&path)
                    .with_context(|| format!("cannot read corpus entry {}", path.display()))?;
                let input = crate::protocol::json::parse_value(&bytes)
                    .map_err(|e| anyhow::anyhow!("corpus entry {}: {e}", path.display()))?;
                corpus.add(
                    op,
                    input,
                    &mut TestRng::deterministic_rng(RngAlgorithm::ChaCha),
                );
            }
        }
        Ok(corpus)
    }

    /// Entries of `op` so far.
    pub fn len(&self, op: Op) -> usize {
        self.entries
            .lock()
            .map_or(0, |e| e.get(&op).map_or(0, Vec::len))
    }

    /// Adds `input` to `op`'s corpus (once); answers whether it was new.
    pub fn add(&self, op: Op, input: Value, rng: &mut TestRng) -> bool {
        if !self
            .known
            .lock()
            .is_ok_and(|mut k| k.insert(hash(op, &input)))
        {
            return false;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return false;
        };
        let list = entries.entry(op).or_default();
        if list.len() < MAX_PER_OP {
            list.push(input);
        } else {
            let at = Draw(rng).below(list.len());
            list[at] = input;
        }
        true
    }

    /// Writes every entry not in the folder yet (atomically, named by content); the number
    /// written. Nothing without `--corpus`.
    pub fn save(&self) -> Result<usize> {
        let Some(dir) = &self.dir else {
            return Ok(0);
        };
        let entries = self
            .entries
            .lock()
            .map_err(|_| anyhow::anyhow!("corpus lock poisoned"))?;
        let mut written = 0;
        for (op, inputs) in entries.iter() {
            let folder = dir.join(op.as_str());
            std::fs::create_dir_all(&folder)
                .with_context(|| format!("cannot create {}", folder.display()))?;
            for input in inputs {
                let path = folder.join(format!("{:016x}.json", hash(*op, input)));
                if path.exists() {
                    continue;
                }
                let mut bytes = Vec::new();
                crate::protocol::json::write_value(&mut bytes, input);
                crate::fs::write_atomic(&path, &bytes)
                    .with_context(|| format!("cannot write {}", path.display()))?;
                written += 1;
            }
        }
        Ok(written)
    }

    /// A mutant of one of `op`'s entries, or `None` while the op's corpus is empty.
    pub fn mutant(&self, op: Op, rng: &mut TestRng) -> Option<Value> {
        let (mut input, donor) = {
            let entries = self.entries.lock().ok()?;
            let list = entries.get(&op).filter(|l| !l.is_empty())?;
            let mut c = Draw(rng);
            let input = list[c.below(list.len())].clone();
            let donor = list[c.below(list.len())].clone();
            (input, donor)
        };
        // One to three mutations stacked.
        for _ in 0..=Draw(rng).below(3) {
            mutate(op, &mut input, &donor, &mut Draw(rng));
        }
        Some(input)
    }
}

fn hash(op: Op, input: &Value) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    op.hash(&mut h);
    let mut bytes = Vec::new();
    crate::protocol::json::write_value(&mut bytes, input);
    bytes.hash(&mut h);
    h.finish()
}

/// One structure-aware mutation of `input`, `donor` another entry of its op.
fn mutate(op: Op, input: &mut Value, donor: &Value, c: &mut dyn Choices) {
    match c.below(5) {
        0 => splice(input, &arrays(donor), c),
        // A real server's result's blocks: the shapes servers send.
        1 if op == Op::CoerceToolResult => splice(input, &arrays(&real_servers::real_result(c)), c),
        2 => {
            let json = pick_value(donor, c).map(|v| v.to_string());
            if let Some(text) = json {
                set_string(input, c, |_, _| text);
            }
        }
        3 => set_string(input, c, respell),
        _ => set_string(input, c, |_, c| text::directive_string(c)),
    }
}

/// Every array in `value` with its key (`None` for the top level or inside an array).
fn arrays(value: &Value) -> Vec<(Option<String>, Vec<Value>)> {
    let mut found = Vec::new();
    walk(value, None, &mut |key, v| {
        if let Value::Array(items) = v
            && !items.is_empty()
        {
            found.push((key.map(str::to_string), items.clone()));
        }
    });
    found
}

fn walk<'v>(value: &'v Value, key: Option<&'v str>, f: &mut dyn FnMut(Option<&'v str>, &'v Value)) {
    f(key, value);
    match value {
        Value::Array(items) => items.iter().for_each(|v| walk(v, None, f)),
        Value::Object(map) => map.iter().for_each(|(k, v)| walk(v, Some(k), f)),
        _ => {}
    }
}

/// Inserts an element of a donor array into an array of `input` under the same key (a content
/// block beside the blocks of another input), or replaces one of its elements with it.
fn splice(input: &mut Value, donors: &[(Option<String>, Vec<Value>)], c: &mut dyn Choices) {
    if donors.is_empty() {
        return;
    }
    let (key, items) = &donors[c.below(donors.len())];
    let element = items[c.below(items.len())].clone();
    let want = key.as_deref();
    let mut count = 0;
    walk(input, None, &mut |k, v| {
        count += usize::from(v.is_array() && k == want)
    });
    if count == 0 {
        return;
    }
    let (target, place, replace) = (c.below(count), c.below(1 << 16), c.below(2) == 0);
    let mut seen = 0;
    let mut element = Some(element);
    visit_arrays(input, None, want, &mut |array| {
        if seen == target
            && let Some(element) = element.take()
        {
            let at = place % (array.len() + 1);
            if replace && at < array.len() {
                array[at] = element;
            } else {
                array.insert(at, element);
            }
        }
        seen += 1;
    });
}

/// Calls `f` on every array under key `want`, in `walk`'s order.
fn visit_arrays(
    value: &mut Value,
    key: Option<&str>,
    want: Option<&str>,
    f: &mut dyn FnMut(&mut Vec<Value>),
) {
    match value {
        Value::Array(items) => {
            if key == want {
                f(items);
            }
            items
                .iter_mut()
                .for_each(|v| visit_arrays(v, None, want, f));
        }
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                visit_arrays(v, Some(k), want, f);
            }
        }
        _ => {}
    }
}

/// A random subtree of `value` (objects and arrays only: what JSON-in-text servers send).
fn pick_value<'v>(value: &'v Value, c: &mut dyn Choices) -> Option<&'v Value> {
    let mut found = Vec::new();
    walk(value, None, &mut |_, v| {
        if v.is_object() || v.is_array() {
            found.push(v);
        }
    });
    (!found.is_empty()).then(|| found[c.below(found.len())])
}

/// Replaces one string of `input` (chosen among all its strings) with `new(old)`.
fn set_string(
    input: &mut Value,
    c: &mut dyn Choices,
    new: impl FnOnce(&str, &mut dyn Choices) -> String,
) {
    let mut count = 0;
    walk(input, None, &mut |_, v| count += usize::from(v.is_string()));
    if count == 0 {
        return;
    }
    let target = c.below(count);
    let mut seen = 0;
    let mut new = Some(new);
    visit_strings(input, &mut |s| {
        if seen == target
            && let Some(f) = new.take()
        {
            *s = f(s, &mut *c);
        }
        seen += 1;
    });
}

fn visit_strings(value: &mut Value, f: &mut dyn FnMut(&mut String)) {
    match value {
        Value::String(s) => f(s),
        Value::Array(items) => items.iter_mut().for_each(|v| visit_strings(v, f)),
        Value::Object(map) => map.values_mut().for_each(|v| visit_strings(v, f)),
        _ => {}
    }
}

/// Another spelling of `old`: a date as another ISO 8601 form, a media type with another case,
/// parameters or spaces; anything else, a `lastModified` spelling.
fn respell(old: &str, c: &mut dyn Choices) -> String {
    if let Some((kind, sub)) = old.split_once('/')
        && !old.contains(':')
    {
        return match c.below(4) {
            0 => old.to_ascii_uppercase(),
            1 => format!("{old}; charset=utf-8"),
            2 => format!(" {kind} / {sub} "),
            _ => format!("{kind}/x-{sub}"),
        };
    }
    dates::last_modified(c)
}

/// Replaces one case in `STEER_SHARE` of `drawn` (the last of each run of that many) with a
/// mutant of its op's corpus, while the corpus has one; answers the places replaced. The draws
/// themselves are unchanged, so the generated cases after them stay the same.
pub fn replace_share(
    corpus: &Corpus,
    drawn: &mut [(Op, Value)],
    rng: &mut TestRng,
) -> HashSet<usize> {
    let mut steered = HashSet::new();
    for (i, (op, input)) in drawn.iter_mut().enumerate() {
        if i % STEER_SHARE == STEER_SHARE - 1
            && let Some(mutant) = corpus.mutant(*op, rng)
        {
            *input = mutant;
            steered.insert(i);
        }
    }
    steered
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rng() -> TestRng {
        TestRng::deterministic_rng(RngAlgorithm::ChaCha)
    }

    fn result(text: &str) -> Value {
        json!({"content": [{"type": "text", "text": text}, {"type": "resource_link",
            "uri": "file:///a", "name": "a", "mimeType": "text/plain",
            "annotations": {"lastModified": "2025-01-12T15:00:58Z"}}]})
    }

    #[test]
    fn mutants_splice_swap_and_respell_corpus_entries() {
        let corpus = Corpus::load(None).expect("empty corpus");
        let mut rng = rng();
        assert!(corpus.mutant(Op::CoerceToolResult, &mut rng).is_none());
        assert!(corpus.add(Op::CoerceToolResult, result("a"), &mut rng));
        assert!(
            !corpus.add(Op::CoerceToolResult, result("a"), &mut rng),
            "added once"
        );
        corpus.add(Op::CoerceToolResult, result("b"), &mut rng);
        let mutants: Vec<Value> = (0..400)
            .filter_map(|_| corpus.mutant(Op::CoerceToolResult, &mut rng))
            .collect();
        let blocks = |m: &Value| m["content"].as_array().map_or(0, Vec::len);
        assert!(mutants.iter().any(|m| blocks(m) > 2), "a block spliced in");
        let texts: Vec<String> = mutants.iter().map(Value::to_string).collect();
        assert!(
            texts.iter().any(|t| t.contains("MEDIA")),
            "a directive swapped in"
        );
        assert!(
            texts
                .iter()
                .any(|t| t.contains("2025-01-12T15:00:58\\\"")
                    || t.contains("\"2025-01-12T15:00:58\"")),
            "a date without an offset"
        );
        assert!(
            texts
                .iter()
                .any(|t| t.contains("TEXT/PLAIN") || t.contains("charset"))
        );
        assert!(
            texts.iter().any(|t| t.contains("\\\"type\\\"")),
            "JSON inside text"
        );
        let mut drawn = vec![(Op::CoerceToolResult, json!({})); 8];
        let steered = replace_share(&corpus, &mut drawn, &mut rng);
        assert_eq!(steered, HashSet::from([3, 7]));
        assert!(drawn[0].1 == json!({}) && drawn[3].1 != json!({}));
    }

    #[test]
    fn a_kept_corpus_survives_runs_and_merges_shards() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut rng = rng();
        for text in ["a", "b"] {
            // Two shards, each with an entry of its own and one in common.
            let shard = Corpus::load(Some(dir.path())).expect("loads");
            shard.add(Op::CoerceToolResult, result(text), &mut rng);
            shard.add(Op::NeutralizeText, json!({"text": "x"}), &mut rng);
            shard.save().expect("saves");
        }
        let merged = Corpus::load(Some(dir.path())).expect("loads");
        assert_eq!(merged.len(Op::CoerceToolResult), 2);
        assert_eq!(merged.len(Op::NeutralizeText), 1);
        assert_eq!(merged.save().expect("nothing new"), 0);
        std::fs::write(dir.path().join("neutralize_text/bad.json"), "{").unwrap();
        let err = Corpus::load(Some(dir.path())).err().expect("a clear error");
        assert!(err.to_string().contains("bad.json"), "{err}");
    }
}
