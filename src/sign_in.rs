//! Console sign-in rules that need no database: attempt throttling per
//! account and per client address (governor's GCRA limiters), the limits'
//! defaults, and the post-sign-in redirect rule.

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::nanos::Nanos;
use governor::state::keyed::{DashMapStateStore, ShrinkableKeyedStateStore};
use governor::state::StateStore;
use governor::{Quota, RateLimiter};
use serde::{Deserialize, Serialize};
use std::hash::Hash;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

/// Sign-in limits. Each attempt takes one cell from its account's bucket
/// and one from its address's bucket before the password is checked; a
/// bucket holds `*_attempts` cells and gains one back every
/// `*_refill_seconds`. A successful sign-in refills its account's bucket,
/// so an account's bucket counts failed attempts since its last success;
/// the address's bucket counts every attempt (a correct password for one
/// account must not buy more guesses at another).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SignInLimits {
    /// Attempts in a row for one account (user name) before `429`.
    pub account_attempts: u32,
    /// One more attempt for that account every this many seconds.
    pub account_refill_seconds: u64,
    /// Attempts in a row from one client address (an IPv6 address counts
    /// by its /64) before `429`.
    pub address_attempts: u32,
    /// One more attempt from that address every this many seconds.
    pub address_refill_seconds: u64,
    /// Password hashes computed at once; 0 means one per CPU core.
    pub hash_concurrency: usize,
    /// How long a sign-in waits for a free hashing slot before `503`.
    pub hash_wait_ms: u64,
}

impl Default for SignInLimits {
    fn default() -> Self {
        SignInLimits {
            account_attempts: 5,
            account_refill_seconds: 60,
            address_attempts: 20,
            address_refill_seconds: 6,
            hash_concurrency: 0,
            hash_wait_ms: 5_000,
        }
    }
}

impl SignInLimits {
    /// Refuses zeros, naming the setting.
    pub fn check(&self) -> Result<(), String> {
        for (name, v) in [
            ("account_attempts", self.account_attempts as u64),
            ("account_refill_seconds", self.account_refill_seconds),
            ("address_attempts", self.address_attempts as u64),
            ("address_refill_seconds", self.address_refill_seconds),
        ] {
            if v == 0 {
                return Err(format!("{name}: must be at least 1"));
            }
        }
        Ok(())
    }

    /// The number of concurrent password hashes.
    pub fn hash_slots(&self) -> usize {
        match self.hash_concurrency {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
    }
}

fn quota(attempts: u32, refill_seconds: u64) -> Quota {
    Quota::with_period(Duration::from_secs(refill_seconds.max(1)))
        .expect("a positive period")
        .allow_burst(NonZeroU32::new(attempts.max(1)).expect("positive"))
}

/// Keys the limiters hold before stale ones are swept.
const SWEEP_ABOVE: usize = 10_000;
/// Account names are cut to this many bytes for the limiter's key.
const ACCOUNT_KEY_LEN: usize = 128;

/// A keyed state store the throttle keeps a handle on, so that one key's
/// state can be dropped (an account's bucket refilled after a success).
#[derive(Clone)]
struct Shared<K: Hash + Eq + Clone>(Arc<DashMapStateStore<K>>);

impl<K: Hash + Eq + Clone> Default for Shared<K> {
    fn default() -> Self {
        Shared(Arc::new(DashMapStateStore::default()))
    }
}

impl<K: Hash + Eq + Clone> StateStore for Shared<K> {
    type Key = K;

    fn measure_and_replace<T, F, E>(&self, key: &K, f: F) -> Result<T, E>
    where
        F: Fn(Option<Nanos>) -> Result<(T, Nanos), E>,
    {
        self.0.measure_and_replace(key, f)
    }
}

impl<K: Hash + Eq + Clone> ShrinkableKeyedStateStore<K> for Shared<K> {
    fn retain_recent(&self, drop_below: Nanos) {
        self.0.retain_recent(drop_below)
    }

    fn len(&self) -> usize {
        ShrinkableKeyedStateStore::len(&*self.0)
    }

    fn is_empty(&self) -> bool {
        ShrinkableKeyedStateStore::is_empty(&*self.0)
    }
}

type Limiter<K, C> = RateLimiter<K, Shared<K>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// The per-account and per-address limiters.
pub struct Throttle<C: Clock = DefaultClock> {
    accounts: Limiter<String, C>,
    account_states: Shared<String>,
    addresses: Limiter<IpAddr, C>,
    clock: C,
}

impl Throttle<DefaultClock> {
    pub fn new(limits: &SignInLimits) -> Self {
        Throttle::with_clock(limits, DefaultClock::default())
    }
}

impl<C: Clock + Clone> Throttle<C> {
    pub fn with_clock(limits: &SignInLimits, clock: C) -> Self {
        let account_states = Shared::default();
        Throttle {
            accounts: RateLimiter::new(
                quota(limits.account_attempts, limits.account_refill_seconds),
                account_states.clone(),
                clock.clone(),
            ),
            account_states,
            addresses: RateLimiter::new(
                quota(limits.address_attempts, limits.address_refill_seconds),
                Shared::default(),
                clock.clone(),
            ),
            clock,
        }
    }

    /// A successful sign-in: the account's bucket is full again.
    pub fn succeeded(&self, account: &str) {
        self.account_states.0.remove(&account_key(account));
    }

    /// Takes one attempt for `account` from `address`; `Err(wait)` when
    /// either is throttled (then nothing is taken from the account).
    pub fn attempt(&self, account: &str, address: Option<IpAddr>) -> Result<(), Duration> {
        let now = self.clock.now();
        if let Some(addr) = address.map(address_key) {
            self.addresses
                .check_key(&addr)
                .map_err(|n| n.wait_time_from(now))?;
        }
        let account = account_key(account);
        self.accounts
            .check_key(&account)
            .map_err(|n| n.wait_time_from(now))?;
        if self.accounts.len() > SWEEP_ABOVE || self.addresses.len() > SWEEP_ABOVE {
            self.accounts.retain_recent();
            self.addresses.retain_recent();
        }
        Ok(())
    }
}

fn account_key(account: &str) -> String {
    let mut end = account.len().min(ACCOUNT_KEY_LEN);
    while !account.is_char_boundary(end) {
        end -= 1;
    }
    account[..end].to_string()
}

/// IPv4 as is; IPv6 by its /64 (one host usually holds a whole /64).
fn address_key(addr: IpAddr) -> IpAddr {
    match addr {
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
        v4 => v4,
    }
}

/// Seconds for a `Retry-After` header: the wait rounded up, at least 1.
pub fn retry_after_secs(wait: Duration) -> u64 {
    (wait.as_millis().div_ceil(1000) as u64).max(1)
}

/// Where to go after signing in: `next` when it is a path on this site,
/// else `/`. Accepted: starts with one `/` (not `//`), printable ASCII only
/// (no control characters such as TAB, CR or LF, which browsers strip, and
/// no spaces), no backslash (browsers read it as `/`), and the same holds
/// after percent-decoding (up to three rounds), so neither `/%2F/evil` nor
/// `/%09/evil` nor `/%5Cevil` leaves the site.
pub fn safe_next(next: &str) -> &str {
    if is_site_path(next) {
        next
    } else {
        "/"
    }
}

fn is_site_path(next: &str) -> bool {
    // As sent: printable ASCII only.
    if !next.bytes().all(|b| (0x21..=0x7e).contains(&b)) {
        return false;
    }
    let mut text = next.to_string();
    for _ in 0..4 {
        if !site_path_shape(&text) {
            return false;
        }
        match percent_decode(&text) {
            Some(decoded) if decoded == text => return true,
            Some(decoded) => text = decoded,
            // Not valid UTF-8 once decoded: refuse.
            None => return false,
        }
    }
    // Still changing after several rounds: refuse.
    false
}

/// One `/` first, no backslash, no control character (a decoded space or
/// letter is harmless; a decoded TAB is not).
fn site_path_shape(p: &str) -> bool {
    p.starts_with('/') && !p.starts_with("//") && !p.chars().any(|c| c == '\\' || c.is_control())
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use governor::clock::FakeRelativeClock;

    #[test]
    fn redirect_matrix() {
        for ok in [
            "/",
            "/dashboard",
            "/runs/acme~2Fabc/interrupts/gate?decided=1",
            "/dashboard/runs?status=failed&page=2#x",
            "/a%20b",
            "/caf%C3%A9",
            "/javascript:alert(1)",
        ] {
            assert_eq!(safe_next(ok), ok, "{ok:?} stays");
        }
        for bad in [
            "",
            "//evil.example",
            "///evil.example",
            "/\\evil.example",
            "\\/evil.example",
            "/a\\b",
            "https://evil.example",
            "http:/evil.example",
            "javascript:alert(1)",
            "evil.example",
            "/\t/evil.example",
            "/\r\n/evil.example",
            "/\n/evil.example",
            "\t//evil.example",
            " /x",
            "/ x",
            "/\u{7f}x",
            "/é",
            "/%09/evil.example",
            "/%0d%0a/evil.example",
            "/%2F/evil.example",
            "/%2f%2fevil.example",
            "/%5Cevil.example",
            "/%252F/evil.example",
            "/%25252F/evil.example",
            "/%ff",
            "/%7f",
        ] {
            assert_eq!(safe_next(bad), "/", "{bad:?} is refused");
        }
    }

    #[test]
    fn decoding() {
        assert_eq!(percent_decode("/a%2Fb%").as_deref(), Some("/a/b%"));
        assert_eq!(percent_decode("/%4").as_deref(), Some("/%4"));
        assert_eq!(percent_decode("/%zz").as_deref(), Some("/%zz"));
        assert_eq!(percent_decode("%41%42").as_deref(), Some("AB"));
    }

    fn limits() -> SignInLimits {
        SignInLimits {
            account_attempts: 3,
            account_refill_seconds: 60,
            address_attempts: 5,
            address_refill_seconds: 10,
            ..SignInLimits::default()
        }
    }

    #[test]
    fn per_account_then_refill() {
        let clock = FakeRelativeClock::default();
        let t = Throttle::with_clock(&limits(), clock.clone());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        for _ in 0..3 {
            assert!(t.attempt("ann", Some(a)).is_ok());
        }
        let wait = t.attempt("ann", Some(b)).unwrap_err();
        assert_eq!(retry_after_secs(wait), 60, "another address does not help");
        assert!(
            t.attempt("bob", Some(b)).is_ok(),
            "another account is not throttled"
        );
        clock.advance(Duration::from_secs(60));
        assert!(
            t.attempt("ann", Some(b)).is_ok(),
            "one attempt back after the period"
        );
        assert!(t.attempt("ann", Some(b)).is_err());
        // A success refills the account's bucket (not the address's).
        t.succeeded("ann");
        for _ in 0..3 {
            assert!(t.attempt("ann", Some(b)).is_ok());
        }
        assert!(t.attempt("ann", Some(b)).is_err());
    }

    #[test]
    fn per_address_across_accounts() {
        let clock = FakeRelativeClock::default();
        let t = Throttle::with_clock(&limits(), clock.clone());
        let a: IpAddr = "2001:db8:1:2:3:4:5:6".parse().unwrap();
        let same_64: IpAddr = "2001:db8:1:2:ffff::1".parse().unwrap();
        for i in 0..5 {
            assert!(t.attempt(&format!("user{i}"), Some(a)).is_ok());
        }
        let wait = t.attempt("someone", Some(same_64)).unwrap_err();
        assert_eq!(retry_after_secs(wait), 10);
        // A refusal by address takes nothing from the account.
        assert!(t.attempt("someone", Some("192.0.2.1".parse().unwrap())).is_ok());
        assert!(t.attempt("someone", None).is_ok());
        clock.advance(Duration::from_secs(10));
        assert!(t.attempt("other", Some(a)).is_ok());
    }

    #[test]
    fn limits_check_and_slots() {
        assert!(SignInLimits::default().check().is_ok());
        let zero = SignInLimits {
            address_attempts: 0,
            ..SignInLimits::default()
        };
        assert!(zero.check().unwrap_err().contains("address_attempts"));
        assert!(SignInLimits::default().hash_slots() >= 1);
        let two = SignInLimits {
            hash_concurrency: 2,
            ..SignInLimits::default()
        };
        assert_eq!(two.hash_slots(), 2);
        assert_eq!(retry_after_secs(Duration::from_millis(1)), 1);
        assert_eq!(retry_after_secs(Duration::from_millis(1001)), 2);
        assert_eq!(account_key(&"é".repeat(100)).len(), 128);
    }
}
