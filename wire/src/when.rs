//! Times for people: "in 6 days — Tue 8 Dec, 18:41 UTC".
//!
//! One place for the words, so the console, the dashboard and (later) the
//! mails say a moment the same way. Every function is pure: the caller
//! passes the instant, the present moment and the zone, so the tests need
//! no clock and the server and the browser draw the same text for the same
//! inputs. Instants are milliseconds since the Unix epoch, as the engine
//! keeps them.

use jiff::tz::TimeZone;
use jiff::Timestamp;

const MINUTE: i64 = 60_000;
const HOUR: i64 = 60 * MINUTE;
const DAY: i64 = 24 * HOUR;
/// Months and years are said roughly ("in 3 months"): a mean month.
const MONTH: i64 = 30 * DAY + 10 * HOUR + 29 * MINUTE;
const YEAR: i64 = 365 * DAY + 6 * HOUR;

/// An RFC 3339 instant (`2026-12-08T18:41:00Z`, `…+01:00`) → milliseconds
/// since the epoch; `None` when it is not one (no offset, not a date).
pub fn parse_rfc3339(text: &str) -> Option<i64> {
    text.trim().parse::<Timestamp>().ok().map(|t| t.as_millisecond())
}

/// A length of time in words, rounded down to its largest unit: "42
/// seconds", "1 minute", "3 hours", "6 days", "2 months", "1 year". The sign
/// is ignored.
pub fn duration(ms: i64) -> String {
    let ms = ms.saturating_abs();
    let (n, unit) = if ms < MINUTE {
        (ms / 1000, "second")
    } else if ms < HOUR {
        (ms / MINUTE, "minute")
    } else if ms < DAY {
        (ms / HOUR, "hour")
    } else if ms < 60 * DAY {
        (ms / DAY, "day")
    } else if ms < 2 * YEAR {
        (ms / MONTH, "month")
    } else {
        (ms / YEAR, "year")
    };
    format!("{n} {unit}{}", if n == 1 { "" } else { "s" })
}

/// Where `at_ms` lies from `now_ms`: "in 6 days", "3 hours ago", or "now"
/// within a minute either way (so "due now", "raised now" read well).
pub fn relative(at_ms: i64, now_ms: i64) -> String {
    let delta = at_ms.saturating_sub(now_ms);
    if delta.saturating_abs() < MINUTE {
        "now".to_string()
    } else if delta > 0 {
        format!("in {}", duration(delta))
    } else {
        format!("{} ago", duration(delta))
    }
}

/// The instant as a day and a time in `tz`, with the zone's abbreviation:
/// "Tue 8 Dec, 18:41 UTC", "Wed 9 Dec, 04:41 AEDT". No year: see
/// [`describe`], which adds it when it is not the present year.
pub fn absolute(at_ms: i64, tz: &TimeZone) -> String {
    format_in(at_ms, tz, "%a %-d %b, %H:%M %Z")
}

/// Both, as the console shows them: "in 6 days — Tue 8 Dec, 18:41 UTC". The
/// year is written when it is not the present one in `tz` ("3 months ago —
/// Mon 1 Sep 2025, 09:00 UTC").
pub fn describe(at_ms: i64, now_ms: i64, tz: &TimeZone) -> String {
    let year = |ms| zoned(ms, tz).map(|z| z.year());
    let absolute = if year(at_ms) == year(now_ms) {
        absolute(at_ms, tz)
    } else {
        format_in(at_ms, tz, "%a %-d %b %Y, %H:%M %Z")
    };
    format!("{} — {absolute}", relative(at_ms, now_ms))
}

fn zoned(at_ms: i64, tz: &TimeZone) -> Option<jiff::Zoned> {
    Timestamp::from_millisecond(at_ms)
        .ok()
        .map(|t| t.to_zoned(tz.clone()))
}

fn format_in(at_ms: i64, tz: &TimeZone, pattern: &str) -> String {
    // Out of jiff's range (±9999 years): say the number rather than fail.
    let Some(z) = zoned(at_ms, tz) else {
        return format!("{at_ms} ms");
    };
    jiff::fmt::strtime::format(pattern, &z).unwrap_or_else(|_| z.timestamp().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Tue 8 Dec 2026, 18:41:00 UTC.
    const AT: i64 = 1_796_755_260_000;

    #[test]
    fn parses_rfc3339_with_any_offset() {
        assert_eq!(parse_rfc3339("2026-12-08T18:41:00Z"), Some(AT));
        assert_eq!(parse_rfc3339("2026-12-08T19:41:00+01:00"), Some(AT));
        assert_eq!(parse_rfc3339(" 2026-12-08T18:41:00.000Z "), Some(AT));
        assert_eq!(parse_rfc3339("2026-12-08T18:41:00"), None);
        assert_eq!(parse_rfc3339("soon"), None);
    }

    #[test]
    fn durations_round_down_to_their_largest_unit() {
        assert_eq!(duration(0), "0 seconds");
        assert_eq!(duration(42_000), "42 seconds");
        assert_eq!(duration(MINUTE), "1 minute");
        assert_eq!(duration(-(3 * HOUR + 59 * MINUTE)), "3 hours");
        assert_eq!(duration(6 * DAY + 23 * HOUR), "6 days");
        assert_eq!(duration(59 * DAY), "59 days");
        assert_eq!(duration(92 * DAY), "3 months");
        assert_eq!(duration(3 * YEAR), "3 years");
    }

    #[test]
    fn relative_says_which_way() {
        assert_eq!(relative(AT + 6 * DAY, AT), "in 6 days");
        assert_eq!(relative(AT - 3 * HOUR, AT), "3 hours ago");
        assert_eq!(relative(AT + 59_999, AT), "now");
        assert_eq!(relative(AT - 59_999, AT), "now");
        assert_eq!(relative(AT + MINUTE, AT), "in 1 minute");
        assert_eq!(relative(i64::MAX, i64::MIN), "in 292271023 years");
    }

    #[test]
    fn absolute_names_the_zone() {
        assert_eq!(absolute(AT, &TimeZone::UTC), "Tue 8 Dec, 18:41 UTC");
        let sydney = TimeZone::get("Australia/Sydney").unwrap();
        assert_eq!(absolute(AT, &sydney), "Wed 9 Dec, 05:41 AEDT");
        let berlin = TimeZone::get("Europe/Berlin").unwrap();
        assert_eq!(absolute(AT, &berlin), "Tue 8 Dec, 19:41 CET");
        let fixed = TimeZone::fixed(jiff::tz::offset(-3));
        assert_eq!(absolute(AT, &fixed), "Tue 8 Dec, 15:41 -03");
    }

    #[test]
    fn describe_adds_the_year_only_when_it_is_not_this_one() {
        let utc = TimeZone::UTC;
        assert_eq!(
            describe(AT, AT - 6 * DAY, &utc),
            "in 6 days — Tue 8 Dec, 18:41 UTC"
        );
        assert_eq!(
            describe(AT, AT + 70 * DAY, &utc),
            "2 months ago — Tue 8 Dec 2026, 18:41 UTC"
        );
    }
}
