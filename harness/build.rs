//! Lists corpus/real-servers/*.jsonl for `generate::real_servers` to include at compile time: a
//! re-capture at new versions renames the files (`cargo xtask capture-servers`), and the
//! generators follow without an edit.

use std::path::Path;

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../corpus/real-servers");
    println!("cargo::rerun-if-changed={}", dir.display());
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "jsonl"))
        .collect();
    files.sort();
    let mut list = String::from("&[\n");
    for path in &files {
        println!("cargo::rerun-if-changed={}", path.display());
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        list.push_str(&format!(
            "    ({name:?}, include_str!({:?})),\n",
            path.display().to_string()
        ));
    }
    list.push_str("]\n");
    let out =
        Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("real_servers.rs");
    std::fs::write(&out, list).unwrap_or_else(|e| panic!("cannot write {}: {e}", out.display()));
}
