//! Classification of IP addresses that must not be reached by default: every
//! range of the IANA IPv4 and IPv6 special-purpose address registries that
//! is not globally reachable, multicast, IPv6 outside global unicast, and
//! IPv4 addresses embedded in IPv6 forms (mapped, translated, compatible,
//! 6to4, Teredo, NAT64), which are judged by the address they embed.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not public: the special-purpose range it falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpecialRange {
    /// The range in CIDR notation, as the registry writes it.
    pub range: &'static str,
    /// The registry's name for it.
    pub name: &'static str,
    /// The IPv4 address an IPv6 form embeds, when that is what was refused.
    pub embedded: Option<Ipv4Addr>,
}

impl std::fmt::Display for SpecialRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.name, self.range)?;
        if let Some(v4) = self.embedded {
            write!(f, " embedding {v4}")?;
        }
        Ok(())
    }
}

/// Says whether `addr` is loopback, private, link-local, shared, multicast,
/// reserved, unspecified, documentation, or embeds such an IPv4 address —
/// anything that is not the public internet.
pub fn is_private(addr: IpAddr) -> bool {
    classify(addr).is_some()
}

/// Returns the special-purpose range `addr` falls in, or `None` when it is
/// an ordinary public address.
pub fn classify(addr: IpAddr) -> Option<SpecialRange> {
    match addr {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

const fn r(range: &'static str, name: &'static str) -> SpecialRange {
    SpecialRange {
        range,
        name,
        embedded: None,
    }
}

/// IPv4 ranges refused: the special-purpose registry entries that are not
/// globally reachable (plus the deprecated 6to4 relay anycast and
/// multicast). Entries the registry marks globally reachable (PCP and TURN
/// anycast 192.0.0.9/10, AS112 192.31.196.0/24 and 192.175.48.0/24, AMT
/// 192.52.193.0/24) are ordinary public services and pass — except the two
/// anycast hosts inside 192.0.0.0/24, which is refused whole.
const V4: &[(u32, u8, SpecialRange)] = &[
    (0x0000_0000, 8, r("0.0.0.0/8", "this network")),
    (0x0a00_0000, 8, r("10.0.0.0/8", "private-use")),
    (0x6440_0000, 10, r("100.64.0.0/10", "shared address space")),
    (0x7f00_0000, 8, r("127.0.0.0/8", "loopback")),
    (0xa9fe_0000, 16, r("169.254.0.0/16", "link-local")),
    (0xac10_0000, 12, r("172.16.0.0/12", "private-use")),
    (0xc000_0000, 24, r("192.0.0.0/24", "IETF protocol assignments")),
    (0xc000_0200, 24, r("192.0.2.0/24", "documentation (TEST-NET-1)")),
    (
        0xc058_6300,
        24,
        r("192.88.99.0/24", "deprecated 6to4 relay anycast"),
    ),
    (0xc0a8_0000, 16, r("192.168.0.0/16", "private-use")),
    (0xc612_0000, 15, r("198.18.0.0/15", "benchmarking")),
    (
        0xc633_6400,
        24,
        r("198.51.100.0/24", "documentation (TEST-NET-2)"),
    ),
    (0xcb00_7100, 24, r("203.0.113.0/24", "documentation (TEST-NET-3)")),
    (0xe000_0000, 4, r("224.0.0.0/4", "multicast")),
    (0xf000_0000, 4, r("240.0.0.0/4", "reserved")),
];

fn in_v4(addr: Ipv4Addr, base: u32, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    u32::from(addr) & mask == base
}

fn classify_v4(addr: Ipv4Addr) -> Option<SpecialRange> {
    // 255.255.255.255 (limited broadcast) lies inside 240.0.0.0/4.
    V4.iter()
        .find(|(base, len, _)| in_v4(addr, *base, *len))
        .map(|(_, _, range)| *range)
}

/// IPv6 ranges refused outright, checked before the embedded forms.
const V6: &[(u128, u8, SpecialRange)] = &[
    (0, 128, r("::/128", "unspecified")),
    (1, 128, r("::1/128", "loopback")),
    (
        0x0064_ff9b_0001 << 80,
        48,
        r("64:ff9b:1::/48", "local-use IPv4/IPv6 translation"),
    ),
    (0x0100 << 112, 64, r("100::/64", "discard-only")),
    (
        0x0100_0000_0000_0001 << 64,
        64,
        r("100:0:0:1::/64", "dummy IPv6 prefix"),
    ),
    (0x2001_0002 << 96, 48, r("2001:2::/48", "benchmarking")),
    (0x2001_0db8 << 96, 32, r("2001:db8::/32", "documentation")),
    (0x3fff << 112, 20, r("3fff::/20", "documentation")),
    (0x5f00 << 112, 16, r("5f00::/16", "segment routing (SRv6) SIDs")),
    (0xfc00 << 112, 7, r("fc00::/7", "unique-local")),
    (0xfe80 << 112, 10, r("fe80::/10", "link-local unicast")),
    (0xfec0 << 112, 10, r("fec0::/10", "site-local (deprecated)")),
    (0xff00 << 112, 8, r("ff00::/8", "multicast")),
];

/// Globally reachable entries inside 2001::/23 (IETF protocol assignments),
/// which is refused as a whole otherwise.
const V6_2001_23_PUBLIC: &[(u128, u8)] = &[
    (0x2001_0001 << 96 | 1, 128), // PCP anycast
    (0x2001_0001 << 96 | 2, 128), // TURN anycast
    (0x2001_0001 << 96 | 3, 128), // DNS-SD service registration anycast
    (0x2001_0003 << 96, 32),      // AMT
    (0x2001_0004_0112 << 80, 48), // AS112-v6
    (0x2001_0020 << 96, 28),      // ORCHIDv2
    (0x2001_0030 << 96, 28),      // drone remote ID (DET)
];

fn in_v6(addr: Ipv6Addr, base: u128, len: u8) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
    u128::from(addr) & mask == base
}

fn embedded(range: &'static str, name: &'static str, v4: Ipv4Addr) -> Option<SpecialRange> {
    classify_v4(v4).map(|_| SpecialRange {
        range,
        name,
        embedded: Some(v4),
    })
}

fn classify_v6(addr: Ipv6Addr) -> Option<SpecialRange> {
    if let Some((_, _, range)) = V6.iter().find(|(base, len, _)| in_v6(addr, *base, *len)) {
        return Some(*range);
    }
    let bits = u128::from(addr);
    let low32 = Ipv4Addr::from(bits as u32);
    // IPv4-mapped ::ffff:0:0/96.
    if in_v6(addr, 0xffff << 32, 96) {
        return embedded("::ffff:0:0/96", "IPv4-mapped", low32);
    }
    // IPv4-translated ::ffff:0:0:0/96 (SIIT): never globally reachable.
    if in_v6(addr, 0xffff << 48, 96) {
        return Some(SpecialRange {
            range: "::ffff:0:0:0/96",
            name: "IPv4-translated",
            embedded: Some(low32),
        });
    }
    // IPv4-compatible ::/96 (deprecated): never globally reachable.
    if in_v6(addr, 0, 96) {
        return Some(SpecialRange {
            range: "::/96",
            name: "IPv4-compatible (deprecated)",
            embedded: Some(low32),
        });
    }
    // NAT64 well-known prefix 64:ff9b::/96: the translator reaches the
    // embedded address, so that address decides.
    if in_v6(addr, 0x0064_ff9b << 96, 96) {
        return embedded("64:ff9b::/96", "NAT64 well-known prefix", low32);
    }
    // 6to4 2002::/16: bits 16..48 carry the site's IPv4 address.
    if in_v6(addr, 0x2002 << 112, 16) {
        return embedded("2002::/16", "6to4", Ipv4Addr::from((bits >> 80) as u32));
    }
    // Teredo 2001::/32: server IPv4 in bits 32..64, client IPv4 inverted in
    // the last 32 bits; either one being special refuses the address.
    if in_v6(addr, 0x2001 << 112, 32) {
        let client = Ipv4Addr::from(!(bits as u32));
        let server = Ipv4Addr::from((bits >> 64) as u32);
        return embedded("2001::/32", "Teredo", client).or_else(|| embedded("2001::/32", "Teredo", server));
    }
    if in_v6(addr, 0x2001 << 112, 23) && !V6_2001_23_PUBLIC.iter().any(|(b, l)| in_v6(addr, *b, *l)) {
        return Some(r("2001::/23", "IETF protocol assignments"));
    }
    // Everything left outside 2000::/3 is unassigned or reserved by IETF.
    if !in_v6(addr, 0x2000 << 112, 3) {
        return Some(r("outside 2000::/3", "not global unicast"));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One row per range: an address inside (refused, with the range named)
    /// and, where meaningful, a neighbour just outside (public).
    #[test]
    fn special_purpose_table() {
        let rows: &[(&str, &str, Option<&str>)] = &[
            // IPv4 special-purpose registry.
            ("0.0.0.0", "0.0.0.0/8", None),
            ("0.255.255.255", "0.0.0.0/8", Some("1.0.0.0")),
            ("10.0.0.1", "10.0.0.0/8", Some("11.0.0.0")),
            ("10.255.255.255", "10.0.0.0/8", Some("9.255.255.255")),
            ("100.64.0.1", "100.64.0.0/10", Some("100.63.255.255")),
            ("100.127.255.255", "100.64.0.0/10", Some("100.128.0.0")),
            ("127.0.0.1", "127.0.0.0/8", Some("128.0.0.0")),
            ("127.255.255.254", "127.0.0.0/8", Some("126.255.255.255")),
            ("169.254.169.254", "169.254.0.0/16", Some("169.255.0.1")),
            ("172.16.0.1", "172.16.0.0/12", Some("172.15.255.255")),
            ("172.31.255.255", "172.16.0.0/12", Some("172.32.0.0")),
            ("192.0.0.1", "192.0.0.0/24", Some("192.0.1.0")),
            ("192.0.0.170", "192.0.0.0/24", None),
            ("192.0.2.1", "192.0.2.0/24", Some("192.0.3.0")),
            ("192.88.99.1", "192.88.99.0/24", Some("192.88.100.1")),
            ("192.168.1.1", "192.168.0.0/16", Some("192.169.0.0")),
            ("198.18.0.1", "198.18.0.0/15", Some("198.17.255.255")),
            ("198.19.255.255", "198.18.0.0/15", Some("198.20.0.0")),
            ("198.51.100.7", "198.51.100.0/24", Some("198.51.101.0")),
            ("203.0.113.9", "203.0.113.0/24", Some("203.0.114.0")),
            ("224.0.0.1", "224.0.0.0/4", Some("223.255.255.255")),
            ("239.255.255.255", "224.0.0.0/4", None),
            ("240.0.0.1", "240.0.0.0/4", None),
            ("255.255.255.255", "240.0.0.0/4", None),
            // IPv6 special-purpose registry.
            ("::", "::/128", None),
            ("::1", "::1/128", None),
            ("64:ff9b:1::1", "64:ff9b:1::/48", None),
            ("100::1", "100::/64", None),
            ("100:0:0:1::1", "100:0:0:1::/64", None),
            ("2001:2::1", "2001:2::/48", None),
            ("2001:db8::1", "2001:db8::/32", Some("2001:db9::1")),
            ("3fff::1", "3fff::/20", Some("3fff:1000::1")),
            ("5f00::1", "5f00::/16", None),
            ("fc00::1", "fc00::/7", None),
            ("fdff:ffff::1", "fc00::/7", None),
            ("fe80::1", "fe80::/10", None),
            ("febf::1", "fe80::/10", None),
            ("fec0::1", "fec0::/10", None),
            ("ff02::1", "ff00::/8", None),
            ("2001:10::1", "2001::/23", Some("2001:200::1")),
            ("2001:1::4", "2001::/23", Some("2001:1::1")),
            ("2001:4:113::1", "2001::/23", Some("2001:4:112::1")),
            ("::2", "::/96", None),
            ("4000::1", "outside 2000::/3", Some("3fff:ffff::1")),
            ("::ffff:1:0:0", "outside 2000::/3", None),
            // Embedded IPv4 forms.
            ("::ffff:127.0.0.1", "::ffff:0:0/96", Some("::ffff:8.8.8.8")),
            ("::ffff:169.254.169.254", "::ffff:0:0/96", None),
            ("::ffff:10.0.0.1", "::ffff:0:0/96", None),
            ("::127.0.0.1", "::/96", None),
            ("::7f00:1", "::/96", None),
            ("::8.8.8.8", "::/96", None),
            ("::ffff:0:7f00:1", "::ffff:0:0:0/96", None),
            ("::ffff:0:808:808", "::ffff:0:0:0/96", None),
            ("64:ff9b::7f00:1", "64:ff9b::/96", Some("64:ff9b::808:808")),
            ("64:ff9b::a9fe:a9fe", "64:ff9b::/96", None),
            ("2002:7f00:1::1", "2002::/16", Some("2002:808:808::1")),
            ("2002:a9fe:a9fe::1", "2002::/16", None),
            ("2002:c0a8:101::1", "2002::/16", None),
            (
                "2001:0:4136:e378:8000:63bf:80ff:fffe",
                "2001::/32",
                Some("2001:0:4136:e378:8000:63bf:f7f7:f7f7"),
            ),
            ("2001:0:7f00:1:8000:63bf:f7f7:f7f7", "2001::/32", None),
        ];
        for (inside, range, outside) in rows {
            let addr: IpAddr = inside.parse().unwrap();
            let got = classify(addr);
            assert_eq!(got.map(|g| g.range), Some(*range), "{inside}: {got:?}");
            if let Some(outside) = outside {
                let addr: IpAddr = outside.parse().unwrap();
                assert_eq!(classify(addr), None, "{outside} (outside {range}) must be public");
            }
        }
    }

    #[test]
    fn embedded_forms_name_the_address_they_embed() {
        for (text, v4) in [
            ("::ffff:127.0.0.1", "127.0.0.1"),
            ("::7f00:1", "127.0.0.1"),
            ("::ffff:0:7f00:1", "127.0.0.1"),
            ("64:ff9b::a9fe:a9fe", "169.254.169.254"),
            ("2002:a9fe:a9fe::1", "169.254.169.254"),
            ("2001:0:4136:e378:8000:63bf:80ff:fffe", "127.0.0.1"),
        ] {
            let got = classify(text.parse().unwrap()).expect(text);
            assert_eq!(got.embedded, Some(v4.parse().unwrap()), "{text}");
        }
    }

    #[test]
    fn ordinary_public_addresses_pass() {
        for text in [
            "8.8.8.8",
            "93.184.215.14",
            "1.1.1.1",
            "192.31.196.1",
            "192.52.193.1",
            "192.175.48.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001::200e",
            "2001:4860:4860::8888",
            "2001:1::1",
            "2001:3::1",
            "2620:4f:8000::1",
            "64:ff9b::808:808",
        ] {
            assert_eq!(classify(text.parse().unwrap()), None, "{text}");
        }
    }
}
