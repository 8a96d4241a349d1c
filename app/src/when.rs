//! A moment on a page: relative and absolute, in the viewer's time zone.
//!
//! The words come from `tollgate_wire::when` (the mails will say moments the
//! same way). The server draws them in UTC with the zone named, which is
//! what a page read without JavaScript keeps; once the page is interactive
//! the browser's own zone is used (jiff's `js` feature reads it from
//! `Intl.DateTimeFormat().resolvedOptions().timeZone` and resolves it in its
//! bundled time zone database).

use jiff::tz::TimeZone;
use leptos::prelude::*;
use tollgate_wire::when;

/// How a moment is put into words.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Said {
    /// "3 hours ago — Tue 8 Dec, 18:41 UTC".
    #[default]
    Moment,
    /// "Due in 6 days — …", "Overdue by 3 hours — …", "Due now — …".
    Deadline,
}

/// The text for `at` (RFC 3339) seen at `now_ms` in `tz`; the text as
/// given when it is not an instant.
pub fn phrase(at: &str, said: Said, now_ms: i64, tz: &TimeZone) -> String {
    let Some(at_ms) = when::parse_rfc3339(at) else {
        return at.to_string();
    };
    match said {
        Said::Moment => capitalised(&when::describe(at_ms, now_ms, tz)),
        Said::Deadline => {
            let both = when::describe(at_ms, now_ms, tz);
            if at_ms < now_ms && when::relative(at_ms, now_ms) != "now" {
                let (_, absolute) = both.split_once(" — ").unwrap_or(("", &both));
                format!("Overdue by {} — {absolute}", when::duration(now_ms - at_ms))
            } else {
                format!("Due {both}")
            }
        }
    }
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

fn now_ms() -> i64 {
    jiff::Timestamp::now().as_millisecond()
}

/// `<time datetime=… title=…>` with the moment in words; the attributes keep
/// the exact instant as it was given.
#[component]
pub fn When(
    /// The instant, RFC 3339.
    #[prop(into)]
    at: String,
    #[prop(optional)] said: Said,
    #[prop(optional)] class: &'static str,
    #[prop(optional)] id: Option<&'static str>,
    /// `data-deadline`, for tests and styles.
    #[prop(optional, into)]
    state: Option<String>,
) -> impl IntoView {
    // UTC on the server and while hydrating (so both draw the same text);
    // the browser's zone once the page runs.
    let zone = RwSignal::new(TimeZone::UTC);
    Effect::new(move |_| zone.set(TimeZone::try_system().unwrap_or(TimeZone::UTC)));
    let text = {
        let at = at.clone();
        move || zone.with(|tz| phrase(&at, said, now_ms(), tz))
    };
    view! {
        <time datetime=at.clone() title=at class=class id=id data-deadline=state>{text}</time>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_796_755_260_000 - 6 * 86_400_000; // 6 days before Tue 8 Dec 2026, 18:41 UTC

    #[test]
    fn moments_and_deadlines_in_words() {
        let utc = TimeZone::UTC;
        let at = "2026-12-08T18:41:00Z";
        assert_eq!(
            phrase(at, Said::Deadline, NOW, &utc),
            "Due in 6 days — Tue 8 Dec, 18:41 UTC"
        );
        assert_eq!(
            phrase(at, Said::Moment, NOW, &utc),
            "In 6 days — Tue 8 Dec, 18:41 UTC"
        );
        let later = NOW + 6 * 86_400_000 + 3 * 3_600_000;
        assert_eq!(
            phrase(at, Said::Deadline, later, &utc),
            "Overdue by 3 hours — Tue 8 Dec, 18:41 UTC"
        );
        assert_eq!(
            phrase(at, Said::Moment, later, &utc),
            "3 hours ago — Tue 8 Dec, 18:41 UTC"
        );
        assert_eq!(
            phrase(at, Said::Deadline, NOW + 6 * 86_400_000 + 1000, &utc),
            "Due now — Tue 8 Dec, 18:41 UTC"
        );
        assert_eq!(phrase("tomorrow", Said::Moment, NOW, &utc), "tomorrow");
    }
}
