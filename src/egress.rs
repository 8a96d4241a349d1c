//! The egress guard for outgoing HTTP (run callbacks): which URLs and which
//! addresses this host may connect to (OpenWOP v2 `webhooks.md` §Egress,
//! `interrupt.md` §Callback delivery).
//!
//! The same rules run twice: at `createRun` on the URL (scheme, host name,
//! literal IP), and at delivery on every address the host name resolves to,
//! right before connecting to one of those checked addresses.
//!
//! Refused: a scheme other than `https`; `localhost` and other private-use
//! names; cloud-metadata hosts; and every IP address the IANA special-purpose
//! registries mark not globally reachable (loopback, RFC 1918, CGNAT,
//! link-local, ULA, documentation, benchmarking, multicast, broadcast,
//! reserved, …). IPv6 addresses that embed an IPv4 address (IPv4-mapped
//! `::ffff:0:0/96`, IPv4-compatible `::/96`, NAT64 `64:ff9b::/96`, 6to4
//! `2002::/16`) are judged by the embedded address. Odd IPv4 spellings in the
//! host (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`) are normalized by the
//! URL parser (WHATWG rules) before they are judged.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use url::{Host, Url};

/// What the guard lets through besides the public internet.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EgressPolicy {
    /// Test switch: also allow `http`, `localhost`, loopback and private
    /// (RFC 1918, ULA) targets. Metadata hosts and the other special-purpose
    /// ranges stay refused.
    pub allow_loopback: bool,
}

/// Longest URL accepted.
pub const MAX_URL_LEN: usize = 2048;

/// Host names that reach cloud instance metadata services.
const METADATA_NAMES: &[&str] = &[
    "metadata",
    "metadata.google.internal",
    "metadata.goog",
    "metadata.azure.internal",
    "instance-data",
    "instance-data.ec2.internal",
    "metadata.tencentyun.com",
    "metadata.platformequinix.com",
    "metadata.packet.net",
];

/// Addresses of cloud instance metadata services (refused even with `allow_loopback`).
fn is_metadata_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => [
            Ipv4Addr::new(169, 254, 169, 254), // AWS, GCP, Azure, OpenStack, …
            Ipv4Addr::new(169, 254, 170, 2),   // AWS ECS task metadata
            Ipv4Addr::new(100, 100, 100, 200), // Alibaba Cloud
        ]
        .contains(&v4),
        IpAddr::V6(v6) => v6 == Ipv6Addr::new(0xfd00, 0xec2, 0, 0, 0, 0, 0, 0x254), // AWS IMDS over IPv6
    }
}

fn in_v4(ip: Ipv4Addr, net: [u8; 4], len: u32) -> bool {
    let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
    (u32::from(ip) & mask) == (u32::from(Ipv4Addr::from(net)) & mask)
}

fn in_v6(ip: Ipv6Addr, net: Ipv6Addr, len: u32) -> bool {
    let mask = if len == 0 { 0 } else { u128::MAX << (128 - len) };
    (u128::from(ip) & mask) == (u128::from(net) & mask)
}

/// Why an IPv4 address is not globally reachable, if it is not.
/// `private` is true for the classes `allow_loopback` admits.
fn v4_refusal(ip: Ipv4Addr) -> Option<(&'static str, bool)> {
    const TABLE: &[([u8; 4], u32, &str, bool)] = &[
        (
            [0, 0, 0, 0],
            8,
            "\"this network\" 0.0.0.0/8 (includes the unspecified address)",
            false,
        ),
        ([10, 0, 0, 0], 8, "private (RFC 1918) 10.0.0.0/8", true),
        (
            [100, 64, 0, 0],
            10,
            "shared address space (CGNAT) 100.64.0.0/10",
            false,
        ),
        ([127, 0, 0, 0], 8, "loopback 127.0.0.0/8", true),
        ([169, 254, 0, 0], 16, "link-local 169.254.0.0/16", false),
        ([172, 16, 0, 0], 12, "private (RFC 1918) 172.16.0.0/12", true),
        (
            [192, 0, 0, 0],
            24,
            "IETF protocol assignments 192.0.0.0/24",
            false,
        ),
        (
            [192, 0, 2, 0],
            24,
            "documentation (TEST-NET-1) 192.0.2.0/24",
            false,
        ),
        ([192, 31, 196, 0], 24, "AS112 192.31.196.0/24", false),
        ([192, 52, 193, 0], 24, "AMT 192.52.193.0/24", false),
        (
            [192, 88, 99, 0],
            24,
            "deprecated 6to4 relay anycast 192.88.99.0/24",
            false,
        ),
        ([192, 168, 0, 0], 16, "private (RFC 1918) 192.168.0.0/16", true),
        (
            [192, 175, 48, 0],
            24,
            "direct delegation AS112 192.175.48.0/24",
            false,
        ),
        ([198, 18, 0, 0], 15, "benchmarking 198.18.0.0/15", false),
        (
            [198, 51, 100, 0],
            24,
            "documentation (TEST-NET-2) 198.51.100.0/24",
            false,
        ),
        (
            [203, 0, 113, 0],
            24,
            "documentation (TEST-NET-3) 203.0.113.0/24",
            false,
        ),
        ([224, 0, 0, 0], 4, "multicast 224.0.0.0/4", false),
        (
            [255, 255, 255, 255],
            32,
            "limited broadcast 255.255.255.255",
            false,
        ),
        ([240, 0, 0, 0], 4, "reserved 240.0.0.0/4", false),
    ];
    TABLE
        .iter()
        .find(|(net, len, _, _)| in_v4(ip, *net, *len))
        .map(|(_, _, why, private)| (*why, *private))
}

/// The IPv4 address an IPv6 address embeds, with the form's name.
fn embedded_v4(ip: Ipv6Addr) -> Option<(Ipv4Addr, &'static str)> {
    let bits = u128::from(ip);
    let low32 = Ipv4Addr::from((bits & 0xffff_ffff) as u32);
    if in_v6(ip, Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, 0, 0), 96) {
        return Some((low32, "IPv4-mapped ::ffff:0:0/96"));
    }
    if in_v6(ip, Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96) {
        return Some((low32, "NAT64 64:ff9b::/96"));
    }
    if in_v6(ip, Ipv6Addr::new(0x2002, 0, 0, 0, 0, 0, 0, 0), 16) {
        return Some((
            Ipv4Addr::from(((bits >> 80) & 0xffff_ffff) as u32),
            "6to4 2002::/16",
        ));
    }
    // IPv4-compatible ::/96, except :: and ::1 themselves.
    if in_v6(ip, Ipv6Addr::UNSPECIFIED, 96) && bits > 1 {
        return Some((low32, "IPv4-compatible ::/96"));
    }
    None
}

/// Why an IPv6 address (without an embedded IPv4) is not globally reachable.
fn v6_refusal(ip: Ipv6Addr) -> Option<(&'static str, bool)> {
    if ip.is_unspecified() {
        return Some(("the unspecified address ::", false));
    }
    if ip.is_loopback() {
        return Some(("loopback ::1", true));
    }
    const TABLE: &[(Ipv6Addr, u32, &str, bool)] = &[
        (
            Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, 0, 0),
            48,
            "local-use NAT64 64:ff9b:1::/48",
            false,
        ),
        (
            Ipv6Addr::new(0x100, 0, 0, 0, 0, 0, 0, 0),
            64,
            "discard-only 100::/64",
            false,
        ),
        (
            Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0),
            32,
            "documentation 2001:db8::/32",
            false,
        ),
        (
            Ipv6Addr::new(0x2001, 0, 0, 0, 0, 0, 0, 0),
            23,
            "IETF protocol assignments 2001::/23",
            false,
        ),
        (
            Ipv6Addr::new(0x3fff, 0, 0, 0, 0, 0, 0, 0),
            20,
            "documentation 3fff::/20",
            false,
        ),
        (
            Ipv6Addr::new(0x5f00, 0, 0, 0, 0, 0, 0, 0),
            16,
            "SRv6 SIDs 5f00::/16",
            false,
        ),
        (
            Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0),
            7,
            "unique local (ULA) fc00::/7",
            true,
        ),
        (
            Ipv6Addr::new(0xfe80, 0, 0, 0, 0, 0, 0, 0),
            10,
            "link-local fe80::/10",
            false,
        ),
        (
            Ipv6Addr::new(0xfec0, 0, 0, 0, 0, 0, 0, 0),
            10,
            "deprecated site-local fec0::/10",
            false,
        ),
        (
            Ipv6Addr::new(0xff00, 0, 0, 0, 0, 0, 0, 0),
            8,
            "multicast ff00::/8",
            false,
        ),
    ];
    if let Some((_, _, why, private)) = TABLE.iter().find(|(net, len, _, _)| in_v6(ip, *net, *len)) {
        return Some((why, *private));
    }
    // Everything outside global unicast is reserved by IANA.
    if !in_v6(ip, Ipv6Addr::new(0x2000, 0, 0, 0, 0, 0, 0, 0), 3) {
        return Some(("reserved (outside global unicast 2000::/3)", false));
    }
    None
}

/// Checks one address a callback would connect to. `Err` says why it is refused.
pub fn check_ip(ip: IpAddr, policy: EgressPolicy) -> Result<(), String> {
    if is_metadata_ip(ip) {
        return Err(format!("{ip} is a cloud metadata address"));
    }
    let verdict = match ip {
        IpAddr::V4(v4) => v4_refusal(v4).map(|(why, private)| (why.to_string(), private)),
        IpAddr::V6(v6) => match embedded_v4(v6) {
            Some((v4, form)) => {
                if is_metadata_ip(IpAddr::V4(v4)) {
                    return Err(format!("{ip} embeds {v4} ({form}), a cloud metadata address"));
                }
                v4_refusal(v4).map(|(why, private)| (format!("{form} embedding {v4}: {why}"), private))
            }
            None => v6_refusal(v6).map(|(why, private)| (why.to_string(), private)),
        },
    };
    match verdict {
        None => Ok(()),
        Some((_, true)) if policy.allow_loopback => Ok(()),
        Some((why, _)) => Err(format!("{ip} is not globally reachable: {why}")),
    }
}

/// Checks a host name (not an IP literal) before any DNS lookup.
fn check_name(name: &str, policy: EgressPolicy) -> Result<(), String> {
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() {
        return Err("the host is empty".into());
    }
    if METADATA_NAMES.contains(&name.as_str()) {
        return Err(format!("{name} is a cloud metadata host"));
    }
    if name == "localhost" || name.ends_with(".localhost") {
        return if policy.allow_loopback {
            Ok(())
        } else {
            Err(format!("{name} is localhost"))
        };
    }
    for suffix in [".internal", ".local", ".home.arpa", ".localdomain"] {
        if name.ends_with(suffix) || name == suffix[1..] {
            return Err(format!("{name} is a private-use name ({suffix})"));
        }
    }
    if !name.contains('.') && !policy.allow_loopback {
        return Err(format!("{name} is a single-label (intranet) name"));
    }
    Ok(())
}

/// Checks a callback URL: parses it (normalizing odd IPv4 spellings), then
/// judges the scheme and host. Returns the parsed URL, or why it is refused.
pub fn check_url(raw: &str, policy: EgressPolicy) -> Result<Url, String> {
    if raw.len() > MAX_URL_LEN {
        return Err(format!("longer than {MAX_URL_LEN} characters"));
    }
    let url = Url::parse(raw).map_err(|e| format!("not an absolute URL ({e})"))?;
    match url.scheme() {
        "https" => {}
        "http" if policy.allow_loopback => {}
        other => return Err(format!("the scheme must be https, not {other:?}")),
    }
    match url.host() {
        None => Err("the URL has no host".into()),
        Some(Host::Ipv4(ip)) => check_ip(IpAddr::V4(ip), policy),
        Some(Host::Ipv6(ip)) => check_ip(IpAddr::V6(ip), policy),
        Some(Host::Domain(name)) => check_name(name, policy),
    }?;
    Ok(url)
}

/// [`check_url`] for a URL offered now (`createRun`): it is stored with the
/// run and shown in the outbox and the logs, so it carries no user name or
/// password (a receiver checks the signature instead). A URL stored before
/// this rule is still delivered to.
pub fn check_new_url(raw: &str, policy: EgressPolicy) -> Result<Url, String> {
    let url = check_url(raw, policy)?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(
            "the URL must not carry a user name or password (callbacks are signed; check the signature)"
                .into(),
        );
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STRICT: EgressPolicy = EgressPolicy {
        allow_loopback: false,
    };
    const LOOSE: EgressPolicy = EgressPolicy { allow_loopback: true };

    /// (url, refused without allow_loopback, refused with allow_loopback, words in the reason)
    const MATRIX: &[(&str, bool, bool, &str)] = &[
        // accepted
        ("https://example.com/hook", false, false, ""),
        ("https://hooks.example.com:8443/a?b=c", false, false, ""),
        ("https://93.184.215.14/cb", false, false, ""),
        ("https://8.8.8.8/", false, false, ""),
        ("https://[2606:4700:4700::1111]/", false, false, ""),
        ("https://[64:ff9b::808:808]/", false, false, ""), // NAT64 of 8.8.8.8
        ("https://[2002:808:808::1]/", false, false, ""),  // 6to4 of 8.8.8.8
        ("https://[::ffff:8.8.8.8]/", false, false, ""),
        // scheme
        ("http://example.com/hook", true, false, "https"),
        ("ftp://example.com/x", true, true, "https"),
        ("file:///etc/passwd", true, true, "https"),
        ("gopher://example.com/", true, true, "https"),
        ("not a url", true, true, "absolute URL"),
        // credentials in the URL
        (
            "https://user:pw@example.com/hook",
            true,
            true,
            "user name or password",
        ),
        (
            "https://user@example.com/hook",
            true,
            true,
            "user name or password",
        ),
        (
            "https://:pw@example.com/hook",
            true,
            true,
            "user name or password",
        ),
        ("/relative/path", true, true, "absolute URL"),
        // localhost and private-use names
        ("https://localhost/", true, false, "localhost"),
        ("https://LOCALHOST./", true, false, "localhost"),
        ("https://api.localhost/", true, false, "localhost"),
        ("https://printer.local/", true, true, "private-use"),
        ("https://db.internal/", true, true, "private-use"),
        ("https://router.home.arpa/", true, true, "private-use"),
        ("https://intranet/", true, false, "single-label"),
        // loopback, any spelling
        ("https://127.0.0.1/", true, false, "loopback"),
        ("https://127.1.2.3:8443/", true, false, "loopback"),
        ("https://2130706433/", true, false, "loopback"),
        ("https://0177.0.0.1/", true, false, "loopback"),
        ("https://0x7f.1/", true, false, "loopback"),
        ("https://0x7f000001/", true, false, "loopback"),
        ("https://127.1/", true, false, "loopback"),
        ("https://[::1]/", true, false, "loopback"),
        ("https://[0:0:0:0:0:0:0:1]/", true, false, "loopback"),
        ("https://[::ffff:7f00:1]/", true, false, "loopback"),
        ("https://[::ffff:127.0.0.1]/", true, false, "loopback"),
        ("https://[::127.0.0.1]/", true, false, "loopback"),
        ("https://[64:ff9b::7f00:1]/", true, false, "loopback"),
        ("https://[2002:7f00:1::]/", true, false, "loopback"),
        // RFC 1918
        ("https://10.0.0.1/", true, false, "RFC 1918"),
        ("https://10.255.255.255/", true, false, "RFC 1918"),
        ("https://172.16.0.1/", true, false, "RFC 1918"),
        ("https://172.31.255.254/", true, false, "RFC 1918"),
        ("https://192.168.1.1/", true, false, "RFC 1918"),
        ("https://[::ffff:10.0.0.1]/", true, false, "RFC 1918"),
        ("https://[::ffff:c0a8:101]/", true, false, "RFC 1918"),
        ("https://[2002:c0a8:101::]/", true, false, "RFC 1918"),
        // link-local and metadata
        ("https://169.254.1.1/", true, true, "link-local"),
        ("https://[fe80::1]/", true, true, "link-local"),
        (
            "https://169.254.169.254/latest/meta-data/",
            true,
            true,
            "metadata",
        ),
        ("https://[::ffff:169.254.169.254]/", true, true, "metadata"),
        ("https://[::ffff:a9fe:a9fe]/", true, true, "metadata"),
        ("https://2852039166/", true, true, "metadata"),
        ("https://169.254.170.2/", true, true, "metadata"),
        ("https://100.100.100.200/", true, true, "metadata"),
        ("https://[fd00:ec2::254]/", true, true, "metadata"),
        (
            "https://metadata.google.internal/computeMetadata/v1/",
            true,
            true,
            "metadata",
        ),
        ("https://metadata.google.internal./", true, true, "metadata"),
        ("https://instance-data/", true, true, "metadata"),
        // ULA
        ("https://[fc00::1]/", true, false, "ULA"),
        ("https://[fd12:3456::1]/", true, false, "ULA"),
        // this network, unspecified, broadcast, multicast, reserved
        ("https://0.0.0.0/", true, true, "0.0.0.0/8"),
        ("https://0/", true, true, "0.0.0.0/8"),
        ("https://0.1.2.3/", true, true, "0.0.0.0/8"),
        ("https://[::]/", true, true, "unspecified"),
        ("https://255.255.255.255/", true, true, "broadcast"),
        ("https://224.0.0.1/", true, true, "multicast"),
        ("https://239.255.255.250/", true, true, "multicast"),
        ("https://[ff02::1]/", true, true, "multicast"),
        ("https://240.0.0.1/", true, true, "reserved"),
        // CGNAT, documentation, benchmarking, other special purpose
        ("https://100.64.0.1/", true, true, "CGNAT"),
        ("https://100.127.255.254/", true, true, "CGNAT"),
        ("https://192.0.0.8/", true, true, "IETF protocol"),
        ("https://192.0.2.1/", true, true, "documentation"),
        ("https://198.51.100.7/", true, true, "documentation"),
        ("https://203.0.113.9/", true, true, "documentation"),
        ("https://198.18.0.1/", true, true, "benchmarking"),
        ("https://198.19.255.255/", true, true, "benchmarking"),
        ("https://192.88.99.1/", true, true, "6to4 relay"),
        ("https://[2001:db8::1]/", true, true, "documentation"),
        ("https://[3fff::1]/", true, true, "documentation"),
        ("https://[100::1]/", true, true, "discard"),
        ("https://[2001::1]/", true, true, "IETF protocol"),
        ("https://[64:ff9b:1::1]/", true, true, "NAT64"),
        ("https://[fec0::1]/", true, true, "site-local"),
        ("https://[4000::1]/", true, true, "reserved"),
        ("https://[::ffff:0.0.0.0]/", true, true, "0.0.0.0/8"),
        ("https://[::ffff:100.64.0.1]/", true, true, "CGNAT"),
        ("https://[64:ff9b::a9fe:a9fe]/", true, true, "metadata"),
    ];

    #[test]
    fn ssrf_matrix() {
        for (url, strict, loose, words) in MATRIX {
            for (policy, refused) in [(STRICT, *strict), (LOOSE, *loose)] {
                let got = check_new_url(url, policy);
                assert_eq!(
                    got.is_err(),
                    refused,
                    "{url} with {policy:?}: expected refused={refused}, got {got:?}"
                );
                if let Err(why) = got {
                    assert!(
                        why.contains(words),
                        "{url} with {policy:?}: reason {why:?} should mention {words:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn delivery_checks_each_resolved_address() {
        let public: IpAddr = "93.184.215.14".parse().unwrap();
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(check_ip(public, STRICT).is_ok());
        assert!(check_ip(loopback, STRICT).unwrap_err().contains("loopback"));
        assert!(check_ip(loopback, LOOSE).is_ok());
        assert!(check_ip("169.254.169.254".parse().unwrap(), LOOSE).is_err());
    }

    #[test]
    fn a_stored_url_with_credentials_is_still_delivered_to() {
        let url = "https://user:pw@example.com/hook";
        assert!(check_new_url(url, STRICT).is_err());
        assert!(check_url(url, STRICT).is_ok());
    }

    #[test]
    fn urls_are_normalized() {
        let u = check_url("https://EXAMPLE.com:443/a/../b", STRICT).unwrap();
        assert_eq!(u.as_str(), "https://example.com/b");
        assert!(check_url(
            &format!("https://example.com/{}", "a".repeat(MAX_URL_LEN)),
            STRICT
        )
        .is_err());
    }
}
