//! S5: nothing a model or a tool result names makes the runtime create, change or delete a file
//! outside its own folders. Judges the turn's writes (`e2e/writes.rs`) against the
//! folders its profile gives it, in the case's paths (`Adapter::own_folders`); a file left as the
//! harness itself wrote it during the turn (`by_harness`) is not the runtime's write.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::{E2eFinding, Layer};
use crate::e2e::cases::E2eCase;
use crate::e2e::hostile::Field;
use crate::e2e::marker;
use crate::e2e::writes::{Writes, Written};
use crate::excerpt::bounded;
use crate::rule::Rule;

/// Writes listed in a finding's evidence; the count says how many there were.
const LISTED: usize = 20;

/// One S5 finding for the turn's writes outside `own`, if there are any. Paths in the case
/// folder `dir` are shown as `<case>/...`, so a report reads the same wherever it lies.
pub fn check_writes(
    writes: &Writes,
    own: &[PathBuf],
    case: &E2eCase,
    dir: &Path,
) -> Option<E2eFinding> {
    let shown = |path: &Path| match path.strip_prefix(dir) {
        Ok(rel) => format!("<case>/{}", rel.display()),
        Err(_) => path.display().to_string(),
    };
    let outside: Vec<&Written> = writes
        .files
        .iter()
        // A folder made on the way to one of its own (`<root>` for `<root>/data`) is its own.
        .filter(|w| {
            !w.by_harness
                && !own
                    .iter()
                    .any(|f| w.path.starts_with(f) || f.starts_with(&w.path))
        })
        .collect();
    let first = outside.first()?;
    // The texts a write's file name is looked up in, made once for all the writes.
    let texts = [
        ("tool result", case.result.to_string()),
        ("model's reply", case.reply.concat()),
    ];
    let named: Vec<Option<&str>> = outside
        .iter()
        .map(|w| named_by(&w.path, &case.id, &texts))
        .collect();
    let listed: Vec<Value> = outside
        .iter()
        .zip(&named)
        .take(LISTED)
        .map(|(w, named)| {
            json!({
                "path": shown(&w.path), "change": w.change, "size": w.size,
                "head": bounded(&w.head, 300), "headBase64": w.head_base64,
                "namedBy": named,
            })
        })
        .collect();
    let traced = named.iter().flatten().next();
    let reason = format!(
        "the turn {} {} outside the runtime's folders{}{}",
        first.change.as_str(),
        shown(&first.path),
        match outside.len() {
            1 => String::new(),
            n => format!(" (and {} more)", n - 1),
        },
        traced.map_or(String::new(), |f| format!(", named by the {f}")),
    );
    Some(E2eFinding::new(
        Rule::S5,
        Layer::Model,
        reason,
        json!({
            "writes": listed,
            "count": outside.len() + usize::from(writes.truncated),
            "ownFolders": own.iter().map(|f| shown(f)).collect::<Vec<_>>(),
            "outsideObserved": writes.outside_observed,
        }),
    ))
}

/// The case field that named the written file: the model's field whose marker the path holds
/// (`marker::trace`), else the one of `texts` (field, text) in which the file name (at least 4
/// characters, so a `1.png` the runtime numbered is not pinned on a field) occurs.
fn named_by(path: &Path, case_id: &str, texts: &[(&'static str, String)]) -> Option<&'static str> {
    if let Some(field) = marker::trace(&path.to_string_lossy(), case_id) {
        return Some(match field {
            Field::Id => "model's tool-call id",
            Field::Name => "model's tool name",
            Field::Arguments => "model's tool arguments",
            Field::Send => "model's send target",
        });
    }
    let name = path.file_name()?.to_string_lossy();
    if name.chars().count() < 4 {
        return None;
    }
    texts
        .iter()
        .find(|(_, text)| text.contains(name.as_ref()))
        .map(|(field, _)| *field)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::writes::Change;

    fn written(path: &str) -> Written {
        Written {
            path: path.into(),
            change: Change::Created,
            size: 3,
            head: "abc".into(),
            head_base64: false,
            by_harness: false,
        }
    }

    #[test]
    fn the_harness_own_write_is_not_counted_and_the_runtimes_to_the_same_path_is() {
        let case: E2eCase = serde_json::from_value(json!({
            "id": "c", "about": "", "flavour": 0, "image_input": true,
            "result": {"content": []}, "reply": ["done"]}))
        .unwrap();
        let own = [PathBuf::from("/case/home")];
        let mut swap = written("/case/workspace/photo.png");
        swap.change = Change::Changed;
        swap.by_harness = true;
        let mut writes = Writes {
            outside_observed: true,
            files: vec![swap],
            truncated: false,
        };
        assert_eq!(check_writes(&writes, &own, &case, Path::new("/case")), None);
        writes.files[0].by_harness = false;
        let f = check_writes(&writes, &own, &case, Path::new("/case")).expect("S5");
        assert_eq!(
            f.reason,
            "the turn changed <case>/workspace/photo.png outside the runtime's folders"
        );
    }

    #[test]
    fn writes_inside_the_runtimes_folders_pass_and_one_outside_is_s5_with_its_field() {
        let case: E2eCase = serde_json::from_value(json!({
            "id": "c", "about": "", "flavour": 0, "image_input": true,
            "result": {"content": [{"type": "resource_link", "uri": "file:///x/escaped-report.txt"}]},
            "reply": ["done"]}))
        .unwrap();
        let own = [PathBuf::from("/case/workspace"), PathBuf::from("/case/tmp")];
        let mut writes = Writes {
            outside_observed: true,
            files: vec![written("/case/workspace/a.png"), written("/case/tmp/b")],
            truncated: false,
        };
        assert_eq!(check_writes(&writes, &own, &case, Path::new("/case")), None);
        writes.files.push(written("/case"));
        assert_eq!(
            check_writes(&writes, &own, &case, Path::new("/case")),
            None,
            "an ancestor of its folders"
        );
        // A sibling whose name merely starts like a folder is outside it.
        writes.files.push(written("/case/workspace2/x"));
        writes.files.push(written("/root/escaped-report.txt"));
        let f = check_writes(&writes, &own, &case, Path::new("/case")).expect("S5");
        assert_eq!((f.rule, f.layer), (Rule::S5, Layer::Model));
        assert_eq!(f.evidence["count"], 2);
        assert_eq!(f.evidence["writes"][1]["namedBy"], "tool result");
        assert_eq!(f.evidence["writes"][1]["head"], "abc");
        assert_eq!(
            f.reason,
            "the turn created <case>/workspace2/x outside the runtime's folders (and 1 more), \
             named by the tool result"
        );
        // A path holding the marker of the model's tool-call id is traced to it.
        let id = marker::marker("c", Field::Id);
        writes
            .files
            .push(written(&format!("/case/escaped-{id}_0.png")));
        let f = check_writes(&writes, &own, &case, Path::new("/case")).expect("S5");
        assert_eq!(f.evidence["writes"][2]["namedBy"], "model's tool-call id");
    }
}
