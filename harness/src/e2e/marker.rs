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
