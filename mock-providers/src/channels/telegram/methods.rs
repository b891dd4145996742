//! The Bot API methods the mock answers, one by one, and the bot's messages in the user's chat
//! that sends create and edits and deletes change.

use serde_json::{Value, json};

use super::media::MEDIA_KINDS;
use super::params::Params;
use super::refusal::{Refusal, bad, not_modified};
use super::text::{MESSAGE_MAX, caption, finish_text, message_text};
use super::{Channel, Sent, chat, now};

impl Channel {
    pub(super) async fn method(&self, method: &str, p: &Params) -> Result<Value, Refusal> {
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

    /// The chat a call names: only the user's private chat exists.
    pub(super) fn check_chat(&self, p: &Params) -> Result<(), Refusal> {
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
    pub(super) fn new_message(&self) -> Value {
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
    pub(super) fn sent(
        &self,
        message: Value,
        text: Option<String>,
        caption: Option<String>,
    ) -> Value {
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
}
