//! The WPT URL test data the `url` crate ships (`tests/urltestdata.json`): the WHATWG parser rule
//! U1 relies on still conforms, and the host the media URL policy judges
//! ([`canonical_host`]) is WPT's expected `hostname`.

use std::collections::HashSet;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::process::Command;

use normfuzz::reference::url_policy::{canonical_host, check_media_url};
use serde_json::Value;
use url::{Host, Url};

/// Source directory of the `url` package normfuzz depends on, from `cargo metadata --offline`.
/// Filtered to the host platform: other platforms' dependencies need not be downloaded.
fn url_crate_dir() -> PathBuf {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let run = |args: &[&str]| {
        let out = Command::new(&cargo).args(args).output().expect("run cargo");
        assert!(
            out.status.success(),
            "cargo {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    let version = String::from_utf8(run(&["-vV"])).expect("cargo -vV is UTF-8");
    let host = version
        .lines()
        .find_map(|l| l.strip_prefix("host: "))
        .expect("cargo -vV names the host");
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
    let out = run(&[
        "metadata",
        "--format-version",
        "1",
        "--offline",
        "--filter-platform",
        host,
        "--manifest-path",
        manifest,
    ]);
    let meta: Value = serde_json::from_slice(&out).expect("cargo metadata JSON");
    let packages = meta["packages"].as_array().expect("packages");
    let id_of = |name: &str| {
        packages
            .iter()
            .find(|p| p["name"] == name)
            .map(|p| p["id"].clone())
            .unwrap_or_else(|| panic!("no package {name}"))
    };
    // Follow the resolve graph, in case several versions of `url` are in the lock file.
    let normfuzz = id_of("normfuzz");
    let node = meta["resolve"]["nodes"]
        .as_array()
        .and_then(|nodes| nodes.iter().find(|n| n["id"] == normfuzz))
        .expect("normfuzz in the resolve graph");
    let url_id = node["deps"]
        .as_array()
        .and_then(|deps| deps.iter().find(|d| d["name"] == "url"))
        .map(|d| d["pkg"].clone())
        .expect("normfuzz depends on url");
    let manifest_path = packages
        .iter()
        .find(|p| p["id"] == url_id)
        .and_then(|p| p["manifest_path"].as_str())
        .expect("url manifest_path");
    PathBuf::from(manifest_path)
        .parent()
        .expect("manifest has a directory")
        .to_path_buf()
}

/// The name the `url` crate's own WPT runner (and `expected_failures.txt`) gives an entry.
fn case_name(input: &str, base: Option<&str>) -> String {
    match base {
        Some(base) => format!(
            "<{}> against <{}>",
            input.escape_default(),
            base.escape_default()
        ),
        None => format!("<{}>", input.escape_default()),
    }
}

/// Whether the policy's host is WPT's `hostname`: same text (one trailing dot off a domain, as the
/// policy judges it), and the same kind (bracketed IPv6, dotted-quad IPv4, or a name).
fn judged_host_matches(judged: &Host<&str>, hostname: &str) -> bool {
    let (want, kind_ok) = match judged {
        Host::Domain(_) => (
            hostname.strip_suffix('.').unwrap_or(hostname),
            !hostname.starts_with('[') && hostname.parse::<Ipv4Addr>().is_err(),
        ),
        Host::Ipv4(_) => (hostname, hostname.parse::<Ipv4Addr>().is_ok()),
        Host::Ipv6(_) => (
            hostname,
            hostname.starts_with('[') && hostname.ends_with(']'),
        ),
    };
    kind_ok && judged.to_string() == want
}

#[test]
fn wpt_urltestdata() {
    let dir = url_crate_dir();
    let read = |name: &str| {
        let path = dir.join("tests").join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let expected_failures_text = read("expected_failures.txt");
    let expected_failures: HashSet<&str> = expected_failures_text.lines().collect();
    let data: Vec<Value> =
        serde_json::from_str(&read("urltestdata.json")).expect("urltestdata.json");

    let mut errors = Vec::new();
    let (mut ran, mut skipped, mut hosts, mut https, mut canonicals) = (0, 0, 0, 0, 0);
    // Strings in the array are comments.
    for entry in data.iter().filter(|v| v.is_object()) {
        let input = entry["input"].as_str().expect("input");
        let base = entry["base"].as_str();
        let name = case_name(input, base);
        if expected_failures.contains(name.as_str()) {
            skipped += 1;
            continue;
        }
        ran += 1;
        let base = base.map(|b| Url::parse(b).unwrap_or_else(|e| panic!("{name}: base: {e}")));
        let parsed = Url::options().base_url(base.as_ref()).parse(input);
        if entry["failure"] == true {
            if let Ok(url) = parsed {
                errors.push(format!("{name}: expected failure, parsed as {url}"));
            }
            continue;
        }
        let url = match parsed {
            Ok(url) => url,
            Err(e) => {
                errors.push(format!("{name}: expected success, got {e}"));
                continue;
            }
        };
        let (href, hostname) = (entry["href"].as_str(), entry["hostname"].as_str());
        if Some(url.as_str()) != href {
            errors.push(format!(
                "{name}: href {:?}, expected {href:?}",
                url.as_str()
            ));
        }
        let actual_hostname = url::quirks::hostname(&url);
        if Some(actual_hostname) != hostname {
            errors.push(format!(
                "{name}: hostname {actual_hostname:?}, expected {hostname:?}"
            ));
        }
        let hostname = hostname.unwrap_or_default();

        // The point: the host the policy judges. Every special scheme but file: shares https:'s
        // host parser, so all of them are evidence.
        if matches!(url.scheme(), "https" | "http" | "wss" | "ws" | "ftp") {
            hosts += 1;
            https += usize::from(url.scheme() == "https");
            match canonical_host(&url) {
                Some(judged) if judged_host_matches(&judged, hostname) => {}
                judged => errors.push(format!(
                    "{name}: judged host {judged:?}, WPT hostname {hostname:?}"
                )),
            }
        }
        // An absolute https: input: the verdict's canonical form is WPT's href, and userinfo,
        // however WHATWG spells it, is never accepted.
        if base.is_none() && url.scheme() == "https" {
            let verdict = check_media_url(input);
            if let Some(canonical) = &verdict.canonical {
                canonicals += 1;
                if Some(canonical.as_str()) != href {
                    errors.push(format!(
                        "{name}: canonical {canonical:?}, expected {href:?}"
                    ));
                }
            }
            let has_userinfo = entry["username"] != "" || entry["password"] != "";
            if has_userinfo && verdict.allowed {
                errors.push(format!("{name}: userinfo accepted: {verdict:?}"));
            }
        }
    }

    assert!(
        errors.is_empty(),
        "{} WPT mismatches:\n{}",
        errors.len(),
        errors.join("\n")
    );
    assert!(skipped <= expected_failures.len());
    // Guard against a vacuous pass (wrong file, filter gone wrong).
    assert!(ran >= 700, "only {ran} WPT URL cases ran");
    assert!(hosts >= 200, "only {hosts} hosts compared");
    assert!(https >= 20, "only {https} https: hosts compared");
    assert!(
        canonicals >= 10,
        "only {canonicals} canonical forms compared"
    );
    println!(
        "{ran} WPT URL cases ({skipped} expected failures skipped), {hosts} hosts, {https} https:, {canonicals} canonical forms"
    );
}
