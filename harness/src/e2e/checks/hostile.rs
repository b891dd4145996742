//! The model's hostile moves, judged where only the canary route sees them: a fetch of a URL a
//! case named (loopback, non-https: every one is a URL the media policy refuses) is S3, with
//! the field of the model's call that named it. What the runtime delivered of them is judged
//! with the rest of its delivery (`check_delivered`, and by bytes in `channel.rs`).

use serde_json::{Value, json};

use super::{E2eFinding, Layer};
use crate::e2e::marker::trace;
use crate::excerpt::bounded;
use crate::rule::Rule;

/// S3 for each hit of the canary route among a turn's capture `records` (case `case`).
pub fn check_canary_hits(case: &str, records: &[Value]) -> Vec<E2eFinding> {
    records
        .iter()
        .filter(|r| r["canary"].is_string())
        .map(|r| {
            let path = r["path"].as_str().unwrap_or_default();
            let host = r["headers"]["host"].as_str().unwrap_or("?");
            let field = trace(path, case);
            let named = field.map_or("no field of this case", |f| f.tag());
            E2eFinding::new(
                Rule::S3,
                Layer::Model,
                format!("the runtime fetched a refused URL the model named ({named})"),
                json!({
                    "url": bounded(&format!("http://{host}{path}"), 300),
                    "field": field,
                    "method": r["method"],
                    "userAgent": r["headers"]["user-agent"],
                }),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::hostile::Field;
    use crate::e2e::marker::marker;

    #[test]
    fn every_canary_hit_is_s3_with_the_field_that_named_it() {
        let send = marker("c", Field::Send);
        let records = [
            json!({"provider": "openai-chat", "path": "/v1/chat/completions"}),
            json!({"canary": send, "method": "GET", "path": format!("/canary/{send}.png"),
                   "headers": {"host": "localhost:4000", "user-agent": "python"}}),
        ];
        let found = check_canary_hits("c", &records);
        assert_eq!(found.len(), 1);
        assert_eq!((found[0].rule, found[0].layer), (Rule::S3, Layer::Model));
        assert_eq!(found[0].evidence["field"], "send");
        assert_eq!(
            found[0].evidence["url"],
            format!("http://localhost:4000/canary/{send}.png")
        );
        // A hit no field of this case explains is still a fetch of a refused URL.
        assert_eq!(
            check_canary_hits("other", &records)[0].evidence["field"],
            Value::Null
        );
        assert!(check_canary_hits("c", &records[..1]).is_empty());
    }
}
