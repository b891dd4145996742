//! S3 for local media paths and D3's canonical form of a media target, judged lexically.

use crate::rule::Rule;

/// Whether a media target names a URL (`scheme:`) rather than a local path.
pub fn has_scheme(target: &str) -> bool {
    target.split_once(':').is_some_and(|(scheme, _)| {
        scheme.len() > 1
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))
    })
}

/// Why a local path must not be accepted (S3): only inside a root, after lexical normalization;
/// a relative path resolves against the first root.
pub fn local_problem(target: &str, roots: &[&str]) -> Option<(Rule, &'static str)> {
    if target.contains('\0') {
        return Some((Rule::S3, "accepted a path with NUL"));
    }
    let absolute = if target.starts_with('/') {
        target.to_string()
    } else {
        match roots.first() {
            Some(root) => format!("{root}/{target}"),
            None => return Some((Rule::S3, "accepted a local path with no root configured")),
        }
    };
    let Some(path) = lexical(&absolute) else {
        return Some((Rule::S3, "accepted a local path outside the roots"));
    };
    let inside = roots
        .iter()
        .filter_map(|r| lexical(r))
        .any(|root| path == root || path.starts_with(&format!("{}/", root.trim_end_matches('/'))));
    (!inside).then_some((Rule::S3, "accepted a local path outside the roots"))
}

/// `a/./b/../c` → `/a/c`; `None` when `..` climbs above the start.
fn lexical(path: &str) -> Option<String> {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    Some(format!("/{}", parts.join("/")))
}

/// The form D3 compares media targets in: WHATWG serialization for URLs, lexical
/// normalization for paths.
pub fn canonical_media(target: &str) -> String {
    if has_scheme(target) {
        url::Url::parse(target)
            .map(|u| u.to_string())
            .unwrap_or_else(|_| target.to_string())
    } else {
        lexical(target).unwrap_or_else(|| target.to_string())
    }
}

/// Why a media target (URL or path) must not be delivered, with the rule it breaks.
pub fn media_problem(target: &str, roots: &[&str]) -> Option<(Rule, &'static str)> {
    if has_scheme(target) {
        crate::oracle::url::remote_problem(target)
    } else {
        local_problem(target, roots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_their_roots() {
        let outside = Some((Rule::S3, "accepted a local path outside the roots"));
        assert_eq!(local_problem("/etc/passwd", &["/work"]), outside);
        assert_eq!(local_problem("/work/../etc/passwd", &["/work"]), outside);
        assert_eq!(local_problem("../../etc/passwd", &["/work"]), outside);
        assert_eq!(local_problem("/workshop/x", &["/work"]), outside);
        assert_eq!(local_problem("a/b.png", &["/work"]), None);
        assert_eq!(local_problem("/work/./a.png", &["/work/"]), None);
        assert!(local_problem("a.png", &[]).is_some());
        assert_eq!(canonical_media("/a/./b/../c"), "/a/c");
        assert_eq!(
            canonical_media("https://A.example/x/./y"),
            "https://a.example/x/y"
        );
    }
}
