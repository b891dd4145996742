//! A Bot API refusal: the status and description the server answers with.

/// A refusal: the HTTP status (also `error_code`) and `description`.
#[derive(Debug)]
pub(super) struct Refusal(pub(super) u16, pub(super) String);

pub(super) fn bad(message: impl std::fmt::Display) -> Refusal {
    Refusal(400, format!("Bad Request: {message}"))
}

pub(super) fn not_modified() -> Refusal {
    bad(
        "message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message",
    )
}

/// A description without its `Bad Request: ` prefix.
pub(super) fn strip(description: &str) -> &str {
    description
        .strip_prefix("Bad Request: ")
        .unwrap_or(description)
}
