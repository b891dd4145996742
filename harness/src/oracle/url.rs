//! S3 for remote URLs (U1–U7), judged independently of the reference's `url_policy`: its own
//! rows of the IANA special-purpose registries (as CIDR text, read with `std::net`), its own
//! embedded-IPv4 rules and its own wildcard-DNS list. Where the registry marks a row globally
//! reachable, this oracle accepts it (the reference may refuse more; that is a divergence).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::LazyLock;

use crate::rule::Rule;

/// Why a URL must not be accepted: the U-rule it breaks and a data-free description.
pub type Problem = (Rule, &'static str);

/// IANA IPv4 Special-Purpose Address Registry rows whose "Globally Reachable" is not `True`,
/// plus multicast and limited broadcast (U4 rejects both).
const IPV4_NOT_GLOBAL: &[&str] = &[
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.0.2.0/24",
    "192.88.99.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "198.51.100.0/24",
    "203.0.113.0/24",
    "224.0.0.0/4",
    "240.0.0.0/4",
    "255.255.255.255/32",
];

/// Rows of 192.0.0.0/24 the registry marks globally reachable (more specific than the block).
const IPV4_GLOBAL_EXCEPTIONS: &[&str] = &["192.0.0.9/32", "192.0.0.10/32"];

/// IANA IPv6 Special-Purpose Address Registry rows not globally reachable, multicast, and the
/// space outside global unicast 2000::/3. Rows that embed an IPv4 address are judged by it
/// (see [`embedded_ipv4`]) before this table is consulted.
const IPV6_NOT_GLOBAL: &[&str] = &[
    "::/128",
    "::1/128",
    "64:ff9b:1::/48",
    "100::/64",
    "100:0:0:1::/64",
    "2001::/23",
    "2001:db8::/32",
    "2002::/16",
    "3fff::/20",
    "5f00::/16",
    "fc00::/7",
    "fe80::/10",
    "fec0::/10",
    "ff00::/8",
];

/// Rows inside 2001::/23 the registry marks globally reachable.
const IPV6_GLOBAL_EXCEPTIONS: &[&str] = &[
    "2001:1::1/128",
    "2001:1::2/128",
    "2001:1::3/128",
    "2001:3::/32",
    "2001:4:112::/48",
    "2001:20::/28",
    "2001:30::/28",
];

/// Special-use and internal suffixes (U6), compared by last label.
const INTERNAL_SUFFIXES: &[&str] = &[
    "localhost",
    "local",
    "internal",
    "localdomain",
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

/// Wildcard-DNS services that answer with the address spelled in the name (U7).
const WILDCARD_DNS: &[&str] = &[
    "nip.io",
    "sslip.io",
    "xip.io",
    "xip.name",
    "traefik.me",
    "nip.direct",
    "ip.addr.tools",
];

/// Services whose every name resolves to loopback by design (U7: the address is fixed).
const LOOPBACK_SERVICES: &[&str] = &["localtest.me", "lvh.me", "vcap.me", "localh.st"];

struct Cidr {
    net: u128,
    mask: u128,
}

fn cidrs(rows: &[&str]) -> Vec<Cidr> {
    rows.iter()
        .map(|row| {
            let (addr, len) = row.split_once('/').expect("CIDR row");
            let len: u32 = len.parse().expect("prefix length");
            let (net, bits) = match addr.parse::<IpAddr>().expect("CIDR address") {
                IpAddr::V4(v4) => (u128::from(v4.to_bits()), 32),
                IpAddr::V6(v6) => (v6.to_bits(), 128),
            };
            let mask = if len == 0 {
                0
            } else {
                (u128::MAX >> (128 - bits)) & !((1u128 << (bits - len)) - 1)
            };
            Cidr { net, mask }
        })
        .collect()
}

struct Tables {
    v4: Vec<Cidr>,
    v4_global: Vec<Cidr>,
    v6: Vec<Cidr>,
    v6_global: Vec<Cidr>,
}

static TABLES: LazyLock<Tables> = LazyLock::new(|| Tables {
    v4: cidrs(IPV4_NOT_GLOBAL),
    v4_global: cidrs(IPV4_GLOBAL_EXCEPTIONS),
    v6: cidrs(IPV6_NOT_GLOBAL),
    v6_global: cidrs(IPV6_GLOBAL_EXCEPTIONS),
});

fn any(rows: &[Cidr], bits: u128) -> bool {
    rows.iter().any(|c| bits & c.mask == c.net)
}

/// Whether an IPv4 address is globally reachable (U4).
pub fn ipv4_is_global(ip: Ipv4Addr) -> bool {
    let bits = u128::from(ip.to_bits());
    any(&TABLES.v4_global, bits) || !any(&TABLES.v4, bits)
}

/// The IPv4 addresses an IPv6 address embeds (U5): IPv4-mapped, IPv4-compatible, NAT64 (the
/// well-known prefix and local-use 64:ff9b:1::/48, IPv4 in the low 32 bits), 6to4, and Teredo
/// (server and de-obfuscated client). Empty for every other address.
pub fn embedded_ipv4(ip: Ipv6Addr) -> Vec<Ipv4Addr> {
    let s = ip.segments();
    let v4 = |hi: u16, lo: u16| Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo));
    match s {
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => vec![v4(hi, lo)],
        [0, 0, 0, 0, 0, 0, hi, lo] if (hi, lo) > (0, 1) => vec![v4(hi, lo)],
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => vec![v4(hi, lo)],
        [0x64, 0xff9b, 1, ..] => vec![v4(s[6], s[7])],
        [0x2002, hi, lo, ..] => vec![v4(hi, lo)],
        [0x2001, 0, hi, lo, _, _, chi, clo] => vec![v4(hi, lo), v4(!chi, !clo)],
        _ => Vec::new(),
    }
}

/// Whether an IPv6 address is globally reachable (U5), embedded IPv4 addresses included: an
/// address that embeds one is refused when any embedded address is not global, and local-use
/// NAT64 is refused whatever it embeds (the registry marks it not global).
pub fn ipv6_is_global(ip: Ipv6Addr) -> bool {
    let embedded = embedded_ipv4(ip);
    if !embedded.iter().all(|&v4| ipv4_is_global(v4)) {
        return false;
    }
    let bits = ip.to_bits();
    let local_use_nat64 = ip.segments()[..3] == [0x64, 0xff9b, 1];
    if !embedded.is_empty() && !local_use_nat64 {
        return true;
    }
    let global_unicast = bits >> 125 == 1;
    any(&TABLES.v6_global, bits) || (global_unicast && !any(&TABLES.v6, bits))
}

/// The address a wildcard-DNS name spells in its labels before the service suffix: dotted
/// (`10.0.0.1.nip.io`, also after a prefix label) or dashed (`10-0-0-1.sslip.io`,
/// `app-10-0-0-1.nip.io`) IPv4, 8 hex digits, or dashed IPv6 (`--1.sslip.io` for `::1`).
fn wildcard_address(sub: &str) -> Option<IpAddr> {
    let labels: Vec<&str> = sub.split('.').collect();
    // Dotted IPv4: the last four labels.
    if labels.len() >= 4 {
        let dotted = labels[labels.len() - 4..].join(".");
        if let Ok(v4) = dotted.parse::<Ipv4Addr>() {
            return Some(IpAddr::V4(v4));
        }
    }
    let last = labels.last()?;
    // Dashed IPv4 at the end of the last label (a prefix may come first: `app-10-0-0-1`).
    let parts: Vec<&str> = last.split('-').collect();
    if parts.len() >= 4
        && let Ok(v4) = parts[parts.len() - 4..].join(".").parse::<Ipv4Addr>()
    {
        return Some(IpAddr::V4(v4));
    }
    // Hex IPv4 (8 digits), alone or after a prefix.
    let hex = last.rsplit('-').next().unwrap_or(last);
    if hex.len() == 8
        && let Ok(bits) = u32::from_str_radix(hex, 16)
    {
        return Some(IpAddr::V4(Ipv4Addr::from(bits)));
    }
    // Dashed IPv6 (sslip.io): dashes for colons.
    last.replace('-', ":")
        .parse::<Ipv6Addr>()
        .ok()
        .map(IpAddr::V6)
}

fn ip_is_global(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => ipv4_is_global(v4),
        IpAddr::V6(v6) => ipv6_is_global(v6),
    }
}

/// Why `url` is not a public `https:` URL (S3 through U1–U7), or `None` when it may be accepted.
pub fn remote_problem(url: &str) -> Option<Problem> {
    let Ok(parsed) = url::Url::parse(url) else {
        return Some((Rule::U1, "accepted an unparseable URL"));
    };
    if parsed.scheme() != "https" {
        return Some((Rule::U2, "accepted a non-https URL"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Some((Rule::U3, "accepted a URL with userinfo"));
    }
    match parsed.host() {
        None => Some((Rule::U1, "accepted a URL without host")),
        Some(url::Host::Ipv4(ip)) => {
            (!ipv4_is_global(ip)).then_some((Rule::U4, "accepted a private IPv4 host"))
        }
        Some(url::Host::Ipv6(ip)) => {
            (!ipv6_is_global(ip)).then_some((Rule::U5, "accepted a private IPv6 host"))
        }
        Some(url::Host::Domain(name)) => name_problem(name),
    }
}

fn name_problem(name: &str) -> Option<Problem> {
    let name = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    let last = name.rsplit('.').next().unwrap_or(&name);
    if !name.contains('.')
        || name.split('.').any(str::is_empty)
        || INTERNAL_SUFFIXES.contains(&last)
    {
        return Some((Rule::U6, "accepted an internal host name"));
    }
    let under = |service: &str| name == service || name.ends_with(&format!(".{service}"));
    if LOOPBACK_SERVICES.iter().any(|s| under(s)) {
        return Some((
            Rule::U7,
            "accepted a name that resolves to loopback by design",
        ));
    }
    for service in WILDCARD_DNS {
        let Some(sub) = name
            .strip_suffix(service)
            .and_then(|rest| rest.strip_suffix('.'))
        else {
            continue;
        };
        return match wildcard_address(sub) {
            Some(ip) if !ip_is_global(ip) => Some((
                Rule::U7,
                "accepted a wildcard-DNS name of a private address",
            )),
            _ => None,
        };
    }
    None
}

/// Whether `host` is a special-purpose address the registry nevertheless marks globally
/// reachable: the reference refuses these by choice, so accepting one is only a divergence.
pub fn is_global_special_row(url: &str) -> bool {
    let Ok(parsed) = url::Url::parse(url) else {
        return false;
    };
    match parsed.host() {
        Some(url::Host::Ipv4(ip)) => any(&TABLES.v4_global, u128::from(ip.to_bits())),
        Some(url::Host::Ipv6(ip)) => any(&TABLES.v6_global, ip.to_bits()),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_u_rule_has_its_family() {
        for (url, rule) in [
            ("not a url", Rule::U1),
            ("http://example.com/a.png", Rule::U2),
            ("https://u:p@example.com/", Rule::U3),
            ("https://127.1/", Rule::U4),
            ("https://2130706433/", Rule::U4),
            ("https://0x7f.1/", Rule::U4),
            ("https://100.64.0.1/", Rule::U4),
            ("https://198.19.0.1/", Rule::U4),
            ("https://224.0.0.1/", Rule::U4),
            ("https://[::1]/", Rule::U5),
            ("https://[::ffff:10.0.0.1]/", Rule::U5),
            ("https://[64:ff9b::a00:1]/", Rule::U5),
            ("https://[64:ff9b:1::808:808]/", Rule::U5),
            ("https://[2002:c0a8:101::]/", Rule::U5),
            ("https://[2001:0:4136:e378:8000:63bf:f5ff:fffe]/", Rule::U5),
            ("https://[3fff::1]/", Rule::U5),
            ("https://[5f00::1]/", Rule::U5),
            ("https://[fd00::1]/", Rule::U5),
            ("https://intranet/", Rule::U6),
            ("https://a.home.arpa/", Rule::U6),
            ("https://printer.local./", Rule::U6),
            ("https://10.0.0.1.nip.io/", Rule::U7),
            ("https://app-192-168-1-1.sslip.io/", Rule::U7),
            ("https://7f000001.nip.io/", Rule::U7),
            ("https://--1.sslip.io/", Rule::U7),
            ("https://app.lvh.me/", Rule::U7),
            ("https://[4000::1]/", Rule::U5),
        ] {
            assert_eq!(remote_problem(url).map(|p| p.0), Some(rule), "{url}");
        }
        for ok in [
            "https://example.com/a.png",
            "https://8.8.8.8/x",
            "https://[2606:4700::1111]/",
            "https://[64:ff9b::808:808]/",
            "https://[2002:808:808::]/",
            "https://8.8.8.8.nip.io/",
            "https://192.0.0.9/",
            "https://[2001:4:112::1]/",
        ] {
            assert_eq!(remote_problem(ok), None, "{ok}");
        }
    }

    #[test]
    fn global_special_rows_are_known() {
        assert!(is_global_special_row("https://192.0.0.9/"));
        assert!(!is_global_special_row("https://192.0.0.1/"));
        assert!(!is_global_special_row("https://8.8.8.8/"));
    }
}
