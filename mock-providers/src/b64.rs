//! Base64 decoding as each provider's server stack does it (engines from the `base64` crate).

use base64::Engine as _;
use base64::alphabet;
use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig, STANDARD};
use base64::engine::{DecodePaddingMode, general_purpose};

/// Which server-side decoder a provider uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Anthropic (and Claude behind Bedrock): strict RFC 4648 — standard alphabet, canonical padding,
    /// zero trailing bits, no whitespace. [INF] docs/research/providers.md §1.5: tolerance undocumented; strict is the
    /// only input known to be safe, and the brief asks for strict.
    Strict,
    /// OpenAI data URLs. [INF] Python `base64.b64decode`: padding required, trailing bits ignored.
    OpenAi,
    /// Gemini: proto3 JSON `bytes` — standard or URL-safe alphabet (not mixed), padding optional.
    ProtoBytes,
    /// Bedrock over raw REST. [INF] Java's basic decoder: padding optional, no whitespace.
    Bedrock,
}

const PADDED_LENIENT_BITS: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true),
);
const STANDARD_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::STANDARD,
    general_purpose::PAD_INDIFFERENT.with_decode_allow_trailing_bits(true),
);
const URL_SAFE_ANY_PAD: GeneralPurpose = GeneralPurpose::new(
    &alphabet::URL_SAFE,
    general_purpose::PAD_INDIFFERENT
        .with_decode_allow_trailing_bits(true)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// Decodes `s` as the provider's server would; `None` when it would refuse.
pub fn decode(flavor: Flavor, s: &str) -> Option<Vec<u8>> {
    match flavor {
        Flavor::Strict => STANDARD.decode(s).ok(),
        Flavor::OpenAi => PADDED_LENIENT_BITS.decode(s).ok(),
        Flavor::ProtoBytes => STANDARD_ANY_PAD
            .decode(s)
            .or_else(|_| URL_SAFE_ANY_PAD.decode(s))
            .ok(),
        Flavor::Bedrock => STANDARD_ANY_PAD.decode(s).ok(),
    }
}

/// The `N` of Go's `illegal base64 data at input byte N` for `base64.StdEncoding` (Ollama decodes
/// `images` with it: padding required, `\r`/`\n` skipped, trailing bits ignored), or `None` when Go
/// accepts the input. Ollama never looks at the decoded bytes, so only the verdict is computed. Mirrors the quantum loop of Go's `decodeQuantum` so the offset is the one Ollama
/// prints (e.g. 4 for a `data:` prefix, 5 for `https:`).
pub fn go_corrupt_offset(src: &[u8]) -> Option<usize> {
    let is_newline = |c: u8| c == b'\n' || c == b'\r';
    let in_alphabet = |c: u8| c.is_ascii_alphanumeric() || c == b'+' || c == b'/';
    let len = src.len();
    let mut si = 0;
    loop {
        let mut j = 0;
        while j < 4 {
            let Some(&c) = src.get(si) else {
                // Input ends inside a quantum: padding was required.
                return if j == 0 { None } else { Some(si - j) };
            };
            si += 1;
            if in_alphabet(c) {
                j += 1;
                continue;
            }
            if is_newline(c) {
                continue;
            }
            if c != b'=' || j < 2 {
                return Some(si - 1);
            }
            if j == 2 {
                // "==" expected; the first '=' is consumed.
                while src.get(si).copied().is_some_and(is_newline) {
                    si += 1;
                }
                match src.get(si) {
                    None => return Some(len),
                    Some(&b'=') => si += 1,
                    Some(_) => return Some(si - 1),
                }
            }
            while src.get(si).copied().is_some_and(is_newline) {
                si += 1;
            }
            // Anything after the padding is trailing garbage.
            return if si < len { Some(si) } else { None };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_offsets_match_observed_ollama_errors() {
        assert_eq!(go_corrupt_offset(b"data:image/png;base64,iVBO"), Some(4));
        assert_eq!(go_corrupt_offset(b"https://x/y.png"), Some(5));
        assert_eq!(go_corrupt_offset(b"QUJD"), None);
        assert_eq!(go_corrupt_offset(b"QUI="), None);
        assert_eq!(go_corrupt_offset(b"QQ=="), None);
        assert_eq!(go_corrupt_offset(b"QUJ\r\nD"), None);
        assert_eq!(go_corrupt_offset(b"QQ"), Some(0));
        assert_eq!(go_corrupt_offset(b"QQ="), Some(3));
        assert_eq!(go_corrupt_offset(b"QQ==QQ=="), Some(4));
    }

    #[test]
    fn flavors_differ_where_the_servers_differ() {
        // Unpadded: Gemini and Bedrock accept, the others refuse.
        assert!(decode(Flavor::ProtoBytes, "QQ").is_some());
        assert!(decode(Flavor::Bedrock, "QQ").is_some());
        assert!(decode(Flavor::Strict, "QQ").is_none());
        assert!(decode(Flavor::OpenAi, "QQ").is_none());
        // URL-safe alphabet: only Gemini.
        assert!(decode(Flavor::ProtoBytes, "-_8=").is_some());
        assert!(decode(Flavor::Strict, "-_8=").is_none());
        // Non-zero trailing bits: only strict refuses.
        assert!(decode(Flavor::Strict, "QR==").is_none());
        assert!(decode(Flavor::OpenAi, "QR==").is_some());
        // Line breaks: only Go skips them.
        assert!(go_corrupt_offset(b"QU\nJD").is_none());
        assert!(decode(Flavor::Strict, "QU\nJD").is_none());
    }
}
