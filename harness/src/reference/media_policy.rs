//! Which media targets a trusted source (a final reply, a tool's structured media) may deliver
//! (rule S3), and their canonical form for once-per-turn delivery (D3). Purely lexical: nothing
//! is resolved, fetched or read.
//!
//! - A target with a scheme is a URL. `file:` URLs are local paths (host empty or `localhost`,
//!   no query or fragment, percent-decoded path); every other URL must pass
//!   [`check_media_url`] (U1–U8) and is delivered as its WHATWG serialization.
//! - A local path must lie strictly inside a configured root. Roots are absolute (`/srv/media`)
//!   or home roots (`~`, `~/Pictures`): the home directory is never looked up, so `~/x` is judged
//!   in the `~` namespace and only a home root can contain it; `~user` is always refused. A
//!   relative path is resolved against the first root (sut-protocol.md). Paths are normalized
//!   (`.` and empty segments dropped) and delivered in that form.
//! - Refused outright, whatever the roots: any `..` segment (a lexical check cannot see symlinks,
//!   so `root/link/../x` may leave the root; openclaw refuses every `..` too), NUL and other
//!   control characters, backslashes (a separator to Windows consumers, a file-name byte to POSIX
//!   ones: `..\` would escape for one and not the other), paths over 4096 bytes (openclaw's limit).
//!   Windows drive and UNC paths are therefore refused; openclaw accepts them.
//! - openclaw's `media://inbound/<id>` references are refused: they are not in S3.

use percent_encoding::percent_decode_str;
use url::Url;

use crate::reference::url_policy::{Reason, check_media_url};

/// openclaw's bound on a media reference.
const MAX_TARGET_LEN: usize = 4096;

/// Why a media target was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MediaReject {
    /// The URL policy refused it (U1–U8).
    Url(Reason),
    Empty,
    TooLong,
    /// NUL or another control character.
    Control,
    Backslash,
    /// A `..` segment.
    Traversal,
    /// `~user/...`, or a `~` path with no home root configured.
    Home,
    /// A `file:` URL with a host, query or fragment, or a path that is not UTF-8 once decoded.
    FileUrl,
    /// A relative path with no usable first root.
    NoRoot,
    /// Normalized, but not strictly inside any root.
    OutsideRoots,
}

impl MediaReject {
    /// Stable code for reports.
    pub fn as_str(self) -> &'static str {
        match self {
            MediaReject::Url(reason) => reason.as_str(),
            MediaReject::Empty => "empty",
            MediaReject::TooLong => "too-long",
            MediaReject::Control => "control-char",
            MediaReject::Backslash => "backslash",
            MediaReject::Traversal => "traversal",
            MediaReject::Home => "home",
            MediaReject::FileUrl => "file-url",
            MediaReject::NoRoot => "no-root",
            MediaReject::OutsideRoots => "outside-roots",
        }
    }
}

/// Configured local media roots, normalized. An unusable root (relative, or with `..`) matches
/// nothing but keeps its place, so "the first root" keeps its meaning.
#[derive(Debug, Clone, Default)]
pub struct MediaRoots {
    roots: Vec<Option<String>>,
}

impl MediaRoots {
    pub fn new<S: AsRef<str>>(roots: impl IntoIterator<Item = S>) -> Self {
        let roots = roots
            .into_iter()
            .map(|r| match normalize(r.as_ref()) {
                Ok(Normalized::Absolute(p) | Normalized::Home(p)) => Some(p),
                _ => None,
            })
            .collect();
        Self { roots }
    }

    /// Why `root` cannot be used as a root, for command-line validation.
    pub fn check_root(root: &str) -> Result<(), &'static str> {
        match normalize(root) {
            Ok(Normalized::Absolute(_) | Normalized::Home(_)) => Ok(()),
            Ok(Normalized::Relative(_)) => Err("a root must be absolute or start with ~/"),
            Err(e) => Err(e.as_str()),
        }
    }

    /// Judges one media target; `Ok` carries its canonical form.
    pub fn judge(&self, target: &str) -> Result<String, MediaReject> {
        if has_scheme(target) {
            return if target
                .get(..5)
                .is_some_and(|s| s.eq_ignore_ascii_case("file:"))
            {
                self.judge_local(&file_url_path(target)?)
            } else {
                judge_remote(target)
            };
        }
        self.judge_local(target)
    }

    fn judge_local(&self, path: &str) -> Result<String, MediaReject> {
        let path = match normalize(path)? {
            Normalized::Absolute(p) | Normalized::Home(p) => p,
            Normalized::Relative(rel) => match self.roots.first() {
                Some(Some(root)) if root == "/" => format!("/{rel}"),
                Some(Some(root)) => format!("{root}/{rel}"),
                _ => return Err(MediaReject::NoRoot),
            },
        };
        let inside = |root: &String| {
            let rest = path.strip_prefix(root.as_str());
            // Strictly inside: a file below the root, never the root itself.
            rest.is_some_and(|r| {
                if root == "/" {
                    !r.is_empty()
                } else {
                    r.len() > 1 && r.starts_with('/')
                }
            })
        };
        if self.roots.iter().flatten().any(inside) {
            Ok(path)
        } else if path.starts_with('~') {
            Err(MediaReject::Home)
        } else {
            Err(MediaReject::OutsideRoots)
        }
    }
}

enum Normalized {
    /// `/a/b`, or `/` alone.
    Absolute(String),
    /// `~` or `~/a/b`.
    Home(String),
    /// `a/b`, without a leading `./`; may be empty (`.`).
    Relative(String),
}

fn normalize(path: &str) -> Result<Normalized, MediaReject> {
    if path.is_empty() {
        return Err(MediaReject::Empty);
    }
    if path.len() > MAX_TARGET_LEN {
        return Err(MediaReject::TooLong);
    }
    if path.chars().any(char::is_control) {
        return Err(MediaReject::Control);
    }
    if path.contains('\\') {
        return Err(MediaReject::Backslash);
    }
    // `prefix` is what the normalized form starts with; `rest` is split into segments.
    let (prefix, rest) = if let Some(rest) = path.strip_prefix('/') {
        ("/", rest)
    } else if path == "~" || path.starts_with("~/") {
        ("~", &path[1..])
    } else if path.starts_with('~') {
        return Err(MediaReject::Home);
    } else {
        ("", path)
    };
    let mut out = String::from(prefix);
    for segment in rest.split('/').filter(|s| !s.is_empty() && *s != ".") {
        if segment == ".." {
            return Err(MediaReject::Traversal);
        }
        if !out.is_empty() && !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(segment);
    }
    Ok(match prefix {
        "/" => Normalized::Absolute(out),
        "~" => Normalized::Home(out),
        _ => Normalized::Relative(out),
    })
}

/// A remote URL by U1–U8; `Ok` carries its WHATWG serialization.
pub fn judge_remote(url: &str) -> Result<String, MediaReject> {
    let verdict = check_media_url(url);
    match verdict.canonical {
        Some(canonical) if verdict.allowed => Ok(canonical),
        _ => Err(MediaReject::Url(verdict.reason)),
    }
}

/// `scheme:` per WHATWG (a letter, then letters, digits, `+`, `-`, `.`).
pub(crate) fn has_scheme(target: &str) -> bool {
    let Some((scheme, _)) = target.split_once(':') else {
        return false;
    };
    let mut chars = scheme.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
}

fn file_url_path(target: &str) -> Result<String, MediaReject> {
    let url = Url::parse(target).map_err(|_| MediaReject::FileUrl)?;
    let local_host = url
        .host_str()
        .is_none_or(|h| h.is_empty() || h.eq_ignore_ascii_case("localhost"));
    if !local_host || url.query().is_some() || url.fragment().is_some() {
        return Err(MediaReject::FileUrl);
    }
    // WHATWG has already resolved `..` in the URL path; refuse it in the raw text as well, so
    // `file:///tmp/../secret.png` is refused like the path it spells.
    let dot_dot = |s: &str| {
        matches!(
            s.to_ascii_lowercase().as_str(),
            ".." | ".%2e" | "%2e." | "%2e%2e"
        )
    };
    if target.split(['/', '\\']).any(dot_dot) {
        return Err(MediaReject::Traversal);
    }
    let path = percent_decode_str(url.path())
        .decode_utf8()
        .map_err(|_| MediaReject::FileUrl)?;
    Ok(path.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_and_paths() {
        let roots = MediaRoots::new(["/srv/media/", "~/Pictures", "relative"]);
        assert_eq!(
            roots.judge("/srv/media//a/./b.png"),
            Ok("/srv/media/a/b.png".into())
        );
        assert_eq!(
            roots.judge("./shots/a.png"),
            Ok("/srv/media/shots/a.png".into())
        );
        assert_eq!(roots.judge("a.png"), Ok("/srv/media/a.png".into()));
        assert_eq!(
            roots.judge("~/Pictures/My File.png"),
            Ok("~/Pictures/My File.png".into())
        );
        assert_eq!(roots.judge("/srv/media"), Err(MediaReject::OutsideRoots));
        assert_eq!(
            roots.judge("/srv/mediax/a.png"),
            Err(MediaReject::OutsideRoots)
        );
        assert_eq!(roots.judge("~/Other/a.png"), Err(MediaReject::Home));
        assert_eq!(roots.judge("~user/a.png"), Err(MediaReject::Home));
        assert_eq!(
            roots.judge("/srv/media/a/../b.png"),
            Err(MediaReject::Traversal)
        );
        assert_eq!(roots.judge("/srv/media/a\0.png"), Err(MediaReject::Control));
        assert!(matches!(
            roots.judge("C:\\Users\\a.png"),
            Err(MediaReject::Url(_))
        ));
        assert_eq!(
            MediaRoots::new(["/"]).judge("/etc/passwd"),
            Ok("/etc/passwd".into())
        );
        assert_eq!(
            MediaRoots::new(["rel", "/srv"]).judge("a.png"),
            Err(MediaReject::NoRoot)
        );
        assert_eq!(
            MediaRoots::default().judge("a.png"),
            Err(MediaReject::NoRoot)
        );
    }

    #[test]
    fn file_urls_are_local_paths() {
        let roots = MediaRoots::new(["/tmp"]);
        assert_eq!(
            roots.judge("file:///tmp/caf%C3%A9%20100%25.png"),
            Ok("/tmp/café 100%.png".into())
        );
        assert_eq!(
            roots.judge("FILE://localhost/tmp/a.png"),
            Ok("/tmp/a.png".into())
        );
        assert_eq!(
            roots.judge("file:///tmp/../secret.png"),
            Err(MediaReject::Traversal)
        );
        assert_eq!(
            roots.judge("file:///tmp/%2e%2e/secret.png"),
            Err(MediaReject::Traversal)
        );
        assert_eq!(
            roots.judge("file://server/tmp/a.png"),
            Err(MediaReject::FileUrl)
        );
    }

    #[test]
    fn remote_urls_use_the_url_policy() {
        let roots = MediaRoots::default();
        assert_eq!(
            roots.judge("https://EXAMPLE.com/a.png"),
            Ok("https://example.com/a.png".into())
        );
        assert_eq!(
            roots.judge("http://example.com/a.png"),
            Err(MediaReject::Url(Reason::Scheme))
        );
        assert!(roots.judge("media://inbound/image.png").is_err());
    }
}
