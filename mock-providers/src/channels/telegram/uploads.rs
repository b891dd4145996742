//! The capture of uploaded parts: which parameter points at each, its hash, and its bytes saved
//! beside the capture file or carried inline.

use std::collections::HashMap;
use std::path::Path;

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use super::Channel;
use super::media::MEDIA_KINDS;
use super::params::Params;

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

impl Channel {
    /// The capture's `files`: each part with its hash, and its bytes saved or inline.
    pub(super) fn save_uploads(&self, params: &Params) -> Value {
        let call = {
            let mut state = self.state();
            state.calls += 1;
            state.calls
        };
        let refs = references(params);
        let files: Vec<Value> = params
            .uploads
            .iter()
            .enumerate()
            .map(|(i, u)| {
                let mut f = json!({
                    "field": u.field,
                    "fileName": u.file_name,
                    "contentType": u.content_type,
                    "size": u.bytes.len(),
                    "sha256": sha256_hex(&u.bytes),
                    "ref": refs.get(&u.field),
                });
                match &self.files {
                    Some((dir, base)) => {
                        let target = dir.join(format!("{call}-{i}"));
                        match write_atomic(&target, &u.bytes) {
                            Ok(()) => {
                                let rel = target.strip_prefix(base).unwrap_or(&target);
                                f["path"] = json!(rel.to_string_lossy());
                            }
                            Err(e) => {
                                f["save_error"] = json!(e.to_string());
                                f["base64"] = json!(
                                    base64::engine::general_purpose::STANDARD.encode(&u.bytes)
                                );
                            }
                        }
                    }
                    None => {
                        f["base64"] =
                            json!(base64::engine::general_purpose::STANDARD.encode(&u.bytes))
                    }
                }
                f
            })
            .collect();
        Value::Array(files)
    }
}

/// Which parameter points at each part (`attach://name`, or the part's own field name).
fn references(p: &Params) -> HashMap<String, String> {
    let mut refs = HashMap::new();
    // A part sent under a file parameter's own name (`photo`, `thumbnail`) is that parameter.
    for u in &p.uploads {
        let named = MEDIA_KINDS.iter().any(|k| k.field == u.field) || u.field == "thumbnail";
        if named && p.values.get(&u.field).is_none() {
            refs.insert(u.field.clone(), u.field.clone());
        }
    }
    for (key, value) in &p.values {
        if let Some(name) = value.as_str().and_then(|v| v.strip_prefix("attach://")) {
            refs.insert(name.to_string(), key.clone());
        }
    }
    let media = match p.values.get("media") {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(other) => other.clone(),
        None => Value::Null,
    };
    for (i, item) in media.as_array().into_iter().flatten().enumerate() {
        for key in ["media", "thumbnail", "cover"] {
            if let Some(name) = item[key].as_str().and_then(|v| v.strip_prefix("attach://")) {
                refs.insert(name.to_string(), format!("media[{i}].{key}"));
            }
        }
    }
    refs
}

/// Writes `bytes` to a temporary name in `path`'s folder, then renames it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
