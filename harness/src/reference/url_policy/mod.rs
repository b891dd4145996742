//! Remote media URL policy (rules U1–U8): a media URL is accepted only if it is `https:` to a
//! public host. Nothing is resolved or fetched unless the caller opts in with a [`Resolver`].
//!
//! Checks, in order; the first failure is the verdict's [`Reason`]:
//! 1. Raw-string gate (`raw-syntax`): leading/trailing whitespace, C0 controls, DEL, backslash.
//!    WHATWG silently drops or rewrites these, which is how parser differentials get in.
//! 2. WHATWG parse with the `url` crate (U1, `parse`). Every later check reads the parsed URL, and
//!    forwarders must use [`UrlVerdict::canonical`], never the raw input.
//! 3. Scheme `https` only (U2, `scheme`).
//! 4. The authority follows exactly `https://` (`raw-syntax`: WHATWG also takes `https:host`,
//!    `https:/host`, `https:///host`, which other parsers read as paths), and has no userinfo,
//!    not even an empty one that WHATWG drops (U3, `userinfo`: any `@` in the raw authority).
//! 5. Host: an IP literal must pass [`ip_verdict`] (U4, U5, `ip-not-global`); a name must pass
//!    the U6 name rules and, under a wildcard-DNS service, U7's judgement of the embedded address.
//! 6. Opt-in (U7): every address a [`Resolver`] returns must pass [`ip_verdict`].
//!
//! Ports are not restricted by the rules and are accepted.

pub mod ip_ranges;
mod names;

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use serde::{Serialize, Serializer};
use url::{Host, Url};

use ip_ranges::{Embedding, SpecialRange};
use names::Wildcard;

/// Why a URL was accepted or refused (U8). [`Reason::as_str`] gives the stable code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// Accepted.
    Ok,
    /// The raw string has a defect WHATWG would silently repair (see the module docs).
    RawSyntax,
    /// WHATWG parsing failed.
    Parse,
    /// The scheme is not `https`.
    Scheme,
    /// The URL carries a username, a password, or an empty userinfo.
    Userinfo,
    /// The IP literal (or the IPv4 address it embeds, or the one a wildcard-DNS name spells) is in
    /// a special-purpose block.
    IpNotGlobal,
    /// `localhost`, a special-use or internal suffix, or a name that points at loopback by design.
    SpecialName,
    /// A name with one label (resolved through search domains, i.e. internal).
    SingleLabel,
    /// A name with an empty label (`example..com`, `example.com..`).
    EmptyLabel,
    /// A wildcard-DNS service name that spells no recognizable address, or a service whose answers
    /// cannot be told from the name.
    WildcardDns,
    /// The opt-in resolver failed or returned no address.
    Resolve,
    /// The opt-in resolver returned an address in a special-purpose block.
    ResolvedNotGlobal,
}

impl Reason {
    /// Every reason, in declaration order.
    pub const ALL: [Reason; 12] = [
        Reason::Ok,
        Reason::RawSyntax,
        Reason::Parse,
        Reason::Scheme,
        Reason::Userinfo,
        Reason::IpNotGlobal,
        Reason::SpecialName,
        Reason::SingleLabel,
        Reason::EmptyLabel,
        Reason::WildcardDns,
        Reason::Resolve,
        Reason::ResolvedNotGlobal,
    ];

    /// The stable kebab-case code reports and JSON carry.
    pub fn as_str(&self) -> &'static str {
        match self {
            Reason::Ok => "ok",
            Reason::RawSyntax => "raw-syntax",
            Reason::Parse => "parse",
            Reason::Scheme => "scheme",
            Reason::Userinfo => "userinfo",
            Reason::IpNotGlobal => "ip-not-global",
            Reason::SpecialName => "special-name",
            Reason::SingleLabel => "single-label",
            Reason::EmptyLabel => "empty-label",
            Reason::WildcardDns => "wildcard-dns",
            Reason::Resolve => "resolve",
            Reason::ResolvedNotGlobal => "resolved-not-global",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Reason {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// The verdict on one URL.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UrlVerdict {
    /// True exactly when `reason` is [`Reason::Ok`].
    pub allowed: bool,
    pub reason: Reason,
    /// What exactly matched, for people; not a stable code: the special-purpose block
    /// (`"192.168.0.0/16 Private-Use"`), the name suffix or service, the raw-syntax defect, the
    /// parse error.
    pub detail: Option<&'static str>,
    /// The WHATWG serialization, whenever the input got through the raw gate and parsed.
    pub canonical: Option<String>,
}

/// A refusal: reason and detail.
type Refusal = (Reason, Option<&'static str>);

impl UrlVerdict {
    fn new(result: Result<(), Refusal>, canonical: Option<String>) -> Self {
        let (reason, detail) = result.err().unwrap_or((Reason::Ok, None));
        UrlVerdict {
            allowed: reason == Reason::Ok,
            reason,
            detail,
            canonical,
        }
    }
}

/// Name resolution for the opt-in check of U7.
pub trait Resolver {
    /// All addresses (A and AAAA) `host` resolves to, or why it could not be resolved.
    fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String>;
}

/// Opt-in checks; the default resolves nothing.
#[derive(Clone, Copy, Default)]
pub struct Options<'a> {
    /// When set, a URL whose host is a name is accepted only if the name resolves and every
    /// address passes [`ip_verdict`]; one bad answer refuses the URL (answers are not filtered).
    pub resolver: Option<&'a dyn Resolver>,
}

/// Judges a remote media URL by rules U1–U8 without resolving or fetching anything.
pub fn check_media_url(input: &str) -> UrlVerdict {
    check_media_url_with(input, &Options::default())
}

/// [`check_media_url`] with opt-in checks.
pub fn check_media_url_with(input: &str, options: &Options<'_>) -> UrlVerdict {
    if let Some(defect) = raw_defect(input) {
        return UrlVerdict::new(Err((Reason::RawSyntax, Some(defect))), None);
    }
    match Url::parse(input) {
        Ok(url) => UrlVerdict::new(judge(input, &url, options), Some(url.into())),
        Err(e) => UrlVerdict::new(Err((Reason::Parse, Some(parse_detail(e)))), None),
    }
}

/// The host the policy judges: WHATWG's parsed host, with one trailing dot removed from a domain
/// name. `None` when the URL has no host. For a non-special scheme WHATWG keeps the host opaque
/// (a `Host::Domain` even when it spells an address), so the policy asks only once U2 passed.
pub fn canonical_host(url: &Url) -> Option<Host<&str>> {
    Some(match url.host()? {
        Host::Domain(name) => Host::Domain(name.strip_suffix('.').unwrap_or(name)),
        ip => ip,
    })
}

/// Whether an address may be fetched (U4, U5): `Err` names the special-purpose block it is in.
///
/// Every block of [`ip_ranges::IPV4`]/[`ip_ranges::IPV6`] is refused, including those the registry
/// marks globally reachable. An IPv6 address whose most specific block embeds an IPv4 address
/// (IPv4-mapped, IPv4-compatible, NAT64 well-known prefix, 6to4, Teredo) is judged as that IPv4
/// address instead; for Teredo both the client and the server address must pass.
pub fn ip_verdict(ip: IpAddr) -> Result<(), &'static SpecialRange> {
    let Some(range) = ip_ranges::lookup(ip) else {
        return Ok(());
    };
    let (IpAddr::V6(v6), Some(embedding)) = (ip, range.embeds) else {
        return Err(range);
    };
    let bits = v6.to_bits();
    match embedding {
        Embedding::Low32 => ipv4_verdict(bits as u32),
        Embedding::SixToFour => ipv4_verdict((bits >> 80) as u32),
        Embedding::Teredo => {
            ipv4_verdict(!(bits as u32))?;
            ipv4_verdict((bits >> 64) as u32)
        }
    }
}

fn ipv4_verdict(bits: u32) -> Result<(), &'static SpecialRange> {
    ip_ranges::lookup(IpAddr::V4(Ipv4Addr::from_bits(bits))).map_or(Ok(()), Err)
}

fn not_global(range: &'static SpecialRange) -> Refusal {
    (Reason::IpNotGlobal, Some(range.label))
}

/// Step 1: a defect WHATWG would repair silently.
fn raw_defect(input: &str) -> Option<&'static str> {
    if input.starts_with(char::is_whitespace) || input.ends_with(char::is_whitespace) {
        return Some("leading or trailing whitespace");
    }
    input.bytes().find_map(|b| match b {
        b'\\' => Some("backslash"),
        0..=0x1f | 0x7f => Some("control character"),
        _ => None,
    })
}

const SLASHES: &str = "authority not introduced by exactly two slashes";

/// Steps 3–6 on a parsed URL.
fn judge(input: &str, url: &Url, options: &Options<'_>) -> Result<(), Refusal> {
    if url.scheme() != "https" {
        return Err((Reason::Scheme, None));
    }
    let authority = raw_authority(input).ok_or((Reason::RawSyntax, Some(SLASHES)))?;
    // The raw `@` also catches the empty userinfo WHATWG drops; the parsed fields are the rule.
    if authority.contains('@') || !url.username().is_empty() || url.password().is_some() {
        return Err((Reason::Userinfo, None));
    }
    match canonical_host(url) {
        Some(Host::Ipv4(a)) => ip_verdict(IpAddr::V4(a)).map_err(not_global),
        Some(Host::Ipv6(a)) => ip_verdict(IpAddr::V6(a)).map_err(not_global),
        Some(Host::Domain(name)) => {
            judge_name(name)?;
            match (options.resolver, url.host_str()) {
                (Some(resolver), Some(host)) => judge_resolved(resolver, host),
                _ => Ok(()),
            }
        }
        // An https URL always has a host; fail closed all the same.
        None => Err((Reason::Parse, Some("no host"))),
    }
}

/// The raw authority of an input whose scheme parsed as `https`, if `https:` is followed by
/// exactly two slashes. Called after the raw gate, so WHATWG saw exactly these characters.
fn raw_authority(input: &str) -> Option<&str> {
    let scheme = input.get(..6)?;
    let rest = input.get(6..)?;
    if !scheme.eq_ignore_ascii_case("https:") {
        return None;
    }
    let rest = rest.strip_prefix("//")?;
    if rest.starts_with('/') {
        return None;
    }
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    rest.get(..end)
}

/// U6 and U7 on a domain name (WHATWG already lowercased and IDNA-mapped it; one trailing dot
/// is already gone).
fn judge_name(name: &str) -> Result<(), Refusal> {
    if name.split('.').any(str::is_empty) {
        return Err((Reason::EmptyLabel, None));
    }
    if let Some(domain) = names::SPECIAL_USE
        .iter()
        .chain(names::LOOPBACK_ALIASES)
        .find(|d| at_or_under(name, d))
    {
        return Err((Reason::SpecialName, Some(domain)));
    }
    if !name.contains('.') {
        return Err((Reason::SingleLabel, None));
    }
    for &(domain, kind) in names::WILDCARD_DNS {
        // The service's own site (the bare domain) is an ordinary name.
        if let Some(labels) = name.strip_suffix(domain).and_then(|p| p.strip_suffix('.')) {
            return match kind {
                Wildcard::Refuse => Err((Reason::WildcardDns, Some(domain))),
                Wildcard::EmbeddedIp => judge_embedded(labels, domain),
            };
        }
    }
    Ok(())
}

/// `name` is `domain` or a name under it.
fn at_or_under(name: &str, domain: &str) -> bool {
    name.strip_suffix(domain)
        .is_some_and(|p| p.is_empty() || p.ends_with('.'))
}

/// U7: judges every address the labels in front of a wildcard-DNS service domain may stand for,
/// in every spelling any of the services accepts, anywhere in those labels (sslip.io matches
/// anywhere, not only at the end). Fails closed: one bad candidate refuses the name, and so does
/// spelling no candidate at all.
fn judge_embedded(labels: &str, service: &'static str) -> Result<(), Refusal> {
    let mut found = false;
    let mut judge = |ip: IpAddr| {
        found = true;
        ip_verdict(ip).map_err(not_global)
    };
    embedded_ipv4(labels, service, &mut judge)?;
    embedded_ipv6(labels, &mut judge)?;
    if found {
        Ok(())
    } else {
        Err((Reason::WildcardDns, Some(service)))
    }
}

#[derive(Clone, Copy)]
enum Token {
    Octet(u8),
    /// A leading-zero number: decimal to some services, octal to `inet_aton`.
    Ambiguous,
    Other,
}

/// IPv4 spellings: four decimal octets separated by dots or dashes (`10.0.0.1`, `10-0-0-1`,
/// `app-10.0.0.1`), and eight hex digits (`0a000001`, `app-0a000001`).
fn embedded_ipv4(
    labels: &str,
    service: &'static str,
    judge: &mut impl FnMut(IpAddr) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    let mut window = [Token::Other; 4];
    for token in labels.split(['.', '-']) {
        window.rotate_left(1);
        window[3] = classify(token);
        match window {
            [
                Token::Octet(a),
                Token::Octet(b),
                Token::Octet(c),
                Token::Octet(d),
            ] => {
                judge(IpAddr::V4(Ipv4Addr::new(a, b, c, d)))?;
            }
            w if w.iter().all(|t| !matches!(t, Token::Other)) => {
                return Err((Reason::WildcardDns, Some(service)));
            }
            _ => {}
        }
        if let Some(bits) = hex_ipv4(token) {
            judge(IpAddr::V4(Ipv4Addr::from_bits(bits)))?;
        }
    }
    Ok(())
}

/// Exactly eight hex digits.
fn hex_ipv4(token: &str) -> Option<u32> {
    if token.len() != 8 {
        return None;
    }
    token
        .chars()
        .try_fold(0u32, |bits, c| Some(bits << 4 | c.to_digit(16)?))
}

fn classify(token: &str) -> Token {
    if token.is_empty() || token.len() > 3 || !token.bytes().all(|b| b.is_ascii_digit()) {
        Token::Other
    } else if token.len() > 1 && token.starts_with('0') {
        Token::Ambiguous
    } else {
        token.parse().map_or(Token::Other, Token::Octet)
    }
}

/// Longest dashed IPv6 spelling: eight groups of four hex digits and seven dashes.
const MAX_DASHED_IPV6: usize = 39;

/// sslip.io's IPv6 spelling: `:` written as `-` inside one label (`--1`, `2606-4700--1111`),
/// starting at the label start or after a dash and ending at the label end or before a dash.
/// Like the service, the leftmost start wins, and starts inside a match are skipped (so
/// `4700--1111` inside `2606-4700--1111` is not a candidate); every end at a winning start is
/// judged, since which one a service picks is not ours to guess.
fn embedded_ipv6(
    labels: &str,
    judge: &mut impl FnMut(IpAddr) -> Result<(), Refusal>,
) -> Result<(), Refusal> {
    for label in labels.split('.').filter(|l| l.contains('-')) {
        let bytes = label.as_bytes();
        let mut skip_until = 0;
        for start in 0..bytes.len() {
            if start < skip_until || (start > 0 && bytes[start - 1] != b'-') {
                continue;
            }
            let run = dashed_run(&bytes[start..]);
            // Longest first, so the detail names the address a greedy matcher would answer.
            for end in (start + 1..=start + run).rev() {
                if end < bytes.len() && bytes[end] != b'-' {
                    continue;
                }
                if let Some(a) = parse_dashed_ipv6(&bytes[start..end]) {
                    judge(IpAddr::V6(a))?;
                    skip_until = skip_until.max(end);
                }
            }
        }
    }
    Ok(())
}

/// Length of the longest prefix of `bytes` a dashed IPv6 address can start with: hex digits and
/// dashes, groups of four digits at most, one `--` at most. Bounds the work on junk labels.
fn dashed_run(bytes: &[u8]) -> usize {
    let (mut group, mut compressed, mut after_dash) = (0, false, false);
    for (i, &b) in bytes.iter().take(MAX_DASHED_IPV6).enumerate() {
        if b == b'-' {
            if after_dash {
                if compressed {
                    return i;
                }
                compressed = true;
            }
            (group, after_dash) = (0, true);
        } else if b.is_ascii_hexdigit() && group < 4 {
            (group, after_dash) = (group + 1, false);
        } else {
            return i;
        }
    }
    bytes.len().min(MAX_DASHED_IPV6)
}

/// Parses hex digits and dashes as an IPv6 address with `-` for `:`, on the stack.
fn parse_dashed_ipv6(dashed: &[u8]) -> Option<Ipv6Addr> {
    let mut buf = [0u8; MAX_DASHED_IPV6];
    let text = buf.get_mut(..dashed.len())?;
    for (out, &b) in text.iter_mut().zip(dashed) {
        *out = if b == b'-' { b':' } else { b };
    }
    std::str::from_utf8(text).ok()?.parse().ok()
}

/// Opt-in U7 check: all answers must pass; the host is passed as WHATWG serialized it, which is
/// what a fetcher would resolve.
fn judge_resolved(resolver: &dyn Resolver, host: &str) -> Result<(), Refusal> {
    let addrs = resolver
        .resolve(host)
        .map_err(|_| (Reason::Resolve, Some("resolver error")))?;
    if addrs.is_empty() {
        return Err((Reason::Resolve, Some("no addresses")));
    }
    for ip in addrs {
        ip_verdict(ip).map_err(|range| (Reason::ResolvedNotGlobal, Some(range.label)))?;
    }
    Ok(())
}

fn parse_detail(e: url::ParseError) -> &'static str {
    use url::ParseError as E;
    match e {
        E::EmptyHost => "empty host",
        E::IdnaError => "invalid international domain name",
        E::InvalidPort => "invalid port number",
        E::InvalidIpv4Address => "invalid IPv4 address",
        E::InvalidIpv6Address => "invalid IPv6 address",
        E::InvalidDomainCharacter => "invalid domain character",
        E::RelativeUrlWithoutBase => "relative URL without a base",
        E::Overflow => "URL too long",
        _ => "unparseable",
    }
}

#[cfg(test)]
mod tests;
