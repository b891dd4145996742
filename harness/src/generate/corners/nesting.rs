//! Deep nesting (B1): arrays and objects nested 1 to [`MAX_NESTING`] deep, in every place a block
//! can stand. Depths are drawn log-uniformly by decade (1, 2..=10, 11..=100, ...), so a deep
//! value is as likely as a shallow one without every value being deep.
//!
//! Values are built iteratively; dropping or serializing one recursively is the consumer's
//! risk (and the point of the corner). `protocol::json::{depth, drop_value}` walk them without
//! recursion.

use serde_json::{Map, Value, json};

use super::{Choices, between, pick};
use crate::generate::sample_images::tiny_base64;
use crate::reference::image::ImageFormat;

/// Deepest nesting generated. Every stage that handles a generated input takes it: the
/// reference and the protocol writer without recursion, a campaign job on a stack sized for it
/// ([`JOB_STACK`]), and the judges and a fuzz target's checks on libFuzzer's 8 MiB main thread
/// (tested below).
pub const MAX_NESTING: usize = 100_000;

/// Stack for a thread that clones, drops or serializes generated inputs the ordinary (recursive)
/// way: serde_json and proptest take a few hundred bytes per level; 2 KiB each leaves room.
/// Reserved, not committed: only the pages a deep value touches are used.
pub const JOB_STACK: usize = MAX_NESTING * 2048 + (8 << 20);

/// How each level wraps the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `[[[...]]]`
    Array,
    /// `{"a":{"a":...}}`
    Object,
    /// `{"content":{"content":...}}`
    Content,
    /// `{"type":"text","text":{"type":"text","text":...}}`
    TextBlock,
    /// `[{"a":[{"a":...}]}]`
    Alternating,
}

impl Shape {
    pub const ALL: [Shape; 5] = [
        Self::Array,
        Self::Object,
        Self::Content,
        Self::TextBlock,
        Self::Alternating,
    ];
}

/// Where the nested value stands in a `CallToolResult`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The whole result.
    Result,
    /// `content` itself.
    Content,
    /// One block among valid siblings.
    Block,
    /// A text block's `text`.
    Text,
    /// An image block's `data`.
    Data,
    /// A resource block's `resource`.
    Resource,
    /// An embedded resource's `text`.
    ResourceText,
    /// A block's `_meta`.
    Meta,
    /// A block's `annotations`.
    Annotations,
    /// `structuredContent`, with no content.
    Structured,
    /// `structuredContent` next to content.
    StructuredWithContent,
}

impl Place {
    pub const ALL: [Place; 11] = [
        Self::Block,
        Self::Result,
        Self::Content,
        Self::Text,
        Self::Data,
        Self::Resource,
        Self::ResourceText,
        Self::Meta,
        Self::Annotations,
        Self::Structured,
        Self::StructuredWithContent,
    ];
}

/// A depth in `1..=max`, its decade drawn uniformly, then the depth within it.
pub fn depth(c: &mut dyn Choices, max: usize) -> usize {
    let max = max.max(1);
    let mut decades = 1;
    let mut top = 1usize;
    while top < max {
        top = top.saturating_mul(10);
        decades += 1;
    }
    let decade = c.below(decades) as u32;
    if decade == 0 {
        return 1;
    }
    let lo = 10usize.pow(decade - 1) + 1;
    let hi = 10usize.saturating_pow(decade).min(max);
    between(c, lo.min(hi), hi)
}

/// `leaf` wrapped `depth` times in `shape`.
pub fn nest(depth: usize, shape: Shape, leaf: Value) -> Value {
    let mut v = leaf;
    for level in 0..depth {
        v = match shape {
            Shape::Array => Value::Array(vec![v]),
            Shape::Object => object("a", v),
            Shape::Content => object("content", v),
            Shape::TextBlock => {
                let mut map = Map::new();
                map.insert("type".into(), json!("text"));
                map.insert("text".into(), v);
                Value::Object(map)
            }
            Shape::Alternating if level % 2 == 0 => Value::Array(vec![v]),
            Shape::Alternating => object("a", v),
        };
    }
    v
}

/// `{key: inner}`, moving `inner`.
fn object(key: &str, inner: Value) -> Value {
    let mut map = Map::new();
    map.insert(key.to_string(), inner);
    Value::Object(map)
}

fn leaf(c: &mut dyn Choices) -> Value {
    match c.below(7) {
        0 => json!("\nMEDIA:/tmp/secret.png"),
        1 => json!({"type": "text", "text": "MEDIA:/tmp/x"}),
        2 => {
            json!({"type": "image", "data": tiny_base64(ImageFormat::Png), "mimeType": "image/png"})
        }
        3 => json!(1),
        4 => Value::Null,
        5 => json!({}),
        _ => json!([]),
    }
}

/// A result with a value nested up to [`MAX_NESTING`] deep in one place.
pub fn nested_result(c: &mut dyn Choices) -> Value {
    nested_result_within(c, MAX_NESTING).2
}

/// A result with a value nested up to `max` deep; with the place and depth drawn.
pub fn nested_result_within(c: &mut dyn Choices, max: usize) -> (Place, usize, Value) {
    let place = pick(c, &Place::ALL);
    let d = depth(c, max);
    let shape = pick(c, &Shape::ALL);
    let deep = nest(d, shape, leaf(c));
    // Moved into place, never through `json!` (which would copy it by serializing, recursively).
    let text = || json!({"type": "text", "text": "before"});
    let block = |kind: &str, field: &str, deep: Value, rest: &[(&str, Value)]| {
        let mut map = Map::new();
        map.insert("type".into(), json!(kind));
        for (k, v) in rest {
            map.insert((*k).into(), v.clone());
        }
        map.insert(field.into(), deep);
        Value::Object(map)
    };
    let content = |blocks: Vec<Value>| object("content", Value::Array(blocks));
    let result = match place {
        Place::Result => deep,
        Place::Content => object("content", deep),
        Place::Block => content(vec![text(), deep, text()]),
        Place::Text => content(vec![block("text", "text", deep, &[])]),
        Place::Data => content(vec![
            block("image", "data", deep, &[("mimeType", json!("image/png"))]),
            text(),
        ]),
        Place::Resource => content(vec![block("resource", "resource", deep, &[])]),
        Place::ResourceText => {
            let mut resource = object("text", deep);
            if let Value::Object(map) = &mut resource {
                map.insert("uri".into(), json!("memo://x"));
            }
            content(vec![block("resource", "resource", resource, &[])])
        }
        Place::Meta => content(vec![block("text", "_meta", deep, &[("text", json!("hi"))])]),
        Place::Annotations => content(vec![block(
            "text",
            "annotations",
            deep,
            &[("text", json!("hi"))],
        )]),
        Place::Structured => object("structuredContent", deep),
        Place::StructuredWithContent => {
            let mut result = content(vec![text()]);
            if let Value::Object(map) = &mut result {
                map.insert("structuredContent".into(), deep);
            }
            result
        }
    };
    (place, d, result)
}

#[cfg(test)]
mod tests {
    use super::super::testing::sample;
    use super::*;
    use crate::protocol::json::{depth as json_depth, drop_value};

    #[test]
    fn depths_are_log_uniform_up_to_the_maximum() {
        let depths = sample(2000, |c| depth(c, MAX_NESTING));
        assert!(depths.iter().all(|&d| (1..=MAX_NESTING).contains(&d)));
        assert!(depths.contains(&1));
        assert!(depths.iter().any(|&d| (2..=10).contains(&d)));
        assert!(
            depths.iter().any(|&d| d >= MAX_NESTING.min(1000)),
            "no depth >= 1000"
        );
        assert!(
            depths.iter().any(|&d| d > MAX_NESTING / 2),
            "no depth near the maximum"
        );
        for (lo, hi, max) in [(1, 1, 1), (1, 10, 10), (1, 100_000, 100_000), (1, 127, 127)] {
            let all = sample(300, |c| depth(c, max));
            assert!(all.iter().all(|&d| (lo..=hi).contains(&d)), "{max}");
            assert!(all.contains(&hi) || max > 10, "{max}");
        }
    }

    #[test]
    fn every_place_and_shape_occurs() {
        let results = sample(600, |c| nested_result_within(c, 50));
        for place in Place::ALL {
            assert!(results.iter().any(|(p, _, _)| *p == place), "{place:?}");
        }
        for (_, d, v) in results {
            assert!(json_depth(&v) >= d, "{v}");
        }
        for shape in Shape::ALL {
            let v = nest(3, shape, json!(1));
            assert_eq!(json_depth(&v), 3);
        }
    }

    /// The deepest values of every place and shape through the reference and the judges on an
    /// 8 MiB stack, as a fuzz target runs them on libFuzzer's main thread.
    #[test]
    fn the_deepest_values_pass_the_reference_and_the_judges_on_an_8_mib_stack() {
        use crate::generate::corners::Tape;
        use crate::protocol::{Answer, Op};
        std::thread::Builder::new()
            .stack_size(8 << 20)
            .spawn(|| {
                for place in 0..Place::ALL.len() as u16 {
                    for shape in 0..Shape::ALL.len() as u16 {
                        // The place, the top decade, MAX_NESTING - 10,001 as two draws, the shape.
                        let top = (MAX_NESTING - 10_001) as u32;
                        let tape = [place, 5, (top >> 16) as u16, top as u16, shape, 0];
                        let (_, d, input) =
                            nested_result_within(&mut Tape::new(&tape), MAX_NESTING);
                        assert_eq!(d, MAX_NESTING);
                        let answer = match crate::reference::call(Op::CoerceToolResult, &input) {
                            Ok(output) => Answer::Output(output),
                            Err(message) => Answer::Refused(message),
                        };
                        let verdict = crate::oracle::judge::judge(
                            Op::CoerceToolResult,
                            &input,
                            &answer,
                            &answer,
                        );
                        assert!(verdict.iter().all(|v| !v.gate), "{verdict:?}");
                        drop_value(input);
                    }
                }
            })
            .expect("thread")
            .join()
            .expect("no stack overflow, no gate failure");
    }

    #[test]
    fn the_deepest_value_is_built_and_dropped_without_recursion() {
        for shape in [Shape::Array, Shape::Alternating] {
            let v = nest(MAX_NESTING, shape, json!(1));
            assert_eq!(json_depth(&v), MAX_NESTING);
            drop_value(v);
        }
    }
}
