//! A Bot API call's parameters, from any of the four encodings the API takes: the query string,
//! `application/x-www-form-urlencoded`, `application/json` and `multipart/form-data` (uploads).
//! Query parameters come first; the body's replace them name by name.
//!
//! Multipart bodies are split by `multer`; each part's `Content-Disposition` is read as the Bot
//! API server reads it (tdlib's `HttpReader`: a value is quoted with `\` escapes or a token up to
//! `;`, then percent-decoded), because grammY writes `filename=` unquoted
//! (`content-disposition:form-data;name="x";filename=a b.png`) and a token parser that stops at
//! the space would cut the file name. A part with a file name is an upload, any other a value.

use std::convert::Infallible;

use serde_json::{Map, Value};
use wiremock::Request;

/// How the parameters arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Encoding {
    Query,
    Form,
    Json,
    Multipart,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Query => "query",
            Encoding::Form => "form",
            Encoding::Json => "json",
            Encoding::Multipart => "multipart",
        }
    }
}

/// One uploaded file (a multipart part with a file name).
#[derive(Debug, Clone)]
pub(super) struct Upload {
    pub field: String,
    pub file_name: String,
    pub content_type: Option<String>,
    pub bytes: Vec<u8>,
}

#[derive(Debug, Clone)]
pub(super) struct Params {
    pub encoding: Encoding,
    /// Values as sent: strings, except a JSON body's own values.
    pub values: Map<String, Value>,
    pub uploads: Vec<Upload>,
}

impl Params {
    /// A parameter as the Bot API reads it: a string, a JSON body's other values as JSON text.
    pub fn get(&self, key: &str) -> Option<String> {
        match self.values.get(key)? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }

    /// The parameter, or `""` when absent (the Bot API does not tell the two apart).
    pub fn str(&self, key: &str) -> String {
        self.get(key).unwrap_or_default()
    }

    /// An integer parameter (`None`: absent or not a number).
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key)?.trim().parse().ok()
    }

    pub fn upload(&self, field: &str) -> Option<usize> {
        self.uploads.iter().position(|u| u.field == field)
    }
}

/// The parameters of `request`, or the reason they cannot be read (a `Bad Request` description).
pub(super) async fn read(request: &Request) -> Result<Params, String> {
    let mut params = Params {
        encoding: Encoding::Query,
        values: request
            .url
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), Value::String(v.into_owned())))
            .collect(),
        uploads: Vec::new(),
    };
    let content_type = request
        .headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let essence = content_type
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    if request.body.is_empty() {
        return Ok(params);
    }
    match essence.as_str() {
        "application/json" => {
            params.encoding = Encoding::Json;
            // [INF] the wording: the Bot API refuses a body that is no JSON object.
            let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(&request.body) else {
                return Err("can't parse JSON object".into());
            };
            params.values.extend(body);
        }
        "application/x-www-form-urlencoded" => {
            params.encoding = Encoding::Form;
            for (k, v) in form_urlencoded::parse(&request.body) {
                params
                    .values
                    .insert(k.into_owned(), Value::String(v.into_owned()));
            }
        }
        "multipart/form-data" => {
            params.encoding = Encoding::Multipart;
            multipart(content_type, request.body.clone(), &mut params).await?;
        }
        // Any other body carries no parameters (the Bot API ignores it too).
        _ => {}
    }
    Ok(params)
}

async fn multipart(content_type: &str, body: Vec<u8>, params: &mut Params) -> Result<(), String> {
    // [INF] the wordings of the two refusals below.
    let boundary =
        multer::parse_boundary(content_type).map_err(|_| "can't find multipart boundary")?;
    let stream = futures_util::stream::once(async move { Ok::<_, Infallible>(body) });
    let mut parts = multer::Multipart::new(stream, boundary);
    loop {
        let field = match parts.next_field().await {
            Ok(Some(field)) => field,
            Ok(None) => return Ok(()),
            Err(e) => return Err(format!("can't parse multipart/form-data: {e}")),
        };
        let disposition = field
            .headers()
            .get("content-disposition")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let content_type = field
            .headers()
            .get("content-type")
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned());
        let (name, file_name) = disposition_names(&disposition);
        let bytes = field
            .bytes()
            .await
            .map_err(|e| format!("can't parse multipart/form-data: {e}"))?;
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return Err("field name in multipart/form-data not found".into());
        };
        match file_name {
            Some(file_name) => params.uploads.push(Upload {
                field: name,
                file_name,
                content_type,
                bytes: bytes.to_vec(),
            }),
            None => {
                let value = String::from_utf8_lossy(&bytes).into_owned();
                params.values.insert(name, Value::String(value));
            }
        }
    }
}

/// `name` and `filename` of a `Content-Disposition` value, read as tdlib's `HttpReader` does.
pub(super) fn disposition_names(header: &str) -> (Option<String>, Option<String>) {
    let mut rest = header.split_once(';').map_or("", |(_, r)| r);
    let (mut name, mut file_name) = (None, None);
    while !rest.trim_start().is_empty() {
        rest = rest.trim_start();
        let Some(eq) = rest.find('=') else { break };
        let key = rest[..eq].trim().to_ascii_lowercase();
        rest = rest[eq + 1..].trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('"') {
            let mut value = String::new();
            let mut chars = quoted.char_indices();
            let mut end = quoted.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        end = i + 1;
                        break;
                    }
                    '\\' => value.extend(chars.next().map(|(_, c)| c)),
                    c => value.push(c),
                }
            }
            rest = quoted[end..].trim_start();
            rest = rest.strip_prefix(';').unwrap_or(rest);
            value
        } else {
            let end = rest.find(';').unwrap_or(rest.len());
            let value = rest[..end].trim().to_string();
            rest = rest.get(end + 1..).unwrap_or("");
            value
        };
        let value = percent_encoding::percent_decode_str(&value)
            .decode_utf8_lossy()
            .into_owned();
        match key.as_str() {
            "name" => name = Some(value),
            "filename" => file_name = Some(value),
            _ => {}
        }
    }
    (name, file_name)
}

#[cfg(test)]
mod tests {
    use super::disposition_names;

    #[test]
    fn content_disposition_is_read_as_the_bot_api_reads_it() {
        let n = |h: &str| disposition_names(h);
        assert_eq!(
            n("form-data;name=\"abc\";filename=a b.png"),
            (Some("abc".into()), Some("a b.png".into()))
        );
        assert_eq!(
            n("form-data; name=\"photo\"; filename=\"x\\\"y;z.jpg\""),
            (Some("photo".into()), Some("x\"y;z.jpg".into()))
        );
        assert_eq!(n("form-data; name=caption"), (Some("caption".into()), None));
        assert_eq!(
            n("form-data; name=f; filename=%2Fetc%2Fpasswd"),
            (Some("f".into()), Some("/etc/passwd".into()))
        );
    }
}
