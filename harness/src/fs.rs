//! File helpers for every report, corpus and scratch write: atomic writes, the visible files of
//! a corpus folder, a fresh scratch folder, and the cache root that the e2e installer, the
//! runtime matrix and provision share.
//!
//! `std` only: this module builds without the `runner` feature (the fuzz crate's build), and
//! `xtask` compiles this very file (`#[path]` in `xtask/src/main.rs`) without depending on the
//! crate. Errors name the path they concern.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Prefix of the temporary files `write_atomic` renames into place: hidden, so corpus readers
/// (`visible_files`, the replay tests, build.sh's seed zips) never take one for an input.
const TMP_PREFIX: &str = ".tmp-";

/// Writes `bytes` to `path` atomically: a hidden temporary file in the same folder (created
/// with its parents), synced, then renamed over `path`. A reader never sees a half-written
/// file, and a process killed at any moment leaves at most a hidden `.tmp-*` file.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(|e| annotate(e, "cannot create", dir))?;
    let (tmp, mut file) = temp_file(dir).map_err(|e| annotate(e, "cannot write in", dir))?;
    let written = file
        .write_all(bytes)
        .and_then(|()| file.sync_all())
        .and_then(|()| fs::rename(&tmp, path));
    if let Err(err) = written {
        let _ = fs::remove_file(&tmp);
        return Err(annotate(err, "cannot write", path));
    }
    Ok(())
}

/// A new, empty hidden file in `dir`, readable and writable by its owner only (as the
/// `tempfile` crate made them before this module).
fn temp_file(dir: &Path) -> io::Result<(PathBuf, File)> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    let mut attempts = 0;
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{TMP_PREFIX}{}-{nanos:x}-{n}", std::process::id()));
        let mut options = OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        match options.open(&path) {
            Ok(file) => return Ok((path, file)),
            // A killed run's leftover has that name: take the next one.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists && attempts < 100 => {
                attempts += 1;
            }
            Err(err) => return Err(err),
        }
    }
}

/// The files in `dir` that are inputs, sorted: hidden names (`.tmp-*`, editor files) are
/// scratch, and a missing folder has none.
pub fn visible_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && !p
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .collect();
    files.sort();
    files
}

/// Empties `dir`, creating it if needed.
pub fn fresh_dir(dir: &Path) -> io::Result<()> {
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| annotate(e, "cannot clear", dir))?;
    }
    fs::create_dir_all(dir).map_err(|e| annotate(e, "cannot create", dir))
}

fn annotate(err: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(err.kind(), format!("{what} {}: {err}", path.display()))
}

/// `$NORMFUZZ_CACHE`, else `$XDG_CACHE_HOME/normfuzz`, else `~/.cache/normfuzz`: one cache for
/// the e2e installer, the runtime matrix and provision's tools.
pub fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("NORMFUZZ_CACHE") {
        return PathBuf::from(dir);
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(|| PathBuf::from(".cache"));
    base.join("normfuzz")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scratch folder under the system's temp dir, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!(
                "normfuzz-fs-{name}-{}-{}",
                std::process::id(),
                NEXT_SCRATCH.fetch_add(1, Ordering::Relaxed)
            ));
            fresh_dir(&dir).expect("scratch folder");
            Scratch(dir)
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    static NEXT_SCRATCH: AtomicU64 = AtomicU64::new(0);

    #[test]
    fn atomic_writes_replace_and_leave_only_visible_files() {
        let scratch = Scratch::new("write");
        let path = scratch.0.join("sub/dir/file.json");
        write_atomic(&path, b"one").expect("first write");
        write_atomic(&path, b"two").expect("second write");
        assert_eq!(fs::read(&path).expect("written"), b"two");
        let folder = path.parent().expect("folder").to_path_buf();
        assert_eq!(visible_files(&folder), std::slice::from_ref(&path));
        assert_eq!(
            fs::read_dir(&folder).expect("listing").count(),
            1,
            "no temporary left"
        );
        fs::write(folder.join(".hidden"), b"x").expect("hidden file");
        fs::write(folder.join("a.bin"), b"x").expect("visible file");
        assert_eq!(visible_files(&folder), [folder.join("a.bin"), path]);
        assert!(visible_files(&scratch.0.join("missing")).is_empty());
        fresh_dir(&folder).expect("cleared");
        assert!(visible_files(&folder).is_empty());
    }

    #[test]
    fn errors_name_the_path() {
        let scratch = Scratch::new("error");
        let blocker = scratch.0.join("file");
        fs::write(&blocker, b"x").expect("file");
        let err = write_atomic(&blocker.join("below"), b"y").expect_err("a file is no folder");
        assert!(err.to_string().contains("cannot create"), "{err}");
        assert!(
            err.to_string().contains(&blocker.display().to_string()),
            "{err}"
        );
    }
}
