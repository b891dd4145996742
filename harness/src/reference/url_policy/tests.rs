use std::cell::Cell;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use proptest::prelude::*;

use super::ip_ranges::{IPV4, IPV6, SpecialRange};
use super::*;

/// Asserts reason and detail of `url`'s verdict, and that `allowed` agrees with the reason.
#[track_caller]
fn expect(url: &str, reason: Reason, detail: Option<&str>) {
    let v = check_media_url(url);
    assert_eq!((v.reason, v.detail), (reason, detail), "{url:?} -> {v:?}");
    assert_eq!(v.allowed, reason == Reason::Ok, "{url:?} -> {v:?}");
}

#[track_caller]
fn expect_reason(url: &str, reason: Reason) {
    let v = check_media_url(url);
    assert_eq!(v.reason, reason, "{url:?} -> {v:?}");
    assert_eq!(v.allowed, reason == Reason::Ok, "{url:?} -> {v:?}");
}

fn host_url(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(a) => format!("https://{a}/x.png"),
        IpAddr::V6(a) => format!("https://[{a}]/x.png"),
    }
}

// ---------------------------------------------------------------------------------------------
// IP tables, checked against an independent range computation (start + size, not XOR/mask).

fn width(ip: IpAddr) -> u32 {
    if ip.is_ipv4() { 32 } else { 128 }
}

fn bits(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

fn from_bits(value: u128, width: u32) -> IpAddr {
    if width == 32 {
        IpAddr::V4(Ipv4Addr::from(value as u32))
    } else {
        IpAddr::V6(Ipv6Addr::from(value))
    }
}

/// First and last address of a row, as numbers.
fn bounds(r: &SpecialRange) -> (u128, u128) {
    let host_bits = width(r.prefix) - u32::from(r.len);
    let first = bits(r.prefix);
    let last = if host_bits == 128 {
        u128::MAX
    } else {
        first + ((1u128 << host_bits) - 1)
    };
    (first, last)
}

fn table_of(ip: IpAddr) -> &'static [SpecialRange] {
    if ip.is_ipv4() { IPV4 } else { IPV6 }
}

/// The most specific row holding `ip`, by the independent computation.
fn reference_row(ip: IpAddr) -> Option<&'static SpecialRange> {
    table_of(ip)
        .iter()
        .filter(|r| {
            let (first, last) = bounds(r);
            (first..=last).contains(&bits(ip))
        })
        .max_by_key(|r| r.len)
}

#[test]
fn tables_hold_every_registry_row() {
    // 25 IPv4 registry rows, one of them (NAT64/DNS64 Discovery) two /32 blocks; 25 IPv6 rows.
    assert_eq!(IPV4.iter().filter(|r| r.in_registry).count(), 26);
    assert_eq!(IPV6.iter().filter(|r| r.in_registry).count(), 25);
    assert_eq!(IPV4.iter().filter(|r| !r.in_registry).count(), 1);
    assert_eq!(IPV6.iter().filter(|r| !r.in_registry).count(), 6);
}

#[test]
fn every_row_is_well_formed_and_its_label_spells_it() {
    for (table, want_v4) in [(IPV4, true), (IPV6, false)] {
        for r in table {
            assert_eq!(r.prefix.is_ipv4(), want_v4, "{r:?}");
            assert!(u32::from(r.len) <= width(r.prefix), "{r:?}");
            let host_bits = width(r.prefix) - u32::from(r.len);
            let host_mask = if host_bits == 128 {
                u128::MAX
            } else {
                (1u128 << host_bits) - 1
            };
            assert_eq!(bits(r.prefix) & host_mask, 0, "host bits set in {r:?}");
            assert!(r.embeds.is_none() || !want_v4, "{r:?}");
            let (addr, rest) = r.label.split_once('/').expect("label has a '/'");
            let (len, name) = rest.split_once(' ').expect("label has a name");
            assert_eq!(addr.parse::<IpAddr>(), Ok(r.prefix), "{}", r.label);
            assert_eq!(len.parse::<u8>(), Ok(r.len), "{}", r.label);
            assert_eq!(name, r.name, "{}", r.label);
            assert_eq!(r.to_string(), r.label);
        }
    }
}

/// An address inside each row (that no more specific row claims) is refused, and the detail
/// names that row, both through `ip_verdict` and through a URL.
#[test]
fn every_row_refuses_an_address_inside_it_and_names_it() {
    let mut checked = 0;
    for r in IPV4.iter().chain(IPV6).filter(|r| r.embeds.is_none()) {
        let (first, last) = bounds(r);
        let mid = first + (last - first) / 2;
        let candidates = [
            last,
            first,
            mid,
            last.saturating_sub(1),
            first.saturating_add(1),
        ];
        let ip = candidates
            .iter()
            .map(|&b| from_bits(b, width(r.prefix)))
            .find(|&ip| reference_row(ip) == Some(r))
            .unwrap_or_else(|| panic!("no address of {} is claimed by it", r.label));
        assert!(
            std::ptr::eq(ip_verdict(ip).unwrap_err(), r),
            "{ip} -> {:?}",
            ip_verdict(ip)
        );
        expect(&host_url(ip), Reason::IpNotGlobal, Some(r.label));
        checked += 1;
    }
    assert_eq!(
        checked,
        IPV4.len() + IPV6.len() - 5,
        "all rows but the 5 embedding ones"
    );
}

/// Written by hand from the registries, independently of the tables: an address at the far end of
/// each row (the label test pins the first address) and the label it must be refused with.
/// Catches a wrong prefix length, which the table-derived tests cannot see.
#[rustfmt::skip]
const ROW_ENDS: &[(&str, &str)] = &[
    ("0.255.255.255", "0.0.0.0/8 This network"),
    ("0.0.0.0", "0.0.0.0/32 This host on this network"),
    ("10.255.255.255", "10.0.0.0/8 Private-Use"),
    ("100.127.255.255", "100.64.0.0/10 Shared Address Space"),
    ("127.255.255.255", "127.0.0.0/8 Loopback"),
    ("169.254.255.255", "169.254.0.0/16 Link Local"),
    ("172.31.255.255", "172.16.0.0/12 Private-Use"),
    ("192.0.0.255", "192.0.0.0/24 IETF Protocol Assignments"),
    ("192.0.0.7", "192.0.0.0/29 IPv4 Service Continuity Prefix"),
    ("192.0.0.8", "192.0.0.8/32 IPv4 dummy address"),
    ("192.0.0.9", "192.0.0.9/32 Port Control Protocol Anycast"),
    ("192.0.0.10", "192.0.0.10/32 Traversal Using Relays around NAT Anycast"),
    ("192.0.0.170", "192.0.0.170/32 NAT64/DNS64 Discovery"),
    ("192.0.0.171", "192.0.0.171/32 NAT64/DNS64 Discovery"),
    ("192.0.2.255", "192.0.2.0/24 Documentation (TEST-NET-1)"),
    ("192.31.196.255", "192.31.196.0/24 AS112-v4"),
    ("192.52.193.255", "192.52.193.0/24 AMT"),
    ("192.88.99.255", "192.88.99.0/24 Deprecated (6to4 Relay Anycast)"),
    ("192.88.99.2", "192.88.99.2/32 6a44-relay anycast address"),
    ("192.168.255.255", "192.168.0.0/16 Private-Use"),
    ("192.175.48.255", "192.175.48.0/24 Direct Delegation AS112 Service"),
    ("198.19.255.255", "198.18.0.0/15 Benchmarking"),
    ("198.51.100.255", "198.51.100.0/24 Documentation (TEST-NET-2)"),
    ("203.0.113.255", "203.0.113.0/24 Documentation (TEST-NET-3)"),
    ("255.255.255.254", "240.0.0.0/4 Reserved"),
    ("255.255.255.255", "255.255.255.255/32 Limited Broadcast"),
    ("239.255.255.255", "224.0.0.0/4 Multicast"),
    ("::1", "::1/128 Loopback Address"),
    ("::", "::/128 Unspecified Address"),
    ("64:ff9b:1:ffff:ffff:ffff:ffff:ffff", "64:ff9b:1::/48 IPv4-IPv6 Translat."),
    ("100::ffff:ffff:ffff:ffff", "100::/64 Discard-Only Address Block"),
    ("100:0:0:1:ffff:ffff:ffff:ffff", "100:0:0:1::/64 Dummy IPv6 Prefix"),
    ("2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff", "2001::/23 IETF Protocol Assignments"),
    ("2001:1::1", "2001:1::1/128 Port Control Protocol Anycast"),
    ("2001:1::2", "2001:1::2/128 Traversal Using Relays around NAT Anycast"),
    ("2001:1::3", "2001:1::3/128 DNS-SD Service Registration Protocol Anycast"),
    ("2001:2:0:ffff:ffff:ffff:ffff:ffff", "2001:2::/48 Benchmarking"),
    ("2001:3:ffff:ffff:ffff:ffff:ffff:ffff", "2001:3::/32 AMT"),
    ("2001:4:112:ffff:ffff:ffff:ffff:ffff", "2001:4:112::/48 AS112-v6"),
    ("2001:1f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:10::/28 Deprecated (previously ORCHID)"),
    ("2001:2f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:20::/28 ORCHIDv2"),
    ("2001:3f:ffff:ffff:ffff:ffff:ffff:ffff", "2001:30::/28 Drone Remote ID Protocol Entity Tags (DETs) Prefix"),
    ("2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", "2001:db8::/32 Documentation"),
    ("2620:4f:8000:ffff:ffff:ffff:ffff:ffff", "2620:4f:8000::/48 Direct Delegation AS112 Service"),
    ("3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff", "3fff::/20 Documentation"),
    ("5f00:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "5f00::/16 Segment Routing (SRv6) SIDs"),
    ("fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fc00::/7 Unique-Local"),
    ("febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fe80::/10 Link-Local Unicast"),
    ("feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "fec0::/10 Site-Local (deprecated)"),
    ("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "ff00::/8 Multicast"),
    ("1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "::/3 Outside Global Unicast 2000::/3"),
    ("7fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "4000::/2 Outside Global Unicast 2000::/3"),
    ("fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "8000::/1 Outside Global Unicast 2000::/3"),
    // Embedding rows: the last address embeds 255.255.255.255 (Teredo: client 0.0.0.0).
    ("::ffff:255.255.255.255", "255.255.255.255/32 Limited Broadcast"),
    ("64:ff9b::ffff:ffff", "255.255.255.255/32 Limited Broadcast"),
    ("2001:0:ffff:ffff:ffff:ffff:ffff:ffff", "0.0.0.0/32 This host on this network"),
    ("2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff", "255.255.255.255/32 Limited Broadcast"),
    ("::ffff:ffff", "255.255.255.255/32 Limited Broadcast"),
];

#[test]
fn far_end_of_every_row_by_hand() {
    for &(addr, label) in ROW_ENDS {
        let ip: IpAddr = addr.parse().expect("test address");
        assert_eq!(ip_verdict(ip).map_err(|r| r.label), Err(label), "{addr}");
    }
    for r in IPV4.iter().chain(IPV6) {
        let covered = ROW_ENDS.iter().any(|&(addr, _)| {
            let row = addr.parse().ok().and_then(reference_row);
            row.is_some_and(|row| std::ptr::eq(row, r))
        });
        assert!(covered, "no ROW_ENDS line for {}", r.label);
    }
}

/// The neighbours of each row, when no row claims them, are public and accepted: catches an
/// off-by-one prefix length or a wrong prefix.
#[test]
fn just_outside_every_row_is_accepted_when_public() {
    let mut accepted = 0;
    for r in IPV4.iter().chain(IPV6) {
        let w = width(r.prefix);
        let max = if w == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        let (first, last) = bounds(r);
        let neighbours = [
            first.checked_sub(1),
            last.checked_add(1).filter(|&b| b <= max),
        ];
        for ip in neighbours.into_iter().flatten().map(|b| from_bits(b, w)) {
            if reference_row(ip).is_none() {
                assert_eq!(ip_verdict(ip), Ok(()), "{ip} next to {}", r.label);
                expect(&host_url(ip), Reason::Ok, None);
                accepted += 1;
            }
        }
    }
    assert!(accepted >= 40, "only {accepted} public neighbours checked");
}

/// docs/research/anchors.md §4.6: rows the registry marks globally reachable are refused all the same.
#[test]
fn globally_reachable_rows_are_refused_too() {
    let global: Vec<_> = IPV4
        .iter()
        .chain(IPV6)
        .filter(|r| r.globally_reachable == Some(true) && r.embeds.is_none())
        .collect();
    assert!(global.len() >= 12, "{global:?}");
    for r in global {
        assert_eq!(ip_verdict(r.prefix), Err(r), "{}", r.label);
    }
    expect(
        "https://192.0.0.9/",
        Reason::IpNotGlobal,
        Some("192.0.0.9/32 Port Control Protocol Anycast"),
    );
    expect(
        "https://192.52.193.1/",
        Reason::IpNotGlobal,
        Some("192.52.193.0/24 AMT"),
    );
    expect(
        "https://[2001:20::1]/",
        Reason::IpNotGlobal,
        Some("2001:20::/28 ORCHIDv2"),
    );
}

const LOOPBACK: Option<&str> = Some("127.0.0.0/8 Loopback");
const LINK_LOCAL: Option<&str> = Some("169.254.0.0/16 Link Local");
const TEN: Option<&str> = Some("10.0.0.0/8 Private-Use");

/// U5 for each embedding row: judged as the IPv4 address it carries.
#[test]
fn embedded_ipv4_is_judged_as_that_ipv4() {
    let cases: &[(&str, Option<&str>)] = &[
        // IPv4-mapped ::ffff:0:0/96
        ("https://[::ffff:8.8.8.8]/", None),
        ("https://[::ffff:127.0.0.1]/", LOOPBACK),
        ("https://[0:0:0:0:0:ffff:127.0.0.1]/", LOOPBACK),
        ("https://[::ffff:a9fe:a9fe]/", LINK_LOCAL),
        // IPv4-compatible ::/96; `::` and `::1` keep their own, more specific rows
        ("https://[::8.8.8.8]/", None),
        ("https://[::127.0.0.1]/", LOOPBACK),
        ("https://[::]/", Some("::/128 Unspecified Address")),
        ("https://[::1]/", Some("::1/128 Loopback Address")),
        ("https://[0000::1]/", Some("::1/128 Loopback Address")),
        ("https://[::2]/", Some("0.0.0.0/8 This network")),
        // NAT64 well-known prefix 64:ff9b::/96
        ("https://[64:ff9b::8.8.8.8]/", None),
        ("https://[64:ff9b::169.254.169.254]/", LINK_LOCAL),
        ("https://[64:ff9b::7f00:1]/", LOOPBACK),
        // NAT64 local-use 64:ff9b:1::/48 is not global, whatever it embeds
        (
            "https://[64:ff9b:1::1]/",
            Some("64:ff9b:1::/48 IPv4-IPv6 Translat."),
        ),
        (
            "https://[64:ff9b:1::808:808]/",
            Some("64:ff9b:1::/48 IPv4-IPv6 Translat."),
        ),
        // 6to4 2002::/16
        ("https://[2002:808:808::]/", None),
        ("https://[2002:808:808:1::1]/", None),
        ("https://[2002:7f00:1::]/", LOOPBACK),
        (
            "https://[2002:c0a8:101::1]/",
            Some("192.168.0.0/16 Private-Use"),
        ),
        // Teredo 2001::/32: server in bits 32..64, client inverted in the low 32 bits
        ("https://[2001:0:4136:e378:8000:63bf:f7f7:f7f7]/", None),
        (
            "https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/",
            Some("192.0.2.0/24 Documentation (TEST-NET-1)"),
        ),
        ("https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/", LOOPBACK),
        ("https://[2001:0:a00:1:8000:63bf:f7f7:f7f7]/", TEN),
    ];
    for &(url, detail) in cases {
        let reason = if detail.is_some() {
            Reason::IpNotGlobal
        } else {
            Reason::Ok
        };
        expect(url, reason, detail);
    }
}

// ---------------------------------------------------------------------------------------------
// Vectors from the research notes.

#[test]
fn seed_vectors() {
    expect("https://127.0.0.1/x.png", Reason::IpNotGlobal, LOOPBACK);
    expect("https://example.com/a.png", Reason::Ok, None);
}

/// docs/research/openclaw-normalizers.md §3.5, "new allowed" column.
#[test]
fn openclaw_decision_table() {
    for url in [
        "https://example.com/a.png",
        "https://example.com./a.png",
        "https://8.8.8.8/",
        "https://1.1.1.1/",
        "https://[::ffff:8.8.8.8]/",
        "https://[64:ff9b::8.8.8.8]/",
        "https://[2002:808:808::]/",
        "https://[2606:4700::1111]/",
        "https://[2001:4860:4860::8888]/",
    ] {
        expect(url, Reason::Ok, None);
    }
    let refused: &[(&str, Reason)] = &[
        ("http://example.com/a.png", Reason::Scheme),
        ("https://user:pw@example.com/", Reason::Userinfo),
        ("https://user@example.com/", Reason::Userinfo),
        ("https://intranet/", Reason::SpecialName),
        ("https://localhost/", Reason::SpecialName),
        ("https://LOCALHOST/", Reason::SpecialName),
        ("https://localhost../", Reason::EmptyLabel),
        ("https://foo.localhost/", Reason::SpecialName),
        ("https://x.local/", Reason::SpecialName),
        ("https://docs.internal/", Reason::SpecialName),
        ("https://metadata.google.internal../", Reason::EmptyLabel),
        ("https://example..com/", Reason::EmptyLabel),
        ("https://%6c%6f%63%61%6c%68%6f%73%74/", Reason::SpecialName),
        ("https://xn--localhost/", Reason::Parse),
        ("https://127.0.0.1..", Reason::EmptyLabel),
    ];
    for &(url, reason) in refused {
        expect_reason(url, reason);
    }
    let ipv4: &[(&str, &str)] = &[
        ("127.0.0.1", "127.0.0.0/8 Loopback"),
        ("2130706433", "127.0.0.0/8 Loopback"),
        ("0x7f.1", "127.0.0.0/8 Loopback"),
        ("0177.0.0.1", "127.0.0.0/8 Loopback"),
        ("10.0.0.1", "10.0.0.0/8 Private-Use"),
        ("172.16.0.1", "172.16.0.0/12 Private-Use"),
        ("192.168.1.1", "192.168.0.0/16 Private-Use"),
        ("100.64.0.1", "100.64.0.0/10 Shared Address Space"),
        ("100.100.100.200", "100.64.0.0/10 Shared Address Space"),
        ("169.254.169.254", "169.254.0.0/16 Link Local"),
        ("0.0.0.0", "0.0.0.0/32 This host on this network"),
        ("255.255.255.255", "255.255.255.255/32 Limited Broadcast"),
        ("224.0.0.1", "224.0.0.0/4 Multicast"),
        ("240.0.0.1", "240.0.0.0/4 Reserved"),
        ("198.18.0.1", "198.18.0.0/15 Benchmarking"),
        ("198.19.255.255", "198.18.0.0/15 Benchmarking"),
        ("192.0.2.1", "192.0.2.0/24 Documentation (TEST-NET-1)"),
    ];
    for &(host, detail) in ipv4 {
        expect(
            &format!("https://{host}/"),
            Reason::IpNotGlobal,
            Some(detail),
        );
    }
    let ipv6: &[(&str, &str)] = &[
        ("::1", "::1/128 Loopback Address"),
        ("::", "::/128 Unspecified Address"),
        ("fe80::1", "fe80::/10 Link-Local Unicast"),
        ("fd00::1", "fc00::/7 Unique-Local"),
        ("fd00:ec2::254", "fc00::/7 Unique-Local"),
        ("fec0::1", "fec0::/10 Site-Local (deprecated)"),
        ("ff02::1", "ff00::/8 Multicast"),
        ("::ffff:127.0.0.1", "127.0.0.0/8 Loopback"),
        ("64:ff9b::169.254.169.254", "169.254.0.0/16 Link Local"),
        ("64:ff9b:1::1", "64:ff9b:1::/48 IPv4-IPv6 Translat."),
        ("2002:7f00:1::", "127.0.0.0/8 Loopback"),
        ("2001:db8::1", "2001:db8::/32 Documentation"),
        ("::127.0.0.1", "127.0.0.0/8 Loopback"),
        ("100::1", "100::/64 Discard-Only Address Block"),
    ];
    for &(host, detail) in ipv6 {
        expect(
            &format!("https://[{host}]/"),
            Reason::IpNotGlobal,
            Some(detail),
        );
    }
}

/// docs/research/anchors.md §4.3, every entry that can be written as an https URL.
#[test]
fn ssrf_bypass_catalogue() {
    let ip: &[(&str, Option<&str>)] = &[
        // default targets
        ("https://127.0.0.1/", LOOPBACK),
        (
            "https://0.0.0.0/",
            Some("0.0.0.0/32 This host on this network"),
        ),
        ("https://[::]/", Some("::/128 Unspecified Address")),
        ("https://[0000::1]/", Some("::1/128 Loopback Address")),
        ("https://[::ffff:127.0.0.1]/", LOOPBACK),
        ("https://[0:0:0:0:0:ffff:127.0.0.1]/", LOOPBACK),
        ("https://127.127.127.127/", LOOPBACK),
        ("https://127.0.1.3/", LOOPBACK),
        ("https://127.0.0.0/", LOOPBACK),
        // short, decimal, octal, hex and mixed spellings
        ("https://0/", Some("0.0.0.0/32 This host on this network")),
        ("https://127.1/", LOOPBACK),
        ("https://127.0.1/", LOOPBACK),
        ("https://2130706433/", LOOPBACK),
        ("https://3232235521/", Some("192.168.0.0/16 Private-Use")),
        ("https://2852039166/", LINK_LOCAL),
        ("https://0177.0.0.1/", LOOPBACK),
        ("https://0xA9.0xFE.0xA9.0xFE/", LINK_LOCAL),
        ("https://0xA9FEA9FE/", LINK_LOCAL),
        ("https://0251.0376.0251.0376/", LINK_LOCAL),
        ("https://0251.00376.000251.0000376/", LINK_LOCAL),
        ("https://0251.254.169.254/", LINK_LOCAL),
        // percent-encoded, fullwidth and enclosed digits
        ("https://%31%32%37.0.0.1/", LOOPBACK),
        ("https://１２７.０.０.１/", LOOPBACK),
        ("https://①②⑦.⓪.⓪.①/", LOOPBACK),
        ("https://127%2e0%2e0%2e1/", LOOPBACK),
        // DNS names spelling an address
        ("https://169.254.169.254.nip.io/", LINK_LOCAL),
        ("https://anything.127.0.0.1.nip.io/", LOOPBACK),
        // cloud metadata
        ("https://169.254.169.254/latest/meta-data/", LINK_LOCAL),
        (
            "https://169.254.169.254/metadata/instance?api-version=2021-02-01",
            LINK_LOCAL,
        ),
        ("https://[fd00:ec2::254]/", Some("fc00::/7 Unique-Local")),
        ("https://169.254.170.2/v2/metadata", LINK_LOCAL),
        (
            "https://192.0.0.192/",
            Some("192.0.0.0/24 IETF Protocol Assignments"),
        ),
        (
            "https://100.100.100.200/",
            Some("100.64.0.0/10 Shared Address Space"),
        ),
        ("https://127.0.0.1:2375/", LOOPBACK),
        ("https://127.0.0.1:2379/", LOOPBACK),
    ];
    for &(url, detail) in ip {
        expect(url, Reason::IpNotGlobal, detail);
    }
    let other: &[(&str, Reason)] = &[
        // spellings WHATWG refuses: overflow, non-standard octal prefixes
        ("https://425.510.425.510/", Reason::Parse),
        ("https://7147006462/", Reason::Parse),
        ("https://0x41414141A9FEA9FE/", Reason::Parse),
        ("https://o177.0.0.1/", Reason::Parse),
        ("https://0o177.0.0.1/", Reason::Parse),
        ("https://q177.0.0.1/", Reason::Parse),
        // names
        ("https://localhost/", Reason::SpecialName),
        ("https://ⓛⓞⓒⓐⓛⓗⓞⓢⓣ/", Reason::SpecialName),
        ("https://localtest.me/", Reason::SpecialName),
        ("https://localh.st/", Reason::SpecialName),
        ("https://instance-data/", Reason::SingleLabel),
        ("https://metadata/", Reason::SingleLabel),
        ("https://rancher-metadata/", Reason::SingleLabel),
        (
            "https://metadata.google.internal/computeMetadata/v1/",
            Reason::SpecialName,
        ),
        ("https://localhost:9001/", Reason::SpecialName),
        (
            "https://make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms/",
            Reason::WildcardDns,
        ),
        ("https://spoofed.burpcollaborator.net/", Reason::WildcardDns),
        // Orange Tsai parser confusion
        ("https://127.1.1.1:80\\@127.2.2.2:80/", Reason::RawSyntax),
        ("https://127.1.1.1:80\\@@127.2.2.2:80/", Reason::RawSyntax),
        ("https://127.1.1.1:80:\\@@127.2.2.2:80/", Reason::RawSyntax),
        ("https://127.1.1.1:80#\\@127.2.2.2:80/", Reason::RawSyntax),
        ("https://1.1.1.1 &@2.2.2.2# @3.3.3.3/", Reason::Userinfo),
        ("0://evil.com:80;http://google.com:80/", Reason::Parse),
        // schemes
        ("file:///etc/passwd", Reason::Scheme),
        ("dict://127.0.0.1:11211/", Reason::Scheme),
        ("sftp://example.com/", Reason::Scheme),
        ("tftp://example.com/x", Reason::Scheme),
        ("ldap://127.0.0.1/", Reason::Scheme),
        ("gopher://127.0.0.1:25/_HELO", Reason::Scheme),
        ("netdoc:///etc/passwd", Reason::Scheme),
        ("jar:https://example.com/a.jar!/x.png", Reason::Scheme),
    ];
    for &(url, reason) in other {
        expect_reason(url, reason);
    }
    // Encodings that WHATWG maps to an ordinary public name are that name: allowed, and the
    // canonical form (what gets forwarded) shows it.
    let mapped: &[(&str, &str)] = &[
        ("https://ⓔⓧⓐⓜⓟⓛⓔ.ⓒⓞⓜ/", "https://example.com/"),
        // Thai digits are not digits to WHATWG: an IDN, which no resolver reads as an address.
        (
            "https://๑๒๗.๐.๐.๑/",
            "https://xn--c5ccp.xn--b5c.xn--b5c.xn--c5c/",
        ),
        // Path encodings are not decoded; only the host matters here.
        ("https://example.com/%61dmin", "https://example.com/%61dmin"),
        (
            "https://example.com/%2561dmin",
            "https://example.com/%2561dmin",
        ),
        // An open redirector is a public name; each redirect hop is the fetcher's to re-check.
        (
            "https://307.r3dir.me/--to/?url=http://localhost",
            "https://307.r3dir.me/--to/?url=http://localhost",
        ),
    ];
    for &(url, canonical) in mapped {
        let v = check_media_url(url);
        assert!(v.allowed, "{url:?} -> {v:?}");
        assert_eq!(v.canonical.as_deref(), Some(canonical));
    }
}

// ---------------------------------------------------------------------------------------------
// Rules one by one.

#[test]
fn raw_gate() {
    let cases: &[(&str, &str)] = &[
        (
            " https://example.com/a.png",
            "leading or trailing whitespace",
        ),
        (
            "https://example.com/a.png ",
            "leading or trailing whitespace",
        ),
        (
            "https://example.com/a.png\n",
            "leading or trailing whitespace",
        ),
        (
            "\u{3000}https://example.com/",
            "leading or trailing whitespace",
        ),
        (
            "https://example.com/\u{a0}",
            "leading or trailing whitespace",
        ),
        ("https://exa\tmple.com/", "control character"),
        ("https://exa\nmple.com/", "control character"),
        ("https://example.com/a\u{0}.png", "control character"),
        ("https://example.com/a\u{7f}.png", "control character"),
        ("\u{1}https://example.com/", "control character"),
        ("https://example.com\\a.png", "backslash"),
        ("https://example.com/a.png?q=\\", "backslash"),
        ("https:example.com/a.png", SLASHES),
        ("https:/example.com/a.png", SLASHES),
        ("https:///example.com/a.png", SLASHES),
        ("https:////example.com/a.png", SLASHES),
    ];
    for &(url, detail) in cases {
        expect(url, Reason::RawSyntax, Some(detail));
    }
    // The defects are real: WHATWG would have accepted each (ASCII) one quietly.
    for &(url, _) in cases {
        if url.is_ascii() {
            assert!(Url::parse(url).is_ok(), "{url:?}");
        }
    }
    assert_eq!(check_media_url(" https://example.com/").canonical, None);
    // Internal spaces are fine: WHATWG percent-encodes them.
    expect("https://example.com/my image.png", Reason::Ok, None);
    expect("HTTPS://EXAMPLE.COM/a.png", Reason::Ok, None);
}

#[test]
fn parse_failures() {
    let cases: &[(&str, &str)] = &[
        ("", "relative URL without a base"),
        ("example.com/a.png", "relative URL without a base"),
        ("https://", "empty host"),
        ("https://exa mple.com/", "invalid international domain name"),
        ("https://256.1.1.1/", "invalid IPv4 address"),
        ("https://1.2.3.4.5/", "invalid IPv4 address"),
        ("https://foo.0x10/", "invalid IPv4 address"),
        ("https://[fe80::1%25eth0]/", "invalid IPv6 address"),
        ("https://example.com:65536/", "invalid port number"),
        (
            "https://xn--localhost/",
            "invalid international domain name",
        ),
    ];
    for &(url, detail) in cases {
        expect(url, Reason::Parse, Some(detail));
        assert_eq!(check_media_url(url).canonical, None);
    }
}

#[test]
fn scheme_must_be_https() {
    for url in [
        "http://example.com/a.png",
        "ftp://example.com/a.png",
        "ws://example.com/",
        "wss://example.com/",
        "data:image/png;base64,iVBORw0KGgo=",
        "javascript:alert(1)",
        "httpss://example.com/",
        "file://example.com/a.png",
    ] {
        expect(url, Reason::Scheme, None);
    }
    // Parsing succeeded, so the canonical form is reported even for a refusal.
    assert_eq!(
        check_media_url("HTTP://Example.com/a.png")
            .canonical
            .as_deref(),
        Some("http://example.com/a.png")
    );
}

#[test]
fn no_userinfo_not_even_empty() {
    for url in [
        "https://user@example.com/",
        "https://user:pw@example.com/",
        "https://:pw@example.com/",
        "https://user:@example.com/",
        "https://@example.com/",
        "https://:@example.com/",
        "https://@@example.com/",
        "https://a@b@example.com/",
        "https://8.8.8.8@127.0.0.1/",
    ] {
        expect(url, Reason::Userinfo, None);
    }
    // WHATWG drops an empty userinfo, so only the raw check sees it.
    assert_eq!(
        Url::parse("https://@example.com/")
            .map(String::from)
            .as_deref(),
        Ok("https://example.com/")
    );
    // `@` after the authority is no userinfo.
    for url in [
        "https://example.com/@user/a.png",
        "https://example.com/a.png?by=@user",
        "https://example.com/a.png#@x",
    ] {
        expect(url, Reason::Ok, None);
    }
}

#[test]
fn ports_are_allowed() {
    for (url, canonical) in [
        (
            "https://example.com:8443/a.png",
            "https://example.com:8443/a.png",
        ),
        ("https://example.com:443/a.png", "https://example.com/a.png"),
        ("https://example.com:/a.png", "https://example.com/a.png"),
        ("https://8.8.8.8:444/", "https://8.8.8.8:444/"),
        (
            "https://[2606:4700::1111]:8443/",
            "https://[2606:4700::1111]:8443/",
        ),
    ] {
        let v = check_media_url(url);
        assert!(v.allowed, "{url:?} -> {v:?}");
        assert_eq!(v.canonical.as_deref(), Some(canonical));
    }
}

#[test]
fn names() {
    for url in [
        "https://example.com/",
        "https://EXAMPLE.com./",
        "https://a.b.example.com/",
        "https://notlocalhost.com/",
        "https://example.local.com/",
        "https://localhost.com/",
        "https://xn--fa-hia.example.com/",
        "https://nip.io/",
        "https://sslip.io/",
        // suffixes match on a label boundary only
        "https://notlvh.me/",
        "https://mylocaltest.me/",
        "https://images.mylocalh.st/",
    ] {
        expect(url, Reason::Ok, None);
    }
    let special: &[(&str, &str)] = &[
        ("https://localhost/", "localhost"),
        ("https://localhost./", "localhost"),
        ("https://a.b.localhost/", "localhost"),
        ("https://local/", "local"),
        ("https://x.local/", "local"),
        ("https://docs.internal/", "internal"),
        ("https://metadata.google.internal/", "internal"),
        ("https://localhost.localdomain/", "localdomain"),
        ("https://router.home.arpa/", "home.arpa"),
        ("https://home.arpa/", "home.arpa"),
        ("https://printer.lan/", "lan"),
        ("https://nas.home/", "home"),
        ("https://dc.corp/", "corp"),
        ("https://wiki.intranet/", "intranet"),
        ("https://intranet/", "intranet"),
        ("https://a.test/", "test"),
        ("https://a.invalid/", "invalid"),
        ("https://www.example/", "example"),
        ("https://abc.onion/", "onion"),
        ("https://onion/", "onion"),
        ("https://x.alt/", "alt"),
        ("https://1.0.0.127.in-addr.arpa/", "arpa"),
        ("https://localtest.me/", "localtest.me"),
        ("https://sub.localtest.me/", "localtest.me"),
        ("https://lvh.me/", "lvh.me"),
        ("https://app.lvh.me/", "lvh.me"),
        ("https://vcap.me/", "vcap.me"),
        ("https://localh.st/", "localh.st"),
    ];
    for &(url, detail) in special {
        expect(url, Reason::SpecialName, Some(detail));
    }
    for url in ["https://printer/", "https://printer./", "https://com/"] {
        expect(url, Reason::SingleLabel, None);
    }
    for url in [
        "https://example..com/",
        "https://example.com../",
        "https://.example.com/",
        "https://./",
        "https://../",
        "https://%2e/",
        "https://127.0.0.1../",
    ] {
        expect(url, Reason::EmptyLabel, None);
    }
}

#[test]
fn wildcard_dns() {
    let cases: &[(&str, Reason, Option<&str>)] = &[
        ("https://10.0.0.1.nip.io/", Reason::IpNotGlobal, TEN),
        ("https://app.10.0.0.1.nip.io/", Reason::IpNotGlobal, TEN),
        ("https://app-10-0-0-1.nip.io/", Reason::IpNotGlobal, TEN),
        ("https://app-10.0.0.1.nip.io/", Reason::IpNotGlobal, TEN),
        ("https://10-0-0-1.sslip.io/", Reason::IpNotGlobal, TEN),
        ("https://www-10-0-0-1.sslip.io/", Reason::IpNotGlobal, TEN),
        ("https://0a000001.nip.io/", Reason::IpNotGlobal, TEN),
        ("https://app-0a000001.nip.io/", Reason::IpNotGlobal, TEN),
        ("https://10.0.0.1.nip.io./", Reason::IpNotGlobal, TEN),
        ("https://127.0.0.1.xip.io/", Reason::IpNotGlobal, LOOPBACK),
        ("https://127.0.0.1.xip.name/", Reason::IpNotGlobal, LOOPBACK),
        (
            "https://127-0-0-1.traefik.me/",
            Reason::IpNotGlobal,
            LOOPBACK,
        ),
        (
            "https://192.168.1.1.nip.direct/",
            Reason::IpNotGlobal,
            Some("192.168.0.0/16 Private-Use"),
        ),
        (
            "https://--1.sslip.io/",
            Reason::IpNotGlobal,
            Some("::1/128 Loopback Address"),
        ),
        (
            "https://app---1.sslip.io/",
            Reason::IpNotGlobal,
            Some("::1/128 Loopback Address"),
        ),
        (
            "https://fd00--1.sslip.io/",
            Reason::IpNotGlobal,
            Some("fc00::/7 Unique-Local"),
        ),
        (
            "https://--ffff-7f00-1.sslip.io/",
            Reason::IpNotGlobal,
            LOOPBACK,
        ),
        // several spellings in one name: any bad one refuses (sslip.io matches anywhere)
        (
            "https://8.8.8.8-127.0.0.1.nip.io/",
            Reason::IpNotGlobal,
            LOOPBACK,
        ),
        (
            "https://127.0.0.1.8.8.8.8.nip.io/",
            Reason::IpNotGlobal,
            LOOPBACK,
        ),
        (
            "https://8-8-8-8.127-0-0-1.sslip.io/",
            Reason::IpNotGlobal,
            LOOPBACK,
        ),
        (
            "https://2606-4700--1111.10-0-0-1.sslip.io/",
            Reason::IpNotGlobal,
            TEN,
        ),
        (
            "https://1-2-3-4-5-6-7-8.sslip.io/",
            Reason::IpNotGlobal,
            Some("::/3 Outside Global Unicast 2000::/3"),
        ),
        // public embedded addresses
        ("https://8.8.8.8.nip.io/", Reason::Ok, None),
        ("https://app.8.8.8.8.traefik.me/", Reason::Ok, None),
        ("https://8-8-8-8.sslip.io/", Reason::Ok, None),
        ("https://08080808.nip.io/", Reason::Ok, None),
        ("https://2606-4700--1111.sslip.io/", Reason::Ok, None),
        ("https://app-2606-4700--1111.sslip.io/", Reason::Ok, None),
        (
            "https://2607-f8b0-400a-800--200e.sslip.io/",
            Reason::Ok,
            None,
        ),
        // nothing recognizable, or ambiguous: fail closed
        (
            "https://my-app.nip.io/",
            Reason::WildcardDns,
            Some("nip.io"),
        ),
        (
            "https://www.sslip.io/",
            Reason::WildcardDns,
            Some("sslip.io"),
        ),
        (
            "https://010.0.0.1.nip.io/",
            Reason::WildcardDns,
            Some("nip.io"),
        ),
        (
            "https://10.0.0.01.nip.io/",
            Reason::WildcardDns,
            Some("nip.io"),
        ),
        // 010 is 10 to some services and 8 to inet_aton; a public candidate elsewhere is no help
        (
            "https://8.8.8.8.x.010.0.0.1.nip.io/",
            Reason::WildcardDns,
            Some("nip.io"),
        ),
        // services whose answers the name does not tell
        (
            "https://make-1.2.3.4-rebind-169.254-169.254-rr.1u.ms/",
            Reason::WildcardDns,
            Some("1u.ms"),
        ),
        (
            "https://08080808.08080404.rbndr.us/",
            Reason::WildcardDns,
            Some("rbndr.us"),
        ),
        (
            "https://spoofed.abc123.oastify.com/",
            Reason::WildcardDns,
            Some("oastify.com"),
        ),
    ];
    for &(url, reason, detail) in cases {
        expect(url, reason, detail);
    }
}

// ---------------------------------------------------------------------------------------------
// Opt-in resolution (U7), with a stub: no real DNS.

/// What the stub resolver answers for a host.
type Answer = fn(&str) -> Result<Vec<IpAddr>, String>;

struct Stub {
    answer: Answer,
    asked: Cell<usize>,
}

impl Resolver for Stub {
    fn resolve(&self, host: &str) -> Result<Vec<IpAddr>, String> {
        self.asked.set(self.asked.get() + 1);
        (self.answer)(host)
    }
}

fn stub(answer: Answer) -> Stub {
    Stub {
        answer,
        asked: Cell::new(0),
    }
}

fn ips(list: &[&str]) -> Vec<IpAddr> {
    list.iter()
        .map(|s| s.parse().expect("test address"))
        .collect()
}

#[test]
fn resolution_is_opt_in() {
    assert!(Options::default().resolver.is_none());
    let r = stub(|_| Ok(ips(&["10.0.0.1"])));
    let with = Options { resolver: Some(&r) };
    assert!(check_media_url("https://example.com/a.png").allowed);
    assert_eq!(r.asked.get(), 0);
    let v = check_media_url_with("https://example.com/a.png", &with);
    assert_eq!((v.reason, v.detail), (Reason::ResolvedNotGlobal, TEN));
    assert_eq!(r.asked.get(), 1);
}

#[test]
fn every_resolved_address_must_pass() {
    let cases: &[(Answer, Reason, Option<&str>)] = &[
        (
            |_| {
                Ok(ips(&[
                    "93.184.215.14",
                    "2606:2800:21f:cb07:6820:80da:af6b:8b2c",
                ]))
            },
            Reason::Ok,
            None,
        ),
        (
            |_| Ok(ips(&["93.184.215.14", "10.0.0.1"])),
            Reason::ResolvedNotGlobal,
            TEN,
        ),
        (
            |_| Ok(ips(&["::ffff:127.0.0.1"])),
            Reason::ResolvedNotGlobal,
            LOOPBACK,
        ),
        (
            |_| Ok(ips(&["8.8.8.8", "192.0.0.9"])),
            Reason::ResolvedNotGlobal,
            Some("192.0.0.9/32 Port Control Protocol Anycast"),
        ),
        (|_| Ok(Vec::new()), Reason::Resolve, Some("no addresses")),
        (
            |_| Err("SERVFAIL".to_owned()),
            Reason::Resolve,
            Some("resolver error"),
        ),
    ];
    for &(answer, reason, detail) in cases {
        let r = stub(answer);
        let v = check_media_url_with("https://example.com/a.png", &Options { resolver: Some(&r) });
        assert_eq!(
            (v.reason, v.detail, v.allowed),
            (reason, detail, reason == Reason::Ok)
        );
        assert_eq!(v.canonical.as_deref(), Some("https://example.com/a.png"));
    }
}

#[test]
fn resolver_sees_the_whatwg_host_and_only_names_that_passed() {
    let r = stub(|host| match host {
        "example.com." | "xn--fa-hia.example.com" | "8.8.8.8.nip.io" => Ok(ips(&["8.8.8.8"])),
        _ => Err(format!("unexpected {host}")),
    });
    let with = Options { resolver: Some(&r) };
    for url in [
        "https://example.com./",
        "https://faß.example.com/",
        "https://8.8.8.8.nip.io/",
    ] {
        assert!(check_media_url_with(url, &with).allowed, "{url}");
    }
    assert_eq!(r.asked.get(), 3);
    for url in [
        "https://8.8.8.8/",
        "https://[2606:4700::1111]/",
        "https://localhost/",
        "https://10.0.0.1.nip.io/",
    ] {
        check_media_url_with(url, &with);
    }
    assert_eq!(
        r.asked.get(),
        3,
        "literals need no resolution; refused names are not resolved"
    );
}

// ---------------------------------------------------------------------------------------------
// Verdict shape (U8).

/// One input per reason; the exhaustive match makes a new reason fail to compile until it has one.
fn witness(reason: Reason) -> (&'static str, Option<Answer>) {
    match reason {
        Reason::Ok => ("https://example.com/a.png", None),
        Reason::RawSyntax => ("https://example.com\\a.png", None),
        Reason::Parse => ("https://256.0.0.1/", None),
        Reason::Scheme => ("http://example.com/a.png", None),
        Reason::Userinfo => ("https://u:p@example.com/", None),
        Reason::IpNotGlobal => ("https://192.168.0.1/", None),
        Reason::SpecialName => ("https://localhost/", None),
        Reason::SingleLabel => ("https://printer/", None),
        Reason::EmptyLabel => ("https://example..com/", None),
        Reason::WildcardDns => ("https://app.nip.io/", None),
        Reason::Resolve => ("https://example.com/", Some(|_| Err("NXDOMAIN".to_owned()))),
        Reason::ResolvedNotGlobal => ("https://example.com/", Some(|_| Ok(ips(&["127.0.0.1"])))),
    }
}

#[test]
fn every_reason_is_produced() {
    for reason in Reason::ALL {
        let (url, answer) = witness(reason);
        let r = answer.map(stub);
        let options = Options {
            resolver: r.as_ref().map(|r| r as &dyn Resolver),
        };
        assert_eq!(check_media_url_with(url, &options).reason, reason, "{url}");
    }
}

#[test]
fn reason_codes_are_stable_kebab_case() {
    let codes: Vec<_> = Reason::ALL.iter().map(Reason::as_str).collect();
    assert_eq!(
        codes,
        [
            "ok",
            "raw-syntax",
            "parse",
            "scheme",
            "userinfo",
            "ip-not-global",
            "special-name",
            "single-label",
            "empty-label",
            "wildcard-dns",
            "resolve",
            "resolved-not-global",
        ]
    );
    for reason in Reason::ALL {
        assert_eq!(
            serde_json::to_value(reason).ok(),
            Some(serde_json::Value::from(reason.as_str()))
        );
        assert_eq!(reason.to_string(), reason.as_str());
    }
}

#[test]
fn verdict_serializes_with_code_and_detail() {
    let v = check_media_url("https://192.168.0.1/a.png");
    assert_eq!(
        serde_json::to_value(&v).ok(),
        Some(serde_json::json!({
            "allowed": false,
            "reason": "ip-not-global",
            "detail": "192.168.0.0/16 Private-Use",
            "canonical": "https://192.168.0.1/a.png",
        }))
    );
}

#[test]
fn canonical_host_strips_one_trailing_dot_only() {
    let host = |s: &str| {
        Url::parse(s)
            .ok()
            .and_then(|u| canonical_host(&u).map(|h| h.to_owned()))
    };
    assert_eq!(
        host("https://Example.COM./"),
        Some(Host::Domain("example.com".to_owned()))
    );
    assert_eq!(
        host("https://example.com../"),
        Some(Host::Domain("example.com.".to_owned()))
    );
    assert_eq!(
        host("https://0x7f.1/"),
        Some(Host::Ipv4(Ipv4Addr::LOCALHOST))
    );
    assert_eq!(
        host("https://[::1]/"),
        Some(Host::Ipv6(Ipv6Addr::LOCALHOST))
    );
    assert_eq!(host("mailto:a@example.com"), None);
}

// ---------------------------------------------------------------------------------------------
// Properties.

/// No panic; `allowed` agrees with the reason; an accepted URL's canonical form is accepted again
/// and is a fixed point.
fn check_invariants(input: &str) -> Result<(), TestCaseError> {
    let v = check_media_url(input);
    prop_assert_eq!(v.allowed, v.reason == Reason::Ok);
    if v.allowed {
        let canonical = v.canonical.clone().unwrap_or_default();
        let again = check_media_url(&canonical);
        prop_assert!(
            again.allowed,
            "{:?} -> {:?}, re-checked {:?}",
            input,
            v,
            again
        );
        prop_assert_eq!(again.canonical.as_deref(), Some(canonical.as_str()));
    }
    Ok(())
}

fn ipv4_text() -> impl Strategy<Value = String> {
    any::<u32>().prop_map(|b| Ipv4Addr::from(b).to_string())
}

fn url_like() -> impl Strategy<Value = String> {
    let scheme = prop::sample::select(vec![
        "https://",
        "HTTPS://",
        "https:",
        "https:/",
        "https:///",
        "http://",
        "ftp://",
        " https://",
    ]);
    let host = prop_oneof![
        "[a-z0-9.-]{0,24}",
        "[a-zA-Z0-9.%@:_~\\[\\]-]{0,24}",
        ipv4_text(),
        any::<u128>().prop_map(|b| format!("[{}]", Ipv6Addr::from(b))),
        (
            ipv4_text(),
            prop::sample::select(vec!["nip.io", "sslip.io", "traefik.me"])
        )
            .prop_map(|(ip, svc)| format!("x-{}.{svc}", ip.replace('.', "-"))),
        "[0-9a-f-]{1,40}\\.sslip\\.io",
        "\\PC{0,12}",
    ];
    let port = prop::sample::select(vec!["", ":", ":443", ":8443", ":0", ":99999"]);
    let tail = "(/[ -~]{0,16})?";
    (scheme, host, port, tail).prop_map(|(s, h, p, t)| format!("{s}{h}{p}{t}"))
}

fn teredo(server: u32, client: u32) -> Ipv6Addr {
    Ipv6Addr::from((0x2001_0000u128 << 96) | (u128::from(server) << 64) | u128::from(!client))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_strings(input in any::<String>()) {
        check_invariants(&input)?;
    }

    #[test]
    fn url_like_strings(input in url_like()) {
        check_invariants(&input)?;
    }

    /// U1: every spelling of an IPv4 address gets the verdict of the address.
    #[test]
    fn ipv4_spellings_agree(b in any::<u32>()) {
        let ip = Ipv4Addr::from(b);
        let expected = ip_verdict(IpAddr::V4(ip)).err().map(|r| r.label);
        for url in [format!("https://{ip}/"), format!("https://{b}/"), format!("https://{b:#x}/"), format!("https://0{b:o}/")] {
            let v = check_media_url(&url);
            prop_assert_eq!(v.detail, expected, "{}", url);
            prop_assert_eq!(v.canonical, Some(format!("https://{ip}/")));
        }
    }

    /// U5: each embedding form gets its IPv4 address's verdict.
    #[test]
    fn embedded_forms_agree_with_ipv4(b in any::<u32>()) {
        let v4 = IpAddr::V4(Ipv4Addr::from(b));
        let ok = ip_verdict(v4).is_ok();
        let forms = [
            Ipv6Addr::from(u128::from(b) | 0xffff_0000_0000),
            Ipv6Addr::from(u128::from(b)),
            Ipv6Addr::from((0x64_ff9bu128 << 96) | u128::from(b)),
            Ipv6Addr::from((0x2002u128 << 112) | (u128::from(b) << 80) | 1),
            teredo(u32::from(Ipv4Addr::new(65, 54, 227, 120)), b),
        ];
        for v6 in forms {
            prop_assert_eq!(ip_verdict(IpAddr::V6(v6)).is_ok(), ok, "{} for {}", v6, v4);
        }
        prop_assert!(ip_verdict(IpAddr::V6(teredo(b, 0x0808_0808))).is_ok() == ok);
    }

    /// U7: wildcard-DNS names spelling one IPv4 address get that address's verdict.
    #[test]
    fn wildcard_names_agree_with_ipv4(b in any::<u32>()) {
        let ip = Ipv4Addr::from(b);
        let expected = ip_verdict(IpAddr::V4(ip)).err().map(|r| r.label);
        let dashed = ip.to_string().replace('.', "-");
        for url in [
            format!("https://{ip}.nip.io/"),
            format!("https://app.{ip}.nip.io/"),
            format!("https://{dashed}.sslip.io/"),
            format!("https://app-{dashed}.traefik.me/"),
            format!("https://{b:08x}.nip.io/"),
        ] {
            prop_assert_eq!(check_media_url(&url).detail, expected, "{}", url);
        }
    }

    /// U7: a dashed IPv6 sslip.io name is never accepted when its address is not.
    #[test]
    fn wildcard_names_never_beat_their_ipv6(r in any::<u128>(), global in any::<bool>()) {
        // Half the cases inside 2000::/3, where most addresses are public.
        let b = if global { (1u128 << 125) | (r >> 3) } else { r };
        let ip = Ipv6Addr::from(b);
        let text = ip.to_string();
        prop_assume!(!text.contains('.'));
        let v = check_media_url(&format!("https://{}.sslip.io/", text.replace(':', "-")));
        if ip_verdict(IpAddr::V6(ip)).is_err() {
            prop_assert!(!v.allowed, "{} -> {:?}", ip, v);
        }
    }
}
