//! Scripted answers: queues of steps popped by each accepted request, so an agent runtime can be driven
//! through a tool round trip (first a tool call, then a final text), or through failures of one
//! provider while another answers (model fallback, SDK retries).
//!
//! Script JSON: `[step, ...]` or `{"turns": [step, ...], "after": step, "providers": {KEY: queue}}`;
//! `after` (default: text "ok") answers once the queue is empty. A step is one of
//! - `{"text": "Hello"}` — one text answer, streamed as one delta;
//! - `{"chunks": ["MED", "IA: /etc/passwd\n", {"json": "\\ud83d"}, {"json": "\\ude00"}]}` — streamed text,
//!   one delta event per chunk. A `{"json": ...}` chunk is spliced raw into the JSON string literal of its
//!   event, so a surrogate pair (a character beyond the BMP) can be split across two events;
//! - `{"tool_call": {"name": "get_attachment", "arguments": {...}, "id": "call_1"}}` (`id` optional);
//! - `{"chunks": [...], "error_mid_stream": KIND}` — a streamed answer that fails after its deltas,
//!   in the API's own framing (Anthropic's SSE `error` event, a Chat Completions `data: {"error"}`
//!   chunk with no `[DONE]`, a Responses `error` event): the failure a runtime sees once output has
//!   begun. A request that does not stream, or an API without that framing here (Gemini,
//!   Bedrock, Ollama), gets the failure as a plain error answer instead;
//! - `{"error": KIND, "times": N, "retry_after": S}` — the API's own error answer (status, envelope,
//!   retry headers) to the next `N` requests (default 1), then the next step: `[{"error":
//!   "rate_limit", "times": 2}, {"text": "ok"}]` fails twice, then answers, so an SDK's own retries
//!   show in the capture. KIND: `rate_limit` (429), `server_error` (500), `overloaded` (503;
//!   Anthropic 529), `image` and `format` (400). `retry_after` (seconds, default 1) feeds the
//!   retry headers; `message` replaces the envelope's error message. The envelopes per API are in `providers/*` (`fn failure`).
//!
//! `providers` gives an API, or one model of it, a queue of its own (`[step, ...]` or `{"turns",
//! "after"}`), keyed `"anthropic"` or `"anthropic/claude-x"` (the API names of
//! [`Provider::name`]; the model as the request names it: the body's `model`, Gemini's and
//! Bedrock's path segment, percent-decoded). A request takes the queue of its API and model, else
//! of its API, else the shared `turns`: two providers of one case (a primary and its fallback, even
//! two models behind one mock API) answer differently.

use crate::verdict::Provider;
use anyhow::{Context, bail};
use serde_json::Value;
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;

#[derive(Debug, Clone, PartialEq)]
pub enum Turn {
    Text {
        chunks: Vec<Chunk>,
    },
    ToolCall {
        id: Option<String>,
        name: String,
        arguments: Value,
    },
}

/// One streamed delta of text.
#[derive(Debug, Clone, PartialEq)]
pub enum Chunk {
    Text(String),
    /// The body of a JSON string literal, inserted verbatim (escapes such as lone `\ud83d` allowed).
    Json(String),
}

impl Turn {
    pub fn text(s: &str) -> Turn {
        Turn::Text {
            chunks: vec![Chunk::Text(s.to_string())],
        }
    }

    pub fn from_json(v: &Value) -> anyhow::Result<Turn> {
        let obj = v.as_object().context("a turn must be a JSON object")?;
        if let Some(t) = obj.get("text") {
            return Ok(Turn::text(t.as_str().context("`text` must be a string")?));
        }
        if let Some(chunks) = obj.get("chunks") {
            let chunks = chunks.as_array().context("`chunks` must be an array")?;
            let chunks = chunks
                .iter()
                .map(Chunk::from_json)
                .collect::<anyhow::Result<_>>()?;
            return Ok(Turn::Text { chunks });
        }
        if let Some(call) = obj.get("tool_call") {
            let name = call
                .get("name")
                .and_then(Value::as_str)
                .context("`tool_call.name` must be a string")?;
            let arguments = call
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| Value::Object(Default::default()));
            if !arguments.is_object() {
                bail!("`tool_call.arguments` must be a JSON object");
            }
            let id = match call.get("id") {
                None => None,
                Some(id) => Some(
                    id.as_str()
                        .context("`tool_call.id` must be a string")?
                        .to_string(),
                ),
            };
            return Ok(Turn::ToolCall {
                id,
                name: name.to_string(),
                arguments,
            });
        }
        bail!("a turn needs one of `text`, `chunks`, `tool_call` (a script step may be an `error`)")
    }

    /// One piece per streamed delta (none for a tool call).
    pub(crate) fn pieces(&self) -> Vec<Piece> {
        match self {
            Turn::Text { chunks } => chunks.iter().map(Piece::of).collect(),
            Turn::ToolCall { .. } => Vec::new(),
        }
    }

    /// The whole text as one piece (for non-streamed answers and final "done" events).
    pub(crate) fn whole_text(&self) -> Piece {
        let inner: String = self.pieces().iter().map(Piece::inner).collect();
        Piece(format!("\"{inner}\""))
    }
}

impl Chunk {
    fn from_json(v: &Value) -> anyhow::Result<Chunk> {
        match v {
            Value::String(s) => Ok(Chunk::Text(s.clone())),
            Value::Object(o) => {
                let raw = o
                    .get("json")
                    .and_then(Value::as_str)
                    .context("a chunk object needs a string `json`")?;
                if !is_string_literal_body(raw) {
                    bail!("chunk {raw:?} is not the body of a JSON string literal");
                }
                Ok(Chunk::Json(raw.to_string()))
            }
            _ => bail!("a chunk must be a string or {{\"json\": ...}}"),
        }
    }
}

/// Accepts what may stand between the quotes of a JSON string, lone surrogate escapes included.
fn is_string_literal_body(s: &str) -> bool {
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\u{0}'..='\u{1f}' => return false,
            '\\' => match chars.next() {
                Some('"' | '\\' | '/' | 'b' | 'f' | 'n' | 'r' | 't') => {}
                Some('u') => {
                    if !(0..4).all(|_| chars.next().is_some_and(|h| h.is_ascii_hexdigit())) {
                        return false;
                    }
                }
                _ => return false,
            },
            _ => {}
        }
    }
    true
}

/// A JSON string literal, quotes included, ready to be spliced into a serialized event.
pub(crate) struct Piece(String);

impl Piece {
    /// Stands in a template for the piece; replaced once, after serialization.
    pub const MARK: &'static str = "\u{E000}normfuzz-piece\u{E000}";

    fn of(chunk: &Chunk) -> Piece {
        match chunk {
            Chunk::Text(s) => Piece(Value::String(s.clone()).to_string()),
            Chunk::Json(raw) => Piece(format!("\"{raw}\"")),
        }
    }

    fn inner(&self) -> &str {
        self.0
            .get(1..self.0.len().saturating_sub(1))
            .unwrap_or_default()
    }
}

/// Serializes `template` with the `Piece::MARK` string replaced by `piece`.
pub(crate) fn splice(template: &Value, piece: &Piece) -> String {
    template
        .to_string()
        .replacen(&format!("\"{}\"", Piece::MARK), &piece.0, 1)
}

/// Tool-call arguments as two partial JSON fragments (clients must join them before parsing).
pub(crate) fn split_json(arguments: &Value) -> Vec<String> {
    let s = arguments.to_string();
    let mut mid = s.len() / 2;
    while !s.is_char_boundary(mid) {
        mid -= 1;
    }
    let (a, b) = s.split_at(mid);
    [a, b]
        .into_iter()
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect()
}

/// One Server-Sent Event.
pub(crate) fn sse(event: Option<&str>, data: &str) -> String {
    match event {
        Some(name) => format!("event: {name}\ndata: {data}\n\n"),
        None => format!("data: {data}\n\n"),
    }
}

/// A successful answer body with its content type.
#[derive(Debug, Clone)]
pub struct Reply {
    pub content_type: &'static str,
    pub body: Vec<u8>,
}

impl Reply {
    pub(crate) fn json(body: String) -> Reply {
        Reply {
            content_type: "application/json",
            body: body.into_bytes(),
        }
    }
    pub(crate) fn sse(body: String) -> Reply {
        Reply {
            content_type: "text/event-stream",
            body: body.into_bytes(),
        }
    }
    pub(crate) fn ndjson(body: String) -> Reply {
        Reply {
            content_type: "application/x-ndjson",
            body: body.into_bytes(),
        }
    }
    pub(crate) fn event_stream(body: Vec<u8>) -> Reply {
        Reply {
            content_type: "application/vnd.amazon.eventstream",
            body,
        }
    }
}

/// What an API answers to a scripted failure (`{"error": KIND}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// 429 (Ollama, which has no rate limit of its own: its 503 "server busy").
    RateLimit,
    /// 500.
    ServerError,
    /// 503; Anthropic's 529 `overloaded_error`.
    Overloaded,
    /// 400: the API cannot process an image of the request.
    Image,
    /// 400: an image's declared format is refused (the failure runtimes classify as a format error).
    Format,
}

impl FailureKind {
    pub const ALL: [FailureKind; 5] = [
        FailureKind::RateLimit,
        FailureKind::ServerError,
        FailureKind::Overloaded,
        FailureKind::Image,
        FailureKind::Format,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FailureKind::RateLimit => "rate_limit",
            FailureKind::ServerError => "server_error",
            FailureKind::Overloaded => "overloaded",
            FailureKind::Image => "image",
            FailureKind::Format => "format",
        }
    }

    fn parse(s: &str) -> anyhow::Result<FailureKind> {
        FailureKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .with_context(|| {
                let names: Vec<_> = FailureKind::ALL.iter().map(|k| k.name()).collect();
                format!("unknown error {s:?}: expected one of {}", names.join(", "))
            })
    }
}

/// A scripted failure: the API's own error answer, `times` requests in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub kind: FailureKind,
    /// How many requests in a row get it (at least 1).
    pub times: u32,
    /// Seconds a client is told to wait (`retry-after`, Gemini's `RetryInfo`, ...).
    pub retry_after: u32,
    /// The error message in place of the catalogue's, in the same envelope: what a runtime
    /// passes on from a provider's error (a vision model's failure text, issue 35).
    pub message: Option<String>,
}

/// An hour: more than any test waits, and what SDKs cap `retry-after` well below.
const MAX_RETRY_AFTER: u64 = 3600;

impl Failure {
    pub fn new(kind: FailureKind) -> Failure {
        Failure {
            kind,
            times: 1,
            retry_after: 1,
            message: None,
        }
    }

    fn from_json(obj: &serde_json::Map<String, Value>) -> anyhow::Result<Failure> {
        let kind = obj
            .get("error")
            .and_then(Value::as_str)
            .context("`error` must be a string")?;
        let mut failure = Failure::new(FailureKind::parse(kind)?);
        if let Some(t) = obj.get("times") {
            failure.times = t
                .as_u64()
                .filter(|&n| n >= 1)
                .and_then(|n| u32::try_from(n).ok())
                .context("`times` must be an integer of at least 1")?;
        }
        if let Some(r) = obj.get("retry_after") {
            failure.retry_after = r
                .as_u64()
                .filter(|&n| n <= MAX_RETRY_AFTER)
                .and_then(|n| u32::try_from(n).ok())
                .with_context(|| {
                    format!("`retry_after` must be an integer of seconds, 0 to {MAX_RETRY_AFTER}")
                })?;
        }
        if let Some(m) = obj.get("message") {
            failure.message = Some(m.as_str().context("`message` must be a string")?.into());
        }
        for key in obj.keys() {
            if !matches!(key.as_str(), "error" | "times" | "retry_after" | "message") {
                bail!(
                    "unknown field `{key}` in an error step (fields: error, times, retry_after, message)"
                );
            }
        }
        Ok(failure)
    }
}

/// One entry of a script's queue: an answer, a failure served `times` times, or a streamed
/// text answer cut by a failure after its deltas.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    Answer(Turn),
    Fail(Failure),
    MidStream { turn: Turn, failure: Failure },
}

impl Step {
    pub fn from_json(v: &Value) -> anyhow::Result<Step> {
        match v.as_object() {
            Some(obj) if obj.contains_key("error") => Ok(Step::Fail(Failure::from_json(obj)?)),
            Some(obj) if obj.contains_key("error_mid_stream") => {
                let kind = obj["error_mid_stream"]
                    .as_str()
                    .context("`error_mid_stream` must be a string")?;
                let failure = Failure::new(FailureKind::parse(kind)?);
                let turn = Turn::from_json(v)?;
                if !matches!(turn, Turn::Text { .. }) {
                    bail!("`error_mid_stream` cuts a text answer (`text` or `chunks`)");
                }
                Ok(Step::MidStream { turn, failure })
            }
            _ => Turn::from_json(v).map(Step::Answer),
        }
    }
}

/// What one request is answered with, and from where.
#[derive(Debug, Clone, PartialEq)]
pub struct Served {
    pub step: Step,
    /// The `providers` key of the queue that answered; `None` for the shared queue.
    pub queue: Option<String>,
    /// For a failure: which of its `times` this is (1-based); 1 for an answer.
    pub attempt: u32,
}

/// One queue: its steps in order, then `after` for ever.
#[derive(Debug, Clone, PartialEq)]
struct Queue {
    steps: VecDeque<Step>,
    after: Step,
    /// Requests the head step (or `after`, once the queue is empty) has answered so far.
    served: u32,
}

impl Queue {
    fn new(steps: Vec<Step>, after: Step) -> Queue {
        Queue {
            steps: steps.into(),
            after,
            served: 0,
        }
    }

    /// `[step, ...]` or `{"turns": [...], "after": step}`; `providers` only at the top.
    fn from_json(v: &Value, top: bool) -> anyhow::Result<Queue> {
        let (steps, after) = match v {
            Value::Array(steps) => (steps.as_slice(), None),
            Value::Object(o) => {
                for key in o.keys() {
                    let known =
                        matches!(key.as_str(), "turns" | "after") || (top && key == "providers");
                    if !known {
                        bail!(
                            "unknown field `{key}` in a script (fields: turns, after{})",
                            if top { ", providers" } else { "" }
                        );
                    }
                }
                let steps = match o.get("turns") {
                    None => &[][..],
                    Some(t) => t.as_array().context("`turns` must be an array")?.as_slice(),
                };
                (steps, o.get("after"))
            }
            _ => bail!("a script is an array of turns or {{\"turns\": [...], \"after\": turn}}"),
        };
        let steps = steps
            .iter()
            .enumerate()
            .map(|(i, t)| Step::from_json(t).with_context(|| format!("turn {i}")))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let after = after
            .map(Step::from_json)
            .transpose()
            .context("`after`")?
            .unwrap_or_else(|| Step::Answer(Turn::text("ok")));
        Ok(Queue::new(steps, after))
    }

    fn next(&mut self) -> (Step, u32) {
        let head = self.steps.front().unwrap_or(&self.after).clone();
        self.served = self.served.saturating_add(1);
        let attempt = self.served;
        let done = match &head {
            Step::Answer(_) | Step::MidStream { .. } => true,
            Step::Fail(f) => self.served >= f.times,
        };
        // `after` repeats for ever; each of its failures counts from 1 again.
        if done {
            self.served = 0;
            self.steps.pop_front();
        }
        (head, attempt)
    }
}

/// The queues of steps answered to accepted requests: one shared, and one per API or model that
/// `providers` names.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    shared: Queue,
    keyed: BTreeMap<String, Queue>,
}

impl Default for Script {
    fn default() -> Self {
        Script::new(Vec::new(), Turn::text("ok"))
    }
}

impl Script {
    pub fn new(turns: Vec<Turn>, after: Turn) -> Script {
        Script::of_steps(
            turns.into_iter().map(Step::Answer).collect(),
            Step::Answer(after),
        )
    }

    /// A shared queue of steps, failures included.
    pub fn of_steps(steps: Vec<Step>, after: Step) -> Script {
        Script {
            shared: Queue::new(steps, after),
            keyed: BTreeMap::new(),
        }
    }

    /// Gives `key` (`"anthropic"`, `"anthropic/claude-x"`) a queue of its own.
    pub fn with_queue(
        mut self,
        key: &str,
        steps: Vec<Step>,
        after: Step,
    ) -> anyhow::Result<Script> {
        check_key(key)?;
        self.keyed.insert(key.to_string(), Queue::new(steps, after));
        Ok(self)
    }

    pub fn from_json(v: &Value) -> anyhow::Result<Script> {
        let shared = Queue::from_json(v, true)?;
        let mut keyed = BTreeMap::new();
        if let Some(providers) = v.get("providers") {
            let providers = providers
                .as_object()
                .context("`providers` must be an object of queues keyed by API or API/model")?;
            for (key, queue) in providers {
                check_key(key).with_context(|| format!("`providers.{key}`"))?;
                let queue =
                    Queue::from_json(queue, false).with_context(|| format!("`providers.{key}`"))?;
                keyed.insert(key.clone(), queue);
            }
        }
        Ok(Script { shared, keyed })
    }

    pub fn load(path: &Path) -> anyhow::Result<Script> {
        let text =
            std::fs::read(path).with_context(|| format!("reading script {}", path.display()))?;
        let v: Value = serde_json::from_slice(&text)
            .with_context(|| format!("parsing script {}", path.display()))?;
        Script::from_json(&v).with_context(|| format!("script {}", path.display()))
    }

    /// The answer to a request of `provider` for `model`: the head of the queue of that model,
    /// else of that API, else the shared one (or its `after` once empty).
    pub fn next(&mut self, provider: Provider, model: Option<&str>) -> Served {
        let api = provider.name();
        let key = model
            .map(|m| format!("{api}/{m}"))
            .filter(|k| self.keyed.contains_key(k))
            .or_else(|| self.keyed.contains_key(api).then(|| api.to_string()));
        let queue = match &key {
            Some(k) => self.keyed.get_mut(k),
            None => None,
        };
        let (step, attempt) = queue.unwrap_or(&mut self.shared).next();
        Served {
            step,
            queue: key,
            attempt,
        }
    }

    /// Steps left before `after`, in all queues.
    pub fn remaining(&self) -> usize {
        self.shared.steps.len() + self.keyed.values().map(|q| q.steps.len()).sum::<usize>()
    }
}

/// `api` or `api/model`, with `api` one of [`Provider::name`].
fn check_key(key: &str) -> anyhow::Result<()> {
    let (api, model) = match key.split_once('/') {
        Some((api, model)) => (api, Some(model)),
        None => (key, None),
    };
    if Provider::from_name(api).is_none() {
        bail!(
            "unknown API {api:?} in a `providers` key: expected one of {}, optionally followed by /MODEL",
            Provider::names()
        );
    }
    if model == Some("") {
        bail!("empty model in the `providers` key {key:?}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pieces_splice_raw_escapes_and_join_into_the_whole_text() {
        let turn =
            Turn::from_json(&json!({"chunks": ["a\"", {"json": "\\ud83d"}, {"json": "\\ude00"}]}))
                .unwrap();
        let pieces = turn.pieces();
        assert_eq!(
            splice(&json!({"t": Piece::MARK}), &pieces[1]),
            r#"{"t":"\ud83d"}"#
        );
        let whole: Value =
            serde_json::from_str(&splice(&json!({"t": Piece::MARK}), &turn.whole_text())).unwrap();
        assert_eq!(whole["t"], "a\"\u{1F600}");
    }

    #[test]
    fn raw_chunks_must_be_string_literal_bodies() {
        for bad in ["\"", "\\x", "\\u12", "a\nb"] {
            assert!(
                Turn::from_json(&json!({"chunks": [{"json": bad}]})).is_err(),
                "{bad:?}"
            );
        }
        assert!(Turn::from_json(&json!({"chunks": [{"json": "\\u00e9\\n"}]})).is_ok());
    }

    #[test]
    fn the_shipped_example_scripts_load() {
        for name in ["tool-round-trip.json", "adversarial-stream.json"] {
            let path = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("scripts")
                .join(name);
            assert!(Script::load(&path).unwrap().remaining() > 0, "{name}");
        }
    }

    fn answer(served: Served) -> Turn {
        match served.step {
            Step::Answer(t) => t,
            other => panic!("expected an answer, got {other:?}"),
        }
    }

    #[test]
    fn the_queue_pops_in_order_then_repeats_after() {
        let mut s = Script::from_json(&json!({"turns": [{"tool_call": {"name": "t"}}, {"text": "done"}], "after": {"text": "again"}})).unwrap();
        let mut next = || answer(s.next(Provider::Anthropic, None));
        assert!(matches!(next(), Turn::ToolCall { .. }));
        assert_eq!(next(), Turn::text("done"));
        assert_eq!(next(), Turn::text("again"));
        assert_eq!(next(), Turn::text("again"));
    }

    #[test]
    fn a_failure_is_served_times_times_then_the_next_step() {
        let mut s = Script::from_json(
            &json!([{"error": "rate_limit", "times": 3, "retry_after": 2}, {"text": "ok now"}]),
        )
        .unwrap();
        assert_eq!(s.remaining(), 2);
        for attempt in 1..=3 {
            let served = s.next(Provider::OpenAiChat, Some("gpt-x"));
            assert_eq!(served.attempt, attempt);
            assert_eq!(
                served.step,
                Step::Fail(Failure {
                    kind: FailureKind::RateLimit,
                    times: 3,
                    retry_after: 2,
                    message: None,
                })
            );
        }
        assert_eq!(
            answer(s.next(Provider::OpenAiChat, None)),
            Turn::text("ok now")
        );
        assert_eq!(answer(s.next(Provider::OpenAiChat, None)), Turn::text("ok"));
    }

    #[test]
    fn a_failing_after_fails_for_ever_counting_each_request() {
        let mut s =
            Script::from_json(&json!({"after": {"error": "overloaded", "times": 2}})).unwrap();
        let attempts: Vec<u32> = (0..5)
            .map(|_| s.next(Provider::Anthropic, None).attempt)
            .collect();
        assert_eq!(attempts, [1, 2, 1, 2, 1]);
        assert!(matches!(
            s.next(Provider::Anthropic, None).step,
            Step::Fail(_)
        ));
    }

    #[test]
    fn queues_are_keyed_by_model_then_api_then_shared() {
        let mut s = Script::from_json(&json!({
            "turns": [{"text": "shared"}],
            "providers": {
                "anthropic": {"turns": [{"error": "overloaded"}], "after": {"text": "api"}},
                "anthropic/claude-fallback": [{"text": "model"}],
            }
        }))
        .unwrap();
        assert_eq!(s.remaining(), 3);
        let primary = s.next(Provider::Anthropic, Some("claude-primary"));
        assert_eq!(primary.queue.as_deref(), Some("anthropic"));
        assert!(matches!(primary.step, Step::Fail(_)));
        let fallback = s.next(Provider::Anthropic, Some("claude-fallback"));
        assert_eq!(fallback.queue.as_deref(), Some("anthropic/claude-fallback"));
        assert_eq!(answer(fallback), Turn::text("model"));
        assert_eq!(
            answer(s.next(Provider::Anthropic, Some("claude-primary"))),
            Turn::text("api")
        );
        let other = s.next(Provider::Gemini, Some("gemini-x"));
        assert_eq!(other.queue, None);
        assert_eq!(answer(other), Turn::text("shared"));
    }

    #[test]
    fn scripts_built_in_code_match_their_json() {
        let fail = Step::Fail(Failure::new(FailureKind::Image));
        let built = Script::of_steps(vec![], Step::Answer(Turn::text("ok")))
            .with_queue(
                "gemini/g",
                vec![fail.clone()],
                Step::Answer(Turn::text("later")),
            )
            .unwrap();
        let parsed = Script::from_json(
            &json!({"providers": {"gemini/g": {"turns": [{"error": "image"}], "after": {"text": "later"}}}}),
        )
        .unwrap();
        assert_eq!(built, parsed);
        let e = Script::default()
            .with_queue("gpt", vec![], fail)
            .unwrap_err();
        assert!(e.to_string().contains("unknown API \"gpt\""), "{e}");
    }

    #[test]
    fn bad_error_steps_and_keys_are_refused_with_the_reason() {
        let cases = [
            (json!([{"error": "teapot"}]), "unknown error \"teapot\""),
            (
                json!([{"error": "rate_limit", "times": 0}]),
                "`times` must be an integer of at least 1",
            ),
            (
                json!([{"error": "rate_limit", "times": "2"}]),
                "`times` must be an integer",
            ),
            (
                json!([{"error": "image", "retry_after": 99999}]),
                "`retry_after` must be an integer of seconds",
            ),
            (
                json!([{"error": "image", "status": 400}]),
                "unknown field `status`",
            ),
            (
                json!({"providers": {"openai": []}}),
                "unknown API \"openai\"",
            ),
            (json!({"providers": {"gemini/": []}}), "empty model"),
            (json!({"providers": []}), "`providers` must be an object"),
            (
                json!({"providers": {"ollama": {"providers": {}}}}),
                "unknown field `providers`",
            ),
            (json!({"turn": []}), "unknown field `turn`"),
            (json!([{"nothing": 1}]), "a turn needs one of"),
        ];
        for (script, reason) in cases {
            let e = format!("{:#}", Script::from_json(&script).unwrap_err());
            assert!(e.contains(reason), "{script}: {e}");
        }
    }
}
