//! `cargo xtask capture-servers`: re-captures corpus/real-servers/. Installs the pinned servers of
//! `xtask/capture/servers.toml` and the official MCP client into `target/capture-servers/` (the
//! matrix's installer: npm prefix, venv, marker), runs `xtask/capture/capture.mjs` once per
//! server and writes its lines to `corpus/real-servers/<name>@<version>.jsonl`, atomically; a
//! file of another version of a captured server is removed. Needs npm and PyPI; never part of
//! `cargo xtask ci`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::matrix::install::{Ecosystem, ensure_packages};

/// `xtask/capture/servers.toml`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Servers {
    /// The MCP SDK's npm spec, `@modelcontextprotocol/sdk@X.Y.Z`.
    client: String,
    server: Vec<Server>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Server {
    name: String,
    ecosystem: Ecosystem,
    package: String,
    version: String,
    command: Vec<String>,
}

impl Server {
    fn spec(&self) -> String {
        match self.ecosystem {
            Ecosystem::Npm => format!("{}@{}", self.package, self.version),
            Ecosystem::Pypi => format!("{}=={}", self.package, self.version),
        }
    }
}

pub fn capture_servers(root: &Path) -> Result<()> {
    let list = root.join("xtask/capture/servers.toml");
    let text = std::fs::read_to_string(&list)
        .with_context(|| format!("cannot read {}", list.display()))?;
    let servers: Servers =
        toml::from_str(&text).with_context(|| format!("invalid {}", list.display()))?;
    let cache = crate::target_dir(root).join("capture-servers");
    let npm = cache.join("npm");
    let pypi = cache.join("pypi");
    let specs = |ecosystem| -> Vec<String> {
        servers
            .server
            .iter()
            .filter(|s| s.ecosystem == ecosystem)
            .map(Server::spec)
            .collect()
    };
    let mut npm_specs = vec![servers.client.clone()];
    npm_specs.extend(specs(Ecosystem::Npm));
    ensure_packages(
        "capture-servers (npm)",
        &npm,
        Ecosystem::Npm,
        &npm_specs,
        None,
    )?;
    let pypi_specs = specs(Ecosystem::Pypi);
    if !pypi_specs.is_empty() {
        ensure_packages(
            "capture-servers (PyPI)",
            &pypi,
            Ecosystem::Pypi,
            &pypi_specs,
            None,
        )?;
    }
    let sdk_name = servers
        .client
        .rsplit_once('@')
        .map(|(name, _)| name)
        .filter(|name| !name.is_empty())
        .with_context(|| format!("client {:?} is not NAME@VERSION", servers.client))?;
    let vars = BTreeMap::from([
        ("${npm}", npm.display().to_string()),
        ("${venv}", pypi.join("venv").display().to_string()),
    ]);
    let out = root.join("corpus/real-servers");
    std::fs::create_dir_all(&out).with_context(|| format!("cannot create {}", out.display()))?;
    for server in &servers.server {
        let command: Vec<String> = server
            .command
            .iter()
            .map(|word| {
                vars.iter()
                    .fold(word.clone(), |w, (var, value)| w.replace(var, value))
            })
            .collect();
        let spec = serde_json::json!({
            "server": server.name,
            "version": server.version,
            "sdk": npm.join("node_modules").join(sdk_name),
            "command": command,
        });
        eprintln!("==> capturing {}", server.spec());
        let run = Command::new("node")
            .arg(root.join("xtask/capture/capture.mjs"))
            .arg(spec.to_string())
            .stdin(Stdio::null())
            .stderr(Stdio::inherit())
            .output()
            .context("cannot run node (Node 18 or newer is needed)")?;
        if !run.status.success() {
            bail!("capturing {} failed ({})", server.spec(), run.status);
        }
        if run.stdout.is_empty() {
            bail!("capturing {} recorded no result", server.spec());
        }
        let file = out.join(format!("{}@{}.jsonl", server.name, server.version));
        crate::fs::write_atomic(&file, &run.stdout)
            .with_context(|| format!("cannot write {}", file.display()))?;
        remove_other_versions(&out, server)?;
        eprintln!("wrote {}", file.display());
    }
    Ok(())
}

/// Removes `<name>@<other version>.jsonl`: a re-capture at a new pin replaces the old file.
fn remove_other_versions(out: &Path, server: &Server) -> Result<()> {
    let keep = format!("{}@{}.jsonl", server.name, server.version);
    let prefix = format!("{}@", server.name);
    for entry in std::fs::read_dir(out).with_context(|| format!("cannot list {}", out.display()))? {
        let path: PathBuf = entry?.path();
        let name = path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        if name.starts_with(&prefix) && name.ends_with(".jsonl") && name != keep {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
        }
    }
    Ok(())
}
