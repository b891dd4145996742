//! Domain-name lists (rules U6, U7) as data. Each entry matches the name itself and every name
//! under it, on a label boundary; a name matches the first entry that fits, so a more specific
//! entry precedes a broader one (`home.arpa` before `arpa`).

/// U6: special-use and internal names (RFC 2606, RFC 6761, RFC 6762, RFC 7686, RFC 8375, RFC 9476,
/// ICANN's `.internal`, and the private suffixes networks habitually use).
pub(super) const SPECIAL_USE: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "localdomain",
    "home.arpa",
    "lan",
    "home",
    "corp",
    "intranet",
    "test",
    "invalid",
    "example",
    "onion",
    "alt",
    "arpa",
];

/// Public names whose DNS points them and all their subdomains at loopback. The list cannot be
/// complete; the opt-in resolver check is the real defence.
pub(super) const LOOPBACK_ALIASES: &[&str] = &["localtest.me", "lvh.me", "vcap.me", "localh.st"];

/// U7: how a wildcard-DNS service's names are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Wildcard {
    /// The service answers with an address spelled inside the name; judge that address.
    EmbeddedIp,
    /// The answer is whatever an attacker configured or changes between lookups (DNS rebinding,
    /// OAST collaborators whose `spoofed.` names answer loopback): nothing in the name tells.
    Refuse,
}

/// U7: wildcard-DNS services. Embedded-IP spellings they accept (dotted or dashed IPv4, 8 hex
/// digits, dashed IPv6) are recognized for all of them alike.
pub(super) const WILDCARD_DNS: &[(&str, Wildcard)] = &[
    ("nip.io", Wildcard::EmbeddedIp),
    ("sslip.io", Wildcard::EmbeddedIp),
    ("xip.io", Wildcard::EmbeddedIp),
    ("xip.name", Wildcard::EmbeddedIp),
    ("traefik.me", Wildcard::EmbeddedIp),
    ("nip.direct", Wildcard::EmbeddedIp),
    ("1u.ms", Wildcard::Refuse),
    ("rbndr.us", Wildcard::Refuse),
    ("burpcollaborator.net", Wildcard::Refuse),
    ("oastify.com", Wildcard::Refuse),
];
