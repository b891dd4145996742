//! A mock Telegram Bot API: `/bot<token>/<method>` and `/file/bot<token>/<path>` on the
//! [`MockProviders`](crate::server::MockProviders) server, configured by [`Setup`].
//!
//! Its user sends one private message (`Setup::message`), delivered by `getUpdates` until an
//! `offset` past it confirms it, as the real API does. Every call is captured in the server's
//! capture (`GET /__mock/requests`, [`MockProviders::requests`](crate::server::MockProviders::requests))
//! as a record with `"channel": "telegram"`:
//!
//! ```json
//! {"channel": "telegram", "method": "sendPhoto", "http_method": "POST", "path": "/bot…/sendPhoto",
//!  "encoding": "multipart", "params": {"chat_id": "4242", "photo": "attach://x1", "caption": "…"},
//!  "files": [{"field": "x1", "fileName": "a.png", "contentType": "application/octet-stream",
//!             "size": 1234, "sha256": "…", "ref": "photo", "path": "channel-files/3-0"}],
//!  "status": 200, "response": {"ok": true, "result": {…}}, "seq": 7}
//! ```
//!
//! `method` is the Bot API's name (matched case-insensitively, recorded as documented); `params`
//! holds the values as sent (strings, or a JSON body's own values: an album's `media` is a JSON
//! string in a form and an array in JSON). Each uploaded part is in `files`: `ref` names the
//! parameter that points at it (`photo`, `media[1].media`; `null` when none does), and its bytes
//! are saved beside the capture file (`path`, relative to the capture file's folder, written to
//! a temporary name and renamed) or, with no capture file, carried as `base64`. A file named by a
//! URL or a `file_id` is only recorded in `params`: the mock never fetches anything.
//!
//! Refusals are the real API's (`{"ok": false, "error_code": 400, "description": "Bad Request:
//! …"}`), checked in its order: what the Bot API server checks (tdlib/telegram-bot-api), then the
//! chat, then what TDLib checks. Evidence per wording is in `docs/research/telegram.md`; `[INF]`
//! marks wording not confirmed. Lengths are counted as TDLib counts them for bots, in code points
//! of the text after entity parsing and trimming (`utf8_length`), not in UTF-16 units.
//!
//! Methods: `getMe`, `getUpdates`, `deleteWebhook`, `setWebhook`, `getWebhookInfo`,
//! `setMyCommands`, `deleteMyCommands`, `getMyCommands`, `getChat`, `sendChatAction`,
//! `setMessageReaction`, `sendMessage`, `editMessageText`, `editMessageCaption`,
//! `deleteMessage`, `sendPhoto`, `sendDocument`, `sendAudio`, `sendVoice`, `sendVideo`,
//! `sendAnimation`, `sendVideoNote`, `sendMediaGroup`, `getFile`, `answerCallbackQuery`. What
//! openclaw 2026.9.6 calls (its `dist/`, grammY 1.46): at start `getMe` (probe and `bot.init`),
//! `getWebhookInfo` (probe), `deleteWebhook`, `setMyCommands`/`deleteMyCommands`, then
//! `getUpdates` as a JSON POST (`timeout` 0 first, then its long-poll timeout, `offset` once it
//! has an update); replying, `sendChatAction`, `setMessageReaction` (ack), `sendMessage` and
//! `editMessageText` with `parse_mode: "HTML"`, and for media `send{Photo,Document,Animation,
//! Video,VideoNote,Voice,Audio}` or `sendMediaGroup` (multipart, files as `attach://<random>`
//! parts with grammY's unquoted `filename=`), `getFile` for inbound media. Called on paths not
//! modeled here (answered 404 as unknown methods): `sendRichMessage` (only with
//! `richMessages: true`), `sendSticker`, `sendPoll`, `sendLocation`, `sendVenue`,
//! `editMessageReplyMarkup`, `pinChatMessage`, `getChatMember`, forum topics.
//! Not modeled: `MarkdownV2`/`Markdown` entity errors (accepted as sent; openclaw sends HTML),
//! message entities in answers, more than one photo size, webhooks delivering updates.

mod html;
mod media;
mod methods;
mod params;
mod refusal;
mod text;
mod updates;
mod uploads;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::{Value, json};
use wiremock::Request;

use crate::capture::Capture;
use refusal::{Refusal, bad};

/// The longest a `getUpdates` long poll waits before answering `[]`, whatever its `timeout`: the
/// mock has no update to wait for, and a short poll keeps a client's loop turning.
pub const LONG_POLL_CAP: Duration = Duration::from_secs(1);
/// The folder, beside the capture file, that holds uploaded files.
pub const FILES_DIR: &str = "channel-files";

/// The channel's setup: its bot and the one user who writes to it (a private chat, whose id is
/// the user's id, as in Telegram).
#[derive(Debug, Clone, PartialEq)]
pub struct Setup {
    /// `<bot id>:<secret>`, as BotFather issues it; the bot's id is the part before `:`.
    pub token: String,
    pub bot_username: String,
    pub bot_first_name: String,
    pub user_id: i64,
    pub user_first_name: String,
    pub user_username: String,
    /// The user's message, delivered by `getUpdates` (none when empty).
    pub message: String,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            token: "123456789:normfuzz-mock-token".into(),
            bot_username: "normfuzz_mock_bot".into(),
            bot_first_name: "normfuzz mock".into(),
            user_id: 4242,
            user_first_name: "Tester".into(),
            user_username: "normfuzz_tester".into(),
            message: String::new(),
        }
    }
}

impl Setup {
    /// The bot's user id: the token's number before `:` (0 when it has none).
    pub fn bot_id(&self) -> i64 {
        self.token
            .split_once(':')
            .and_then(|(id, _)| id.parse().ok())
            .unwrap_or(0)
    }
}

/// An answer: status, content type and body.
pub(crate) struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

/// Whether `path` is one of the channel's (`/bot…` or `/file/bot…`).
pub(crate) fn is_channel_path(path: &str) -> bool {
    path.starts_with("/bot") || path.starts_with("/file/bot")
}

/// The methods modeled, in the Bot API's spelling (matched case-insensitively).
const METHODS: [&str; 25] = [
    "getMe",
    "getUpdates",
    "deleteWebhook",
    "setWebhook",
    "getWebhookInfo",
    "setMyCommands",
    "deleteMyCommands",
    "getMyCommands",
    "getChat",
    "sendChatAction",
    "setMessageReaction",
    "sendMessage",
    "editMessageText",
    "editMessageCaption",
    "deleteMessage",
    "sendPhoto",
    "sendDocument",
    "sendAudio",
    "sendVoice",
    "sendVideo",
    "sendAnimation",
    "sendVideoNote",
    "sendMediaGroup",
    "getFile",
    "answerCallbackQuery",
];

/// A file the channel holds (uploaded, or named by URL or file_id).
#[derive(Debug, Clone)]
struct StoredFile {
    unique_id: String,
    size: Option<usize>,
    path: String,
    bytes: Option<Vec<u8>>,
}

/// A message the bot sent: what an edit or a delete may refer to.
#[derive(Debug, Clone)]
struct Sent {
    text: Option<String>,
    caption: Option<String>,
    message: Value,
}

#[derive(Debug, Default)]
struct State {
    next_message_id: i64,
    /// Updates not yet confirmed by an `offset`, oldest first.
    pending: Vec<Value>,
    commands: Value,
    calls: u64,
    files: HashMap<String, StoredFile>,
    sent: HashMap<i64, Sent>,
}

/// The running channel (held by the server's state).
pub(crate) struct Channel {
    setup: Setup,
    /// Where uploads are saved, and the folder their recorded paths are relative to.
    files: Option<(PathBuf, PathBuf)>,
    state: Mutex<State>,
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

impl Channel {
    /// The channel of `setup`; uploads are saved beside `capture` when it is a file.
    pub fn new(setup: Setup, capture: Option<&Path>) -> Channel {
        let files = capture.map(|c| {
            let base = c
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(Path::new("."))
                .to_path_buf();
            (base.join(FILES_DIR), base)
        });
        let mut state = State {
            next_message_id: 1,
            commands: json!([]),
            ..State::default()
        };
        if !setup.message.is_empty() {
            let message = json!({
                "message_id": 1,
                "from": user(&setup),
                "chat": chat(&setup),
                "date": now(),
                "text": setup.message,
            });
            state.next_message_id = 2;
            state
                .pending
                .push(json!({"update_id": 100_000_001, "message": message}));
        }
        Channel {
            setup,
            files,
            state: Mutex::new(state),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Answers one request on a channel path and captures it.
    pub async fn answer(&self, request: &Request, capture: &Capture) -> Response {
        let path = request.url.path();
        let mut record = json!({
            "channel": "telegram",
            "method": Value::Null,
            "http_method": request.method.as_str(),
            "path": path,
        });
        let outcome = self.call(request, &mut record).await;
        let (status, response) = match &outcome {
            Ok(Reply::Json(result)) => (200, json!({"ok": true, "result": result})),
            Ok(Reply::File(bytes)) => (200, json!({"bytes": bytes.len()})),
            Err(Refusal(code, description)) => (
                *code,
                json!({"ok": false, "error_code": code, "description": description}),
            ),
        };
        record["status"] = json!(status);
        record["response"] = response.clone();
        capture.record(record);
        match outcome {
            Ok(Reply::File(bytes)) => Response {
                status,
                content_type: "application/octet-stream",
                body: bytes,
            },
            _ => Response {
                status,
                content_type: "application/json",
                body: response.to_string().into_bytes(),
            },
        }
    }

    async fn call(&self, request: &Request, record: &mut Value) -> Result<Reply, Refusal> {
        let path = request.url.path();
        let (download, rest) = match path.strip_prefix("/file/bot") {
            Some(rest) => (true, rest),
            None => (false, path.strip_prefix("/bot").unwrap_or_default()),
        };
        let Some((token, method)) = rest.split_once('/') else {
            return Err(Refusal(404, "Not Found".into()));
        };
        self.check_token(token)?;
        if download {
            record["file_path"] = json!(method);
            return self.download(method);
        }
        let params = params::read(request).await.map_err(bad)?;
        let canonical = METHODS
            .iter()
            .find(|m| m.eq_ignore_ascii_case(method))
            .copied();
        record["method"] = json!(canonical.unwrap_or(method));
        record["encoding"] = json!(params.encoding.name());
        record["params"] = Value::Object(params.values.clone());
        record["files"] = self.save_uploads(&params);
        let Some(method) = canonical else {
            // api.telegram.org's answer (the open-source server says "Not Found: method not found").
            return Err(Refusal(404, "Not Found".into()));
        };
        self.method(method, &params).await.map(Reply::Json)
    }

    /// The Bot API server's token checks (`ClientManager::send`), then this bot's token.
    fn check_token(&self, token: &str) -> Result<(), Refusal> {
        let invalid = || Refusal(401, "Unauthorized: invalid token specified".into());
        let id = token.split_once(':').map(|(id, _)| id);
        if token.starts_with('0') || token.len() > 80 || id.is_none() {
            return Err(invalid());
        }
        match id.and_then(|id| id.parse::<i64>().ok()) {
            Some(id) if id > 0 && id < 1 << 54 => {}
            _ => return Err(invalid()),
        }
        if token != self.setup.token {
            return Err(Refusal(401, "Unauthorized".into()));
        }
        Ok(())
    }

    fn download(&self, file_path: &str) -> Result<Reply, Refusal> {
        let state = self.state();
        state
            .files
            .values()
            .find(|f| f.path == file_path)
            .and_then(|f| f.bytes.clone())
            .map(Reply::File)
            .ok_or_else(|| Refusal(404, "Not Found".into()))
    }
}

/// What a call answers with.
enum Reply {
    Json(Value),
    File(Vec<u8>),
}

fn user(setup: &Setup) -> Value {
    json!({
        "id": setup.user_id,
        "is_bot": false,
        "first_name": setup.user_first_name,
        "username": setup.user_username,
        "language_code": "en",
    })
}

fn chat(setup: &Setup) -> Value {
    json!({
        "id": setup.user_id,
        "first_name": setup.user_first_name,
        "username": setup.user_username,
        "type": "private",
    })
}
