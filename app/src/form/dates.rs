//! Dates and date-times between JSON (RFC 3339) and HTML inputs, with jiff.
//!
//! A `date-time` field is edited in UTC: `<input type="datetime-local">` has
//! no zone, and a form that means a different instant depending on who
//! opens it would be worse than one that says "UTC" beside the field.

use jiff::civil::{Date, DateTime};
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// A strict `YYYY-MM-DD` (what `format: date` means), checked against the
/// calendar.
pub(crate) fn parse_date(s: &str) -> Option<Date> {
    // jiff also reads longer forms ("2024-05-01T10:00"); a date field takes
    // a date only.
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' || !s.is_ascii() {
        return None;
    }
    s.parse().ok()
}

/// An RFC 3339 date-time → the value of an `<input type="datetime-local">`
/// in UTC (`2024-05-01T10:00:00+02:00` → `2024-05-01T08:00`). Seconds are
/// written only when they are not zero. `None` without an offset.
pub fn datetime_to_input(s: &str) -> Option<String> {
    let at: Timestamp = s.trim().parse().ok()?;
    Some(local_text(at.to_zoned(TimeZone::UTC).datetime(), false))
}

/// The value of an `<input type="datetime-local">` (read as UTC) → RFC 3339
/// (`2024-05-01T08:00` → `2024-05-01T08:00:00Z`). A full RFC 3339 value with
/// an offset is kept as written.
pub fn datetime_from_input(s: &str) -> Option<String> {
    let s = s.trim();
    if s.parse::<Timestamp>().is_ok() {
        return Some(s.to_string());
    }
    // A date alone parses as a civil date-time (midnight); the field asks
    // for a time too.
    if s.len() < 16 || !s.is_ascii() || !matches!(s.as_bytes()[10], b'T' | b't' | b' ') {
        return None;
    }
    let local: DateTime = s.parse().ok()?;
    Some(format!("{}Z", local_text(local, true)))
}

/// `YYYY-MM-DDTHH:MM`, then `:SS` and the fraction (without trailing zeros)
/// when `seconds` or when they are not zero.
fn local_text(dt: DateTime, seconds: bool) -> String {
    let mut out = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute()
    );
    let nanos = dt.subsec_nanosecond();
    if seconds || dt.second() != 0 || nanos != 0 {
        out.push_str(&format!(":{:02}", dt.second()));
    }
    if nanos != 0 {
        let fraction = format!("{nanos:09}");
        out.push('.');
        out.push_str(fraction.trim_end_matches('0'));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn date_times_convert_through_utc() {
        assert_eq!(
            datetime_to_input("2024-05-01T10:00:00Z").unwrap(),
            "2024-05-01T10:00"
        );
        assert_eq!(
            datetime_to_input("2024-05-01T01:30:15.5-02:30").unwrap(),
            "2024-05-01T04:00:15.5"
        );
        assert_eq!(
            datetime_to_input("2024-03-01T00:10:00+01:00").unwrap(),
            "2024-02-29T23:10"
        );
        assert_eq!(
            datetime_to_input("2024-12-31T23:00:00-01:00").unwrap(),
            "2025-01-01T00:00"
        );
        assert_eq!(datetime_to_input("2024-05-01T10:00"), None);
        assert_eq!(datetime_to_input("yesterday"), None);
        assert_eq!(
            datetime_from_input("2024-05-01T10:00").unwrap(),
            "2024-05-01T10:00:00Z"
        );
        assert_eq!(
            datetime_from_input("2024-05-01T10:00:30").unwrap(),
            "2024-05-01T10:00:30Z"
        );
        assert_eq!(
            datetime_from_input("2024-05-01T10:00:30.250").unwrap(),
            "2024-05-01T10:00:30.25Z"
        );
        assert_eq!(
            datetime_from_input("2024-05-01T10:00:00+02:00").unwrap(),
            "2024-05-01T10:00:00+02:00"
        );
        assert_eq!(datetime_from_input("2024-13-01T10:00"), None);
        assert_eq!(datetime_from_input("2024-05-01T24:00"), None);
        assert_eq!(datetime_from_input("2024-05-01T10:00+2"), None);
        assert_eq!(datetime_from_input("2024-05-01"), None);
    }

    #[test]
    fn dates_are_strict() {
        assert_eq!(parse_date("2024-02-29"), Some(jiff::civil::date(2024, 2, 29)));
        assert_eq!(parse_date("2023-02-29"), None);
        assert_eq!(parse_date("2024-5-01"), None);
        assert_eq!(parse_date("2024-05-01T10:00"), None);
        assert_eq!(parse_date("20240501"), None);
    }
}
