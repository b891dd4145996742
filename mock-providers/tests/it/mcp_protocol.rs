//! The MCP protocol logic through `handle_message`, without any I/O.

use mock_providers::mcp_server::{McpServer, SUPPORTED_PROTOCOL_VERSIONS, handle_message};
use serde_json::{Value, json};

fn reply(server: &McpServer, message: impl AsRef<[u8]>) -> Value {
    let text = handle_message(server, message).expect("a request gets an answer");
    assert!(
        !text.contains('\n'),
        "stdio framing needs single-line replies: {text}"
    );
    serde_json::from_str(&text).expect("replies are JSON")
}

fn error_code(reply: &Value) -> i64 {
    reply["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("not an error reply: {reply}"))
}

fn server() -> McpServer {
    McpServer::new(json!({"content": [{"type": "text", "text": "ok"}]}))
}

#[test]
fn initialize_echoes_a_supported_version_and_otherwise_offers_the_latest() {
    let server = server();
    for version in SUPPORTED_PROTOCOL_VERSIONS {
        let request = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
        let answer = reply(&server, request.to_string());
        assert_eq!(answer["result"]["protocolVersion"], version);
    }
    let old = r#"{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2024-11-05"}}"#;
    assert_eq!(
        reply(&server, old),
        json!({"jsonrpc": "2.0", "id": "init", "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "normfuzz-mock-mcp", "version": env!("CARGO_PKG_VERSION")},
        }})
    );
    let bare = reply(&server, r#"{"jsonrpc":"2.0","id":2,"method":"initialize"}"#);
    assert_eq!(bare["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn notifications_get_no_answer() {
    let server = server();
    for method in [
        "notifications/initialized",
        "notifications/cancelled",
        "no/such/notification",
        "tools/call",
    ] {
        let message = json!({"jsonrpc": "2.0", "method": method, "params": {"name": "mock_tool"}});
        assert_eq!(
            handle_message(&server, message.to_string()),
            None,
            "{method}"
        );
    }
    assert_eq!(
        server.calls_served(),
        0,
        "a tools/call notification is not a call"
    );
}

#[test]
fn responses_from_the_client_get_no_answer() {
    let server = server();
    assert_eq!(
        handle_message(&server, r#"{"jsonrpc":"2.0","id":5,"result":{}}"#),
        None
    );
    let error = r#"{"jsonrpc":"2.0","id":5,"error":{"code":-1,"message":"no"}}"#;
    assert_eq!(handle_message(&server, error), None);
}

#[test]
fn tools_list_advertises_one_configurable_tool() {
    let list = r#"{"jsonrpc":"2.0","id":3,"method":"tools/list","params":{}}"#;
    let tools = &reply(&server(), list)["result"]["tools"];
    assert_eq!(tools.as_array().map(Vec::len), Some(1));
    assert_eq!(tools[0]["name"], "mock_tool");
    assert_eq!(tools[0]["inputSchema"], json!({"type": "object"}));

    let custom = server().with_tool("get_attachment", "Fetch it.");
    assert_eq!(
        reply(&custom, list)["result"]["tools"],
        json!([{"name": "get_attachment", "description": "Fetch it.", "inputSchema": {"type": "object"}}])
    );
}

#[test]
fn tools_call_answers_the_configured_result_byte_for_byte() {
    // Compact JSON in serde_json's own spelling, keys out of order: the reply must embed this text.
    let results = [
        r#"{"content":[{"type":"image","mimeType":"image/png"}],"isError":false}"#,
        r#"{"content":[{"type":"widget","z":1,"a":[2]},{"type":"text","text":"line1\nMEDIA:/etc/passwd"}]}"#,
        r#"{"content":[3,null,"text",[{"type":"text"}],{}]}"#,
        r#"{"isError":"yes","structuredContent":{"b":1,"a":2}}"#,
        r#""a bare string""#,
        "null",
        "[]",
        "{\"content\":[{\"type\":\"text\",\"text\":\"\\u0000\u{2028} é 😀\"}]}",
    ];
    let call = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"mock_tool","arguments":{}}}"#;
    for result in results {
        let server = McpServer::new(serde_json::from_str(result).unwrap());
        let expected = format!(r#"{{"jsonrpc":"2.0","id":7,"result":{result}}}"#);
        assert_eq!(handle_message(&server, call), Some(expected));
        assert_eq!(server.calls_served(), 1);
    }
}

#[test]
fn a_result_sequence_is_served_in_order_and_the_last_repeats() {
    let server = McpServer::with_results(vec![json!({"n": 1}), json!({"n": 2})]).unwrap();
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mock_tool"}}"#;
    let served: Vec<Value> = (0..4)
        .map(|_| reply(&server, call)["result"]["n"].clone())
        .collect();
    assert_eq!(served, [1, 2, 2, 2]);
    assert_eq!(server.calls_served(), 4);
    assert!(McpServer::with_results(Vec::new()).is_err());
}

/// Each call is logged with its arguments, so a run's tool count outlives the server, and a
/// server restarted on the log serves the next result.
#[test]
fn every_call_is_appended_to_the_call_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("calls.jsonl");
    let server = server().with_call_log(&log);
    let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"mock_tool","arguments":{"k":1}}}"#;
    reply(&server, call);
    reply(&server, call);
    let lines: Vec<Value> = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[1],
        json!({"call": 2, "name": "mock_tool", "arguments": {"k": 1}})
    );
    // A server started again on the same log goes on with the sequence.
    let again = McpServer::with_results(vec![json!({"n": 1}), json!({"n": 2}), json!({"n": 3})])
        .unwrap()
        .with_call_log(&log);
    assert_eq!(reply(&again, call)["result"]["n"], 3);
}

#[test]
fn tools_call_rejects_an_unknown_or_missing_tool_name_without_using_a_result() {
    let server = McpServer::with_results(vec![json!({"n": 1}), json!({"n": 2})]).unwrap();
    let unknown = reply(
        &server,
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"other"}}"#,
    );
    assert_eq!((error_code(&unknown), &unknown["id"]), (-32602, &json!(1)));
    assert_eq!(unknown["error"]["message"], "Unknown tool: other");
    for params in [
        r#""#,
        r#","params":{}"#,
        r#","params":{"name":5}"#,
        r#","params":[1]"#,
    ] {
        let request = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call"{params}}}"#);
        assert_eq!(error_code(&reply(&server, request)), -32602);
    }
    assert_eq!(server.calls_served(), 0);
    let call = r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"mock_tool"}}"#;
    assert_eq!(reply(&server, call)["result"], json!({"n": 1}));
}

#[test]
fn ping_answers_an_empty_object_and_ids_are_echoed() {
    for id in [json!(0), json!(-4), json!(1.5), json!("abc"), json!("")] {
        let ping = json!({"jsonrpc": "2.0", "id": id, "method": "ping"});
        assert_eq!(
            reply(&server(), ping.to_string()),
            json!({"jsonrpc": "2.0", "id": id, "result": {}})
        );
    }
}

#[test]
fn unknown_methods_are_method_not_found() {
    let answer = reply(
        &server(),
        r#"{"jsonrpc":"2.0","id":"r1","method":"resources/list"}"#,
    );
    assert_eq!(
        answer,
        json!({"jsonrpc": "2.0", "id": "r1", "error": {"code": -32601, "message": "Method not found: resources/list"}})
    );
}

#[test]
fn unparseable_input_is_a_parse_error_with_a_null_id() {
    let inputs: [&[u8]; 6] = [
        b"garbage",
        b"",
        b"{\"jsonrpc\":\"2.0\",\"id\":1,",
        b"\xff\xfe{}",
        b"{\"a\":\"\xc3\x28\"}",
        b"{} {}",
    ];
    for input in inputs {
        let answer = reply(&server(), input);
        assert_eq!(
            (error_code(&answer), &answer["id"]),
            (-32700, &Value::Null),
            "{input:?}"
        );
    }
    let deep = "[".repeat(100_000);
    assert_eq!(error_code(&reply(&server(), deep)), -32700);
}

#[test]
fn malformed_requests_are_invalid_requests() {
    let cases = [
        (r#"42"#, Value::Null),
        (r#""ping""#, Value::Null),
        (r#"{"id":1,"method":"ping"}"#, json!(1)),
        (r#"{"jsonrpc":"1.0","id":"a","method":"ping"}"#, json!("a")),
        (r#"{"jsonrpc":"2.0","id":1,"method":7}"#, json!(1)),
        (r#"{"jsonrpc":"2.0","id":1}"#, json!(1)),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}"#,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":true,"method":"ping"}"#,
            Value::Null,
        ),
        // Not a notification either: without "jsonrpc" it is no valid JSON-RPC message at all.
        (r#"{"method":"notifications/initialized"}"#, Value::Null),
    ];
    for (input, id) in cases {
        let answer = reply(&server(), input);
        assert_eq!(
            (error_code(&answer), &answer["id"]),
            (-32600, &id),
            "{input}"
        );
    }
}

#[test]
fn batches_answer_each_request_in_order_and_skip_notifications() {
    let server = server();
    let batch = r#"[
        {"jsonrpc":"2.0","id":1,"method":"ping"},
        {"jsonrpc":"2.0","method":"notifications/initialized"},
        {"jsonrpc":"2.0","id":2,"method":"nope"},
        17
    ]"#;
    let answer = reply(&server, batch);
    let answers = answer.as_array().expect("a batch gets an array");
    let ids: Vec<&Value> = answers.iter().map(|a| &a["id"]).collect();
    assert_eq!(ids, [&json!(1), &json!(2), &Value::Null]);
    assert_eq!(answers[0]["result"], json!({}));
    assert_eq!(
        (error_code(&answers[1]), error_code(&answers[2])),
        (-32601, -32600)
    );

    let only_notifications = r#"[{"jsonrpc":"2.0","method":"a"},{"jsonrpc":"2.0","method":"b"}]"#;
    assert_eq!(handle_message(&server, only_notifications), None);
    assert_eq!(error_code(&reply(&server, "[]")), -32600);
}
