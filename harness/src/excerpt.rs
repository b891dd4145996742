//! Bounded excerpts of untrusted text, on character boundaries: what reports, findings and the
//! reference's bounded JSON rendering keep of a text that may be megabytes long.

use std::borrow::Cow;

/// Appended where text was cut.
pub const CUT_MARKER: &str = "…[truncated]";

/// Cuts `s` to at most `max` bytes on a character boundary, marking the cut.
pub fn bounded(s: &str, max: usize) -> Cow<'_, str> {
    if s.len() <= max {
        return s.into();
    }
    let keep = floor_boundary(s, max.saturating_sub(CUT_MARKER.len()));
    format!("{}{CUT_MARKER}", &s[..keep]).into()
}

/// The last `max` bytes of `s` at most, starting on a character boundary.
pub fn tail(s: &str, max: usize) -> &str {
    let mut start = s.len().saturating_sub(max);
    while !s.is_char_boundary(start) {
        start += 1;
    }
    &s[start..]
}

/// The largest character boundary of `s` at or below `i`.
pub fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_on_character_boundaries() {
        assert_eq!(bounded("short", 20), "short");
        let long = "é".repeat(50);
        let cut = bounded(&long, 20);
        assert!(cut.len() <= 20 && cut.ends_with(CUT_MARKER), "{cut}");
        assert_eq!(tail("aé", 1), "");
        assert_eq!(tail("aé", 2), "é");
        assert_eq!(floor_boundary("aé", 2), 1);
    }
}
