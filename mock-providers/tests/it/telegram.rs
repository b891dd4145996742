//! The mock Telegram Bot API over real HTTP on 127.0.0.1: each modeled refusal, uploads captured
//! byte for byte, getUpdates and its offsets, the four parameter encodings, a long poll that does
//! not hold up other calls, and files named by URL never fetched.

use std::time::{Duration, Instant};

use mock_providers::channels::telegram::{LONG_POLL_CAP, Setup};
use mock_providers::server::{Config, MockProviders};
use serde_json::{Value, json};

const TOKEN: &str = "123456789:test-token";
const USER: i64 = 4242;

async fn start(message: &str, capture: Option<std::path::PathBuf>) -> MockProviders {
    MockProviders::start(Config {
        capture,
        telegram: Some(Setup {
            token: TOKEN.into(),
            user_id: USER,
            message: message.into(),
            ..Setup::default()
        }),
        ..Config::default()
    })
    .await
    .unwrap()
}

fn url(server: &MockProviders, method: &str) -> String {
    format!(
        "{}/bot{TOKEN}/{method}",
        server.telegram_api_root().unwrap()
    )
}

/// (HTTP status, answer) of a JSON call.
async fn call(server: &MockProviders, method: &str, params: Value) -> (u16, Value) {
    let r = reqwest::Client::new()
        .post(url(server, method))
        .json(&params)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

/// A multipart body as grammY writes it: values, then files under `attach://` names with an
/// unquoted `filename=`.
fn multipart(values: &[(&str, &str)], files: &[(&str, &str, &[u8])]) -> (String, Vec<u8>) {
    let boundary = "----------normfuzzboundary0123456789";
    let mut body = Vec::new();
    for (name, value) in values {
        body.extend(
            format!(
                "--{boundary}\r\ncontent-disposition:form-data;name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    for (name, file_name, bytes) in files {
        body.extend(format!("--{boundary}\r\ncontent-disposition:form-data;name=\"{name}\";filename={file_name}\r\ncontent-type:application/octet-stream\r\n\r\n").as_bytes());
        body.extend(*bytes);
        body.extend(b"\r\n");
    }
    body.extend(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

async fn upload(
    server: &MockProviders,
    method: &str,
    values: &[(&str, &str)],
    files: &[(&str, &str, &[u8])],
) -> (u16, Value) {
    let (content_type, body) = multipart(values, files);
    let r = reqwest::Client::new()
        .post(url(server, method))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    (r.status().as_u16(), r.json().await.unwrap())
}

fn png(w: u32, h: u32) -> Vec<u8> {
    crate::common::png(w, h)
}

/// The channel's capture records, in order.
fn calls(server: &MockProviders) -> Vec<Value> {
    server
        .requests()
        .into_iter()
        .filter(|r| r["channel"] == "telegram")
        .collect()
}

/// The answers that differ from the real API's, all of them, so one run names every broken rule.
#[derive(Default)]
struct Misses(Vec<String>);

impl Misses {
    fn refused(&mut self, answer: &(u16, Value), code: u16, description: &str) {
        let want = json!({"ok": false, "error_code": code, "description": description});
        if answer != &(code, want) {
            self.0.push(format!(
                "want {code} {description:?}, got {}",
                short(answer)
            ));
        }
    }

    fn accepted(&mut self, answer: &(u16, Value), what: &str) {
        if answer.0 != 200 {
            self.0
                .push(format!("{what}: want 200, got {}", short(answer)));
        }
    }
}

/// An answer's status and the start of its body.
fn short(answer: &(u16, Value)) -> String {
    let body: String = answer.1.to_string().chars().take(200).collect();
    format!("{} {body}", answer.0)
}

#[tokio::test]
async fn every_modeled_refusal_is_the_real_api_s() {
    let s = start("", None).await;
    let mut m = Misses::default();
    let chat = json!(USER);
    let text = |t: &str| json!({"chat_id": chat, "text": t});
    let html = |t: &str| json!({"chat_id": chat, "text": t, "parse_mode": "HTML"});
    m.refused(
        &call(&s, "sendMessage", text("")).await,
        400,
        "Bad Request: message text is empty",
    );
    m.refused(
        &call(&s, "sendMessage", text(" \n ")).await,
        400,
        "Bad Request: text must be non-empty",
    );
    m.refused(
        &call(&s, "sendMessage", html("<b> </b>")).await,
        400,
        "Bad Request: text must be non-empty",
    );
    m.refused(
        &call(&s, "sendMessage", json!({"text": "hi"})).await,
        400,
        "Bad Request: chat_id is empty",
    );
    m.refused(
        &call(&s, "sendMessage", json!({"chat_id": 7, "text": "hi"})).await,
        400,
        "Bad Request: chat not found",
    );
    // 4096 code points after parsing pass (astral ones too: TDLib counts code points), 4097 do not.
    m.accepted(
        &call(&s, "sendMessage", text(&"😀".repeat(4096))).await,
        "4096 astral code points",
    );
    let tagged = html(&format!("<b>{}</b>", "a".repeat(4096)));
    m.accepted(&call(&s, "sendMessage", tagged).await, "4096 after parsing");
    m.refused(
        &call(&s, "sendMessage", text(&"a".repeat(4097))).await,
        400,
        "Bad Request: message is too long",
    );
    m.refused(
        &call(&s, "sendMessage", text(&"a".repeat(40_000))).await,
        400,
        "Bad Request: text is too long",
    );
    m.refused(
        &call(&s, "sendMessage", html("<b>bold")).await,
        400,
        "Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"b\"",
    );
    m.refused(
        &call(&s, "sendMessage", html("line<br>next")).await,
        400,
        "Bad Request: can't parse entities: Unsupported start tag \"br\" at byte offset 4",
    );
    m.refused(
        &call(
            &s,
            "sendMessage",
            json!({"chat_id": chat, "text": "x", "parse_mode": "BBCode"}),
        )
        .await,
        400,
        "Bad Request: unsupported parse_mode",
    );
    let caption =
        |c: &str| json!({"chat_id": chat, "photo": "https://example.invalid/a.png", "caption": c});
    m.accepted(
        &call(&s, "sendPhoto", caption(&"c".repeat(1024))).await,
        "a 1024-character caption",
    );
    m.refused(
        &call(&s, "sendPhoto", caption(&"c".repeat(1025))).await,
        400,
        "Bad Request: message caption is too long",
    );
    m.refused(
        &call(&s, "sendPhoto", json!({"chat_id": chat})).await,
        400,
        "Bad Request: there is no photo in the request",
    );
    m.refused(
        &call(
            &s,
            "sendDocument",
            json!({"chat_id": chat, "document": "/etc/passwd"}),
        )
        .await,
        400,
        "Bad Request: wrong file identifier/HTTP URL specified",
    );
    let chat_s = USER.to_string();
    let values = [("chat_id", chat_s.as_str()), ("document", "attach://f")];
    m.refused(
        &upload(&s, "sendDocument", &values, &[("f", "empty.txt", b"")]).await,
        400,
        "Bad Request: file must be non-empty",
    );
    let values = [("chat_id", chat_s.as_str()), ("photo", "attach://f")];
    m.refused(
        &upload(&s, "sendPhoto", &values, &[("f", "passwd", b"root:x:0:0")]).await,
        400,
        "Bad Request: IMAGE_PROCESS_FAILED",
    );
    m.refused(
        &upload(
            &s,
            "sendPhoto",
            &values,
            &[("f", "wide.png", &png(2100, 100))],
        )
        .await,
        400,
        "Bad Request: PHOTO_INVALID_DIMENSIONS",
    );
    let item = json!({"type": "photo", "media": "https://example.invalid/a.png"});
    let group = |n: usize| json!({"chat_id": chat, "media": vec![item.clone(); n]});
    m.refused(
        &call(&s, "sendMediaGroup", group(0)).await,
        400,
        "Bad Request: there are no messages to send",
    );
    m.refused(
        &call(&s, "sendMediaGroup", group(11)).await,
        400,
        "Bad Request: too many messages to send as an album",
    );
    m.accepted(
        &call(&s, "sendMediaGroup", group(10)).await,
        "an album of 10",
    );
    m.refused(
        &call(&s, "sendMediaGroup", json!({"chat_id": chat})).await,
        400,
        "Bad Request: parameter \"media\" is required",
    );
    m.refused(
        &call(&s, "sendMediaGroup", json!({"chat_id": chat, "media": [{"type": "photo", "media": "attach://nothing"}, item]})).await,
        400,
        "Bad Request: can't parse InputMedia: media not found",
    );
    m.refused(
        &call(
            &s,
            "editMessageText",
            json!({"chat_id": chat, "message_id": 999, "text": "x"}),
        )
        .await,
        400,
        "Bad Request: message to edit not found",
    );
    let sent = call(&s, "sendMessage", text("same")).await.1;
    let id = sent["result"]["message_id"].clone();
    m.refused(
        &call(
            &s,
            "editMessageText",
            json!({"chat_id": chat, "message_id": id, "text": "same"}),
        )
        .await,
        400,
        "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
    );
    m.refused(&call(&s, "noSuchMethod", json!({})).await, 404, "Not Found");
    let wrong = reqwest::get(format!("{}/bot987654321:other/getMe", s.uri()))
        .await
        .unwrap();
    m.refused(
        &(wrong.status().as_u16(), wrong.json().await.unwrap()),
        401,
        "Unauthorized",
    );
    let malformed = reqwest::get(format!("{}/botnocolon/getMe", s.uri()))
        .await
        .unwrap();
    m.refused(
        &(malformed.status().as_u16(), malformed.json().await.unwrap()),
        401,
        "Unauthorized: invalid token specified",
    );
    assert!(m.0.is_empty(), "{}", m.0.join("\n"));
    // Every call is captured, refusals included, with the answer sent.
    let records = calls(&s);
    assert!(
        records
            .iter()
            .any(|r| r["method"] == "noSuchMethod" && r["status"] == 404)
    );
    assert!(records.iter().all(|r| r["response"].is_object()));
}

#[tokio::test]
async fn an_upload_is_captured_byte_for_byte_with_its_file_name() {
    let dir = tempfile::tempdir().unwrap();
    let s = start("", Some(dir.path().join("requests.jsonl"))).await;
    let bytes: Vec<u8> = (0..=255u8).chain(b"\r\n--x\r\n".iter().copied()).collect();
    let chat = USER.to_string();
    let (status, answer) = upload(
        &s,
        "sendDocument",
        &[
            ("chat_id", &chat),
            ("document", "attach://k3y"),
            ("caption", "<b>see</b>"),
            ("parse_mode", "HTML"),
        ],
        &[
            ("k3y", "canary file.bin", &bytes),
            ("unused", "other.txt", b"zz"),
        ],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let doc = &answer["result"]["document"];
    assert_eq!(doc["file_name"], "canary file.bin");
    assert_eq!(doc["file_size"], bytes.len());
    assert_eq!(answer["result"]["caption"], "see");
    let record = calls(&s).pop().unwrap();
    assert_eq!(record["method"], "sendDocument");
    assert_eq!(record["encoding"], "multipart");
    assert_eq!(record["params"]["caption"], "<b>see</b>");
    let files = record["files"].as_array().unwrap();
    assert_eq!(files.len(), 2);
    let f = &files[0];
    assert_eq!(f["field"], "k3y");
    assert_eq!(f["fileName"], "canary file.bin");
    assert_eq!(f["contentType"], "application/octet-stream");
    assert_eq!(f["size"], bytes.len());
    assert_eq!(f["ref"], "document");
    assert_eq!(files[1]["ref"], Value::Null, "a part nothing points at");
    use sha2::Digest as _;
    let hex: String = sha2::Sha256::digest(&bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(f["sha256"], hex);
    let saved = dir.path().join(f["path"].as_str().unwrap());
    assert_eq!(std::fs::read(saved).unwrap(), bytes);
    // The capture file holds the same record.
    let lines = std::fs::read_to_string(dir.path().join("requests.jsonl")).unwrap();
    let last: Value = serde_json::from_str(lines.lines().last().unwrap()).unwrap();
    assert_eq!(last["files"], record["files"]);

    // Without a capture file the bytes travel in the record.
    let s = start("", None).await;
    upload(
        &s,
        "sendDocument",
        &[("chat_id", &chat)],
        &[("document", "a.txt", b"abc")],
    )
    .await;
    let f = &calls(&s)[0]["files"][0];
    assert_eq!(f["base64"], "YWJj");
    assert_eq!(
        f["ref"], "document",
        "a part under the parameter's own name"
    );
}

#[tokio::test]
async fn an_album_s_attach_references_resolve_to_their_parts_and_urls_are_never_fetched() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let canary = format!("http://{}/secret.png", listener.local_addr().unwrap());
    let s = start("", None).await;
    let media = json!([
        {"type": "photo", "media": "attach://p1", "caption": "<i>one</i>", "parse_mode": "HTML"},
        {"type": "document", "media": "attach://d2"},
        {"type": "photo", "media": canary},
    ])
    .to_string();
    let chat = USER.to_string();
    let (status, answer) = upload(
        &s,
        "sendMediaGroup",
        &[("chat_id", &chat), ("media", &media)],
        &[("p1", "one.png", &png(64, 32)), ("d2", "two.txt", b"two")],
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let messages = answer["result"].as_array().unwrap();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[0]["photo"][0]["width"], 64);
    assert_eq!(messages[0]["caption"], "one");
    assert_eq!(messages[1]["document"]["file_name"], "two.txt");
    assert!(
        messages
            .iter()
            .all(|m| m["media_group_id"] == messages[0]["media_group_id"])
    );
    let ids: Vec<i64> = messages
        .iter()
        .map(|m| m["message_id"].as_i64().unwrap())
        .collect();
    assert!(
        ids.windows(2).all(|w| w[1] > w[0]),
        "message ids increase: {ids:?}"
    );
    let record = calls(&s).pop().unwrap();
    let refs: Vec<&Value> = record["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| &f["ref"])
        .collect();
    assert_eq!(refs, [&json!("media[0].media"), &json!("media[1].media")]);
    assert!(
        record["params"]["media"]
            .as_str()
            .unwrap()
            .contains(&canary)
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(
        listener.accept().is_err(),
        "the mock fetched a URL from the call"
    );

    // A file_id the mock issued names that file again; getFile and the download serve its bytes.
    let file_id = messages[1]["document"]["file_id"]
        .as_str()
        .unwrap()
        .to_string();
    let (status, _) = call(
        &s,
        "sendDocument",
        json!({"chat_id": USER, "document": file_id}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, file) = call(&s, "getFile", json!({"file_id": file_id})).await;
    let path = file["result"]["file_path"].as_str().unwrap();
    let body = reqwest::get(format!("{}/file/bot{TOKEN}/{path}", s.uri()))
        .await
        .unwrap();
    assert_eq!(body.bytes().await.unwrap().as_ref(), b"two");
}

#[tokio::test]
async fn get_updates_delivers_the_message_until_an_offset_confirms_it() {
    let s = start("look at /etc/passwd", None).await;
    let (_, first) = call(&s, "getUpdates", json!({"timeout": 0})).await;
    let updates = first["result"].as_array().unwrap().clone();
    assert_eq!(updates.len(), 1);
    let update = &updates[0];
    assert_eq!(update["message"]["text"], "look at /etc/passwd");
    assert_eq!(
        update["message"]["chat"],
        json!({"id": USER, "first_name": "Tester", "username": "normfuzz_tester", "type": "private"})
    );
    assert_eq!(update["message"]["from"]["id"], USER);
    let id = update["update_id"].as_i64().unwrap();
    // Unconfirmed, it comes again (an offset at it does not confirm it either).
    assert_eq!(
        call(&s, "getUpdates", json!({})).await.1["result"],
        json!([update])
    );
    assert_eq!(
        call(&s, "getUpdates", json!({"offset": id})).await.1["result"],
        json!([update])
    );
    // An offset past it confirms it: never delivered again, with or without an offset.
    assert_eq!(
        call(&s, "getUpdates", json!({"offset": id + 1})).await.1["result"],
        json!([])
    );
    assert_eq!(
        call(&s, "getUpdates", json!({})).await.1["result"],
        json!([])
    );
    assert_eq!(
        call(&s, "getWebhookInfo", json!({})).await.1["result"]["pending_update_count"],
        0
    );

    // A negative offset keeps the last -offset updates and forgets the older ones.
    let s = start("hello", None).await;
    assert_eq!(
        call(&s, "getUpdates", json!({"offset": -1})).await.1["result"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let s = start("", None).await;
    assert_eq!(
        call(&s, "getUpdates", json!({})).await.1["result"],
        json!([]),
        "no message, no update"
    );
    let (_, me) = call(&s, "getMe", json!({})).await;
    assert_eq!(me["result"]["id"], 123456789);
    assert_eq!(me["result"]["is_bot"], true);
}

#[tokio::test]
async fn parameters_arrive_in_all_four_encodings() {
    let s = start("", None).await;
    let client = reqwest::Client::new();
    let query = client
        .get(format!(
            "{}?chat_id={USER}&text=by%20query",
            url(&s, "sendMessage")
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(query.status(), 200);
    let form = client
        .post(url(&s, "sendMessage"))
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("chat_id={USER}&text=by+form%21"))
        .send()
        .await
        .unwrap();
    assert_eq!(form.status(), 200);
    assert_eq!(
        call(
            &s,
            "sendMessage",
            json!({"chat_id": USER, "text": "by json"})
        )
        .await
        .0,
        200
    );
    let chat = USER.to_string();
    assert_eq!(
        upload(
            &s,
            "sendMessage",
            &[("chat_id", &chat), ("text", "by multipart")],
            &[]
        )
        .await
        .0,
        200
    );
    let seen: Vec<(String, String)> = calls(&s)
        .iter()
        .map(|r| {
            (
                r["encoding"].as_str().unwrap().to_string(),
                r["response"]["result"]["text"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    let want = [
        ("query", "by query"),
        ("form", "by form!"),
        ("json", "by json"),
        ("multipart", "by multipart"),
    ];
    assert_eq!(seen, want.map(|(a, b)| (a.to_string(), b.to_string())));
    // Method names are case-insensitive and recorded as documented.
    assert_eq!(
        call(&s, "SENDMESSAGE", json!({"chat_id": USER, "text": "x"}))
            .await
            .0,
        200
    );
    assert_eq!(calls(&s).last().unwrap()["method"], "sendMessage");
}

#[tokio::test]
async fn a_long_poll_does_not_hold_up_other_calls() {
    let s = start("", None).await;
    let poll_url = url(&s, "getUpdates");
    let started = Instant::now();
    let poll = tokio::spawn(async move {
        reqwest::Client::new()
            .post(poll_url)
            .json(&json!({"timeout": 30}))
            .send()
            .await
            .unwrap();
        started.elapsed()
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    let sent_at = Instant::now();
    let (status, _) = call(
        &s,
        "sendMessage",
        json!({"chat_id": USER, "text": "meanwhile"}),
    )
    .await;
    let send_took = sent_at.elapsed();
    assert_eq!(status, 200);
    assert!(!poll.is_finished(), "the poll should still be waiting");
    assert!(
        send_took < LONG_POLL_CAP / 2,
        "sendMessage waited {send_took:?} behind the poll"
    );
    let polled = poll.await.unwrap();
    assert!(
        polled >= LONG_POLL_CAP && polled < LONG_POLL_CAP * 3,
        "the poll took {polled:?}"
    );
}
