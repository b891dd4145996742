//! Provider SSE streams → assistant text deltas, so a captured stream can be normalized
//! (research `providers.md` §1.10 Anthropic, §2.6 OpenAI Chat, §3.3 OpenAI Responses, §4.6
//! Gemini `alt=sse`).
//!
//! Framing follows the WHATWG EventSource parser, fed bytes in any split: lines end at CRLF, LF
//! or CR (a CRLF split across chunks is one end); a leading BOM is skipped; `:` lines are
//! comments; `data` lines of one event are joined with `\n`; `event` names the event; other
//! fields are ignored; a blank line dispatches. Tolerances beyond WHATWG: an event left without
//! its blank line at the end of the stream is still dispatched, and invalid UTF-8 becomes U+FFFD.
//! Limits (B1): a line or an event's data over [`MAX_EVENT_BYTES`] is an error.
//!
//! Text taken: Anthropic `content_block_delta` with a `text_delta`; OpenAI Chat choice 0's
//! `delta.content` until `[DONE]`; Responses `response.output_text.delta` (refusal text is not
//! assistant output and is skipped); Gemini candidate 0's non-thought `parts[].text`. A provider
//! error event (Anthropic/Responses `error`, Responses `response.failed`, an `error` key in
//! OpenAI Chat or Gemini data) ends the stream with [`StreamItem::ProviderError`]. A data field
//! that is not JSON, or a stream with no data event, is a [`StreamError`].

use std::fmt;
use std::str::FromStr;

use serde_json::Value;

/// Largest SSE line or event data accepted.
pub const MAX_EVENT_BYTES: usize = 16 << 20;

/// A provider's streaming wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderFormat {
    Anthropic,
    OpenAiChat,
    OpenAiResponses,
    Gemini,
}

impl ProviderFormat {
    pub const ALL: [ProviderFormat; 4] = [
        Self::Anthropic,
        Self::OpenAiChat,
        Self::OpenAiResponses,
        Self::Gemini,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Anthropic => "anthropic",
            Self::OpenAiChat => "openai-chat",
            Self::OpenAiResponses => "openai-responses",
            Self::Gemini => "gemini",
        }
    }

    /// Recognizes the format from one event, for streams given without `--format`.
    fn detect(event: &str, data: &Value) -> Option<Self> {
        let kind = data.get("type").and_then(Value::as_str).unwrap_or(event);
        if kind.starts_with("message_") || kind.starts_with("content_block_") || kind == "ping" {
            Some(Self::Anthropic)
        } else if kind.starts_with("response.") {
            Some(Self::OpenAiResponses)
        } else if data.get("choices").is_some()
            || data.get("object").and_then(Value::as_str) == Some("chat.completion.chunk")
        {
            Some(Self::OpenAiChat)
        } else if data.get("candidates").is_some() {
            Some(Self::Gemini)
        } else {
            None
        }
    }
}

impl FromStr for ProviderFormat {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Self::ALL.iter().map(|f| f.as_str()).collect();
                format!(
                    "unknown format `{s}` (expected one of: {})",
                    names.join(", ")
                )
            })
    }
}

impl fmt::Display for ProviderFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a stream carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamItem {
    Text(String),
    /// The provider reported an error mid-stream; nothing after it is read.
    ProviderError(String),
}

/// The stream cannot be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamError {
    /// 1-based index of the event at fault (0: the stream as a whole).
    pub event: usize,
    pub message: String,
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.event == 0 {
            f.write_str(&self.message)
        } else {
            write!(f, "SSE event {}: {}", self.event, self.message)
        }
    }
}

impl std::error::Error for StreamError {}

/// Incremental decoder of one provider stream.
#[derive(Debug)]
pub struct ProviderStream {
    format: Option<ProviderFormat>,
    line: Vec<u8>,
    after_cr: bool,
    at_start: bool,
    event: String,
    data: String,
    has_data: bool,
    events: usize,
    ended: bool,
}

impl ProviderStream {
    /// `format: None` recognizes the format from the first recognizable event.
    pub fn new(format: Option<ProviderFormat>) -> Self {
        Self {
            format,
            line: Vec::new(),
            after_cr: false,
            at_start: true,
            event: String::new(),
            data: String::new(),
            has_data: false,
            events: 0,
            ended: false,
        }
    }

    /// The format given or recognized so far.
    pub fn format(&self) -> Option<ProviderFormat> {
        self.format
    }

    /// Feeds bytes; decoded items are appended to `out`.
    pub fn push(&mut self, mut bytes: &[u8], out: &mut Vec<StreamItem>) -> Result<(), StreamError> {
        while !bytes.is_empty() {
            if self.after_cr && bytes[0] == b'\n' {
                bytes = &bytes[1..];
            }
            self.after_cr = false;
            match memchr::memchr2(b'\r', b'\n', bytes) {
                Some(end) => {
                    self.extend_line(&bytes[..end])?;
                    self.after_cr = bytes[end] == b'\r';
                    bytes = &bytes[end + 1..];
                    let line = std::mem::take(&mut self.line);
                    self.line_done(&line, out)?;
                    self.line = line;
                    self.line.clear();
                }
                None => {
                    self.extend_line(bytes)?;
                    bytes = &[];
                }
            }
        }
        Ok(())
    }

    /// Ends the stream; returns the format, or an error when no data event was seen.
    pub fn finish(mut self, out: &mut Vec<StreamItem>) -> Result<ProviderFormat, StreamError> {
        if !self.line.is_empty() {
            let line = std::mem::take(&mut self.line);
            self.line_done(&line, out)?;
        }
        self.dispatch(out)?;
        match self.format {
            Some(format) if self.events > 0 => Ok(format),
            _ if self.events > 0 => Err(StreamError {
                event: 0,
                message: "no event of a known provider format".into(),
            }),
            _ => Err(StreamError {
                event: 0,
                message:
                    "no SSE data events (is this a text/event-stream body? Gemini needs alt=sse)"
                        .into(),
            }),
        }
    }

    fn extend_line(&mut self, bytes: &[u8]) -> Result<(), StreamError> {
        if self.line.len() + bytes.len() > MAX_EVENT_BYTES {
            return Err(self.error(format!("line longer than {MAX_EVENT_BYTES} bytes")));
        }
        self.line.extend_from_slice(bytes);
        Ok(())
    }

    fn line_done(&mut self, mut line: &[u8], out: &mut Vec<StreamItem>) -> Result<(), StreamError> {
        if std::mem::take(&mut self.at_start) {
            line = line.strip_prefix("\u{FEFF}".as_bytes()).unwrap_or(line);
        }
        if line.is_empty() {
            return self.dispatch(out);
        }
        if line[0] == b':' {
            return Ok(());
        }
        let line = String::from_utf8_lossy(line);
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_ref(), ""),
        };
        match field {
            "data" => {
                if self.data.len() + value.len() + 1 > MAX_EVENT_BYTES {
                    return Err(
                        self.error(format!("event data longer than {MAX_EVENT_BYTES} bytes"))
                    );
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "event" => self.event = value.to_string(),
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<StreamItem>) -> Result<(), StreamError> {
        let event = std::mem::take(&mut self.event);
        if !std::mem::take(&mut self.has_data) {
            return Ok(());
        }
        let data = std::mem::take(&mut self.data);
        self.events += 1;
        if self.ended {
            return Ok(());
        }
        if data.trim() == "[DONE]" {
            self.ended = true;
            return Ok(());
        }
        let value: Value = serde_json::from_str(&data).map_err(|e| StreamError {
            event: self.events,
            message: format!("data is not JSON ({e})"),
        })?;
        if self.format.is_none() {
            self.format = ProviderFormat::detect(&event, &value);
        }
        if let Some(message) = provider_error(&event, &value) {
            self.ended = true;
            out.push(StreamItem::ProviderError(message));
            return Ok(());
        }
        if let Some(text) = self
            .format
            .and_then(|f| text_delta(f, &event, &value))
            .filter(|t| !t.is_empty())
        {
            out.push(StreamItem::Text(text));
        }
        Ok(())
    }

    /// An error in the event being read (not yet dispatched).
    fn error(&self, message: String) -> StreamError {
        StreamError {
            event: self.events + 1,
            message,
        }
    }
}

fn str_at<'v>(value: &'v Value, pointer: &str) -> Option<&'v str> {
    value.pointer(pointer).and_then(Value::as_str)
}

/// The message of an error event, in any of the four formats.
fn provider_error(event: &str, data: &Value) -> Option<String> {
    let kind = str_at(data, "/type").unwrap_or(event);
    let error = match kind {
        "error" => data.get("error").unwrap_or(data),
        "response.failed" => data.pointer("/response/error").unwrap_or(data),
        _ => data.get("error")?,
    };
    Some(str_at(error, "/message").map_or_else(|| error.to_string(), str::to_string))
}

fn text_delta(format: ProviderFormat, event: &str, data: &Value) -> Option<String> {
    let kind = str_at(data, "/type").unwrap_or(event);
    match format {
        ProviderFormat::Anthropic => (kind == "content_block_delta"
            && str_at(data, "/delta/type") == Some("text_delta"))
        .then(|| str_at(data, "/delta/text"))?
        .map(str::to_string),
        ProviderFormat::OpenAiChat => {
            let choices = data.get("choices")?.as_array()?;
            let first = choices
                .iter()
                .find(|c| c.get("index").and_then(Value::as_u64).unwrap_or(0) == 0)?;
            str_at(first, "/delta/content").map(str::to_string)
        }
        ProviderFormat::OpenAiResponses => (kind == "response.output_text.delta")
            .then(|| str_at(data, "/delta"))?
            .map(str::to_string),
        ProviderFormat::Gemini => {
            let parts = data.pointer("/candidates/0/content/parts")?.as_array()?;
            let text: String = parts
                .iter()
                .filter(|p| p.get("thought").and_then(Value::as_bool) != Some(true))
                .filter_map(|p| str_at(p, "/text"))
                .collect();
            Some(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(
        format: Option<ProviderFormat>,
        body: &str,
    ) -> Result<(ProviderFormat, Vec<StreamItem>), StreamError> {
        let mut s = ProviderStream::new(format);
        let mut out = Vec::new();
        s.push(body.as_bytes(), &mut out)?;
        let f = s.finish(&mut out)?;
        Ok((f, out))
    }

    #[test]
    fn framing_tolerances() {
        let body = "\u{FEFF}: comment\r\ndata: {\"choices\":[{\"index\":0,\r\ndata: \"delta\":{\"content\":\"Hi\"}}]}\r\rdata:{\"choices\":[{\"delta\":{\"content\":\"!\"}}]}";
        let (f, items) = decode(None, body).expect("decodes");
        assert_eq!(f, ProviderFormat::OpenAiChat);
        assert_eq!(
            items,
            [StreamItem::Text("Hi".into()), StreamItem::Text("!".into())]
        );
    }

    #[test]
    fn garbage_is_an_error() {
        assert_eq!(decode(None, "hello world\n").unwrap_err().event, 0);
        let err = decode(Some(ProviderFormat::Gemini), "data: {not json\n\n").unwrap_err();
        assert_eq!(err.event, 1);
        assert!(
            err.to_string().starts_with("SSE event 1: data is not JSON"),
            "{err}"
        );
        assert!(decode(None, "").is_err());
    }
}
