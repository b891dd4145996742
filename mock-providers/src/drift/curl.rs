//! The real APIs are reached through `curl`: the one HTTP client the drift check needs, with its
//! retries on rate limits and overload.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use mock_providers::Verdict;
use serde_json::Value;

/// Statuses worth a second try unless they are the expected answer: rate limits and overload.
const RETRIED: [u16; 5] = [429, 500, 502, 503, 529];

/// HTTP through the `curl` binary; request bodies pass through a file in a private temporary
/// folder (they can be megabytes, too long for a command line).
pub(super) struct Curl {
    dir: PathBuf,
    timeout: Duration,
}

impl Curl {
    pub(super) fn new(timeout: Duration) -> Result<Curl, String> {
        match Command::new("curl").arg("--version").output() {
            Ok(o) if o.status.success() => {}
            Ok(o) => return Err(format!("`curl --version` failed: {}", o.status)),
            Err(e) => return Err(format!("drift sends its requests with curl: {e}")),
        }
        let dir = std::env::temp_dir().join(format!("mock-providers-drift-{}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        Ok(Curl { dir, timeout })
    }

    pub(super) fn post_retrying(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
        expected: Option<u16>,
    ) -> Result<(u16, Option<String>), String> {
        let mut wait = Duration::from_secs(2);
        loop {
            let got = self.post(url, headers, body)?;
            if !RETRIED.contains(&got.0) || Some(got.0) == expected || wait > Duration::from_secs(8)
            {
                return Ok(got);
            }
            std::thread::sleep(wait);
            wait *= 2;
        }
    }

    /// Status and error message (from the API's envelope, or the start of a body that is not
    /// JSON; none for a 2xx).
    fn post(
        &self,
        url: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> Result<(u16, Option<String>), String> {
        let file = self.dir.join("body.json");
        std::fs::write(&file, serde_json::to_vec(body).unwrap_or_default())
            .map_err(|e| format!("writing {}: {e}", file.display()))?;
        // curl's config syntax: a quoted string takes backslash escapes.
        let quote = |s: &str| {
            format!(
                "\"{}\"",
                s.replace('\\', "\\\\")
                    .replace('"', "\\\"")
                    .replace('\n', "\\n")
                    .replace('\r', "\\r")
            )
        };
        let mut config = format!("url = {}\n", quote(url));
        for (name, value) in [("content-type", "application/json")]
            .into_iter()
            .chain(headers.iter().map(|(n, v)| (n.as_str(), v.as_str())))
        {
            let _ = writeln!(config, "header = {}", quote(&format!("{name}: {value}")));
        }
        let mut child = Command::new("curl")
            // `-q` first: no ~/.curlrc, the same requests everywhere.
            .args(["-q", "--silent", "--show-error", "--proto", "=http,https"])
            .args(["--config", "-", "--request", "POST", "--output", "-"])
            .args(["--write-out", "\n%{http_code}", "--max-time"])
            .arg(self.timeout.as_secs().max(1).to_string())
            .arg("--data-binary")
            .arg(format!("@{}", file.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("running curl: {e}"))?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin
                .write_all(config.as_bytes())
                .map_err(|e| format!("writing to curl: {e}"))?;
        }
        let out = child
            .wait_with_output()
            .map_err(|e| format!("running curl: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        let status: u16 = code
            .trim()
            .parse()
            .map_err(|_| format!("curl wrote no status: {code:?}"))?;
        if (200..300).contains(&status) {
            return Ok((status, None));
        }
        let message = match serde_json::from_str::<Value>(body) {
            // The envelopes keep the message where the mock's do: the same reader.
            Ok(body) => Verdict::Rejected {
                status,
                body,
                headers: Vec::new(),
            }
            .message()
            .map(str::to_string),
            Err(_) => Some(body.chars().take(300).collect()),
        };
        Ok((status, message))
    }
}

impl Drop for Curl {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
