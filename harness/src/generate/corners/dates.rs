//! Date-times as MCP results carry them (`annotations.lastModified`: "an ISO 8601 formatted
//! string", the schema's only word on it), spelled every way a server writes one. A client's
//! own check can be stricter than the schema: the TypeScript SDK's zod result schema takes
//! `lastModified` as `z.iso.datetime({ offset: true })`, which refuses a date-time without a
//! time-zone designator, a bare date and a space separator, and with them the whole result.

use super::{Choices, pick};

/// `lastModified` spellings, the plainest (UTC, `Z`) first.
pub const LAST_MODIFIED: &[&str] = &[
    "2025-01-12T15:00:58Z",
    "2025-01-12T15:00:58+02:00",
    "2025-01-12T15:00:58-00:00",
    "2025-01-12T15:00:58.123Z",
    "2025-01-12T15:00:58.123456789Z",
    // No time-zone designator: local time, as Python's `datetime.isoformat()` of a naive
    // datetime writes it.
    "2025-01-12T15:00:58",
    "2025-01-12T15:00:58.123456",
    // A date alone, a space separator, a lower-case `z`, basic format, an offset without colon.
    "2025-01-12",
    "2025-01-12 15:00:58Z",
    "2025-01-12t15:00:58z",
    "20250112T150058Z",
    "2025-01-12T15:00:58+0200",
];

/// One `lastModified` spelling.
pub fn last_modified(c: &mut dyn Choices) -> String {
    pick(c, LAST_MODIFIED).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::generate::corners::testing::sample;

    /// A run draws the spellings a strict client refuses, a date-time without an offset among
    /// them, as well as the plain one.
    #[test]
    fn draws_dates_with_and_without_an_offset() {
        let drawn = sample(200, last_modified);
        let offset = |d: &String| d.ends_with('Z') || d.contains('+') || d.ends_with("-00:00");
        assert!(
            drawn.iter().any(|d| d.contains('T') && !offset(d)),
            "{drawn:?}"
        );
        assert!(drawn.iter().any(offset));
        assert!(
            LAST_MODIFIED.iter().all(|d| drawn.iter().any(|x| x == d)),
            "every spelling"
        );
    }
}
