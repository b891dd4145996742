//! Special-purpose IP address blocks (rules U4, U5) as data.
//!
//! Hand-written from the IANA IPv4/IPv6 Special-Purpose Address Registries (docs/research/anchors.md §4.1/§4.2):
//! these tables are the product, and every row is unit-tested.
//!
//! The policy refuses an address in ANY row, whatever its Globally Reachable flag: the anycast,
//! AS112, AMT and ORCHIDv2 rows are public but a media fetcher never needs them (docs/research/anchors.md §4.6).
//! The one exception is a row that embeds an IPv4 address ([`SpecialRange::embeds`]): U5 judges
//! that IPv4 address instead. When rows nest, the longest prefix decides.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// One special-purpose block.
#[derive(Debug, PartialEq, Eq)]
pub struct SpecialRange {
    pub prefix: IpAddr,
    pub len: u8,
    /// The registry's name for the block (quotes dropped).
    pub name: &'static str,
    pub rfc: &'static str,
    /// The registry's "Globally Reachable" column; `None` where it says N/A or is blank
    /// (deprecated rows). Kept as data only: the policy refuses the block either way.
    pub globally_reachable: Option<bool>,
    /// False for blocks docs/research/anchors.md §4.1/§4.2 says to refuse that are not rows of the
    /// special-purpose registries (multicast, site-local, IPv4-compatible, outside 2000::/3).
    pub in_registry: bool,
    /// Where an IPv6 block carries an IPv4 address that U5 judges instead of the block.
    pub embeds: Option<Embedding>,
    /// `"<prefix>/<len> <name>"`, the text reports show after the reason code.
    pub label: &'static str,
}

/// How an IPv6 block embeds an IPv4 address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Embedding {
    /// In the low 32 bits (IPv4-mapped, IPv4-compatible, NAT64 well-known prefix).
    Low32,
    /// In bits 16..48, counting from the most significant bit (6to4, RFC 3056).
    SixToFour,
    /// Server in bits 32..64, client XOR 0xffffffff in bits 96..128 (Teredo, RFC 4380).
    Teredo,
}

impl SpecialRange {
    /// Whether `ip` lies in this block (an IPv4 address never lies in an IPv6 block).
    pub fn contains(&self, ip: IpAddr) -> bool {
        match (self.prefix, ip) {
            (IpAddr::V4(p), IpAddr::V4(a)) => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.len)).unwrap_or(0);
                (a.to_bits() ^ p.to_bits()) & mask == 0
            }
            (IpAddr::V6(p), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.len))
                    .unwrap_or(0);
                (a.to_bits() ^ p.to_bits()) & mask == 0
            }
            _ => false,
        }
    }
}

impl fmt::Display for SpecialRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label)
    }
}

/// The most specific block holding `ip`, if any.
pub(super) fn lookup(ip: IpAddr) -> Option<&'static SpecialRange> {
    let table = if ip.is_ipv4() { IPV4 } else { IPV6 };
    table
        .iter()
        .filter(|r| r.contains(ip))
        .max_by_key(|r| r.len)
}

macro_rules! v4 {
    ($a:literal, $b:literal, $c:literal, $d:literal / $len:literal, $name:literal, $rfc:literal, $global:expr, $reg:expr) => {
        SpecialRange {
            prefix: IpAddr::V4(Ipv4Addr::new($a, $b, $c, $d)),
            len: $len,
            name: $name,
            rfc: $rfc,
            globally_reachable: $global,
            in_registry: $reg,
            embeds: None,
            label: concat!($a, ".", $b, ".", $c, ".", $d, "/", $len, " ", $name),
        }
    };
}

// `$text` spells the same address as `$segs` (as the registry writes it); a unit test checks it.
macro_rules! v6 {
    ($text:literal = $segs:expr, $len:literal, $name:literal, $rfc:literal, $global:expr, $reg:expr, $embeds:expr) => {{
        let s: [u16; 8] = $segs;
        SpecialRange {
            prefix: IpAddr::V6(Ipv6Addr::new(
                s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7],
            )),
            len: $len,
            name: $name,
            rfc: $rfc,
            globally_reachable: $global,
            in_registry: $reg,
            embeds: $embeds,
            label: concat!($text, "/", $len, " ", $name),
        }
    }};
}

const T: Option<bool> = Some(true);
const F: Option<bool> = Some(false);
/// "N/A" or blank in the registry.
const NA: Option<bool> = None;
const IANA: bool = true;
const EXTRA: bool = false;

/// IPv4 Special-Purpose Address Registry (registry "Last Updated" 2025-10-09), then multicast.
/// The 192.88.99.2/32 flags are recalled, not read from a copy (docs/research/anchors.md ⚠).
#[rustfmt::skip]
pub static IPV4: &[SpecialRange] = &[
    v4!(0, 0, 0, 0 / 8, "This network", "RFC 791 §3.2", F, IANA),
    v4!(0, 0, 0, 0 / 32, "This host on this network", "RFC 1122 §3.2.1.3", F, IANA),
    v4!(10, 0, 0, 0 / 8, "Private-Use", "RFC 1918", F, IANA),
    v4!(100, 64, 0, 0 / 10, "Shared Address Space", "RFC 6598", F, IANA),
    v4!(127, 0, 0, 0 / 8, "Loopback", "RFC 1122 §3.2.1.3", F, IANA),
    v4!(169, 254, 0, 0 / 16, "Link Local", "RFC 3927", F, IANA),
    v4!(172, 16, 0, 0 / 12, "Private-Use", "RFC 1918", F, IANA),
    v4!(192, 0, 0, 0 / 24, "IETF Protocol Assignments", "RFC 6890 §2.1", F, IANA),
    v4!(192, 0, 0, 0 / 29, "IPv4 Service Continuity Prefix", "RFC 7335", F, IANA),
    v4!(192, 0, 0, 8 / 32, "IPv4 dummy address", "RFC 7600", F, IANA),
    v4!(192, 0, 0, 9 / 32, "Port Control Protocol Anycast", "RFC 7723", T, IANA),
    v4!(192, 0, 0, 10 / 32, "Traversal Using Relays around NAT Anycast", "RFC 8155", T, IANA),
    // One registry row with two /32 blocks.
    v4!(192, 0, 0, 170 / 32, "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2", F, IANA),
    v4!(192, 0, 0, 171 / 32, "NAT64/DNS64 Discovery", "RFC 8880, RFC 7050 §2.2", F, IANA),
    v4!(192, 0, 2, 0 / 24, "Documentation (TEST-NET-1)", "RFC 5737", F, IANA),
    v4!(192, 31, 196, 0 / 24, "AS112-v4", "RFC 7535", T, IANA),
    v4!(192, 52, 193, 0 / 24, "AMT", "RFC 7450", T, IANA),
    v4!(192, 88, 99, 0 / 24, "Deprecated (6to4 Relay Anycast)", "RFC 7526", NA, IANA),
    v4!(192, 88, 99, 2 / 32, "6a44-relay anycast address", "RFC 6751", F, IANA),
    v4!(192, 168, 0, 0 / 16, "Private-Use", "RFC 1918", F, IANA),
    v4!(192, 175, 48, 0 / 24, "Direct Delegation AS112 Service", "RFC 7534", T, IANA),
    v4!(198, 18, 0, 0 / 15, "Benchmarking", "RFC 2544", F, IANA),
    v4!(198, 51, 100, 0 / 24, "Documentation (TEST-NET-2)", "RFC 5737", F, IANA),
    v4!(203, 0, 113, 0 / 24, "Documentation (TEST-NET-3)", "RFC 5737", F, IANA),
    v4!(240, 0, 0, 0 / 4, "Reserved", "RFC 1112 §4", F, IANA),
    v4!(255, 255, 255, 255 / 32, "Limited Broadcast", "RFC 8190, RFC 919 §7", F, IANA),
    // Not in the special-purpose registry (IANA multicast registry).
    v4!(224, 0, 0, 0 / 4, "Multicast", "RFC 5771", F, EXTRA),
];

/// IPv6 Special-Purpose Address Registry, then the blocks docs/research/anchors.md §4.2 adds.
/// Flags of 100:0:0:1::/64, 2001:1::3/128 and 2001:30::/28 are partly recalled (docs/research/anchors.md ⚠).
#[rustfmt::skip]
pub static IPV6: &[SpecialRange] = &[
    v6!("::1" = [0, 0, 0, 0, 0, 0, 0, 1], 128, "Loopback Address", "RFC 4291", F, IANA, None),
    v6!("::" = [0; 8], 128, "Unspecified Address", "RFC 4291", F, IANA, None),
    v6!("::ffff:0:0" = [0, 0, 0, 0, 0, 0xffff, 0, 0], 96, "IPv4-mapped Address", "RFC 4291", F, IANA, Some(Embedding::Low32)),
    v6!("64:ff9b::" = [0x64, 0xff9b, 0, 0, 0, 0, 0, 0], 96, "IPv4-IPv6 Translat.", "RFC 6052", T, IANA, Some(Embedding::Low32)),
    // Local-use NAT64 prefix: not globally reachable, so refused whatever it embeds.
    v6!("64:ff9b:1::" = [0x64, 0xff9b, 1, 0, 0, 0, 0, 0], 48, "IPv4-IPv6 Translat.", "RFC 8215", F, IANA, None),
    v6!("100::" = [0x100, 0, 0, 0, 0, 0, 0, 0], 64, "Discard-Only Address Block", "RFC 6666", F, IANA, None),
    v6!("100:0:0:1::" = [0x100, 0, 0, 1, 0, 0, 0, 0], 64, "Dummy IPv6 Prefix", "RFC 9780", F, IANA, None),
    v6!("2001::" = [0x2001, 0, 0, 0, 0, 0, 0, 0], 23, "IETF Protocol Assignments", "RFC 2928", F, IANA, None),
    v6!("2001::" = [0x2001, 0, 0, 0, 0, 0, 0, 0], 32, "TEREDO", "RFC 4380, RFC 8190", NA, IANA, Some(Embedding::Teredo)),
    v6!("2001:1::1" = [0x2001, 1, 0, 0, 0, 0, 0, 1], 128, "Port Control Protocol Anycast", "RFC 7723", T, IANA, None),
    v6!("2001:1::2" = [0x2001, 1, 0, 0, 0, 0, 0, 2], 128, "Traversal Using Relays around NAT Anycast", "RFC 8155", T, IANA, None),
    v6!("2001:1::3" = [0x2001, 1, 0, 0, 0, 0, 0, 3], 128, "DNS-SD Service Registration Protocol Anycast", "RFC 9665", T, IANA, None),
    v6!("2001:2::" = [0x2001, 2, 0, 0, 0, 0, 0, 0], 48, "Benchmarking", "RFC 5180", F, IANA, None),
    v6!("2001:3::" = [0x2001, 3, 0, 0, 0, 0, 0, 0], 32, "AMT", "RFC 7450", T, IANA, None),
    v6!("2001:4:112::" = [0x2001, 4, 0x112, 0, 0, 0, 0, 0], 48, "AS112-v6", "RFC 7535", T, IANA, None),
    v6!("2001:10::" = [0x2001, 0x10, 0, 0, 0, 0, 0, 0], 28, "Deprecated (previously ORCHID)", "RFC 4843", NA, IANA, None),
    v6!("2001:20::" = [0x2001, 0x20, 0, 0, 0, 0, 0, 0], 28, "ORCHIDv2", "RFC 7343", T, IANA, None),
    v6!("2001:30::" = [0x2001, 0x30, 0, 0, 0, 0, 0, 0], 28, "Drone Remote ID Protocol Entity Tags (DETs) Prefix", "RFC 9374", T, IANA, None),
    v6!("2001:db8::" = [0x2001, 0xdb8, 0, 0, 0, 0, 0, 0], 32, "Documentation", "RFC 3849", F, IANA, None),
    v6!("2002::" = [0x2002, 0, 0, 0, 0, 0, 0, 0], 16, "6to4", "RFC 3056", NA, IANA, Some(Embedding::SixToFour)),
    v6!("2620:4f:8000::" = [0x2620, 0x4f, 0x8000, 0, 0, 0, 0, 0], 48, "Direct Delegation AS112 Service", "RFC 7534", T, IANA, None),
    v6!("3fff::" = [0x3fff, 0, 0, 0, 0, 0, 0, 0], 20, "Documentation", "RFC 9637", F, IANA, None),
    v6!("5f00::" = [0x5f00, 0, 0, 0, 0, 0, 0, 0], 16, "Segment Routing (SRv6) SIDs", "RFC 9602", F, IANA, None),
    v6!("fc00::" = [0xfc00, 0, 0, 0, 0, 0, 0, 0], 7, "Unique-Local", "RFC 4193, RFC 8190", F, IANA, None),
    v6!("fe80::" = [0xfe80, 0, 0, 0, 0, 0, 0, 0], 10, "Link-Local Unicast", "RFC 4291", F, IANA, None),
    // Not rows of the special-purpose registry.
    v6!("::" = [0; 8], 96, "IPv4-compatible Address (deprecated)", "RFC 4291 §2.5.5.1", F, EXTRA, Some(Embedding::Low32)),
    v6!("fec0::" = [0xfec0, 0, 0, 0, 0, 0, 0, 0], 10, "Site-Local (deprecated)", "RFC 3879", F, EXTRA, None),
    v6!("ff00::" = [0xff00, 0, 0, 0, 0, 0, 0, 0], 8, "Multicast", "RFC 4291 §2.7", F, EXTRA, None),
    // Everything outside 2000::/3, IANA's global unicast allocation, as three prefixes.
    v6!("::" = [0; 8], 3, "Outside Global Unicast 2000::/3", "RFC 4291 §2.4", F, EXTRA, None),
    v6!("4000::" = [0x4000, 0, 0, 0, 0, 0, 0, 0], 2, "Outside Global Unicast 2000::/3", "RFC 4291 §2.4", F, EXTRA, None),
    v6!("8000::" = [0x8000, 0, 0, 0, 0, 0, 0, 0], 1, "Outside Global Unicast 2000::/3", "RFC 4291 §2.4", F, EXTRA, None),
];
