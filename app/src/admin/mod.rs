//! The admin dashboard (`/dashboard`, for principals with the admin role):
//! overview with charts, runs and their timelines, the directory, API and
//! token keys, the outbox. Reads are server functions; every change is a
//! plain form post to the server (`server/src/dashboard.rs`), which answers
//! with a redirect back and a one-time message, so all of it works without
//! JavaScript.

pub mod api;
pub mod charts;
mod confirm;
mod keys;
mod outbox;
mod people;
mod runs;

pub use confirm::{CONFIRM_CANCEL, CONFIRM_REVOKE};
pub use keys::Keys;
pub use outbox::Outbox;
pub use people::People;
pub use runs::{RunTimeline, Runs};

use crate::api::Me;
use crate::pages::{error_box, kind_label, Header, CARD, LINK};
use crate::when::{Said, When};
use api::*;
use charts::{AgeChart, DecisionsChart};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_location;
use tollgate_wire::RunStatus;

const INPUT: &str = "mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 text-sm focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500";
const TH: &str = "px-3 py-2 text-left font-semibold";
const TD: &str = "px-3 py-2 align-top";
const TABLE: &str = "min-w-full divide-y divide-slate-200 text-sm";

#[server]
pub async fn load_admin_me() -> Result<Me, ServerFnError> {
    let me = require_admin()?;
    Ok(crate::api::me_of(&me))
}

/// Header, section navigation and the page; refuses non-admins.
#[component]
fn Frame(title: &'static str, children: ChildrenFn) -> impl IntoView {
    let me = Resource::new(|| (), |_| load_admin_me());
    let path = use_location().pathname;
    let nav = [
        ("/dashboard", "Overview"),
        ("/dashboard/runs", "Runs"),
        ("/dashboard/people", "People"),
        ("/dashboard/keys", "Keys"),
        ("/dashboard/outbox", "Outbox"),
    ];
    view! {
        <Title text=format!("{title} · Dashboard · Tollgate") />
        <Suspense fallback=|| view! { <p class="p-8">"Loading…"</p> }>
            {move || me.get().map(|r| match r {
                Err(e) => view! { <Header me=None />{error_box(e.to_string())} }.into_any(),
                Ok(me) => {
                    let here = path.get();
                    view! {
                        <Header me=Some(me) />
                        <div class="mx-auto max-w-6xl px-6 py-6">
                            <nav aria-label="Dashboard" class="flex flex-wrap gap-2 border-b border-slate-200 pb-3">
                                {nav.iter().map(|(href, label)| {
                                    let current = here == *href || (*href != "/dashboard" && here.starts_with(href));
                                    view! {
                                        <a
                                            href=*href
                                            aria-current=current.then_some("page")
                                            class=if current { "rounded-md bg-indigo-700 px-3 py-1.5 text-sm font-semibold text-white focus:outline-none focus:ring-2 focus:ring-indigo-500" } else { "rounded-md px-3 py-1.5 text-sm font-semibold text-slate-700 hover:bg-slate-100 focus:outline-none focus:ring-2 focus:ring-indigo-500" }
                                        >
                                            {*label}
                                        </a>
                                    }
                                }).collect_view()}
                            </nav>
                            <main class="mt-6 space-y-6">
                                <h1 class="text-2xl font-semibold tracking-tight">{title}</h1>
                                {children()}
                            </main>
                        </div>
                    }.into_any()
                }
            })}
        </Suspense>
    }
}

/// A table's header row; an empty name is an unlabelled actions column.
fn thead(columns: &[&'static str]) -> impl IntoView {
    view! {
        <thead class="bg-slate-50 text-slate-700">
            <tr>
                {columns.iter().map(|c| if c.is_empty() {
                    view! { <th scope="col" class=TH><span class="sr-only">"Actions"</span></th> }.into_any()
                } else {
                    view! { <th scope="col" class=TH>{*c}</th> }.into_any()
                }).collect_view()}
            </tr>
        </thead>
    }
}

pub(crate) fn flash_view(flash: Option<Flash>) -> Option<AnyView> {
    flash.map(|f| {
        let class = if f.ok {
            "rounded-md border border-emerald-200 bg-emerald-50 p-4 text-emerald-900"
        } else {
            "rounded-md border border-red-200 bg-red-50 p-4 text-red-800"
        };
        view! {
            <div id="flash" role=if f.ok { "status" } else { "alert" } class=class data-ok=f.ok.to_string()>
                <p>{f.message}</p>
                {f.secret.map(|s| view! {
                    <p class="mt-2 text-sm">"Copy it now; it is not shown again:"</p>
                    <p class="mt-1"><code id="new-secret" class="select-all break-all rounded bg-white px-2 py-1 font-mono text-sm text-slate-900">{s}</code></p>
                })}
            </div>
        }
        .into_any()
    })
}

fn status_badge(status: RunStatus) -> AnyView {
    let class = match status {
        RunStatus::Completed => "bg-emerald-100 text-emerald-900",
        RunStatus::Failed | RunStatus::Cancelled => "bg-red-100 text-red-900",
        s if s.is_waiting() => "bg-amber-100 text-amber-900",
        _ => "bg-slate-100 text-slate-800",
    };
    view! { <span class=format!("rounded px-2 py-0.5 text-xs font-semibold {class}")>{status.as_str()}</span> }
        .into_any()
}

fn deadline_cell(p: &PendingRow) -> AnyView {
    match &p.deadline {
        Some(d) => {
            let class = match p.deadline_state.as_str() {
                "overdue" => "font-semibold text-red-800",
                "soon" => "font-semibold text-amber-800",
                _ => "text-slate-700",
            };
            view! { <When at=d.clone() said=Said::Deadline class=class state=p.deadline_state.as_str() /> }
                .into_any()
        }
        None => view! { <span class="text-slate-500">"None"</span> }.into_any(),
    }
}

// ----- overview -------------------------------------------------------------------------

#[component]
pub fn Overview() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_admin_overview());
    view! {
        <Frame title="Overview">
            <Suspense fallback=|| ()>
                {move || data.get().map(|r| match r {
                    Err(e) => error_box(e.to_string()),
                    Ok(d) => overview_view(d),
                })}
            </Suspense>
        </Frame>
    }
}

fn stat(id: &'static str, label: &'static str, value: String, alert: bool) -> impl IntoView {
    view! {
        <div class=CARD>
            <p class="text-sm font-medium text-slate-600">{label}</p>
            <p id=id class=if alert { "mt-1 text-3xl font-semibold text-red-800" } else { "mt-1 text-3xl font-semibold text-slate-900" }>{value}</p>
        </div>
    }
}

fn overview_view(d: OverviewData) -> AnyView {
    let o = d.overview;
    let running: i64 = o
        .runs_by_status
        .iter()
        .filter(|s| !matches!(s.status.as_str(), "completed" | "failed" | "cancelled"))
        .map(|s| s.count)
        .sum();
    view! {
        <div class="grid grid-cols-2 gap-4 md:grid-cols-4">
            {stat("stat-pending", "Pending interrupts", o.pending_total.to_string(), false)}
            {stat("stat-overdue", "Overdue", o.overdue.to_string(), o.overdue > 0)}
            {stat("stat-active-runs", "Active runs", running.to_string(), false)}
            {stat("stat-outbox", "Outbox backlog", o.outbox_backlog.to_string(), false)}
        </div>
        <div class="grid gap-6 lg:grid-cols-2">
            <section class=CARD aria-labelledby="age-heading">
                <h2 id="age-heading" class="text-lg font-semibold">"Pending interrupts by age"</h2>
                <div class="mt-3"><AgeChart buckets=o.age_buckets.clone() /></div>
            </section>
            <section class=CARD aria-labelledby="decisions-heading">
                <h2 id="decisions-heading" class="text-lg font-semibold">"Decisions per day"</h2>
                <div class="mt-3"><DecisionsChart days=o.decisions.clone() /></div>
            </section>
        </div>
        <section class=CARD aria-labelledby="runs-status-heading">
            <h2 id="runs-status-heading" class="text-lg font-semibold">"Runs by status"</h2>
            <ul class="mt-3 flex flex-wrap gap-3 text-sm">
                {o.runs_by_status.iter().map(|s| view! {
                    <li>
                        <a href=format!("/dashboard/runs?status={}", s.status) class=LINK data-status=s.status.as_str()>
                            {format!("{}: {}", s.status, s.count)}
                        </a>
                    </li>
                }).collect_view()}
            </ul>
        </section>
        <section class=CARD aria-labelledby="pending-heading">
            <h2 id="pending-heading" class="text-lg font-semibold">"Most urgent pending interrupts, overdue first"</h2>
            {if o.pending.is_empty() {
                view! { <p class="mt-3 text-slate-600">"Nothing is pending."</p> }.into_any()
            } else {
                view! {
                    <div class="mt-3 overflow-x-auto">
                        <table id="pending" class=TABLE>
                            <caption class="sr-only">"Most urgent pending interrupts, overdue first"</caption>
                            {thead(&["Request", "Kind", "Workflow", "Raised", "Deadline", "Votes"])}
                            <tbody class="divide-y divide-slate-100">
                                {o.pending.iter().zip(d.run_links).map(|(p, href)| view! {
                                    <tr data-run=p.run_id.clone() data-node=p.node_id.clone()>
                                        <td class=TD><a href=href class=LINK>{p.title.clone()}</a></td>
                                        <td class=TD>{kind_label(p.kind)}</td>
                                        <td class=TD>{p.workflow_id.clone()}</td>
                                        <td class=TD><When at=p.created_at.clone() /></td>
                                        <td class=TD>{deadline_cell(p)}</td>
                                        <td class=TD>{p.votes.to_string()}</td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
    .into_any()
}
