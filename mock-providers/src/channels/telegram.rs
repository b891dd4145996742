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
mod params;
mod refusal;
mod text;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};
use wiremock::Request;

use crate::capture::Capture;
use media::{MEDIA_KINDS, MediaKind, mime_type, photo_size};
use params::Params;
use refusal::{Refusal, bad, not_modified, strip};
use text::{MESSAGE_MAX, caption, finish_text, message_text};

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

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
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

    /// The capture's `files`: each part with its hash, and its bytes saved or inline.
    fn save_uploads(&self, params: &Params) -> Value {
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

    async fn method(&self, method: &str, p: &Params) -> Result<Value, Refusal> {
        match method {
            "getMe" => Ok(json!({
                "id": self.setup.bot_id(),
                "is_bot": true,
                "first_name": self.setup.bot_first_name,
                "username": self.setup.bot_username,
                "can_join_groups": true,
                "can_read_all_group_messages": false,
                "supports_inline_queries": false,
                "can_connect_to_business": false,
                "has_main_web_app": false,
            })),
            "getUpdates" => Ok(self.get_updates(p).await),
            "deleteWebhook" | "setWebhook" | "deleteMyCommands" => Ok(json!(true)),
            "setMyCommands" => {
                // [INF] the wording for commands that are no JSON array.
                let commands = match p.values.get("commands") {
                    Some(Value::String(s)) => serde_json::from_str(s).ok(),
                    Some(v) => Some(v.clone()),
                    None => None,
                };
                match commands {
                    Some(c @ Value::Array(_)) => {
                        self.state().commands = c;
                        Ok(json!(true))
                    }
                    _ => Err(bad("can't parse commands JSON object")),
                }
            }
            "getMyCommands" => Ok(self.state().commands.clone()),
            "getWebhookInfo" => Ok(json!({
                "url": "",
                "has_custom_certificate": false,
                "pending_update_count": self.state().pending.len(),
            })),
            "getChat" => {
                self.check_chat(p)?;
                let mut c = chat(&self.setup);
                c["accent_color_id"] = json!(0);
                c["max_reaction_count"] = json!(11);
                Ok(c)
            }
            "sendChatAction" | "setMessageReaction" => {
                self.check_chat(p)?;
                Ok(json!(true))
            }
            "answerCallbackQuery" => Err(bad(
                "query is too old and response timeout expired or query ID is invalid",
            )),
            "sendMessage" => {
                let text = message_text(p)?;
                self.check_chat(p)?;
                let text = finish_text(&text, MESSAGE_MAX, "message is too long", false)?;
                let mut m = self.new_message();
                m["text"] = json!(text);
                Ok(self.sent(m, Some(text), None))
            }
            "editMessageText" => {
                let text = message_text(p)?;
                self.check_chat(p)?;
                let text = finish_text(&text, MESSAGE_MAX, "message is too long", false)?;
                self.edit(p, |sent| {
                    if sent.text.is_none() {
                        return Err(bad("there is no text in the message to edit"));
                    }
                    if sent.text.as_deref() == Some(text.as_str()) {
                        return Err(not_modified());
                    }
                    sent.text = Some(text.clone());
                    sent.message["text"] = json!(text);
                    Ok(())
                })
            }
            "editMessageCaption" => {
                let caption = caption(p.get("caption"), &p.str("parse_mode"))?;
                self.check_chat(p)?;
                self.edit(p, |sent| {
                    if sent.caption == caption {
                        return Err(not_modified());
                    }
                    sent.caption = caption.clone();
                    match &caption {
                        Some(c) => sent.message["caption"] = json!(c),
                        None => {
                            if let Some(o) = sent.message.as_object_mut() {
                                o.remove("caption");
                            }
                        }
                    }
                    Ok(())
                })
            }
            "deleteMessage" => {
                self.check_chat(p)?;
                let id = p.int("message_id").unwrap_or(0);
                match self.state().sent.remove(&id) {
                    Some(_) => Ok(json!(true)),
                    None => Err(bad("message to delete not found")),
                }
            }
            "sendMediaGroup" => self.send_media_group(p),
            "getFile" => {
                let id = p.str("file_id");
                let state = self.state();
                // [INF] the wording for a file_id this bot was never given.
                let file = state.files.get(&id).ok_or_else(|| bad("invalid file_id"))?;
                Ok(json!({
                    "file_id": id,
                    "file_unique_id": file.unique_id,
                    "file_size": file.size,
                    "file_path": file.path,
                }))
            }
            send => {
                let kind = MEDIA_KINDS
                    .iter()
                    .find(|k| k.method == send)
                    .ok_or_else(|| Refusal(404, "Not Found".into()))?;
                self.send_media(kind, p)
            }
        }
    }

    /// Unconfirmed updates from `offset` on; with none, an answer after the (capped) timeout.
    async fn get_updates(&self, p: &Params) -> Value {
        let offset = p.int("offset").unwrap_or(0);
        let limit = p.int("limit").unwrap_or(100).clamp(1, 100) as usize;
        let timeout = p.int("timeout").unwrap_or(0).max(0) as u64;
        let ready = {
            let mut state = self.state();
            // An offset confirms every earlier update; a negative one keeps the last -offset.
            if offset > 0 {
                state
                    .pending
                    .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset);
            } else if offset < 0 {
                let keep = offset.unsigned_abs() as usize;
                let drop = state.pending.len().saturating_sub(keep);
                state.pending.drain(..drop);
            }
            state
                .pending
                .iter()
                .take(limit)
                .cloned()
                .collect::<Vec<_>>()
        };
        if ready.is_empty() && timeout > 0 {
            // Nothing can arrive later (one message per channel): wait as a long poll would.
            tokio::time::sleep(Duration::from_secs(timeout).min(LONG_POLL_CAP)).await;
        }
        Value::Array(ready)
    }

    /// The chat a call names: only the user's private chat exists.
    fn check_chat(&self, p: &Params) -> Result<(), Refusal> {
        let id = p.str("chat_id");
        let id = id.trim();
        if id.is_empty() {
            return Err(bad("chat_id is empty"));
        }
        let ours = match id.strip_prefix('@') {
            Some(name) => name.eq_ignore_ascii_case(&self.setup.user_username),
            None => id.parse::<i64>().ok() == Some(self.setup.user_id),
        };
        if ours {
            Ok(())
        } else {
            Err(bad("chat not found"))
        }
    }

    /// A new message from the bot in the user's chat.
    fn new_message(&self) -> Value {
        let id = {
            let mut state = self.state();
            let id = state.next_message_id;
            state.next_message_id += 1;
            id
        };
        json!({
            "message_id": id,
            "from": {
                "id": self.setup.bot_id(),
                "is_bot": true,
                "first_name": self.setup.bot_first_name,
                "username": self.setup.bot_username,
            },
            "chat": chat(&self.setup),
            "date": now(),
        })
    }

    /// Keeps `message` for later edits and returns it.
    fn sent(&self, message: Value, text: Option<String>, caption: Option<String>) -> Value {
        let id = message["message_id"].as_i64().unwrap_or(0);
        self.state().sent.insert(
            id,
            Sent {
                text,
                caption,
                message: message.clone(),
            },
        );
        message
    }

    fn edit(
        &self,
        p: &Params,
        change: impl FnOnce(&mut Sent) -> Result<(), Refusal>,
    ) -> Result<Value, Refusal> {
        let id = p.int("message_id").unwrap_or(0);
        let mut state = self.state();
        let sent = state
            .sent
            .get_mut(&id)
            .ok_or_else(|| bad("message to edit not found"))?;
        change(sent)?;
        sent.message["edit_date"] = json!(now());
        Ok(sent.message.clone())
    }

    /// The file a parameter names (its value, or the part of the same name).
    fn input_file(&self, p: &Params, field: &str, value: &str) -> Option<Source> {
        let part = match value.strip_prefix("attach://") {
            Some(name) => name,
            None if !value.is_empty() => {
                return Some(
                    if value.starts_with("http://") || value.starts_with("https://") {
                        Source::Url
                    } else {
                        Source::FileId(value.to_string())
                    },
                );
            }
            None => field,
        };
        p.upload(part).map(Source::Upload)
    }

    /// Checks a file (TDLib: an empty file; a photo that is no image or has bad dimensions) and
    /// registers it: the media object of the answer.
    fn media_object(
        &self,
        kind: &MediaKind,
        p: &Params,
        source: &Source,
    ) -> Result<Value, Refusal> {
        let mut state = self.state();
        let n = state.files.len() + 1;
        let file_id = format!("mock-{}-{n}", kind.field);
        let (stored, upload) = match source {
            Source::FileId(id) => {
                let file = state
                    .files
                    .get(id)
                    .ok_or_else(|| bad("wrong file identifier/HTTP URL specified"))?;
                (file.clone(), None)
            }
            Source::Url => (
                StoredFile {
                    unique_id: format!("U{n}"),
                    size: None,
                    path: format!("{}s/url_{n}", kind.field),
                    bytes: None,
                },
                None,
            ),
            Source::Upload(i) => {
                let u = &p.uploads[*i];
                if u.bytes.is_empty() {
                    return Err(bad("file must be non-empty"));
                }
                (
                    StoredFile {
                        unique_id: format!("U{n}"),
                        size: Some(u.bytes.len()),
                        path: format!("{}s/file_{n}", kind.field),
                        bytes: Some(u.bytes.clone()),
                    },
                    Some(u),
                )
            }
        };
        let mut object = json!({
            "file_id": file_id,
            "file_unique_id": stored.unique_id,
        });
        if let Some(size) = stored.size {
            object["file_size"] = json!(size);
        }
        if kind.field == "photo" {
            let (width, height) = match upload {
                Some(u) => photo_size(&u.bytes)?,
                // A URL's image is never fetched: its size is unknown.
                None => (0, 0),
            };
            object["width"] = json!(width);
            object["height"] = json!(height);
            state.files.insert(file_id, stored);
            return Ok(json!([object]));
        }
        if let Some(u) = upload {
            object["file_name"] = json!(u.file_name);
            object["mime_type"] = json!(mime_type(u));
        }
        if kind.timed {
            object["duration"] = json!(0);
        }
        state.files.insert(file_id, stored);
        Ok(object)
    }

    fn send_media(&self, kind: &MediaKind, p: &Params) -> Result<Value, Refusal> {
        let value = p.str(kind.field);
        let source = self
            .input_file(p, kind.field, &value)
            .ok_or_else(|| bad(format!("there is no {} in the request", kind.noun)))?;
        let raw_caption = p.get("caption");
        let caption = caption(raw_caption, &p.str("parse_mode"))?;
        self.check_chat(p)?;
        let object = self.media_object(kind, p, &source)?;
        let mut m = self.new_message();
        m[kind.field] = object;
        if let Some(c) = &caption {
            m["caption"] = json!(c);
        }
        Ok(self.sent(m, None, caption))
    }

    fn send_media_group(&self, p: &Params) -> Result<Value, Refusal> {
        let media = p.get("media").unwrap_or_default();
        if media.is_empty() {
            return Err(bad("parameter \"media\" is required"));
        }
        let items: Value =
            serde_json::from_str(&media).map_err(|_| bad("can't parse media JSON object"))?;
        let Value::Array(items) = items else {
            return Err(bad("expected an Array of InputMedia"));
        };
        let mut parsed = Vec::new();
        for item in &items {
            let Value::Object(o) = item else {
                return Err(bad("can't parse InputMedia: expected an Object"));
            };
            let s = |k: &str| o.get(k).and_then(Value::as_str).map(str::to_string);
            let caption = caption(s("caption"), &s("parse_mode").unwrap_or_default())
                .map_err(|Refusal(_, d)| bad(format!("can't parse InputMedia: {}", strip(&d))))?;
            let kind_name = s("type").ok_or_else(|| {
                bad("can't parse InputMedia: field \"type\" must be of type String")
            })?;
            let kind = MEDIA_KINDS
                .iter()
                .find(|k| k.field == kind_name && k.in_album)
                .ok_or_else(|| {
                    let why = if kind_name == "animation" {
                        format!("type \"{kind_name}\" can't be used in sendMediaGroup")
                    } else {
                        format!("type \"{kind_name}\" is unsupported")
                    };
                    bad(format!("can't parse InputMedia: {why}"))
                })?;
            let source = self
                .input_file(p, "", &s("media").unwrap_or_default())
                .ok_or_else(|| bad("can't parse InputMedia: media not found"))?;
            parsed.push((kind, source, caption));
        }
        if parsed.len() > 10 {
            return Err(bad("too many messages to send as an album"));
        }
        if parsed.is_empty() {
            return Err(bad("there are no messages to send"));
        }
        self.check_chat(p)?;
        let group = format!("{}", 13_000_000_000_000_000_i64 + now());
        let mut messages = Vec::new();
        for (kind, source, caption) in &parsed {
            let object = self.media_object(kind, p, source)?;
            let mut m = self.new_message();
            m[kind.field] = object;
            m["media_group_id"] = json!(group);
            if let Some(c) = caption {
                m["caption"] = json!(c);
            }
            messages.push(self.sent(m, None, caption.clone()));
        }
        Ok(Value::Array(messages))
    }
}

/// What a call answers with.
enum Reply {
    Json(Value),
    File(Vec<u8>),
}

/// Where a file comes from.
enum Source {
    Upload(usize),
    Url,
    FileId(String),
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

/// Writes `bytes` to a temporary name in `path`'s folder, then renames it into place.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}
