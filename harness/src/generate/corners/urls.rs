//! Media URLs from every U-rule family, and public controls so the mix is not all refusals.
//!
//! The generator keeps its own copy of the IANA special-purpose rows (as data to pick addresses
//! from: inside each block, at its first and last address, and just outside), so a row missing
//! from the reference or the judge shows up as a disagreement.

use std::net::{Ipv4Addr, Ipv6Addr};

use super::{Choices, one_in, pick, weighted};

/// Which rule a generated URL probes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UrlFamily {
    /// U1: one address in WHATWG-normalized spellings (`0x7f.1`, `2130706433`, fullwidth...).
    Spelling,
    /// U2: a scheme other than `https`, or `https` spelled oddly.
    Scheme,
    /// U3: userinfo in every form.
    Userinfo,
    /// U4: an IPv4 address from each special-purpose row, at its edges and just outside.
    Ipv4Row,
    /// U5: an IPv6 address from each special-purpose row, at its edges and just outside.
    Ipv6Row,
    /// U5: an IPv4 address (private or public) embedded in an IPv6 form.
    Embedded,
    /// U6: special-use and internal suffixes, single labels, `localhost`.
    SpecialName,
    /// U7: wildcard-DNS names spelling an address, and loopback-alias services.
    WildcardDns,
    /// Public hosts and addresses: what must be accepted.
    Public,
}

impl UrlFamily {
    pub const ALL: [UrlFamily; 9] = [
        Self::Public,
        Self::Spelling,
        Self::Scheme,
        Self::Userinfo,
        Self::Ipv4Row,
        Self::Ipv6Row,
        Self::Embedded,
        Self::SpecialName,
        Self::WildcardDns,
    ];
}

/// IPv4 special-purpose rows (IANA registry, 2025-10-09) and multicast: prefix and length.
pub const IPV4_ROWS: [([u8; 4], u8); 27] = [
    ([0, 0, 0, 0], 8),
    ([0, 0, 0, 0], 32),
    ([10, 0, 0, 0], 8),
    ([100, 64, 0, 0], 10),
    ([127, 0, 0, 0], 8),
    ([169, 254, 0, 0], 16),
    ([172, 16, 0, 0], 12),
    ([192, 0, 0, 0], 24),
    ([192, 0, 0, 0], 29),
    ([192, 0, 0, 8], 32),
    ([192, 0, 0, 9], 32),
    ([192, 0, 0, 10], 32),
    ([192, 0, 0, 170], 32),
    ([192, 0, 0, 171], 32),
    ([192, 0, 2, 0], 24),
    ([192, 31, 196, 0], 24),
    ([192, 52, 193, 0], 24),
    ([192, 88, 99, 0], 24),
    ([192, 88, 99, 2], 32),
    ([192, 168, 0, 0], 16),
    ([192, 175, 48, 0], 24),
    ([198, 18, 0, 0], 15),
    ([198, 51, 100, 0], 24),
    ([203, 0, 113, 0], 24),
    ([240, 0, 0, 0], 4),
    ([255, 255, 255, 255], 32),
    ([224, 0, 0, 0], 4),
];

/// IPv6 special-purpose rows (IANA registry), the deprecated and multicast blocks, and the
/// IPv4-compatible block: prefix and length.
pub const IPV6_ROWS: [(&str, u8); 28] = [
    ("::1", 128),
    ("::", 128),
    ("::ffff:0:0", 96),
    ("64:ff9b::", 96),
    ("64:ff9b:1::", 48),
    ("100::", 64),
    ("100:0:0:1::", 64),
    ("2001::", 23),
    ("2001::", 32),
    ("2001:1::1", 128),
    ("2001:1::2", 128),
    ("2001:1::3", 128),
    ("2001:2::", 48),
    ("2001:3::", 32),
    ("2001:4:112::", 48),
    ("2001:10::", 28),
    ("2001:20::", 28),
    ("2001:30::", 28),
    ("2001:db8::", 32),
    ("2002::", 16),
    ("2620:4f:8000::", 48),
    ("3fff::", 20),
    ("5f00::", 16),
    ("fc00::", 7),
    ("fe80::", 10),
    ("fec0::", 10),
    ("ff00::", 8),
    ("::", 96),
];

/// IPv4 addresses worth embedding and spelling: loopback, private, link-local and metadata,
/// shared, this-network, multicast, broadcast, a globally reachable row, and public ones.
pub const ADDRESSES: [[u8; 4]; 13] = [
    [127, 0, 0, 1],
    [8, 8, 8, 8],
    [10, 0, 0, 1],
    [169, 254, 169, 254],
    [192, 168, 1, 1],
    [172, 31, 255, 255],
    [100, 64, 0, 1],
    [0, 0, 0, 0],
    [224, 0, 0, 1],
    [255, 255, 255, 255],
    [192, 0, 0, 9],
    [1, 1, 1, 1],
    [93, 184, 216, 34],
];

/// U6: special-use and internal suffixes.
pub const SPECIAL_SUFFIXES: [&str; 15] = [
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
    "localhost",
];

/// U7: wildcard-DNS services that answer with the address a name spells.
pub const WILDCARD_SERVICES: [&str; 6] = [
    "nip.io",
    "sslip.io",
    "xip.io",
    "xip.name",
    "traefik.me",
    "nip.direct",
];

/// U7: services whose answers the name does not tell (rebinding, collaborators).
pub const REBINDING_SERVICES: [&str; 4] =
    ["1u.ms", "rbndr.us", "burpcollaborator.net", "oastify.com"];

/// U7: public names that resolve, with every subdomain, to loopback.
pub const LOOPBACK_SERVICES: [&str; 4] = ["lvh.me", "localtest.me", "vcap.me", "localh.st"];

/// Hosts that must be accepted.
pub const PUBLIC_HOSTS: [&str; 16] = [
    "example.com",
    "cdn.example.org",
    "images.example.net",
    "upload.wikimedia.org",
    "EXAMPLE.COM",
    "example.com.",
    "xn--bcher-kva.example.com",
    "bücher.example.com",
    "8.8.8.8",
    "1.1.1.1",
    "93.184.216.34",
    "[2606:4700:4700::1111]",
    "[2001:4860:4860::8888]",
    "nip.io",
    "local.example.com",
    "localhost.example.com",
];

const SCHEMES: [&str; 16] = [
    "http://",
    "HTTPS://",
    "HtTpS://",
    "ftp://",
    "file://",
    "ws://",
    "wss://",
    "gopher://",
    "https:",
    "https:/",
    "https:///",
    "https:\\\\",
    "blob:https://",
    " https://",
    "data:",
    "javascript:",
];

const USERINFO: [&str; 10] = [
    "u@",
    ":p@",
    "@",
    "u:p@",
    "u:@",
    "%40@",
    "example.com@",
    "user%3Apw@",
    "@@",
    "a@b@",
];

const PORTS: [&str; 6] = ["", ":443", ":8443", ":0", ":65535", ":"];
const PATHS: [&str; 8] = [
    "/a.png",
    "/",
    "",
    "/x.png?q=1#f",
    "/%2e%2e/a.png",
    "/a%20b.jpg",
    "?u=http://127.0.0.1/",
    "#@127.0.0.1",
];

/// A media URL probing one U-rule family (or a public control).
pub fn url(c: &mut dyn Choices) -> String {
    url_in(c).1
}

/// [`url`] with the family it probes.
pub fn url_in(c: &mut dyn Choices) -> (UrlFamily, String) {
    // Public controls first, so the plainest URL is one that passes.
    let family = UrlFamily::ALL[weighted(c, &[4, 2, 1, 1, 3, 3, 3, 2, 3])];
    let mut scheme = "https://";
    let mut userinfo = "";
    let host = match family {
        UrlFamily::Public => pick(c, &PUBLIC_HOSTS).to_string(),
        UrlFamily::Spelling => {
            let a = pick(c, &ADDRESSES);
            ipv4_spelling(c, a)
        }
        UrlFamily::Scheme => {
            scheme = pick(c, &SCHEMES);
            match scheme {
                "data:" => return (family, "data:image/png;base64,iVBORw0KGgo=".into()),
                "javascript:" => {
                    return (
                        family,
                        "javascript:alert(1)//https://example.com/a.png".into(),
                    );
                }
                _ => public_host(c),
            }
        }
        UrlFamily::Userinfo => {
            userinfo = pick(c, &USERINFO);
            public_host(c)
        }
        UrlFamily::Ipv4Row => {
            let (prefix, len) = pick(c, &IPV4_ROWS);
            let a = Ipv4Addr::from_bits(edge_v4(c, u32::from_be_bytes(prefix), len));
            if one_in(c, 3) {
                ipv4_spelling(c, a.octets())
            } else {
                a.to_string()
            }
        }
        UrlFamily::Ipv6Row => {
            let (prefix, len) = pick(c, &IPV6_ROWS);
            let prefix: Ipv6Addr = prefix.parse().unwrap_or(Ipv6Addr::UNSPECIFIED);
            let a = Ipv6Addr::from_bits(edge_v6(c, prefix.to_bits(), len));
            format!("[{}]", ipv6_spelling(c, a))
        }
        UrlFamily::Embedded => {
            let a = pick(c, &ADDRESSES);
            format!("[{}]", embedded(c, a))
        }
        UrlFamily::SpecialName => special_name(c),
        UrlFamily::WildcardDns => wildcard_name(c),
    };
    let port = if one_in(c, 4) { pick(c, &PORTS) } else { "" };
    let path = pick(c, &PATHS);
    (family, format!("{scheme}{userinfo}{host}{port}{path}"))
}

fn public_host(c: &mut dyn Choices) -> String {
    pick(c, &PUBLIC_HOSTS[..4]).to_string()
}

/// An address of a block: inside, first, last, or one just outside on either side.
fn edge_v4(c: &mut dyn Choices, prefix: u32, len: u8) -> u32 {
    let size = 1u64 << (32 - u32::from(len));
    let first = u64::from(prefix);
    let last = first + size - 1;
    let at = match c.below(5) {
        0 => first + size / 2,
        1 => first,
        2 => last,
        3 => first.wrapping_sub(1),
        _ => last + 1,
    };
    at as u32
}

fn edge_v6(c: &mut dyn Choices, prefix: u128, len: u8) -> u128 {
    let host_bits = 128 - u32::from(len);
    let mask = u128::MAX.checked_shr(u32::from(len)).unwrap_or(0);
    let first = prefix & !mask;
    let last = first | mask;
    match c.below(5) {
        0 if host_bits > 0 => first | (((mask >> 1) ^ 0x2a) & mask),
        0 | 1 => first,
        2 => last,
        3 => first.wrapping_sub(1),
        _ => last.wrapping_add(1),
    }
}

/// U1: the same IPv4 address as WHATWG reads it in many spellings.
pub fn ipv4_spelling(c: &mut dyn Choices, [a, b, cc, d]: [u8; 4]) -> String {
    let n = u32::from_be_bytes([a, b, cc, d]);
    let dotted = format!("{a}.{b}.{cc}.{d}");
    match c.below(15) {
        0 => dotted,
        1 => n.to_string(),
        2 => format!("0x{n:x}"),
        3 => format!("0x{a:x}.0x{b:x}.0x{cc:x}.0x{d:x}"),
        4 => format!("0{a:o}.0{b:o}.0{cc:o}.0{d:o}"),
        5 => format!("{a}.{}", u32::from_be_bytes([0, b, cc, d])),
        6 => format!("{a}.{b}.{}", u16::from_be_bytes([cc, d])),
        7 => dotted
            .chars()
            .map(|ch| format!("%{:02X}", ch as u32))
            .collect(),
        8 => dotted.chars().map(fullwidth).collect(),
        9 => format!("{dotted}."),
        10 => dotted.replace('.', "\u{3002}"),
        11 => format!("0X{a:X}.{}", u32::from_be_bytes([0, b, cc, d])),
        12 => format!("0{n:o}"),
        13 => format!("{a:03}.{b:03}.{cc:03}.{d:03}"),
        _ => format!("0x{a:02x}.{b}.0{cc:o}.{d}"),
    }
}

fn fullwidth(ch: char) -> char {
    match ch {
        '0'..='9' => char::from_u32(ch as u32 - 0x30 + 0xFF10).unwrap_or(ch),
        '.' => '\u{FF0E}',
        _ => ch,
    }
}

/// U5 spellings of one IPv6 address: compressed, upper case, full, low 32 bits dotted.
fn ipv6_spelling(c: &mut dyn Choices, a: Ipv6Addr) -> String {
    let s = a.segments();
    match c.below(4) {
        0 => a.to_string(),
        1 => a.to_string().to_uppercase(),
        2 => s.map(|g| format!("{g:x}")).join(":"),
        _ => {
            let [w, x, y, z] = a.octets()[12..] else {
                return a.to_string();
            };
            let head = s[..6].iter().map(|g| format!("{g:x}")).collect::<Vec<_>>();
            format!("{}:{w}.{x}.{y}.{z}", head.join(":"))
        }
    }
}

/// U5: `v4` in each embedding form, in mixed and hex notation.
fn embedded(c: &mut dyn Choices, v4: [u8; 4]) -> String {
    let [a, b, cc, d] = v4;
    let bits = u32::from_be_bytes(v4);
    let (hi, lo) = (bits >> 16, bits & 0xffff);
    let dotted = format!("{a}.{b}.{cc}.{d}");
    let hex = one_in(c, 2);
    let low = |hex: bool| {
        if hex {
            format!("{hi:x}:{lo:x}")
        } else {
            dotted.clone()
        }
    };
    match c.below(9) {
        0 => format!("::ffff:{}", low(hex)),
        1 => format!("0:0:0:0:0:FFFF:{}", low(hex)),
        2 => format!("::{}", low(hex)),
        3 => format!("64:ff9b::{}", low(hex)),
        4 => format!("64:ff9b:1::{}", low(hex)),
        5 => format!("2002:{hi:x}:{lo:X}::"),
        6 => format!("2002:{hi:04x}:{lo:04x}:1::1"),
        // Teredo: a public or private server, the client obfuscated (XOR 0xffffffff).
        7 => {
            let server = if one_in(c, 2) {
                0x0a00_0001u32
            } else {
                0x4136_e378
            };
            let client = !bits;
            format!(
                "2001:0:{:x}:{:x}:8000:{:x}:{:x}:{:x}",
                server >> 16,
                server & 0xffff,
                !40000u16,
                client >> 16,
                client & 0xffff
            )
        }
        // Teredo with the address as its server and a public client.
        _ => format!("2001:0:{hi:x}:{lo:x}:0:f227:f7f7:f7f7"),
    }
}

/// U6: special-use and internal names, single labels, `localhost`.
fn special_name(c: &mut dyn Choices) -> String {
    let suffix = pick(c, &SPECIAL_SUFFIXES);
    match c.below(8) {
        0 => format!("media.{suffix}"),
        1 => format!("A.B.{}", suffix.to_uppercase()),
        2 => format!("media.{suffix}."),
        3 => suffix.to_string(),
        4 => pick(
            c,
            &[
                "localhost",
                "LOCALHOST",
                "localhost.",
                "foo.localhost",
                "a.b.localhost",
            ],
        )
        .to_string(),
        5 => pick(c, &["intranet", "printer", "wpad", "nas", "xn--nxasmq6b"]).to_string(),
        6 => format!("media.{suffix}:"),
        _ => format!("ｍｅｄｉａ．{suffix}"),
    }
}

/// U7: a wildcard-DNS name spelling an address, a rebinding service, or a loopback alias.
fn wildcard_name(c: &mut dyn Choices) -> String {
    let v4 = pick(c, &ADDRESSES);
    let [a, b, cc, d] = v4;
    let bits = u32::from_be_bytes(v4);
    match weighted(c, &[6, 1, 1]) {
        0 => {
            let service = pick(c, &WILDCARD_SERVICES);
            let spelled = match c.below(9) {
                0 => format!("{a}.{b}.{cc}.{d}"),
                1 => format!("{a}-{b}-{cc}-{d}"),
                2 => format!("{bits:08x}"),
                3 => format!("app.{a}.{b}.{cc}.{d}"),
                4 => format!("app-{a}-{b}-{cc}-{d}"),
                5 => format!("app-{bits:08x}"),
                6 => format!("{a}-{b}-{cc}-{d}-app"),
                7 => pick(
                    c,
                    &["--1", "2606-4700--1111", "fe80--1", "0--0", "--ffff-7f00-1"],
                )
                .to_string(),
                _ => return service.to_string(),
            };
            if one_in(c, 6) {
                format!("{spelled}.{}", service.to_uppercase())
            } else {
                format!("{spelled}.{service}")
            }
        }
        1 => {
            let service = pick(c, &REBINDING_SERVICES);
            match c.below(3) {
                0 => format!("x.{service}"),
                1 => format!("{bits:08x}.c0a80001.{service}"),
                _ => format!("make-{a}.{b}.{cc}.{d}-rebind-127.0.0.1-rr.{service}"),
            }
        }
        _ => {
            let service = pick(c, &LOOPBACK_SERVICES);
            match c.below(3) {
                0 => service.to_string(),
                1 => format!("app.{service}"),
                _ => service.to_uppercase(),
            }
        }
    }
}

/// A local media path for replies: inside the roots, escaping them, relative, odd.
pub const LOCAL_PATHS: [&str; 16] = [
    "/work/media/a.png",
    "/work/media/../secret.png",
    "a/b.png",
    "../etc/passwd",
    "~/x.png",
    "/etc/passwd",
    "/work/media/./c.png",
    "/tmp/out/d.png",
    "/work/media\u{0}/x",
    "file:///etc/passwd",
    "/work/media/sub/../../etc/x",
    "/work/mediaX/y.png",
    "./a.png",
    "/tmp/out",
    "//work/media/a.png",
    "/work/media/a b.png",
];

/// A directive target: a URL (any family) or a local path.
pub fn target(c: &mut dyn Choices) -> String {
    if one_in(c, 3) {
        pick(c, &LOCAL_PATHS).to_string()
    } else {
        url(c)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::super::testing::sample;
    use super::*;

    #[test]
    fn every_family_occurs() {
        let urls = sample(10_000, url_in);
        let families: HashSet<UrlFamily> = urls.iter().map(|(f, _)| *f).collect();
        assert_eq!(families.len(), UrlFamily::ALL.len(), "{families:?}");
        let all: Vec<&str> = urls.iter().map(|(_, u)| u.as_str()).collect();
        let has = |needle: &str| all.iter().any(|u| u.contains(needle));
        for needle in [
            // U1
            "2130706433",
            "0x7f.",
            "127.1",
            "%31%32%37",
            "１２７",
            "\u{3002}",
            // U2, U3
            "http://",
            "ftp://",
            "file://",
            "data:",
            "javascript:",
            "HTTPS://",
            "u@",
            ":p@",
            // U5 rows and embeddings
            "[3fff:",
            "[5f00:",
            "[100:0:0:1:",
            "[64:ff9b:1:",
            "[2001:",
            "[fc",
            "[fe80:",
            "[ff",
            "::ffff:",
            "64:ff9b::",
            "2002:",
            "2001:0:",
            // U6
            ".home.arpa",
            ".onion",
            ".alt",
            ".localhost",
            "localhost",
            // U7
            ".nip.io",
            ".sslip.io",
            ".xip.io",
            ".traefik.me",
            "lvh.me",
            "localtest.me",
            "-app.",
            // controls
            "https://example.com/",
            "https://8.8.8.8",
        ] {
            assert!(has(needle), "no URL contains {needle:?}");
        }
    }

    #[test]
    fn every_ipv4_row_is_hit_at_its_edges() {
        for (prefix, len) in IPV4_ROWS {
            let first = u32::from_be_bytes(prefix);
            let wanted = sample(400, |c| edge_v4(c, first, len));
            let last = (u64::from(first) + (1u64 << (32 - u32::from(len))) - 1) as u32;
            for edge in [first, last, first.wrapping_sub(1), last.wrapping_add(1)] {
                assert!(wanted.contains(&edge), "{prefix:?}/{len}: {edge:x}");
            }
        }
    }

    #[test]
    fn ipv6_rows_parse_and_edges_stay_near() {
        for (prefix, len) in IPV6_ROWS {
            let p: Ipv6Addr = prefix.parse().expect("row prefix");
            let edges = sample(50, |c| edge_v6(c, p.to_bits(), len));
            assert!(edges.contains(&p.to_bits()), "{prefix}/{len}");
            assert!(
                edges.contains(&p.to_bits().wrapping_sub(1)),
                "{prefix}/{len}"
            );
        }
    }
}
