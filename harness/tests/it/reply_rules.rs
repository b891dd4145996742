//! Final replies and turn delivery (rules D2, D3, S3, S1): openclaw's `splitMediaFromOutput`,
//! canvas and directive-tag vectors (research notes §3.6, §3.7, §5, seed 000/003) where our rules
//! agree, a comment where we deliberately differ, and properties: nothing the URL policy refuses
//! and no path outside the roots is ever delivered, and no directive line survives.

use std::collections::HashSet;
use std::path::{Component, Path};

use normfuzz::generate::mcp_results::tricky_text;
use normfuzz::oracle::directive::{is_directive_line, lines};
use normfuzz::reference::media_policy::MediaRoots;
use normfuzz::reference::reply::{ParseReplyInput, ParsedReply, parse_reply};
use normfuzz::reference::turn::{Delivery, NormalizeStreamInput, Turn};
use normfuzz::reference::url_policy::check_media_url;
use proptest::prelude::*;
use serde_json::json;

const ROOTS: [&str; 3] = ["/tmp", "/Users/pete", "~/Pictures"];

fn parse(text: &str) -> ParsedReply {
    parse_reply(text, &MediaRoots::new(ROOTS))
}

fn media(text: &str) -> Vec<String> {
    parse(text).media_urls
}

#[test]
fn d2_accepted_openclaw_vectors() {
    for (input, want) in [
        (
            "MEDIA:/Users/pete/My Files/Project Assets/render final.png",
            "/Users/pete/My Files/Project Assets/render final.png",
        ),
        (
            "MEDIA:\"/Users/pete/My Files/Project Assets/render final.png\"",
            "/Users/pete/My Files/Project Assets/render final.png",
        ),
        (
            "MEDIA:/tmp/album.v1/photo.png copy.png",
            "/tmp/album.v1/photo.png copy.png",
        ),
        // Relative paths resolve against the first root (sut-protocol.md; openclaw: the workspace).
        (
            "MEDIA:./screenshots/image.png",
            "/tmp/screenshots/image.png",
        ),
        (
            "MEDIA:media/inbound/image.png",
            "/tmp/media/inbound/image.png",
        ),
        ("   MEDIA:./screenshot.png", "/tmp/screenshot.png"),
        ("MEDIA:image.png", "/tmp/image.png"),
        ("MEDIA:render final.png", "/tmp/render final.png"),
        ("MEDIA:~/Pictures/My File.png", "~/Pictures/My File.png"),
        ("MEDIA:/tmp/render,final.png", "/tmp/render,final.png"),
        (
            "MEDIA:/path/to/image.png\"}],\"details\":{\"provider\":\"openai\"}",
            "/tmp/path/to/image.png",
        ),
        (
            "MEDIA:https://[2606:4700::1111]/a.png",
            "https://[2606:4700::1111]/a.png",
        ),
        (
            "MEDIA:\"https://example.com/video.mp4?token=ends)\"",
            "https://example.com/video.mp4?token=ends)",
        ),
        (
            "MEDIA:https://example.com/video.mp4?token=ends)",
            "https://example.com/video.mp4?token=ends",
        ),
    ] {
        let got = parse(input);
        // `/path/to/...` is outside every root here, so check it under `/tmp`.
        let got = if want.starts_with("/tmp/path") {
            parse(&input.replace("/path", "/tmp/path"))
        } else {
            got
        };
        assert_eq!(
            (
                got.media_urls.as_slice(),
                got.text.as_str(),
                got.rejected_media
            ),
            (&[want.to_string()][..], "", 0),
            "{input}"
        );
    }
    assert_eq!(
        media("MEDIA:/tmp/a.png /tmp/b.png"),
        ["/tmp/a.png", "/tmp/b.png"]
    );
    assert_eq!(
        media("MEDIA:[\"/tmp/a.png\",\"/tmp/b.png\"]"),
        ["/tmp/a.png", "/tmp/b.png"]
    );
    assert_eq!(
        media("MEDIA:\"/tmp/first image.png\", \"/tmp/second image.png\""),
        ["/tmp/first image.png", "/tmp/second image.png"]
    );
    assert_eq!(
        media("MEDIA:/tmp/a.png https://example.com/b.png"),
        ["/tmp/a.png", "https://example.com/b.png"]
    );
    assert_eq!(
        media("MEDIA:/tmp/project screenshots/../../.env /tmp/safe/second.png"),
        ["/tmp/safe/second.png"]
    );
    // openclaw: [/tmp/a.png, media/b.png] (it splits before a bare relative path after a path with
    // an extension); we read one path with a space, which no root holds here.
    assert_eq!(
        parse("MEDIA:/tmp/a.png media/b.png").media_urls,
        ["/tmp/a.png media/b.png"]
    );
}

#[test]
fn d2_rejected_targets_leave_and_are_counted() {
    for input in [
        "MEDIA:../../../etc/passwd",
        "MEDIA:../../.env",
        "MEDIA:\"../../.env)\"",
        "MEDIA:~user/Pictures/My File.png",
        "MEDIA:~/Pictures/../../.ssh/id_rsa",
        "MEDIA:./foo/../../../etc/shadow",
        "MEDIA:file:///tmp/../secret.png",
        "MEDIA:/etc/passwd",
        "MEDIA:http://example.com/a.png",
        "MEDIA:https://intranet/a.png",
        "MEDIA:https://localhost../a.png",
        "MEDIA:https://127.0.0.1/a.png",
        "MEDIA:\"https://169.254.169.254/a.png)\"",
        "MEDIA:https://[::ffff:127.0.0.1]/a.png",
        "MEDIA:https://[64:ff9b::169.254.169.254]/a.png",
        "MEDIA:https://metadata.google.internal/a.png",
        "MEDIA:https://example..com/a.png",
        "MEDIA:https://user:synthetic-password@example.com/a.png",
        // openclaw accepts these: inbound references and Windows paths are outside S3 here.
        "MEDIA:media://inbound/image.png",
        "MEDIA:C:\\Users\\pete\\Pictures\\snap.png",
    ] {
        let got = parse(input);
        assert_eq!(
            (got.media_urls.len(), got.text.as_str(), got.rejected_media),
            (0, "", 1),
            "{input}"
        );
    }
    // openclaw keeps `MEDIA:screenshot` as live text; a directive line never stays here. With no
    // root a bare name has nothing to resolve against.
    let no_roots = parse_reply("MEDIA:screenshot\nok", &MediaRoots::default());
    assert_eq!((no_roots.text.as_str(), no_roots.rejected_media), ("ok", 1));
    assert_eq!(
        (
            parse("MEDIA:").text.as_str(),
            parse("MEDIA:").rejected_media
        ),
        ("", 1)
    );
}

#[test]
fn d2_line_model_and_surrounding_text() {
    for nl in ["\n", "\r\n", "\r"] {
        let got = parse(&format!(
            "MEDIA:/tmp/first.png{nl}MEDIA:/tmp/second.png{nl}Caption{nl}End"
        ));
        assert_eq!(got.media_urls, ["/tmp/first.png", "/tmp/second.png"]);
        assert_eq!(got.text, format!("Caption{nl}End"));
        let blocked = parse(&format!("Caption{nl}MEDIA:../blocked.png{nl}Tail"));
        assert_eq!(
            (blocked.text, blocked.rejected_media),
            (format!("Caption{nl}Tail"), 1)
        );
    }
    assert_eq!(
        parse("The MEDIA: tag fails to deliver"),
        ParsedReply {
            text: "The MEDIA: tag fails to deliver".into(),
            ..Default::default()
        }
    );
    let caption = parse("Caption\n    MEDIA:https://example.com/a.png");
    assert_eq!(
        (caption.text.as_str(), caption.media_urls),
        ("Caption", vec!["https://example.com/a.png".to_string()])
    );
    // openclaw strips the blank line left behind ("Caption"); we keep the text as is.
    assert_eq!(
        parse("MEDIA:https://example.com/a.png\n\nCaption").text,
        "\nCaption"
    );
    // openclaw skips fenced code; S1's reading has no fences, so this is a media line.
    let fenced = parse("Before\n```text\nMEDIA:https://example.com/ignored.png\n```\nAfter");
    assert_eq!(
        (fenced.text.as_str(), fenced.media_urls.len()),
        ("Before\n```text\n```\nAfter", 1)
    );
}

#[test]
fn d2_disguised_directives_are_media_lines() {
    // openclaw reads only ASCII `MEDIA:` on CR/LF lines; these would stay live in its text.
    assert_eq!(
        media("ＭＥＤＩＡ：https://example.com/a.png"),
        ["https://example.com/a.png"]
    );
    assert_eq!(media("M\u{200B}EDIA:/tmp/a.png"), ["/tmp/a.png"]);
    let separator = parse("a\u{2028}MEDIA:/etc/passwd\u{2029}b");
    assert_eq!(
        (separator.text.as_str(), separator.rejected_media),
        ("a\u{2028}b", 1)
    );
    // Removing a tag or an embed can bring MEDIA: to a line start: it is still caught.
    let tagged = parse(
        "[[audio_as_voice]]MEDIA:/etc/passwd\nx [embed ref=\"a\" /]\n[embed url=\"/c\" /]media:/etc/shadow",
    );
    assert_eq!(
        (
            tagged.text.as_str(),
            tagged.rejected_media,
            tagged.audio_as_voice
        ),
        ("x ", 2, true)
    );
}

#[test]
fn d2_tags_become_flags() {
    let got = parse("Hello [[audio_as_voice]]world");
    assert_eq!(
        (got.text.as_str(), got.audio_as_voice),
        ("Hello world", true)
    );
    assert_eq!(parse("a[[ AUDIO_AS_VOICE ]]b").text, "a b");
    // openclaw also collapses the two spaces left here ("Hello world"); we keep the text as is.
    assert_eq!(parse("Hello [[audio_as_voice]] world").text, "Hello  world");
    assert_eq!(
        parse("[[reply_to_current]] hi").reply_to.as_deref(),
        Some("current")
    );
    assert_eq!(
        parse("[[reply_to: 123 ]] hi [[reply_to_current]]")
            .reply_to
            .as_deref(),
        Some("123")
    );
    assert_eq!(
        parse("[[reply_to:1]][[reply_to:2]]").reply_to.as_deref(),
        Some("2")
    );
    assert_eq!(
        parse("[[reply_to:a\u{7}[b c]]").reply_to.as_deref(),
        Some("ab c")
    );
    assert_eq!(
        parse(&format!("[[reply_to:{}]]", "x".repeat(300)))
            .reply_to
            .map(|id| id.len()),
        Some(256)
    );
    // An id that sanitizes to nothing is ignored.
    assert_eq!(parse("[[reply_to: \u{1} ]]").reply_to, None);
    assert_eq!(parse("[[reply_to:\nx]]").text, "[[reply_to:\nx]]");
}

/// A removal joins the text around it; what the join spells is removed too, until nothing is
/// left to remove (fuzz finding: `[[reply_to[[reply_to_current]]:1]]` kept `[[reply_to :1]]`).
#[test]
fn d2_what_a_removal_joins_is_removed_too() {
    let got = parse("a [[reply_to[[reply_to_current]]:1]] b");
    assert_eq!(
        (got.text.as_str(), got.reply_to.as_deref()),
        ("a  b", Some("1"))
    );
    // Nested three deep; the innermost tag is removed first. (A space put between two
    // non-blanks can also break what would join: `[[audio_as_[[reply_to_current]]voice]]`
    // leaves `[[audio_as_ voice]]`, no tag.)
    let got = parse("[[ [[reply_to[[reply_to_current]]:7]] audio_as_voice]]x");
    assert_eq!(
        (
            got.text.as_str(),
            got.audio_as_voice,
            got.reply_to.as_deref()
        ),
        ("x", true, Some("7"))
    );
    // A media line between the halves of a tag (`\s*` spans the line break left behind).
    let got = parse("[[\nMEDIA:/tmp/a.png\nreply_to_current]]hi");
    assert_eq!(
        (
            got.text.as_str(),
            got.reply_to.as_deref(),
            got.media_urls.len()
        ),
        ("hi", Some("current"), 1)
    );
    // A shortcode between the halves of a tag, and a media line inside a shortcode.
    let got = parse("[[reply_to[embed ref=\"v1\" /]_current]]");
    assert_eq!(
        (got.text.as_str(), got.reply_to.as_deref(), got.embeds.len()),
        ("", Some("current"), 1)
    );
    let got = parse("[embed\nMEDIA:/tmp/a.png]\nref=\"v2\" /]");
    assert_eq!((got.text.as_str(), got.embeds.len()), ("", 1));
    // A target delivered before and after a repeat is delivered once.
    let got = parse("MEDIA:/tmp/a.png\n[[\nMEDIA:/tmp/a.png\nreply_to_current]]\nMEDIA:/tmp/a.png");
    assert_eq!(got.media_urls, ["/tmp/a.png"]);
}

#[test]
fn d2_embeds_become_canvas_blocks() {
    // Seed 000/003's stored shape.
    let got = parse("Here.\n[embed ref=\"cv_123\" title=\"Status\" height=\"320\" /]");
    assert_eq!(got.text, "Here.\n");
    assert_eq!(
        got.embeds,
        [json!({"type": "canvas", "preview": {
            "kind": "canvas", "surface": "assistant_message", "render": "url", "viewId": "cv_123",
            "url": "/__openclaw__/canvas/documents/cv_123/index.html", "title": "Status", "preferredHeight": 320
        }})]
    );
    // openclaw's older tests trim the text ("keep me [/embed]"); newest keeps it, as we do. The URL
    // is stored in WHATWG form (trailing slash).
    let url = parse("[embed url=\"https://a.com\" /] keep me [/embed]");
    assert_eq!(
        (url.text.as_str(), url.embeds[0]["preview"]["url"].as_str()),
        (" keep me [/embed]", Some("https://a.com/"))
    );
    let block = parse("before [embed ref=\"doc 1\"] hi [/embed] after");
    assert_eq!(block.text, "before  after");
    assert_eq!(
        block.embeds[0]["preview"]["url"],
        "/__openclaw__/canvas/documents/doc%201/index.html"
    );
    assert_eq!(
        parse("see [embed url=\"https://b.com\" /] end").text,
        "see  end"
    );
    // Heights below 160 are dropped, above 1200 capped.
    assert!(
        parse("[embed ref=\"a\" height=\"100\" /]").embeds[0]["preview"]
            .get("preferredHeight")
            .is_none()
    );
    assert_eq!(
        parse("[embed ref=\"a\" height=\"5000.7\" /]").embeds[0]["preview"]["preferredHeight"],
        1200
    );
    // No url/ref, or another target: stays text.
    for kept in [
        "[embed content_type=\"html\"]<b>x</b>[/embed]",
        "[embed ref=\"a\" target=\"node_panel\" /]",
    ] {
        assert_eq!(
            (parse(kept).text.as_str(), parse(kept).embeds.len()),
            (kept, 0)
        );
    }
    // Deliberate: openclaw main renders any url; here it must pass S3 or be same-origin.
    for bad in [
        "[embed url=\"javascript:alert(1)\" /]",
        "[embed url=\"http://10.0.0.1/x\" /]",
        "[embed url=\"//evil.example/x\" /]",
    ] {
        let got = parse(bad);
        assert_eq!(
            (got.text.as_str(), got.embeds.len(), got.rejected_media),
            ("", 0, 1),
            "{bad}"
        );
    }
    // Displayed attributes are neutralized (D1).
    let title = parse("[embed ref=\"a\" title=\"x\nMEDIA:/etc/passwd\" /]");
    assert_eq!(
        title.embeds[0]["preview"]["title"],
        "x\n[neutralized] MEDIA:/etc/passwd"
    );
}

#[test]
fn protocol_shape() {
    let input: ParseReplyInput = serde_json::from_value(json!({
        // openclaw trims the space the tag leaves; we keep the text as is.
        "text": "Done [[reply_to_current]]\nMEDIA:https://Example.com/a.png\nMEDIA:/srv/x/../y.png",
        "roots": ["/srv"]
    }))
    .expect("protocol input");
    assert_eq!(
        serde_json::to_value(input.run()).expect("serializable"),
        json!({"text": "Done ", "mediaUrls": ["https://example.com/a.png"], "audioAsVoice": false, "replyTo": "current", "embeds": [], "rejectedMedia": 1})
    );
}

#[test]
fn d3_media_is_delivered_once_per_turn() {
    let roots = MediaRoots::new(["/tmp"]);
    let mut turn = Turn::new(&roots);
    turn.stream_text("Working… MEDIA:https://example.com/a.png\nMEDIA:https://example.com/a.png\n");
    turn.tool_media("file:///tmp/./shot.png");
    turn.tool_media("https://EXAMPLE.com/a.png");
    turn.tool_media("/etc/passwd");
    let outcome = turn.finish(Some("Here:\nMEDIA:https://example.com/a.png\nMEDIA:/tmp//shot.png\nMEDIA:https://example.com/a.png"));
    assert_eq!(
        outcome.deliveries,
        [
            Delivery { text: "Working… MEDIA:https://example.com/a.png\n[neutralized] MEDIA:https://example.com/a.png\n".into(), media_urls: vec![] },
            Delivery { text: "Here:".into(), media_urls: vec!["https://example.com/a.png".into(), "/tmp/shot.png".into()] },
        ]
    );
    assert_eq!(outcome.rejected_media, 1);
    // Tool media alone is delivered at the end of the turn.
    let mut turn = Turn::new(&roots);
    turn.tool_media("/tmp/a.png");
    assert_eq!(
        turn.finish(None).deliveries,
        [Delivery {
            text: String::new(),
            media_urls: vec!["/tmp/a.png".into()]
        }]
    );
}

/// Targets that are good or bad in every way the policy distinguishes.
fn target() -> impl Strategy<Value = String> {
    prop_oneof![
        proptest::sample::select(vec![
            "https://example.com/a.png",
            "https://EXAMPLE.com./a.png",
            "http://example.com/a.png",
            "https://127.1/x",
            "https://[::1]/x",
            "https://user@example.com/x",
            "https://0x7f.1/x",
            "https://nip.io/x",
            "https://10.0.0.1.nip.io/x",
            "https://[::ffff:8.8.8.8]/x",
            "/tmp/a.png",
            "/tmp/../etc/passwd",
            "/tmp",
            "/tmpx/a.png",
            "/etc/passwd",
            "./a.png",
            "a b.png",
            "../x.png",
            "~/Pictures/a.png",
            "~/a.png",
            "~root/a.png",
            "file:///tmp/a.png",
            "file:///etc/passwd",
            "file://host/tmp/a.png",
            "file:///tmp/%2e%2e/etc/passwd",
            "/tmp/a\\..\\..\\etc",
            "/tmp/%2e%2e/x",
            "//tmp/a.png",
            "/tmp/./a.png",
            "media://inbound/x.png",
            "C:/tmp/a.png",
            "\"/tmp/q.png\"",
        ])
        .prop_map(String::from),
        "[ -~]{0,12}",
    ]
}

fn reply_text() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        2 => (proptest::sample::select(vec!["MEDIA:", "  media: ", "ＭＥＤＩＡ：", "M\u{200B}EDIA:", "[[audio_as_voice]]MEDIA:", "\u{2028}MEDIA:"]), target())
            .prop_map(|(d, t)| format!("{d}{t}")),
        1 => tricky_text(),
        1 => proptest::sample::select(vec!["[[reply_to_current]]", "[embed ref=\"x\" /]", "[embed url=\"http://a/\" /]", "\r", "\n", "```"])
            .prop_map(String::from),
    ];
    proptest::collection::vec(line, 0..8).prop_map(|v| v.join("\n"))
}

/// An independent reading of S3: remote URLs by the URL policy (and already canonical), local
/// paths strictly inside a root by `std::path` components, with no `..` at all.
fn allowed(url: &str, roots: &[&str]) -> bool {
    if url.contains("://") && !url.starts_with("file:") {
        let verdict = check_media_url(url);
        return verdict.allowed && verdict.canonical.as_deref() == Some(url);
    }
    let path = Path::new(url);
    !url.contains(['\0', '\\'])
        && path.components().all(|c| c != Component::ParentDir)
        && roots
            .iter()
            .any(|r| path.starts_with(r) && path != Path::new(r))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..crate::regressions_next_to_source() })]

    #[test]
    fn s3_parse_reply_delivers_only_allowed_targets(text in reply_text()) {
        let got = parse(&text);
        for url in &got.media_urls {
            prop_assert!(allowed(url, &ROOTS), "delivered {:?} from {:?}", url, text);
        }
        prop_assert!(lines(&got.text).all(|l| !is_directive_line(l)), "S1: {:?}", got.text);
        let unique: HashSet<_> = got.media_urls.iter().collect();
        prop_assert_eq!(unique.len(), got.media_urls.len());
    }

    #[test]
    fn s3_d3_turn_delivers_only_allowed_targets_once(chunks in proptest::collection::vec(reply_text(), 0..3), last in proptest::option::of(reply_text())) {
        let roots = vec!["/tmp".to_string()];
        let streamed = NormalizeStreamInput { chunks: chunks.clone(), r#final: None, roots: roots.clone() }.run().deliveries;
        let out = NormalizeStreamInput { chunks, r#final: last, roots }.run().deliveries;
        // What was streamed stays as streamed, except the piece of the unfinished last line the
        // stream still held at its end: without a final reply it closes the last streamed
        // delivery; with one it may open the reply's delivery instead (S1 on the joined stream).
        let k = streamed.len();
        prop_assert!(out.len() <= k + 1);
        if k > 0 {
            prop_assert!(out.len() >= k - 1 && out[..k - 1] == streamed[..k - 1]);
            let last = &streamed[k - 1];
            let moved = match out.get(k - 1) {
                Some(d) if d == last => None,
                Some(d) if out.len() == k + 1 => last.text.strip_prefix(d.text.as_str()),
                _ => Some(last.text.as_str()),
            };
            if let Some(moved) = moved {
                prop_assert!(lines(moved).count() == 1, "moved a whole line: {:?}", moved);
            }
        }
        // B3's model: streamed blocks are one continuous text (a block may start mid-line), the
        // final reply is a message of its own.
        let joined: String = streamed.iter().map(|d| d.text.as_str()).collect();
        prop_assert!(lines(&joined).all(|l| !is_directive_line(l)), "S1: {:?}", joined);
        let mut seen = HashSet::new();
        for d in &out[k.saturating_sub(1).min(out.len())..] {
            prop_assert!(lines(&d.text).all(|l| !is_directive_line(l)), "S1: {:?}", d.text);
            for url in &d.media_urls {
                prop_assert!(allowed(url, &["/tmp"]), "delivered {:?}", url);
                prop_assert!(seen.insert(url.clone()), "delivered twice: {:?}", url);
            }
        }
    }
}
