//! Real processes: `mock-providers mcp --result FILE` over pipes, and the official MCP TypeScript SDK client
//! (`@modelcontextprotocol/sdk`, pinned below) over stdio and over Streamable HTTP.
//!
//! The SDK is installed once into `<target>/npm-mcp-client/` and reused. Without `node` and `npm`
//! on PATH the SDK tests print why and pass; CI installs node.

use std::ffi::OsStr;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use mock_providers::mcp_server::{McpServer, handle_message, serve_http};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt as _;

const SDK_VERSION: &str = "1.32.2";

// CallToolResults shown to the SDK client; the bad block is always second, after a valid text.
const VALID: &str = r#"{"content":[{"type":"text","text":"ok"},{"type":"image","data":"iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==","mimeType":"image/png"},{"type":"resource_link","uri":"file:///srv/r.docx","name":"r.docx"}],"isError":false}"#;
const IMAGE_WITHOUT_DATA: &str = r#"{"content":[{"type":"text","text":"ok"},{"type":"image","mimeType":"image/png"}],"isError":false}"#;
const UNKNOWN_BLOCK: &str =
    r#"{"content":[{"type":"text","text":"ok"},{"type":"widget","payload":"x"}]}"#;
const NOT_AN_OBJECT: &str = r#""a bare string""#;

fn result_file(result: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), result).unwrap();
    file
}

/// The crate's own binary; its `mcp --result FILE` subcommand serves the file over stdio.
fn server_binary() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_mock-providers"))
}

/// The client script's arguments for a stdio session with the server serving `file`.
fn stdio_client_args(file: &tempfile::NamedTempFile) -> [&OsStr; 5] {
    [
        OsStr::new("stdio"),
        server_binary().as_os_str(),
        OsStr::new("mcp"),
        OsStr::new("--result"),
        file.path().as_os_str(),
    ]
}

/// Runs `command` to completion, killing it if it takes longer than `limit`.
async fn finish(
    mut command: tokio::process::Command,
    stdin: &[u8],
    limit: Duration,
) -> std::process::Output {
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawning");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).await.unwrap();
    drop(input);
    tokio::time::timeout(limit, child.wait_with_output())
        .await
        .expect("the process did not finish in time")
        .unwrap()
}

#[tokio::test]
async fn stdio_server_answers_line_by_line_until_stdin_closes() {
    let file = result_file(IMAGE_WITHOUT_DATA);
    let lines: [&[u8]; 11] = [
        br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26"}}"#,
        br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        b"   ",
        br#"{"jsonrpc":"2.0","id":"l","method":"tools/list"}"#,
        b"garbage",
        b"{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"p\xffng\"}",
        br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mock_tool","arguments":{}}}"#,
        br#"[{"jsonrpc":"2.0","id":4,"method":"ping"},{"jsonrpc":"2.0","method":"x"}]"#,
        br#"{"jsonrpc":"2.0","id":5,"method":"nope"}"#,
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\r",
        // No final newline: still a message once stdin closes.
        br#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#,
    ];
    let mut command = tokio::process::Command::new(server_binary());
    command.args([
        OsStr::new("mcp"),
        OsStr::new("--result"),
        file.path().as_os_str(),
    ]);
    let output = finish(command, &lines.join(&b'\n'), Duration::from_secs(20)).await;
    assert!(output.status.success(), "{output:?}");

    // The transport must be a faithful pipe to handle_message, one reply line per answered line.
    let reference = McpServer::new(serde_json::from_str(IMAGE_WITHOUT_DATA).unwrap());
    let expected: String = lines
        .iter()
        .filter(|line| !line.trim_ascii().is_empty())
        .filter_map(|line| handle_message(&reference, line))
        .map(|reply| reply + "\n")
        .collect();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert_eq!(stdout, expected);
    assert_eq!(stdout.lines().count(), 9);
    let call = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{IMAGE_WITHOUT_DATA}}}"#);
    assert!(stdout.lines().any(|line| line == call), "{stdout}");
    assert!(
        output.stderr.is_empty(),
        "stdio logs nothing in normal operation"
    );
}

#[tokio::test]
async fn stdio_server_exits_cleanly_on_immediate_eof() {
    let file = result_file("{}");
    let mut command = tokio::process::Command::new(server_binary());
    command.args([
        OsStr::new("mcp"),
        OsStr::new("--result"),
        file.path().as_os_str(),
    ]);
    let output = finish(command, b"", Duration::from_secs(20)).await;
    assert!(
        output.status.success() && output.stdout.is_empty(),
        "{output:?}"
    );
}

/// The folder holding the pinned SDK and the client script, or `None` (with the reason printed)
/// when node or npm is missing.
fn sdk_dir() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| {
        for tool in ["node", "npm"] {
            if Command::new(tool).arg("--version").output().is_err() {
                eprintln!("SKIPPED: `{tool}` is not on PATH; the MCP TypeScript SDK client tests need Node and npm");
                return None;
            }
        }
        // <target>/<profile>/deps/<this test> → <target>/npm-mcp-client
        let exe = std::env::current_exe().unwrap();
        let dir = exe.ancestors().nth(3).unwrap().join("npm-mcp-client");
        std::fs::create_dir_all(&dir).unwrap();
        let installed = std::fs::read_to_string(dir.join("node_modules/@modelcontextprotocol/sdk/package.json"))
            .ok()
            .and_then(|text| serde_json::from_str::<Value>(&text).ok());
        if installed.as_ref().map(|p| &p["version"]) != Some(&json!(SDK_VERSION)) {
            let manifest = json!({"private": true, "dependencies": {"@modelcontextprotocol/sdk": SDK_VERSION}});
            std::fs::write(dir.join("package.json"), manifest.to_string()).unwrap();
            let npm = Command::new("npm")
                .args(["install", "--no-audit", "--no-fund"])
                .current_dir(&dir)
                .output()
                .unwrap();
            assert!(npm.status.success(), "npm install failed: {}", String::from_utf8_lossy(&npm.stderr));
        }
        // Node resolves the SDK from the script's own folder, so the script runs from there.
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/mcp_client.mjs");
        std::fs::copy(script, dir.join("mcp_client.mjs")).unwrap();
        Some(dir)
    })
    .as_deref()
}

/// Runs the SDK client script with `args` and returns its report.
async fn sdk_client(dir: &Path, args: &[&OsStr]) -> Value {
    let mut command = tokio::process::Command::new("node");
    command
        .arg(dir.join("mcp_client.mjs"))
        .args(args)
        .current_dir(dir);
    let output = finish(command, b"", Duration::from_secs(60)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "the SDK client failed: {stderr}");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{e}: {output:?}"))
}

/// What the SDK 1.32.2 client does with each result, common to both transports.
fn assert_sdk_outcome(label: &str, result: &str, report: &Value) {
    let result: Value = serde_json::from_str(result).unwrap();
    assert_eq!(
        report["serverVersion"]["name"], "normfuzz-mock-mcp",
        "{label}"
    );
    assert_eq!(report["tools"][0]["name"], "mock_tool", "{label}");
    let call = &report["call"];
    match label {
        "valid" => {
            assert_eq!(call["ok"], result, "{label}: {report}");
            assert_eq!(report["callResponse"]["result"], result, "{label}");
        }
        // The transport delivers our message untouched, then callTool's zod validation of
        // CallToolResult rejects the whole result over the one bad block (index 1): the text
        // sibling is lost too.
        "image without data" | "unknown block type" => {
            assert_eq!(report["callResponse"]["result"], result, "{label}");
            assert!(call["ok"].is_null(), "{label}: {report}");
            assert!(
                call["error"]["name"]
                    .as_str()
                    .is_some_and(|n| n.contains("ZodError")),
                "{label}: {report}"
            );
            let issues: Vec<_> = call["error"]["issues"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|i| (&i["code"], &i["path"]))
                .collect();
            assert_eq!(
                issues,
                [(&json!("invalid_union"), &json!(["content", 1]))],
                "{label}: {report}"
            );
            assert_eq!(report["transportErrors"], json!([]), "{label}");
        }
        other => unreachable!("no expectation for {other}"),
    }
}

fn assert_not_an_object_is_dropped(report: &Value) {
    assert_eq!(report["callResponse"], Value::Null, "{report}");
    assert!(report["call"]["ok"].is_null(), "{report}");
    let errors = report["transportErrors"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default();
    let expected = "Invalid input: expected object, received string";
    assert!(
        errors
            .iter()
            .any(|e| e.as_str().is_some_and(|e| e.contains(expected))),
        "{report}"
    );
}

/// (label, CallToolResult) pairs whose outcome is the same over both transports.
const CASES: [(&str, &str); 3] = [
    ("valid", VALID),
    ("image without data", IMAGE_WITHOUT_DATA),
    ("unknown block type", UNKNOWN_BLOCK),
];

#[tokio::test]
async fn sdk_client_over_stdio() {
    let Some(dir) = sdk_dir() else { return };
    for (label, result) in CASES {
        let file = result_file(result);
        let args = stdio_client_args(&file);
        let report = sdk_client(dir, &args).await;
        assert_sdk_outcome(label, result, &report);
    }
    // A result that is not an object fails the transport's JSON-RPC message schema: the reply is
    // dropped as a transport error and callTool() waits for its timeout (3 s here, 60 s by default).
    let file = result_file(NOT_AN_OBJECT);
    let args = stdio_client_args(&file);
    let report = sdk_client(dir, &args).await;
    assert_not_an_object_is_dropped(&report);
    assert_eq!(report["call"]["error"]["code"], -32001, "{report}");
    assert_eq!(
        report["call"]["error"]["message"],
        "MCP error -32001: Request timed out"
    );
}

#[tokio::test]
async fn sdk_client_over_streamable_http() {
    let Some(dir) = sdk_dir() else { return };
    for (label, result) in CASES {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let server = serve_http(addr, serde_json::from_str(result).unwrap())
            .await
            .unwrap();
        let report = sdk_client(dir, &[OsStr::new("http"), OsStr::new(&server.url())]).await;
        assert_sdk_outcome(label, result, &report);
        let session = report["sessionId"].as_str().unwrap_or_default();
        assert!(
            session.len() == 32 && session.bytes().all(|b| b.is_ascii_hexdigit()),
            "{report}"
        );
        // terminateSession() sent DELETE and the server accepted it.
        assert_eq!(report["sessionAfterTerminate"], Value::Null);
        server.shutdown().await.unwrap();
    }
    // Over HTTP the same schema failure rejects the POST that carried the request, so callTool()
    // fails at once with the transport's ZodError instead of timing out.
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let server = serve_http(addr, serde_json::from_str(NOT_AN_OBJECT).unwrap())
        .await
        .unwrap();
    let report = sdk_client(dir, &[OsStr::new("http"), OsStr::new(&server.url())]).await;
    assert_not_an_object_is_dropped(&report);
    let error = &report["call"]["error"];
    assert!(
        error["name"]
            .as_str()
            .is_some_and(|n| n.contains("ZodError")),
        "{report}"
    );
    assert_eq!(error["issues"][0]["code"], "invalid_union", "{report}");
    assert_eq!(error["issues"][0]["path"], json!([]), "{report}");
    server.shutdown().await.unwrap();
}
