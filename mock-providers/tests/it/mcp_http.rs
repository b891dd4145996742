//! The Streamable HTTP transport end to end, with a plain HTTP client on 127.0.0.1.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use mock_providers::mcp_server::{McpHttpHandle, serve_http};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}"#;
const CALL: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"mock_tool","arguments":{}}}"#;
const MALFORMED_RESULT: &str =
    r#"{"content":[{"type":"image","mimeType":"image/png"},{"type":"widget"},7],"isError":false}"#;

async fn start() -> McpHttpHandle {
    let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    serve_http(addr, serde_json::from_str(MALFORMED_RESULT).unwrap())
        .await
        .unwrap()
}

fn client() -> reqwest::Client {
    // no_proxy: a proxy from the environment must not intercept loopback traffic.
    reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

impl Reply {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }

    fn session(&self) -> String {
        let id = self.headers.get("mcp-session-id").expect("a session id");
        id.to_str().unwrap().to_owned()
    }
}

/// Sends `body` as a client following the spec would, with `extra` headers added or overriding.
async fn send(
    method: Method,
    url: &str,
    session: Option<&str>,
    extra: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut headers = HeaderMap::new();
    let defaults = [
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
    ];
    let session = session.map(|id| ("mcp-session-id", id));
    for (name, value) in defaults.iter().chain(&session).chain(extra) {
        let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
        headers.insert(name, HeaderValue::from_str(value).unwrap());
    }
    let request = client().request(method, url).headers(headers);
    let response = request.body(body.to_owned()).send().await.unwrap();
    let (status, headers) = (response.status(), response.headers().clone());
    Reply {
        status,
        headers,
        body: response.text().await.unwrap(),
    }
}

async fn post(url: &str, session: Option<&str>, body: &str) -> Reply {
    send(Method::POST, url, session, &[], body).await
}

async fn initialize(url: &str) -> String {
    let reply = post(url, None, INITIALIZE).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply.session()
}

#[tokio::test]
async fn a_session_initializes_lists_calls_and_ends() {
    let server = start().await;
    let url = server.url();
    assert_eq!(
        url,
        format!("http://127.0.0.1:{}/mcp", server.local_addr().port())
    );

    let init = post(&url, None, INITIALIZE).await;
    assert_eq!(init.status, StatusCode::OK);
    assert_eq!(init.headers[CONTENT_TYPE], "application/json");
    assert_eq!(init.json()["result"]["protocolVersion"], "2025-06-18");
    let session = init.session();
    assert!(
        session.len() >= 16 && session.bytes().all(|b| b.is_ascii_graphic()),
        "{session}"
    );

    let initialized = post(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
    )
    .await;
    assert_eq!(
        (initialized.status, initialized.body.as_str()),
        (StatusCode::ACCEPTED, "")
    );

    let version = [("mcp-protocol-version", "2025-06-18")];
    let list = send(
        Method::POST,
        &url,
        Some(&session),
        &version,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
    )
    .await;
    assert_eq!(list.json()["result"]["tools"][0]["name"], "mock_tool");

    let call = post(&url, Some(&session), CALL).await;
    assert_eq!(call.status, StatusCode::OK);
    assert_eq!(
        call.body,
        format!(r#"{{"jsonrpc":"2.0","id":2,"result":{MALFORMED_RESULT}}}"#)
    );

    let ping = post(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
    )
    .await;
    assert_eq!(
        ping.json(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}})
    );

    let delete = send(Method::DELETE, &url, Some(&session), &[], "").await;
    assert_eq!(delete.status, StatusCode::OK);
    assert_eq!(
        post(&url, Some(&session), CALL).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(Method::DELETE, &url, Some(&session), &[], "")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn requests_after_initialize_need_a_known_session() {
    let server = start().await;
    let url = server.url();
    let missing = post(&url, None, CALL).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.json()["error"]["code"], -32000);
    assert_eq!(
        post(&url, Some("not-a-session"), CALL).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        send(Method::DELETE, &url, None, &[], "").await.status,
        StatusCode::BAD_REQUEST
    );

    let (first, second) = (initialize(&url).await, initialize(&url).await);
    assert_ne!(first, second);
    assert_eq!(
        send(Method::DELETE, &url, Some(&first), &[], "")
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        post(&url, Some(&first), CALL).await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(post(&url, Some(&second), CALL).await.status, StatusCode::OK);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn malformed_bodies_are_rejected_with_json_rpc_errors() {
    let server = start().await;
    let url = server.url();
    let session = initialize(&url).await;

    for body in ["not json", "", r#"{"jsonrpc":"2.0","id":1,"#] {
        let reply = post(&url, Some(&session), body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body:?}");
        assert_eq!(
            (&reply.json()["error"]["code"], &reply.json()["id"]),
            (&json!(-32700), &Value::Null)
        );
    }
    let invalid = post(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
    )
    .await;
    assert_eq!(
        (invalid.status, &invalid.json()["error"]["code"]),
        (StatusCode::BAD_REQUEST, &json!(-32600))
    );
    // A well-formed request for an unknown method is a JSON-RPC error, not an HTTP one.
    let unknown = post(
        &url,
        Some(&session),
        r#"{"jsonrpc":"2.0","id":9,"method":"nope"}"#,
    )
    .await;
    assert_eq!(
        (unknown.status, &unknown.json()["error"]["code"]),
        (StatusCode::OK, &json!(-32601))
    );
    // Neither is a malformed initialize, and it issues no session.
    let bad_init = post(
        &url,
        None,
        r#"{"jsonrpc":"1.0","id":1,"method":"initialize"}"#,
    )
    .await;
    assert_eq!(
        (bad_init.status, bad_init.headers.get("mcp-session-id")),
        (StatusCode::OK, None)
    );

    let too_large = post(&url, Some(&session), &" ".repeat(16 * 1024 * 1024 + 1)).await;
    assert_eq!(too_large.status, StatusCode::PAYLOAD_TOO_LARGE);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn http_level_checks_follow_the_transport_spec() {
    let server = start().await;
    let url = server.url();
    let session = initialize(&url).await;
    let s = Some(session.as_str());

    let get = send(Method::GET, &url, s, &[], "").await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(get.headers["allow"], "POST, DELETE");
    let elsewhere = url.replace("/mcp", "/other");
    assert_eq!(
        post(&elsewhere, s, CALL).await.status,
        StatusCode::NOT_FOUND
    );

    let status = |extra: &'static [(&'static str, &'static str)]| {
        let (url, session) = (url.clone(), session.clone());
        async move {
            send(Method::POST, &url, Some(&session), extra, CALL)
                .await
                .status
        }
    };
    assert_eq!(
        status(&[("origin", "https://evil.example")]).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(&[("origin", "http://localhost.evil.example")]).await,
        StatusCode::FORBIDDEN
    );
    assert_eq!(
        status(&[("origin", "http://localhost:5173")]).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&[("origin", "http://[::1]:80")]).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&[("content-type", "text/plain")]).await,
        StatusCode::UNSUPPORTED_MEDIA_TYPE
    );
    assert_eq!(
        status(&[("content-type", "application/json; charset=utf-8")]).await,
        StatusCode::OK
    );
    assert_eq!(
        status(&[("accept", "text/html")]).await,
        StatusCode::NOT_ACCEPTABLE
    );
    assert_eq!(
        status(&[("mcp-protocol-version", "1999-01-01")]).await,
        StatusCode::BAD_REQUEST
    );
    assert_eq!(
        status(&[("mcp-protocol-version", "2025-11-25")]).await,
        StatusCode::OK
    );

    let sse = send(
        Method::POST,
        &url,
        s,
        &[("accept", "text/event-stream")],
        CALL,
    )
    .await;
    assert_eq!(sse.status, StatusCode::OK);
    assert_eq!(sse.headers[CONTENT_TYPE], "text/event-stream");
    let expected = format!(
        "event: message\ndata: {{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{MALFORMED_RESULT}}}\n\n"
    );
    assert_eq!(sse.body, expected);
    server.shutdown().await.unwrap();
}

#[tokio::test]
async fn shutdown_closes_idle_keep_alive_connections_promptly() {
    let server = start().await;
    let url = server.url();
    // One client, so its pooled keep-alive connection stays open and idle after this exchange.
    let client = client();
    let alive = client
        .post(&url)
        .header(CONTENT_TYPE, "application/json")
        .body(INITIALIZE)
        .send()
        .await
        .unwrap();
    assert_eq!(alive.status(), StatusCode::OK);
    alive.bytes().await.unwrap();

    // Well under the 5 s grace period: idle connections must not hold shutdown up.
    tokio::time::timeout(Duration::from_secs(2), server.shutdown())
        .await
        .unwrap()
        .unwrap();
    let after = client.post(&url).body(INITIALIZE).send().await;
    assert!(
        after.is_err(),
        "the server still answers after shutdown: {after:?}"
    );
}
