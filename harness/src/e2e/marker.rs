//! Per-case, per-field markers: every hostile value a case carries (a tool-call id, a tool name,
//! arguments, the path or URL of a send-style call) embeds [`marker`]`(case, field)`, and
//! [`trace`] finds which field's marker a text holds: the name of a file a turn wrote, the path
//! the canary route was fetched at, a delivered file's name.

use sha2::{Digest, Sha256};

use crate::generate::corners::calls::Field;

/// The marker of `field` in the case whose id is `case`: `nfz`, eight hex digits of the id's
/// SHA-256 and the field's tag, lower-case alphanumerics only, so that a runtime's sanitizing
/// of a name keeps it.
pub fn marker(case: &str, field: Field) -> String {
    let hex = sha256_hex(case.as_bytes());
    format!("nfz{}{}", &hex[..8], field.tag())
}

/// The field of case `case` whose marker `text` holds (case-insensitive: a runtime may fold
/// case), if any.
pub fn trace(text: &str, case: &str) -> Option<Field> {
    let text = text.to_ascii_lowercase();
    Field::ALL
        .into_iter()
        .find(|&field| text.contains(&marker(case, field)))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markers_are_per_case_and_field_and_trace_back() {
        let a = marker("gen-1-2", Field::Id);
        assert!(a.starts_with("nfz") && a.chars().all(|c| c.is_ascii_alphanumeric()));
        assert_ne!(a, marker("gen-1-3", Field::Id));
        let all: std::collections::HashSet<String> =
            Field::ALL.map(|f| marker("c", f)).into_iter().collect();
        assert_eq!(all.len(), Field::ALL.len());
        for field in Field::ALL {
            let written = format!("/w/home/../escaped-{}.json", marker("c", field));
            assert_eq!(trace(&written, "c"), Some(field));
            assert_eq!(trace(&written.to_uppercase(), "c"), Some(field));
            assert_eq!(trace(&written, "other-case"), None);
        }
        assert_eq!(trace("/w/workspace/out.png", "c"), None);
    }
}
