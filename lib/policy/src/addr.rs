//! Classification of IP addresses that must not be reached by default.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Says whether `addr` is loopback, private, link-local, shared, multicast,
/// reserved or unspecified — anything that is not the public internet.
pub fn is_private(addr: IpAddr) -> bool {
    match addr {
        IpAddr::V4(v4) => v4_private(v4),
        IpAddr::V6(v6) => v6_private(v6),
    }
}

fn v4_private(a: Ipv4Addr) -> bool {
    let [o0, o1, ..] = a.octets();
    a.is_loopback()
        || a.is_private()
        || a.is_link_local()
        || a.is_unspecified()
        || a.is_broadcast()
        || a.is_multicast()
        || a.is_documentation()
        || o0 == 0
        || (o0 == 100 && (64..128).contains(&o1)) // shared address space (CGNAT)
        || (o0 == 192 && o1 == 0 && a.octets()[2] == 0) // IETF protocol assignments
        || (o0 == 198 && (o1 == 18 || o1 == 19)) // benchmarking
        || o0 >= 240 // reserved
}

fn v6_private(a: Ipv6Addr) -> bool {
    if let Some(v4) = a.to_ipv4_mapped() {
        return v4_private(v4);
    }
    let seg0 = a.segments()[0];
    a.is_loopback()
        || a.is_unspecified()
        || a.is_multicast()
        || (seg0 & 0xfe00) == 0xfc00 // unique local
        || (seg0 & 0xffc0) == 0xfe80 // link-local
        || (seg0 & 0xffc0) == 0xfec0 // site-local (deprecated)
        || (seg0 == 0x64 && a.segments()[1] == 0xff9b) // NAT64 embeds v4
        || (seg0 == 0x2001 && a.segments()[1] == 0x0db8) // documentation
}
