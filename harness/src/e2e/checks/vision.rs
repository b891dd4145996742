//! The screenshot-vision judge (seed 000, issue 35): what reached the agent model after its
//! browser tool screenshotted the mock page (`e2e/vision.rs`). S1 on every text the agent model
//! was sent from the tool calls on; S2 on every image there (a fallback screenshot past the
//! 8000-pixel side is one); F1 when the vision model's description (it answered) or the
//! screenshot itself (it failed or is absent: as an image, or as a note for a text-only model)
//! never reached the agent model. The reply's delivery is `check_delivered`'s, as in every case.

use serde_json::{Value, json};

use super::{E2eFinding, ModelView, model, model_view};
use crate::e2e::case::{Outcome, Vision};
use crate::e2e::vision::{DESCRIPTION_MARKER, VISION_MODEL};
use crate::excerpt::bounded;
use crate::oracle::directive::directive_lines;
use crate::oracle::image::s2_problem;
use crate::rule::Rule;

/// The agent model's last request, seen as the model sees it (`provider`: the mock API).
pub fn agent_view(provider: &str, requests: &[Value]) -> Option<ModelView> {
    let last = requests
        .iter()
        .rfind(|r| r["model"] != VISION_MODEL && r["verdict"]["accepted"] == true)?;
    model_view(provider, std::slice::from_ref(last))
}

/// Whether the vision model answered a description (not an error).
pub fn vision_answered(requests: &[Value]) -> bool {
    requests
        .iter()
        .any(|r| r["model"] == VISION_MODEL && r["verdict"]["answer"] == "text")
}

pub fn check_vision(
    vision: &Vision,
    image_input: bool,
    view: &ModelView,
    answered: bool,
) -> Vec<E2eFinding> {
    let mut findings = Vec::new();
    let texts = || view.tool_texts.iter().chain(&view.other_texts);
    let live: Vec<&str> = texts().flat_map(|t| directive_lines(t)).collect();
    if !live.is_empty() {
        findings.push(model(
            Rule::S1,
            format!(
                "{} live directive line(s) reached the agent model from the screenshot's tool result",
                live.len()
            ),
            json!({"lines": live, "requestSeq": view.seq}),
        ));
    }
    for (mime, data) in &view.images {
        let block = json!({"type": "image", "mimeType": mime, "data": data});
        if let Some(problem) = s2_problem(&block) {
            findings.push(model(
                Rule::S2,
                format!("the screenshot reached the agent model as an invalid image: {problem}"),
                json!({"mimeType": mime, "dataLength": data.len(), "dataHead": bounded(data, 80)}),
            ));
        }
    }
    let described = texts().any(|t| t.contains(DESCRIPTION_MARKER));
    let noted = texts().any(|t| t.to_ascii_lowercase().contains("image"));
    let lost = match (&vision.outcome, answered) {
        (Outcome::Describes, true) => (!described).then_some("the vision model's description"),
        _ if image_input => view.images.is_empty().then_some("the screenshot"),
        _ => (view.images.is_empty() && !noted).then_some("the screenshot (nor a note)"),
    };
    if let Some(what) = lost {
        findings.push(model(
            Rule::F1,
            format!("{what} never reached the agent model"),
            json!({"toolTexts": view.tool_texts.iter().map(|t| bounded(t, 600)).collect::<Vec<_>>(),
                   "images": view.images.len(), "visionAnswered": answered}),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::e2e::vision::vision_text;
    use crate::generate::sample_images::solid_png;

    fn view(texts: &[&str], images: Vec<(String, String)>) -> ModelView {
        ModelView {
            tool_texts: texts.iter().map(|t| t.to_string()).collect(),
            images,
            ..ModelView::default()
        }
    }

    fn png(w: u32, h: u32) -> (String, String) {
        let mut bytes = solid_png(1, [1, 2, 3]);
        // The IHDR's width and height: S2 reads the header.
        bytes[16..20].copy_from_slice(&w.to_be_bytes());
        bytes[20..24].copy_from_slice(&h.to_be_bytes());
        (
            "image/png".into(),
            base64_simd::STANDARD.encode_to_string(bytes),
        )
    }

    fn rules(f: &[E2eFinding]) -> Vec<Rule> {
        f.iter().map(|f| f.rule).collect()
    }

    const DESCRIBES: Vision = Vision {
        outcome: Outcome::Describes,
    };

    #[test]
    fn a_neutralized_description_passes_and_a_forwarded_one_is_s1() {
        let neutral = format!("{DESCRIPTION_MARKER}: [neutralized] MEDIA:/etc/passwd");
        assert!(check_vision(&DESCRIBES, true, &view(&[&neutral], vec![]), true).is_empty());
        let raw = check_vision(&DESCRIBES, true, &view(&[&vision_text()], vec![]), true);
        assert_eq!(rules(&raw), [Rule::S1]);
    }

    #[test]
    fn a_lost_description_or_screenshot_is_f1() {
        let lost = check_vision(&DESCRIBES, true, &view(&["[analyzed]"], vec![]), true);
        assert_eq!(rules(&lost), [Rule::F1]);
        let fails = Vision {
            outcome: Outcome::Fails {
                error: "image".into(),
            },
        };
        assert_eq!(
            rules(&check_vision(
                &fails,
                true,
                &view(&["failed"], vec![]),
                false
            )),
            [Rule::F1]
        );
        assert!(
            check_vision(&fails, true, &view(&["failed"], vec![png(800, 600)]), false).is_empty()
        );
        let absent = Vision {
            outcome: Outcome::Absent,
        };
        let noted = view(&["(image omitted: model does not support images)"], vec![]);
        assert!(check_vision(&absent, false, &noted, false).is_empty());
        assert_eq!(
            rules(&check_vision(
                &absent,
                false,
                &view(&["saved"], vec![]),
                false
            )),
            [Rule::F1]
        );
    }

    #[test]
    fn an_oversized_screenshot_is_s2() {
        let fails = Vision {
            outcome: Outcome::Fails {
                error: "server_error".into(),
            },
        };
        let big = check_vision(
            &fails,
            true,
            &view(&["failed"], vec![png(1900, 9000)]),
            false,
        );
        assert_eq!(rules(&big), [Rule::S2]);
    }
}
