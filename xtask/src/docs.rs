//! The guide's gate: `docs/` built with the pinned mdbook, and every relative link and anchor of
//! README.md, ARCHITECTURE.md and the guide resolved in the repository, as GitHub resolves them.
//!
//! The link check is written here rather than taken from mdbook-linkcheck or lychee: those
//! check the rendered book only (README and ARCHITECTURE.md stay outside it) and bring a second
//! tool to install; pulldown-cmark (mdbook's own parser) reads the links and headings.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// The guide's folder (its `book.toml` and `SUMMARY.md`), relative to the workspace root.
const GUIDE: &str = "docs";
/// The Markdown files outside the guide whose links are checked too.
const TOP_LEVEL: [&str; 2] = ["README.md", "ARCHITECTURE.md"];

/// Builds the guide with `mdbook` into `target/book/`, then checks the links; returns how many
/// links were checked.
pub fn build_and_check(root: &Path, mdbook: &Path) -> Result<usize> {
    let status = Command::new(mdbook)
        .arg("build")
        .arg(root.join(GUIDE))
        .status()
        .with_context(|| format!("cannot run {}", mdbook.display()))?;
    if !status.success() {
        bail!("mdbook build {GUIDE} failed ({status})");
    }
    check_links(root)
}

/// Checks every relative link and anchor of README.md, ARCHITECTURE.md and `docs/**/*.md`, and
/// that `docs/SUMMARY.md` lists every page of the guide; returns how many links were checked,
/// or every problem found, one a line.
pub fn check_links(root: &Path) -> Result<usize> {
    let mut files: Vec<PathBuf> = TOP_LEVEL.iter().map(|f| root.join(f)).collect();
    markdown_under(&root.join(GUIDE), &mut files)?;
    let mut pages = BTreeMap::new();
    for file in &files {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        pages.insert(file.clone(), Page::read(&text));
    }
    let mut problems = Vec::new();
    let mut checked = 0;
    for (file, page) in &pages {
        let shown = file.strip_prefix(root).unwrap_or(file).display();
        for link in &page.links {
            checked += 1;
            if let Err(why) = resolve(root, file, link, &pages) {
                problems.push(format!("{shown}: ({link}): {why}"));
            }
        }
    }
    let summary = root.join(GUIDE).join("SUMMARY.md");
    if let Some(listed) = pages.get(&summary) {
        let listed: BTreeSet<PathBuf> = listed
            .links
            .iter()
            .map(|l| summary.parent().unwrap_or(root).join(l))
            .collect();
        for file in pages.keys() {
            if file.starts_with(root.join(GUIDE)) && file != &summary && !listed.contains(file) {
                let shown = file.strip_prefix(root).unwrap_or(file).display();
                problems.push(format!("{shown}: not in {GUIDE}/SUMMARY.md"));
            }
        }
    } else {
        problems.push(format!("no {GUIDE}/SUMMARY.md"));
    }
    if !problems.is_empty() {
        bail!("{} broken:\n  {}", problems.len(), problems.join("\n  "));
    }
    Ok(checked)
}

/// Every `*.md` under `dir`, sorted.
fn markdown_under(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .map(|e| e.map(|e| e.path()))
        .collect::<std::io::Result<_>>()?;
    entries.sort();
    for path in entries {
        if path.is_dir() {
            markdown_under(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
    Ok(())
}

/// A Markdown file's link targets and the anchors its headings make.
struct Page {
    links: Vec<String>,
    anchors: BTreeSet<String>,
}

impl Page {
    fn read(text: &str) -> Page {
        let mut links = Vec::new();
        let mut anchors = BTreeSet::new();
        let mut heading: Option<String> = None;
        for event in Parser::new_ext(text, Options::ENABLE_TABLES) {
            match event {
                Event::Start(Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. }) => {
                    links.push(dest_url.to_string());
                }
                Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
                Event::Text(t) | Event::Code(t) => {
                    if let Some(h) = heading.as_mut() {
                        h.push_str(&t);
                    }
                }
                Event::End(TagEnd::Heading(_)) => {
                    if let Some(h) = heading.take() {
                        let slug = slug(&h);
                        // A repeated heading gets `-1`, `-2`, ... on GitHub and in mdbook.
                        let mut anchor = slug.clone();
                        let mut n = 0;
                        while anchors.contains(&anchor) {
                            n += 1;
                            anchor = format!("{slug}-{n}");
                        }
                        anchors.insert(anchor);
                    }
                }
                _ => {}
            }
        }
        Page { links, anchors }
    }
}

/// A heading's anchor as GitHub and mdbook make it: lower case, letters, digits, `-` and `_`
/// kept, spaces to `-`, anything else dropped.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// Resolves `link` from `file`: an absolute URL is not checked (nothing here dereferences a
/// URL); a relative one must name a file or folder inside the repository, and its `#anchor`,
/// when it names a Markdown file, one of its headings.
fn resolve(
    root: &Path,
    file: &Path,
    link: &str,
    pages: &BTreeMap<PathBuf, Page>,
) -> Result<(), String> {
    if link.contains("://") || link.starts_with("mailto:") || link.starts_with("//") {
        return Ok(());
    }
    let (path, anchor) = link
        .split_once('#')
        .map_or((link, None), |(p, a)| (p, Some(a)));
    let target = if path.is_empty() {
        file.to_path_buf()
    } else if path.starts_with('/') {
        return Err("absolute path: GitHub and mdbook resolve it differently".into());
    } else {
        normalize(&file.parent().unwrap_or(root).join(path))
    };
    if !target.starts_with(root) {
        return Err("points outside the repository".into());
    }
    if !target.exists() {
        return Err("no such file".into());
    }
    let Some(anchor) = anchor else { return Ok(()) };
    if target.extension().is_none_or(|e| e != "md") {
        // A line anchor into source (`#L10`) is GitHub's, not checked.
        return Ok(());
    }
    // A Markdown file outside the checked set (corpus/README.md) is read for its anchors alone.
    let read;
    let page = match pages.get(&target) {
        Some(page) => page,
        None => {
            let text = std::fs::read_to_string(&target).map_err(|e| format!("cannot read: {e}"))?;
            read = Page::read(&text);
            &read
        }
    };
    if page.anchors.contains(anchor) {
        Ok(())
    } else {
        Err(format!("no heading makes the anchor #{anchor}"))
    }
}

/// `a/b/../c` as `a/c`, without touching the file system (the target may not exist).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A repository with README.md, ARCHITECTURE.md and a two-page guide whose links all resolve.
    fn repo() -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("docs/spec")).unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "").unwrap();
        std::fs::write(
            root.join("README.md"),
            "# normfuzz\n\nSee [the matrix](docs/matrix.md#distinct-bugs-per-runtime), \
             [code](src/lib.rs#L1), [a folder](src/) and <https://example.com/x>.\n",
        )
        .unwrap();
        std::fs::write(
            root.join("ARCHITECTURE.md"),
            "# Map\n\n[rules](docs/spec/rules.md)\n",
        )
        .unwrap();
        std::fs::write(
            root.join("docs/SUMMARY.md"),
            "# Summary\n\n- [Matrix](matrix.md)\n- [Rules](spec/rules.md)\n",
        )
        .unwrap();
        std::fs::write(
            root.join("docs/matrix.md"),
            "# Runtime matrix\n\n## Distinct bugs per runtime\n\n## `cargo xtask` runs\n\n\
             [up](../README.md#normfuzz) [here](#cargo-xtask-runs)\n",
        )
        .unwrap();
        std::fs::write(
            root.join("docs/spec/rules.md"),
            "# Rules\n\n## S1\n\n## S1\n",
        )
        .unwrap();
        dir
    }

    fn edit(root: &Path, file: &str, from: &str, to: &str) {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains(from), "{file} has {from:?}");
        std::fs::write(path, text.replacen(from, to, 1)).unwrap();
    }

    fn error(root: &Path) -> String {
        format!("{:#}", check_links(root).unwrap_err())
    }

    #[test]
    fn resolving_links_pass() {
        let dir = repo();
        // Four in README (the URL among them, not followed), one in ARCHITECTURE.md, four in
        // the guide.
        assert_eq!(check_links(dir.path()).unwrap(), 9);
    }

    #[test]
    fn a_missing_file_fails() {
        let dir = repo();
        edit(
            dir.path(),
            "ARCHITECTURE.md",
            "docs/spec/rules.md",
            "docs/spec/rule.md",
        );
        let err = error(dir.path());
        assert!(
            err.contains("ARCHITECTURE.md: (docs/spec/rule.md): no such file"),
            "{err}"
        );
    }

    #[test]
    fn a_missing_anchor_fails() {
        let dir = repo();
        edit(dir.path(), "README.md", "#distinct-bugs", "#distinct-bug");
        let err = error(dir.path());
        assert!(
            err.contains("no heading makes the anchor #distinct-bug-per-runtime"),
            "{err}"
        );
        // Within the page, and the second of two equal headings.
        let dir = repo();
        edit(dir.path(), "docs/matrix.md", "#cargo-xtask-runs", "#s1-1");
        assert!(error(dir.path()).contains("docs/matrix.md: (#s1-1)"));
        edit(
            dir.path(),
            "docs/matrix.md",
            "(#s1-1)",
            "(spec/rules.md#s1-1)",
        );
        check_links(dir.path()).unwrap();
    }

    #[test]
    fn a_link_out_of_the_repository_or_absolute_fails() {
        let dir = repo();
        edit(
            dir.path(),
            "docs/matrix.md",
            "../README.md",
            "../../README.md",
        );
        assert!(error(dir.path()).contains("points outside the repository"));
        let dir = repo();
        edit(dir.path(), "docs/matrix.md", "../README.md", "/README.md");
        assert!(error(dir.path()).contains("absolute path"));
    }

    #[test]
    fn a_guide_page_missing_from_the_summary_fails() {
        let dir = repo();
        std::fs::write(dir.path().join("docs/orphan.md"), "# Orphan\n").unwrap();
        assert!(error(dir.path()).contains("docs/orphan.md: not in docs/SUMMARY.md"));
    }

    #[test]
    fn slugs_follow_github() {
        assert_eq!(
            slug("How strong is the gate: the mutant matrix"),
            "how-strong-is-the-gate-the-mutant-matrix"
        );
        assert_eq!(
            slug("The `normfuzz` command line"),
            "the-normfuzz-command-line"
        );
        assert_eq!(
            slug("Does a baseline tell a second bug from a known one?"),
            "does-a-baseline-tell-a-second-bug-from-a-known-one"
        );
        assert_eq!(slug("S1–S4 (safety)"), "s1s4-safety");
    }
}
