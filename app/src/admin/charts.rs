//! Server-rendered SVG charts: plain shapes with text labels and a table
//! fallback for screen readers, no JavaScript and no chart library.

use super::api::{Bucket, DayDecisions};
use leptos::prelude::*;

const WIDTH: f64 = 560.0;
const HEIGHT: f64 = 220.0;
/// Room below the bars for the labels, and above for the counts.
const BOTTOM: f64 = 28.0;
const TOP: f64 = 18.0;

/// One bar segment in SVG coordinates.
#[derive(Debug, Clone, PartialEq)]
pub struct Segment {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// A "nice" axis maximum: at least 1, rounded up to 1, 2 or 5 × 10ⁿ.
pub fn nice_max(max: i64) -> i64 {
    let max = max.max(1);
    let mut step = 1;
    loop {
        for m in [1, 2, 5] {
            if m * step >= max {
                return m * step;
            }
        }
        step *= 10;
    }
}

/// Stacked bars: `stacks[i]` are the segment values of bar `i`, bottom first.
pub fn stacked_bars(stacks: &[Vec<i64>]) -> (i64, Vec<Vec<Segment>>) {
    let axis = nice_max(stacks.iter().map(|s| s.iter().sum::<i64>()).max().unwrap_or(0));
    let plot = HEIGHT - BOTTOM - TOP;
    let slot = WIDTH / stacks.len().max(1) as f64;
    let width = (slot * 0.7).max(1.0);
    let bars = stacks
        .iter()
        .enumerate()
        .map(|(i, stack)| {
            let x = i as f64 * slot + (slot - width) / 2.0;
            let mut base = HEIGHT - BOTTOM;
            stack
                .iter()
                .map(|v| {
                    let h = plot * (*v as f64) / axis as f64;
                    base -= h;
                    Segment {
                        x,
                        y: base,
                        width,
                        height: h,
                    }
                })
                .collect()
        })
        .collect();
    (axis, bars)
}

fn f(v: f64) -> String {
    format!("{v:.1}")
}

/// Pending interrupts by age: one bar per bucket.
#[component]
pub fn AgeChart(buckets: Vec<Bucket>) -> impl IntoView {
    let (axis, bars) = stacked_bars(&buckets.iter().map(|b| vec![b.count]).collect::<Vec<_>>());
    let total: i64 = buckets.iter().map(|b| b.count).sum();
    let label = format!("Pending interrupts by age: {total} in all");
    let aria = label.clone();
    view! {
        <figure id="chart-age" class="w-full">
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") class="h-auto w-full" role="img" aria-label=aria>
                <title>{label}</title>
                <line x1="0" y1=f(HEIGHT - BOTTOM) x2=f(WIDTH) y2=f(HEIGHT - BOTTOM) stroke="#94a3b8" stroke-width="1" />
                <text x=f(WIDTH - 2.0) y="12" font-size="11" text-anchor="end" fill="#475569">{format!("scale: 0–{axis}")}</text>
                {buckets.iter().zip(bars).map(|(b, seg)| {
                    let s = &seg[0];
                    let cx = s.x + s.width / 2.0;
                    view! {
                        <g data-bucket=b.label.clone() data-count=b.count.to_string()>
                            <rect x=f(s.x) y=f(s.y) width=f(s.width) height=f(s.height) fill="#4338ca" rx="2">
                                <title>{format!("{}: {}", b.label, b.count)}</title>
                            </rect>
                            <text x=f(cx) y=f(s.y - 4.0) font-size="12" text-anchor="middle" fill="#0f172a">{b.count.to_string()}</text>
                            <text x=f(cx) y=f(HEIGHT - 10.0) font-size="12" text-anchor="middle" fill="#334155">{b.label.clone()}</text>
                        </g>
                    }
                }).collect_view()}
            </svg>
            <figcaption class="sr-only">
                {buckets.iter().map(|b| format!("{}: {}", b.label, b.count)).collect::<Vec<_>>().join("; ")}
            </figcaption>
        </figure>
    }
}

/// Colours and names of the decision series, bottom of the stack first.
const SERIES: [(&str, &str); 4] = [
    ("Approved", "#047857"),
    ("Rejected", "#b91c1c"),
    ("Timed out", "#b45309"),
    ("Answered", "#4338ca"),
];

fn series_of(d: &DayDecisions) -> Vec<i64> {
    vec![d.approved, d.rejected, d.timed_out, d.answered]
}

/// Decisions per day, stacked by how they ended.
#[component]
pub fn DecisionsChart(days: Vec<DayDecisions>) -> impl IntoView {
    let (axis, bars) = stacked_bars(&days.iter().map(series_of).collect::<Vec<_>>());
    let total: i64 = days.iter().flat_map(series_of).sum();
    let label = format!(
        "Decisions per day over the last {} days: {total} in all",
        days.len()
    );
    let aria = label.clone();
    view! {
        <figure id="chart-decisions" class="w-full">
            <svg viewBox=format!("0 0 {WIDTH} {HEIGHT}") class="h-auto w-full" role="img" aria-label=aria>
                <title>{label}</title>
                <line x1="0" y1=f(HEIGHT - BOTTOM) x2=f(WIDTH) y2=f(HEIGHT - BOTTOM) stroke="#94a3b8" stroke-width="1" />
                <text x=f(WIDTH - 2.0) y="12" font-size="11" text-anchor="end" fill="#475569">{format!("scale: 0–{axis}")}</text>
                {days.iter().zip(bars).enumerate().map(|(i, (d, segs))| {
                    let first = segs.first().cloned();
                    let day_label = (i % 2 == 0).then(|| first.as_ref().map(|s| view! {
                        <text x=f(s.x + s.width / 2.0) y=f(HEIGHT - 10.0) font-size="10" text-anchor="middle" fill="#334155">{d.day[5..].to_string()}</text>
                    }));
                    let sum: i64 = series_of(d).iter().sum();
                    view! {
                        <g data-day=d.day.clone() data-count=sum.to_string()>
                            {segs.into_iter().zip(SERIES).zip(series_of(d)).filter(|(_, v)| *v > 0).map(|((s, (name, colour)), v)| view! {
                                <rect x=f(s.x) y=f(s.y) width=f(s.width) height=f(s.height) fill=colour>
                                    <title>{format!("{}: {name} {v}", d.day)}</title>
                                </rect>
                            }).collect_view()}
                            {day_label}
                        </g>
                    }
                }).collect_view()}
            </svg>
            <figcaption class="mt-2 flex flex-wrap gap-4 text-xs text-slate-700">
                {SERIES.iter().map(|(name, colour)| view! {
                    <span class="inline-flex items-center gap-1">
                        // An SVG swatch, not a style attribute: the CSP admits no inline styles.
                        <svg class="h-3 w-3" viewBox="0 0 12 12" aria-hidden="true"><rect width="12" height="12" rx="2" fill=*colour /></svg>
                        {*name}
                    </span>
                }).collect_view()}
            </figcaption>
        </figure>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nice_axis() {
        assert_eq!(nice_max(0), 1);
        assert_eq!(nice_max(1), 1);
        assert_eq!(nice_max(3), 5);
        assert_eq!(nice_max(7), 10);
        assert_eq!(nice_max(11), 20);
        assert_eq!(nice_max(480), 500);
    }

    #[test]
    fn bars_stack_upward_and_scale_to_the_axis() {
        let (axis, bars) = stacked_bars(&[vec![2, 3], vec![0, 0], vec![10, 0]]);
        assert_eq!(axis, 10);
        let plot = HEIGHT - BOTTOM - TOP;
        // The tallest bar fills the plot exactly.
        assert!((bars[2][0].height - plot).abs() < 1e-9);
        assert!((bars[2][0].y - TOP).abs() < 1e-9);
        // Segments sit on each other.
        assert!((bars[0][1].y + bars[0][1].height - bars[0][0].y).abs() < 1e-9);
        assert!((bars[0][0].height - plot * 0.2).abs() < 1e-9);
        // Empty bars have no height; bars do not overlap.
        assert_eq!(bars[1][0].height, 0.0);
        assert!(bars[0][0].x + bars[0][0].width < bars[1][0].x);
    }
}
