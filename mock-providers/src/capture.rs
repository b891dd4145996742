//! Every received request with its verdict: kept in memory (for `GET /__mock/requests`) and, when asked,
//! appended to a JSON Lines file. Each record is one `write` of one whole line on a file opened with
//! `O_APPEND`, under a lock, and unbuffered: a killed process loses no completed record.

use serde_json::{Value, json};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Debug, Default)]
pub struct Capture {
    records: Mutex<Vec<Value>>,
    file: Option<Mutex<File>>,
    seq: AtomicU64,
    write_errors: AtomicU64,
}

impl Capture {
    /// Captures in memory, and to `path` (created or appended to) when given.
    pub fn new(path: Option<&Path>) -> io::Result<Capture> {
        let file = match path {
            Some(p) => Some(Mutex::new(
                OpenOptions::new().create(true).append(true).open(p)?,
            )),
            None => None,
        };
        Ok(Capture {
            file,
            ..Capture::default()
        })
    }

    /// Numbers `record` (`seq`, from 0), keeps it and appends it to the file.
    pub fn record(&self, mut record: Value) {
        if let Some(obj) = record.as_object_mut() {
            obj.insert(
                "seq".into(),
                json!(self.seq.fetch_add(1, Ordering::Relaxed)),
            );
        }
        if let Some(file) = &self.file {
            let mut line = record.to_string().into_bytes();
            line.push(b'\n');
            let mut file = file.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            // A regular file takes the whole buffer in one write; write_all only loops on a short write.
            if file.write_all(&line).and_then(|()| file.flush()).is_err() {
                self.write_errors.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(record);
    }

    pub fn all(&self) -> Vec<Value> {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Forgets the in-memory records (the file is never truncated).
    pub fn clear(&self) {
        self.records
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }

    /// Records that could not be written to the file (disk full, ...).
    pub fn write_errors(&self) -> u64 {
        self.write_errors.load(Ordering::Relaxed)
    }
}
