//! S5's evidence: every file a turn creates, changes or deletes, wherever it lies.
//!
//! Two views, because the runtime's own folders lie in the case folder on the real disk (the
//! judge reads them afterwards) and nothing else may be touched at all:
//! - **outside the case folder** the runtime runs chrooted into an overlay of `/` whose upper
//!   layer is a tmpfs private to the turn's mount namespace ([`Overlay`]): a write lands there,
//!   never on the disk, and the upper layer lists exactly what was written, with its bytes (a
//!   whiteout: what was deleted). The case folder and the runtime's install cache are bound
//!   through, every other mount (proc, dev) recursively; the case's private `/tmp` is bound,
//!   and each real `/tmp` entry brought back into it (a report folder there) is overlaid too;
//! - **the case folder** is compared before and after the turn ([`Snapshot`]), the harness's own
//!   capture files aside. A file the harness itself writes there during the turn (the fallback
//!   scenario's image swap) goes through [`HarnessWrites`], and a change that left the file
//!   exactly as the harness wrote it is marked `by_harness`: not the runtime's.
//!
//! `checks/writes.rs` judges the list against the runtime's folders (its profile).

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io::Read as _;
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::{FileTypeExt as _, MetadataExt as _};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// The turn's writes (`D/writes.json`).
pub const WRITES: &str = "writes.json";
/// The case folder's hidden mount points: the overlay and its upper layer.
const OVERLAY_DIR: &str = ".writes";
/// At most this many writes are listed; a runtime writing more is caught by the first ones.
const MAX_LISTED: usize = 200;
/// Bytes of a written file kept as evidence.
const HEAD: usize = 512;
/// The upper layer's size: a runtime filling it meets ENOSPC, not the host's disk.
const UPPER_SIZE: &str = "size=512m";

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Writes {
    /// Writes outside the case folder were observed (a private mount namespace was there).
    pub outside_observed: bool,
    pub files: Vec<Written>,
    /// More than [`MAX_LISTED`] writes: the rest are not listed.
    #[serde(default)]
    pub truncated: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Written {
    /// The path as the runtime saw it.
    pub path: PathBuf,
    pub change: Change,
    #[serde(default)]
    pub size: u64,
    /// The first bytes: text when they are UTF-8, else base64 (`head_base64`).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub head: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub head_base64: bool,
    /// The file is exactly as the harness wrote it during the turn ([`HarnessWrites`]): the
    /// change is the harness's, which S5 does not count.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub by_harness: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Change {
    Created,
    Changed,
    Deleted,
}

impl Change {
    /// The name reports give it (its serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Created => "created",
            Change::Changed => "changed",
            Change::Deleted => "deleted",
        }
    }
}

impl Written {
    fn of(path: PathBuf, change: Change, real: &Path) -> Written {
        let mut written = Written {
            path,
            change,
            size: 0,
            head: String::new(),
            head_base64: false,
            by_harness: false,
        };
        let Ok(meta) = std::fs::symlink_metadata(real) else {
            return written;
        };
        // A folder's size is its block count's, not evidence.
        written.size = if meta.is_dir() { 0 } else { meta.len() };
        let mut bytes = Vec::new();
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(real) {
                bytes = format!("symlink -> {}", target.display()).into_bytes();
            }
        } else if meta.is_file()
            && let Ok(file) = std::fs::File::open(real)
        {
            let _ = file.take(HEAD as u64).read_to_end(&mut bytes);
        }
        match String::from_utf8(bytes) {
            Ok(text) => written.head = text,
            Err(e) => {
                written.head = base64_simd::STANDARD.encode_to_string(e.as_bytes());
                written.head_base64 = true;
            }
        }
        written
    }
}

/// What each entry of a folder was before the turn: enough to tell a change.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Stamp {
    len: u64,
    mtime_ns: i128,
    ino: u64,
}

impl Stamp {
    fn of(meta: &std::fs::Metadata) -> Stamp {
        Stamp {
            // A folder's size and time change with its entries: those are listed.
            len: if meta.is_dir() { 0 } else { meta.len() },
            mtime_ns: if meta.is_dir() {
                0
            } else {
                i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec())
            },
            ino: meta.ino(),
        }
    }
}

/// The files the harness writes into the case folder while the runtime runs, each with its
/// stamp and the digest of its bytes right after the write. A later write by the runtime to the
/// same path changes the stamp or the bytes (the digest catches an in-place write of the same
/// length within one tick of the file system's clock), so only the harness's own last write is
/// discounted. A runtime write the harness's then overwrites is not seen, as no snapshot sees an
/// overwritten write.
#[derive(Debug, Default)]
pub struct HarnessWrites {
    written: BTreeMap<PathBuf, (Stamp, [u8; 32])>,
}

impl HarnessWrites {
    /// Writes `bytes` to `path` atomically and records it as the harness's.
    pub fn write(&mut self, path: &Path, bytes: &[u8]) -> Result<()> {
        crate::fs::write_atomic(path, bytes)?;
        let meta = std::fs::symlink_metadata(path)
            .with_context(|| format!("cannot stat {}", path.display()))?;
        self.written.insert(
            path.to_path_buf(),
            (Stamp::of(&meta), Sha256::digest(bytes).into()),
        );
        Ok(())
    }

    /// Whether `path` is still exactly as the harness last wrote it.
    fn left_as_written(&self, path: &Path, stamp: &Stamp) -> bool {
        self.written.get(path).is_some_and(|(wrote, digest)| {
            wrote == stamp
                && std::fs::read(path)
                    .is_ok_and(|now| <[u8; 32]>::from(Sha256::digest(now)) == *digest)
        })
    }
}

/// The case folder's entries before the turn.
pub struct Snapshot {
    root: PathBuf,
    skip: Vec<PathBuf>,
    entries: BTreeMap<PathBuf, Stamp>,
}

impl Snapshot {
    /// Walks `root`, leaving out `skip` (mount points inside it, the harness's capture files).
    pub fn take(root: &Path, skip: Vec<PathBuf>) -> Snapshot {
        let mut snapshot = Snapshot {
            root: root.to_path_buf(),
            skip,
            entries: BTreeMap::new(),
        };
        snapshot.entries = snapshot.walk();
        snapshot
    }

    fn walk(&self) -> BTreeMap<PathBuf, Stamp> {
        walkdir::WalkDir::new(&self.root)
            .min_depth(1)
            .into_iter()
            .filter_entry(|e| !self.skip.iter().any(|s| e.path() == s))
            .filter_map(|e| {
                let e = e.ok()?;
                let stamp = Stamp::of(&e.metadata().ok()?);
                Some((e.into_path(), stamp))
            })
            .collect()
    }

    /// What changed in the folder since [`Snapshot::take`], each change that left a file as
    /// `harness` wrote it marked `by_harness`.
    pub fn changes(&self, harness: &HarnessWrites) -> Vec<Written> {
        let after = self.walk();
        let mut out = Vec::new();
        for (path, stamp) in &after {
            let change = match self.entries.get(path) {
                None => Change::Created,
                Some(before) if before != stamp => Change::Changed,
                Some(_) => continue,
            };
            let mut written = Written::of(path.clone(), change, path);
            written.by_harness = harness.left_as_written(path, stamp);
            out.push(written);
        }
        for path in self.entries.keys().filter(|p| !after.contains_key(*p)) {
            out.push(Written::of(path.clone(), Change::Deleted, path));
        }
        out
    }
}

/// `/` as an overlay whose upper layers record every write; the runtime is chrooted into it.
pub struct Overlay {
    /// The merged view, the runtime's root.
    root: PathBuf,
    /// (where the runtime saw it, upper layer): `/`, and each real `/tmp/<top>` the case's
    /// private `/tmp` brings back (`one_turn::bind_tmp`), each an overlay of its own.
    uppers: Vec<(PathBuf, PathBuf)>,
}

/// The case's private `/tmp` (bound over `/tmp`) and the entries of the real `/tmp` bound back
/// into it (`<tmp>/<top>`).
pub struct PrivateTmp<'a> {
    pub tmp: &'a Path,
    pub binds: &'a [PathBuf],
}

impl Overlay {
    /// Mounts the overlay under `case/.writes` and binds `through` (the case folder, the
    /// runtime's cache) and every other mount of this namespace into it. The case's private
    /// `/tmp` is bound at `/tmp`, and each real entry bound back into it gets an overlay too, so
    /// a write there (beside a report folder under `/tmp`) is seen, not made. Needs the turn's
    /// private mount namespace.
    pub fn mount(case: &Path, through: &[&Path], tmp: PrivateTmp) -> Result<Overlay> {
        let base = case.join(OVERLAY_DIR);
        let (tmpfs, root) = (base.join("layers"), base.join("root"));
        std::fs::create_dir_all(&tmpfs)?;
        std::fs::create_dir_all(&root)?;
        mount(
            &["-t", "tmpfs", "-o", UPPER_SIZE, "normfuzz-writes"],
            &[&tmpfs],
        )?;
        let mut uppers = Vec::new();
        let layer = |lower: &Path, at: &Path, n: usize| -> Result<PathBuf> {
            let (upper, work) = (
                tmpfs.join(format!("upper{n}")),
                tmpfs.join(format!("work{n}")),
            );
            std::fs::create_dir_all(&upper)?;
            std::fs::create_dir_all(&work)?;
            let layers = format!(
                "lowerdir={},upperdir={},workdir={}",
                lower.display(),
                upper.display(),
                work.display()
            );
            // In a user namespace overlayfs keeps its whiteouts in user.* attributes (5.11+).
            if mount(&["-t", "overlay", "-o", &layers, "overlay"], &[at]).is_err() {
                let layers = format!("{layers},userxattr");
                mount(&["-t", "overlay", "-o", &layers, "overlay"], &[at])
                    .context("cannot mount an overlay (S5 needs overlayfs)")?;
            }
            Ok(upper)
        };
        uppers.push((PathBuf::from("/"), layer(Path::new("/"), &root, 0)?));
        // The overlay holds the root file system alone: every other mount comes along as it
        // is, the outermost of each nest recursively, except those inside the case folder and
        // the private `/tmp`, made below.
        let private = Path::new("/tmp");
        let mut others: Vec<PathBuf> = mount_points()?
            .into_iter()
            .filter(|m| m != Path::new("/") && !m.starts_with(case) && !m.starts_with(private))
            .collect();
        others.sort();
        others.dedup();
        let outermost: Vec<&PathBuf> = others
            .iter()
            .filter(|m| !others.iter().any(|o| o != *m && m.starts_with(o)))
            .collect();
        for m in outermost {
            mount(&["--rbind"], &[m, &inside(&root, m)])?;
        }
        mount(&["--bind"], &[tmp.tmp, &inside(&root, private)])?;
        for (n, bound) in tmp.binds.iter().enumerate() {
            let Ok(top) = bound.strip_prefix(tmp.tmp) else {
                continue;
            };
            let real = private.join(top);
            let at = inside(&root, &real);
            if real.is_dir() {
                uppers.push((real.clone(), layer(&real, &at, n + 1)?));
            } else {
                // A file at the top of `/tmp` (a binary the turn runs): bound as it is.
                mount(&["--bind"], &[&real, &at])?;
            }
        }
        // Plain binds: the overlay's own mounts under `case` stay out of the runtime's view.
        for path in through.iter().filter(|p| p.exists()) {
            mount(&["--bind"], &[path, &inside(&root, path)])?;
        }
        Ok(Overlay { root, uppers })
    }

    /// The case-folder entries the snapshot leaves out: the overlay's mount points.
    pub fn skip(case: &Path) -> PathBuf {
        case.join(OVERLAY_DIR)
    }

    /// For `Command::pre_exec`: chroot into the overlay, then enter `cwd` inside it (a working
    /// folder left outside a chroot is a way out of it).
    pub fn enter(&self, cwd: &Path) -> Result<impl FnMut() -> std::io::Result<()> + use<>> {
        let root = CString::new(self.root.as_os_str().as_bytes())?;
        let cwd = CString::new(cwd.as_os_str().as_bytes())?;
        Ok(move || {
            // SAFETY: chroot(2) and chdir(2) on NUL-terminated strings made before fork; both
            // are async-signal-safe.
            unsafe {
                if libc::chroot(root.as_ptr()) != 0 || libc::chdir(cwd.as_ptr()) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        })
    }

    /// Every entry the turn created, changed or deleted outside what was bound through.
    pub fn changes(&self) -> Vec<Written> {
        let mut out = Vec::new();
        for (seen_at, upper) in &self.uppers {
            for entry in walkdir::WalkDir::new(upper)
                .min_depth(1)
                .into_iter()
                .filter_map(Result::ok)
            {
                let Ok(rel) = entry.path().strip_prefix(upper) else {
                    continue;
                };
                let path = seen_at.join(rel);
                let Ok(meta) = entry.metadata() else { continue };
                // The lower layer is what this namespace shows at `path`: nothing an upper layer
                // holds lies under another mount (those are bound through).
                let existed = std::fs::symlink_metadata(&path).is_ok();
                let change = if meta.file_type().is_char_device() && meta.rdev() == 0 {
                    Change::Deleted
                } else if meta.is_dir() {
                    // A copied-up parent of a written file; only a new folder is a write itself.
                    if existed {
                        continue;
                    }
                    Change::Created
                } else if existed {
                    Change::Changed
                } else {
                    Change::Created
                };
                out.push(Written::of(path, change, entry.path()));
            }
        }
        out
    }
}

/// `root` + the absolute `path`.
fn inside(root: &Path, path: &Path) -> PathBuf {
    root.join(path.strip_prefix("/").unwrap_or(path))
}

/// The mount points of this namespace (`/proc/self/mountinfo`, octal escapes undone).
fn mount_points() -> Result<Vec<PathBuf>> {
    let info = std::fs::read("/proc/self/mountinfo").context("cannot read mountinfo")?;
    Ok(info
        .split(|&b| b == b'\n')
        .filter_map(|line| line.split(|&b| b == b' ').nth(4))
        .map(|field| PathBuf::from(std::ffi::OsStr::from_bytes(&unescape(field))))
        .collect())
}

/// mountinfo writes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).and_then(|d| {
            let s = std::str::from_utf8(d).ok()?;
            u8::from_str_radix(s, 8).ok()
        });
        match (field[i], octal) {
            (b'\\', Some(byte)) => {
                out.push(byte);
                i += 4;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
}

/// Runs mount(8) with `options`, then `paths` (the sandbox's binds and overlays).
pub(super) fn mount(options: &[&str], paths: &[&Path]) -> Result<()> {
    let status = Command::new("mount")
        .args(options)
        .args(paths)
        .status()
        .context("cannot run `mount`")?;
    if !status.success() {
        bail!("`mount {options:?} {paths:?}` failed ({status})");
    }
    Ok(())
}

/// Writes `D/writes.json`: the case folder's changes (the harness's own marked), then the
/// overlay's, at most [`MAX_LISTED`].
pub fn record(
    dir: &Path,
    snapshot: &Snapshot,
    harness: &HarnessWrites,
    overlay: Option<&Overlay>,
) -> Result<()> {
    let mut files = snapshot.changes(harness);
    files.extend(overlay.map(Overlay::changes).unwrap_or_default());
    let truncated = files.len() > MAX_LISTED;
    files.truncate(MAX_LISTED);
    let writes = Writes {
        outside_observed: overlay.is_some(),
        files,
        truncated,
    };
    crate::fs::write_atomic(&dir.join(WRITES), &serde_json::to_vec_pretty(&writes)?)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn change_names_agree_with_serde() {
        for change in [Change::Created, Change::Changed, Change::Deleted] {
            assert_eq!(serde_json::to_value(change).unwrap(), change.as_str());
        }
    }

    #[test]
    fn mountinfo_escapes_are_undone() {
        assert_eq!(unescape(br"/a\040b\134c"), b"/a b\\c");
        assert_eq!(unescape(br"/plain\04"), br"/plain\04");
    }

    #[test]
    fn the_snapshot_lists_what_was_created_changed_and_deleted_and_skips_what_it_is_told() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for f in ["keep", "change", "delete", "skipped/inner"] {
            std::fs::create_dir_all(d.join(f).parent().unwrap()).unwrap();
            std::fs::write(d.join(f), b"before").unwrap();
        }
        let snapshot = Snapshot::take(d, vec![d.join("skipped")]);
        std::fs::write(d.join("change"), b"after, longer").unwrap();
        std::fs::remove_file(d.join("delete")).unwrap();
        std::fs::create_dir(d.join("new")).unwrap();
        std::fs::write(d.join("new/file"), [0xff, 0xfe]).unwrap();
        std::fs::write(d.join("skipped/inner"), b"changed, not seen").unwrap();
        let mut changes = snapshot.changes(&HarnessWrites::default());
        changes.sort_by(|a, b| a.path.cmp(&b.path));
        let seen: Vec<(&Path, Change)> = changes
            .iter()
            .map(|w| (w.path.strip_prefix(d).unwrap(), w.change))
            .collect();
        assert_eq!(
            seen,
            [
                (Path::new("change"), Change::Changed),
                (Path::new("delete"), Change::Deleted),
                (Path::new("new"), Change::Created),
                (Path::new("new/file"), Change::Created),
            ]
        );
        assert_eq!(changes[0].head, "after, longer");
        assert_eq!(
            (changes[3].head.as_str(), changes[3].head_base64),
            ("//4=", true)
        );
    }

    #[test]
    fn the_harness_own_write_is_marked_and_a_runtime_write_after_it_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let photo = dir.path().join("workspace/photo.png");
        std::fs::create_dir_all(photo.parent().unwrap()).unwrap();
        std::fs::write(&photo, b"first bytes").unwrap();
        let snapshot = Snapshot::take(dir.path(), Vec::new());
        let mut harness = HarnessWrites::default();
        harness.write(&photo, b"second bytes").unwrap();
        let changes = snapshot.changes(&harness);
        assert_eq!(changes.len(), 1);
        assert_eq!(
            (changes[0].change, changes[0].by_harness),
            (Change::Changed, true)
        );
        // The runtime writes the same path afterwards, same length, in place (same inode),
        // likely within the clock tick of the harness's write.
        std::fs::write(&photo, b"runtime byte").unwrap();
        let changes = snapshot.changes(&harness);
        assert_eq!(changes.len(), 1);
        assert!(!changes[0].by_harness, "the runtime's write is its own");
        assert_eq!(changes[0].head, "runtime byte");
        // A file the harness never wrote is never the harness's.
        std::fs::write(dir.path().join("workspace/other.png"), b"x").unwrap();
        let other = snapshot.changes(&harness);
        assert!(other.iter().all(|w| !w.by_harness));
    }
}
