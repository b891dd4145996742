//! What OpenAI Chat Completions (docs/research/providers.md §2) and Responses (docs/research/providers.md §3) share: the error envelope,
//! the parameter checks, the data-URL image rule and the pieces of the scripted answers.
//!
//! OpenAI does not compare a data URL's label with the bytes (docs/research/providers.md §2.2): only bytes that are not
//! PNG/JPEG/GIF/WebP are refused. `http(s)` image URLs are accepted without fetching (documented choice:
//! the real API would download them; this mock never fetches a URL found in a request).

use super::{text_of, url_scheme};
use crate::b64::{self, Flavor};
use crate::ids;
use crate::image::{self, ImageKind};
use crate::script::{Failure, FailureKind};
use crate::verdict::{Checked, Rejection};
use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// 20 MB per image, 50 MB of image bytes per request (docs/research/providers.md §2.2). [INF] MiB, decoded bytes.
const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;
const MAX_REQUEST_IMAGE_BYTES: usize = 50 * 1024 * 1024;
/// [INF] the newer documented limit (1,500; older docs: 500).
const MAX_IMAGES: usize = 1500;

/// The error catalogue shared by both APIs (docs/research/providers.md §2.4, §3.2): verbatim where observed, `[INF]`
/// otherwise. Each API's own entries are in its module.
pub(super) mod msg {
    /// [INF] from memory: the API's answer to a body that is not JSON.
    pub const BAD_JSON: &str = "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)";
    pub const BAD_BASE64: &str = "Invalid base64 image_url."; // E-O3
    pub const NOT_IMAGE_MIME: &str = "Invalid MIME type. Only image types are supported."; // E-O4
    pub const UNSUPPORTED_IMAGE: &str = "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp']."; // E-O5
    /// [INF] the 2024-06 variant of E-O5, used for an image over 20 MB.
    pub const IMAGE_TOO_BIG: &str = "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].";
    pub const NOT_VALID_IMAGE: &str = "The image data you provided does not represent a valid image. Please check your input and try again with one of the supported image formats: ['image/jpeg', 'image/png', 'image/gif', 'image/webp']."; // Responses §3.2

    pub fn missing(param: &str) -> String {
        format!("Missing required parameter: '{param}'.") // E-O9
    }
    pub fn wrong_type(param: &str, expected: &str, got: &str) -> String {
        format!("Invalid type for '{param}': expected {expected}, but got {got} instead.") // E-O1
    }
    pub fn bad_value(value: &str, supported: &str) -> String {
        format!("Invalid value: '{value}'. Supported values are: {supported}.") // [INF]
    }
    pub fn no_data_prefix(chat: bool, param: &str) -> String {
        let example = "Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got a value without the 'data:' prefix.";
        // E-O2 for Chat; the Responses wording follows its observed empty-base64 message. [INF]
        if chat {
            format!("Invalid image URL: '{param}'. {example}")
        } else {
            format!("Invalid '{param}'. {example}")
        }
    }
    pub fn empty_base64(param: &str) -> String {
        format!(
            "Invalid '{param}'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got empty base64-encoded bytes."
        ) // §3.2
    }
    /// [INF] no observed text for either limit (docs/research/providers.md §8).
    pub fn too_many_images(n: usize, max: usize) -> String {
        format!(
            "Invalid request: {n} images were provided, but at most {max} images are allowed per request."
        )
    }
    pub fn too_many_image_bytes(n: usize, max: usize) -> String {
        format!(
            "Invalid request: the images total {n} bytes, but at most {max} bytes of images are allowed per request."
        )
    }
}

/// Which of the two APIs is judging (their messages and paths differ).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Api {
    Chat,
    Responses,
}

pub(super) fn reject(
    message: impl Into<String>,
    param: Option<&str>,
    code: Option<&str>,
) -> Rejection {
    let id = ids::openai();
    Rejection {
        status: 400,
        body: json!({"error": {"message": message.into(), "type": "invalid_request_error", "param": param, "code": code}}),
        headers: vec![("x-request-id".into(), id)],
    }
}

/// Scripted failures, for both APIs. Statuses, `type`s and `code`s:
/// https://platform.openai.com/docs/guides/error-codes (429 `rate_limit_exceeded`, 500, 503
/// `server_is_overloaded` of type `service_unavailable_error`, as tabled at
/// https://learn.microsoft.com/en-us/microsoft-cloud/dev/dev-proxy/concepts/openai-rate-limit-reached).
/// A 429 carries `retry-after` and the `x-ratelimit-*` headers
/// (https://platform.openai.com/docs/guides/rate-limits; values as seen at
/// https://community.openai.com/t/how-to-get-rate-limit-reset-time-for-response-api/1268905).
pub(super) fn failure(api: Api, f: &Failure, model: &str) -> Rejection {
    let envelope = |status: u16, message: String, kind: &str, code: Option<&str>| Rejection {
        status,
        body: json!({"error": {"message": message, "type": kind, "param": null, "code": code}}),
        headers: vec![("x-request-id".into(), ids::openai())],
    };
    match f.kind {
        FailureKind::RateLimit => {
            let s = f.retry_after;
            // Wording of real answers, e.g. https://gitlab.com/wally-the-wobot/wally/-/issues/62.
            let mut r = envelope(
                429,
                format!(
                    "Rate limit reached for {model} in organization org-normfuzz on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in {s}s. Visit https://platform.openai.com/account/rate-limits to learn more."
                ),
                "requests",
                Some("rate_limit_exceeded"),
            );
            r.headers.extend([
                ("retry-after".into(), s.to_string()),
                ("x-ratelimit-limit-requests".into(), "3".into()),
                ("x-ratelimit-remaining-requests".into(), "0".into()),
                ("x-ratelimit-reset-requests".into(), format!("{s}s")),
                ("x-ratelimit-limit-tokens".into(), "40000".into()),
                ("x-ratelimit-remaining-tokens".into(), "39000".into()),
                ("x-ratelimit-reset-tokens".into(), "1.5s".into()),
            ]);
            r
        }
        FailureKind::ServerError => envelope(
            500,
            "The server had an error while processing your request. Sorry about that!".into(),
            "server_error",
            None,
        ),
        FailureKind::Overloaded => envelope(
            503,
            "The engine is currently overloaded, please try again later.".into(),
            "service_unavailable_error",
            Some("server_is_overloaded"),
        ),
        // E-O5 (Chat) and its Responses counterpart (docs/research/providers.md §2.4, §3.2).
        FailureKind::Image if api == Api::Chat => {
            reject(msg::UNSUPPORTED_IMAGE, None, Some("invalid_image_format"))
        }
        FailureKind::Image => reject(msg::NOT_VALID_IMAGE, Some("input"), Some("invalid_value")),
        FailureKind::Format => reject(msg::NOT_IMAGE_MIME, None, Some("invalid_image_format")), // E-O4
    }
}

pub(super) fn missing(param: &str) -> Rejection {
    reject(
        msg::missing(param),
        Some(param),
        Some("missing_required_parameter"),
    )
}

pub(super) fn invalid_value(message: String, param: &str) -> Rejection {
    reject(message, Some(param), Some("invalid_value"))
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub(super) fn wrong_type(param: &str, expected: &str, got: &Value) -> Rejection {
    reject(
        msg::wrong_type(param, expected, kind_of(got)),
        Some(param),
        Some("invalid_type"),
    )
}

/// Parses the body and requires a string `model`.
pub(super) fn parse(body: &[u8]) -> Result<Value, Rejection> {
    serde_json::from_slice::<Value>(body).map_err(|_| reject(msg::BAD_JSON, None, None))
}

/// The parsed body as the request object, with its `model`.
pub(super) fn request_object(request: &Value) -> Result<&Map<String, Value>, Rejection> {
    let Value::Object(request) = request else {
        return Err(reject(msg::BAD_JSON, None, None));
    };
    match request.get("model") {
        None => Err(missing("model")),
        Some(Value::String(_)) => Ok(request),
        Some(other) => Err(wrong_type("model", "a string", other)),
    }
}

pub(super) fn required_str<'a>(
    obj: &'a Map<String, Value>,
    path: &str,
    key: &str,
) -> Result<&'a str, Rejection> {
    let param = format!("{path}.{key}");
    match obj.get(key) {
        None => Err(missing(&param)),
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(wrong_type(&param, "a string", other)),
    }
}

pub(super) fn object<'a>(v: &'a Value, param: &str) -> Result<&'a Map<String, Value>, Rejection> {
    v.as_object()
        .ok_or_else(|| wrong_type(param, "an object", v))
}

/// An image reference found during the schema pass, judged after it.
pub(super) struct ImageRef<'a> {
    /// Where the URL sits (`messages[0].content[1].image_url.url`, `input[2].output[0].image_url`).
    pub param: String,
    pub url: &'a str,
}

// ---------------------------------------------------------------- images

/// Why an image URL is refused, before mapping to each API's wording.
enum Fault {
    NotDataUrl,
    NotImageMime,
    BadBase64,
    EmptyBase64,
    NotAnImage,
    TooBig,
}

/// Judges one image URL; the decoded size when it is a data URL.
fn judge_url(url: &str) -> Result<usize, Fault> {
    match url_scheme(url).as_deref() {
        Some("http" | "https") => return Ok(0),
        Some("data") => {}
        _ => return Err(Fault::NotDataUrl),
    }
    let rest = url.get(5..).unwrap_or_default();
    let (meta, payload) = rest.split_once(',').ok_or(Fault::BadBase64)?;
    let mut params = meta.split(';');
    let mime = params.next().unwrap_or_default();
    if !mime.to_ascii_lowercase().starts_with("image/") {
        return Err(Fault::NotImageMime);
    }
    if !params.any(|p| p.eq_ignore_ascii_case("base64")) {
        return Err(Fault::BadBase64);
    }
    if payload.is_empty() {
        return Err(Fault::EmptyBase64);
    }
    let bytes = b64::decode(Flavor::OpenAi, payload).ok_or(Fault::BadBase64)?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(Fault::TooBig);
    }
    match image::inspect(&bytes) {
        Some(info) if info.kind != ImageKind::Heif => Ok(bytes.len()),
        _ => Err(Fault::NotAnImage),
    }
}

pub(super) fn check_images(api: Api, images: &[ImageRef]) -> Checked {
    if images.len() > MAX_IMAGES {
        return Err(reject(
            msg::too_many_images(images.len(), MAX_IMAGES),
            None,
            None,
        ));
    }
    let mut total = 0usize;
    for image in images {
        let chat = api == Api::Chat;
        total += judge_url(image.url).map_err(|fault| match fault {
            Fault::NotDataUrl => {
                invalid_value(msg::no_data_prefix(chat, &image.param), &image.param)
            }
            Fault::EmptyBase64 if !chat => {
                invalid_value(msg::empty_base64(&image.param), &image.param)
            }
            Fault::EmptyBase64 | Fault::BadBase64 => {
                reject(msg::BAD_BASE64, None, Some("invalid_base64"))
            }
            Fault::NotImageMime => reject(msg::NOT_IMAGE_MIME, None, Some("invalid_image_format")),
            Fault::TooBig => reject(msg::IMAGE_TOO_BIG, None, Some("invalid_image_format")),
            Fault::NotAnImage if chat => {
                reject(msg::UNSUPPORTED_IMAGE, None, Some("invalid_image_format"))
            }
            Fault::NotAnImage => reject(msg::NOT_VALID_IMAGE, Some("input"), Some("invalid_value")),
        })?;
    }
    if total > MAX_REQUEST_IMAGE_BYTES {
        return Err(reject(
            msg::too_many_image_bytes(total, MAX_REQUEST_IMAGE_BYTES),
            None,
            None,
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------- requests and answers

pub(super) fn data_url(data: &Value, mime: &Value) -> String {
    format!("data:{};base64,{}", text_of(mime), text_of(data))
}

pub(super) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

pub(super) fn call_id(turn_id: &Option<String>) -> String {
    turn_id
        .clone()
        .unwrap_or_else(|| format!("call_{}", ids::short()))
}
