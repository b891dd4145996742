//! A report folder put in place as one unit: filled in a hidden sibling folder, which is then
//! renamed to the report's name. A rename within one folder is atomic, so a process killed at
//! any moment leaves the report folder absent (or the previous report) or complete, never some
//! files without the others; what a kill leaves behind is the hidden sibling, which the next
//! write of the same report removes once its writer is gone.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};

/// What a campaign's report folder holds. An existing folder is replaced only if it holds
/// nothing else (hidden names aside: a killed writer's temporary files), so `--report` never
/// deletes anyone's files; a folder holding other files is written in place, as before.
pub(super) const REPORT_ENTRIES: [&str; 6] = [
    "index.json",
    "junit.xml",
    "results.sarif",
    "summary.md",
    "report.html",
    "findings",
];

/// Puts the folder `fill` writes at `dir`: into a fresh hidden sibling, then renamed to `dir`.
/// A folder already at `dir` holding only `entries` (a previous report) is replaced; one holding
/// anything else is filled in place.
pub(super) fn publish(
    dir: &Path,
    entries: &[&str],
    fill: impl FnOnce(&Path) -> Result<()>,
) -> Result<()> {
    // `.`, `..`, `/`: no name to stage under.
    let Some(name) = dir.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return fill(dir);
    };
    if dir.is_dir() && !holds_only(dir, entries)? {
        return fill(dir);
    }
    let parent = dir
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(parent).with_context(|| format!("cannot create {}", parent.display()))?;
    remove_orphans(parent, &name);
    let staging = fresh_sibling(parent, &name, "tmp")
        .with_context(|| format!("cannot create a folder in {}", parent.display()))?;
    if let Err(err) = fill(&staging) {
        let _ = fs::remove_dir_all(&staging);
        return Err(err);
    }
    sync_dir(&staging);
    if let Err(err) = fs::rename(&staging, dir) {
        // Linux renames over an empty folder only; anything else at `dir` is moved aside first
        // (the report is absent in between, never partial).
        if !dir.is_dir() {
            let _ = fs::remove_dir_all(&staging);
            return Err(err).with_context(|| format!("cannot write the report {}", dir.display()));
        }
        replace(dir, &staging, parent, &name)?;
    }
    sync_dir(parent);
    Ok(())
}

/// Moves the old folder at `dir` aside, `staging` to `dir`, and deletes the old one.
fn replace(dir: &Path, staging: &Path, parent: &Path, name: &str) -> Result<()> {
    let old = sibling_name(parent, name, "old");
    let swapped = fs::rename(dir, &old).and_then(|()| {
        fs::rename(staging, dir).inspect_err(|_| {
            let _ = fs::rename(&old, dir);
        })
    });
    if let Err(err) = swapped {
        let _ = fs::remove_dir_all(staging);
        return Err(err).with_context(|| format!("cannot replace the report {}", dir.display()));
    }
    let _ = fs::remove_dir_all(&old);
    Ok(())
}

/// Whether every visible entry of `dir` is one of `entries`.
fn holds_only(dir: &Path, entries: &[&str]) -> Result<bool> {
    let listing = fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    Ok(listing.flatten().all(|e| {
        let name = e.file_name();
        let name = name.to_string_lossy();
        name.starts_with('.') || entries.contains(&name.as_ref())
    }))
}

/// `.<name>.<kind>-<pid>-<n>` in `parent`, not created.
fn sibling_name(parent: &Path, name: &str, kind: &str) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    parent.join(format!(".{name}.{kind}-{}-{n}", std::process::id()))
}

/// A new, empty sibling folder (a killed run's leftover may hold a name: take the next one).
fn fresh_sibling(parent: &Path, name: &str, kind: &str) -> io::Result<PathBuf> {
    let mut attempts = 0;
    loop {
        let path = sibling_name(parent, name, kind);
        match fs::create_dir(&path) {
            Ok(()) => return Ok(path),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => {
                attempts += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// Removes the hidden siblings of `name` left by writers that were killed: those whose process
/// is gone. Only where `/proc` tells which processes live; a live or unknown writer's folder is
/// kept.
fn remove_orphans(parent: &Path, name: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(listing) = fs::read_dir(parent) else {
        return;
    };
    let prefix = format!(".{name}.");
    for entry in listing.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name
            .to_string_lossy()
            .strip_prefix(&prefix)
            .map(str::to_owned)
        else {
            continue;
        };
        let pid = ["tmp-", "old-"]
            .iter()
            .find_map(|kind| rest.strip_prefix(kind))
            .and_then(|rest| rest.split_once('-'))
            .filter(|(_, n)| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(pid, _)| pid.parse::<u32>().ok());
        if let Some(pid) = pid
            && pid != std::process::id()
            && !proc.join(pid.to_string()).exists()
        {
            let _ = fs::remove_dir_all(entry.path());
        }
    }
}

/// Flushes a folder's entries to disk where the platform allows it (a rename is atomic for
/// other processes either way; this orders it after the files' contents on a crash).
fn sync_dir(dir: &Path) {
    if let Ok(folder) = fs::File::open(dir) {
        let _ = folder.sync_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str) -> Result<()> {
        Ok(crate::fs::write_atomic(&dir.join(name), name.as_bytes())?)
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_report_appears_whole_and_replaces_only_a_report() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("sub/report");
        publish(&dir, &REPORT_ENTRIES, |into| {
            assert_ne!(into, dir);
            assert!(!dir.exists(), "nothing at the name while it is written");
            write(into, "index.json")?;
            write(into, "junit.xml")
        })
        .unwrap();
        assert_eq!(names(&dir), ["index.json", "junit.xml"]);
        assert_eq!(names(&scratch.path().join("sub")), ["report"]);

        // A previous report is replaced whole: its other files go.
        publish(&dir, &REPORT_ENTRIES, |into| write(into, "summary.md")).unwrap();
        assert_eq!(names(&dir), ["summary.md"]);
        assert_eq!(names(&scratch.path().join("sub")), ["report"]);

        // A failed fill leaves the previous report and no sibling.
        let err = publish(&dir, &REPORT_ENTRIES, |into| {
            write(into, "index.json")?;
            anyhow::bail!("renderer failed")
        });
        assert!(err.is_err());
        assert_eq!(names(&dir), ["summary.md"]);
        assert_eq!(names(&scratch.path().join("sub")), ["report"]);

        // A folder holding anything else is written in place, its files kept.
        fs::write(dir.join("notes.txt"), b"mine").unwrap();
        publish(&dir, &REPORT_ENTRIES, |into| {
            assert_eq!(into, dir);
            write(into, "index.json")
        })
        .unwrap();
        assert_eq!(names(&dir), ["index.json", "notes.txt", "summary.md"]);
    }

    #[test]
    fn a_killed_writers_sibling_is_removed_a_live_ones_kept() {
        let scratch = tempfile::tempdir().unwrap();
        let dir = scratch.path().join("report");
        // No process has pid u32::MAX (Linux's limit is 2^22); pid 1 is always alive.
        let dead = scratch.path().join(format!(".report.tmp-{}-0", u32::MAX));
        let live = scratch.path().join(".report.tmp-1-0");
        let other = scratch.path().join(".other.tmp-4294967295-0");
        for d in [&dead, &live, &other] {
            fs::create_dir(d).unwrap();
        }
        publish(&dir, &REPORT_ENTRIES, |into| write(into, "index.json")).unwrap();
        assert!(!dead.exists(), "orphan removed");
        assert!(live.exists(), "pid 1 lives");
        assert!(other.exists(), "another report's sibling kept");
    }
}
