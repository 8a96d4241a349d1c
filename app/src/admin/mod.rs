//! The admin dashboard (`/dashboard`, for principals with the admin role):
//! overview with charts, runs and their timelines, the directory, API and
//! token keys, the outbox. Reads are server functions; every change is a
//! plain form post to the server (`server/src/dashboard.rs`), which answers
//! with a redirect back and a one-time message, so all of it works without
//! JavaScript.

pub mod api;
pub mod charts;
mod confirm;

pub use confirm::{CONFIRM_CANCEL, CONFIRM_REVOKE};

use crate::api::Me;
use crate::pages::{error_box, kind_label, Header, BUTTON, BUTTON_SECONDARY, CARD, LINK, SELECT};
use crate::when::{Said, When};
use api::*;
use charts::{AgeChart, DecisionsChart};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_location, use_params_map, use_query_map};
use tollgate_wire::{OutboxStatus, RunStatus};

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

// ----- runs --------------------------------------------------------------------------------

fn runs_href(q: &RunsQuery, page: usize) -> String {
    let mut parts = Vec::new();
    if let Some(s) = &q.status {
        parts.push(format!("status={s}"));
    }
    if let Some(w) = &q.workflow {
        parts.push(format!("workflow={w}"));
    }
    if page > 1 {
        parts.push(format!("page={page}"));
    }
    if parts.is_empty() {
        "/dashboard/runs".into()
    } else {
        format!("/dashboard/runs?{}", parts.join("&"))
    }
}

#[component]
pub fn Runs() -> impl IntoView {
    let query = use_query_map();
    let q = Memo::new(move |_| {
        query.with(|m| RunsQuery {
            status: m.get("status").filter(|s| !s.is_empty()),
            workflow: m.get("workflow").filter(|s| !s.is_empty()),
            page: m.get("page").and_then(|p| p.parse().ok()),
        })
    });
    let data = Resource::new(move || q.get(), load_admin_runs);
    view! {
        <Frame title="Runs">
            <Suspense fallback=|| ()>
                {move || data.get().map(|r| match r {
                    Err(e) => error_box(e.to_string()),
                    Ok(d) => runs_view(d, q.get_untracked()),
                })}
            </Suspense>
        </Frame>
    }
}

fn runs_view(d: RunsData, q: RunsQuery) -> AnyView {
    let runs = d.runs;
    let prev = (runs.page > 1).then(|| runs_href(&q, runs.page - 1));
    let next = (runs.page < runs.pages).then(|| runs_href(&q, runs.page + 1));
    view! {
        <form method="get" action="/dashboard/runs" class="flex flex-wrap items-end gap-4 rounded-lg border border-slate-200 bg-white p-4" aria-label="Filter runs">
            <div>
                <label for="runs-status" class="block text-sm font-medium text-slate-800">"Status"</label>
                <select id="runs-status" name="status" class=SELECT>
                    <option value="" selected=q.status.is_none()>"Any status"</option>
                    {runs.by_status.iter().map(|s| {
                        let selected = q.status.as_deref() == Some(s.status.as_str());
                        view! { <option value=s.status.as_str() selected=selected>{format!("{} ({})", s.status, s.count)}</option> }
                    }).collect_view()}
                </select>
            </div>
            <div>
                <label for="runs-workflow" class="block text-sm font-medium text-slate-800">"Workflow"</label>
                <select id="runs-workflow" name="workflow" class=SELECT>
                    <option value="" selected=q.workflow.is_none()>"Any workflow"</option>
                    {runs.workflows.iter().map(|w| {
                        let selected = q.workflow.as_deref() == Some(w.as_str());
                        view! { <option value=w.clone() selected=selected>{w.clone()}</option> }
                    }).collect_view()}
                </select>
            </div>
            <button type="submit" id="runs-apply" class=BUTTON>"Apply"</button>
        </form>
        <p id="runs-count" class="text-sm text-slate-600">{format!("{} runs", runs.total)}</p>
        <div class="overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
            <table id="runs" class=TABLE>
                <caption class="sr-only">"Runs, newest first"</caption>
                {thead(&["Run", "Workflow", "Status", "At node", "Owner", "Started"])}
                <tbody class="divide-y divide-slate-100">
                    {runs.items.into_iter().zip(d.run_links).map(|(r, href)| view! {
                        <tr data-run=r.run_id.clone() data-status=r.status.as_str()>
                            <td class=TD><a href=href class=format!("{LINK} font-mono text-xs")>{r.run_id.clone()}</a></td>
                            <td class=TD>{r.workflow_id.clone()}</td>
                            <td class=TD>{status_badge(r.status)}</td>
                            <td class=TD>{r.current_node_id.clone().unwrap_or_default()}</td>
                            <td class=TD>{r.owner.clone()}</td>
                            <td class=TD><When at=r.created_at.clone() /></td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        <nav class="flex items-center justify-between text-sm" aria-label="Pages">
            <span id="runs-page">{format!("Page {} of {}", runs.page, runs.pages)}</span>
            <span class="flex gap-4">
                {prev.map(|h| view! { <a href=h rel="prev" class=LINK>"Previous page"</a> })}
                {next.map(|h| view! { <a href=h rel="next" class=LINK>"Next page"</a> })}
            </span>
        </nav>
    }
    .into_any()
}

#[component]
pub fn RunTimeline() -> impl IntoView {
    let params = use_params_map();
    let run = move || params.with(|p| p.get("run_id").unwrap_or_default());
    let data = Resource::new(run, load_run_timeline);
    // `?cancel=1`: the confirmation step of cancelling the run.
    let query = use_query_map();
    view! {
        <Frame title="Run">
            <Suspense fallback=|| ()>
                {move || data.get().map(|r| match r {
                    Err(e) => error_box(e.to_string()),
                    Ok(d) => timeline_view(d, query.with(|q| q.get("cancel").is_some())),
                })}
            </Suspense>
        </Frame>
    }
}

/// "Reassign a seat": moves one person's seat on the run's pending approval
/// to another person (the engine checks that the first has one).
fn reassign_form(run_id: &str, r: api::Reassign) -> impl IntoView {
    let options = |r: &api::Reassign| {
        r.people
            .iter()
            .map(|(id, name)| view! { <option value=id.clone()>{format!("{name} ({id})")}</option> })
            .collect_view()
    };
    view! {
        <form method="post" action="/dashboard/runs/reassign" id="reassign-form" class="mt-4 flex flex-wrap items-end gap-3 border-t border-slate-100 pt-4" aria-label=format!("Reassign a seat on {}", r.title)>
            <input type="hidden" name="run" value=run_id.to_string() />
            <input type="hidden" name="node" value=r.node_id.clone() />
            <p class="w-full text-sm text-slate-700">{format!("Reassign a seat on “{}”: the new person decides in the other's place on this request only.", r.title)}</p>
            <div>
                <label for="reassign-from" class="block text-sm font-medium text-slate-800">"From"</label>
                <select id="reassign-from" name="from" class=SELECT>{options(&r)}</select>
            </div>
            <div>
                <label for="reassign-to" class="block text-sm font-medium text-slate-800">"To"</label>
                <select id="reassign-to" name="to" class=SELECT>{options(&r)}</select>
            </div>
            <div>
                <label for="reassign-reason" class="block text-sm font-medium text-slate-800">"Reason (optional)"</label>
                <input id="reassign-reason" name="reason" type="text" maxlength="500" class=SELECT />
            </div>
            <button type="submit" id="reassign-submit" class=BUTTON_SECONDARY>"Reassign"</button>
        </form>
    }
}

fn timeline_view(d: TimelineData, cancelling: bool) -> AnyView {
    let t = d.timeline;
    let run = t.run;
    let live = !run.status.is_terminal();
    let confirm = (live && cancelling).then(|| confirm::confirm_cancel_run(&run, &d.href));
    let cancel = (live && !cancelling).then(|| confirm::cancel_run_button(&d.href));
    view! {
        {flash_view(d.flash)}
        {confirm}
        <section class=CARD aria-labelledby="run-heading">
            <h2 id="run-heading" class="font-mono text-base font-semibold">{run.run_id.clone()}</h2>
            <dl class="mt-3 grid grid-cols-2 gap-x-6 gap-y-2 text-sm md:grid-cols-4">
                <div><dt class="text-slate-600">"Workflow"</dt><dd>{run.workflow_id.clone()}</dd></div>
                <div><dt class="text-slate-600">"Status"</dt><dd id="run-status">{status_badge(run.status)}</dd></div>
                <div><dt class="text-slate-600">"Owner"</dt><dd>{run.owner.clone()}</dd></div>
                <div><dt class="text-slate-600">"Started"</dt><dd><When at=run.created_at.clone() /></dd></div>
            </dl>
            {cancel}
            {d.reassign.map(|r| reassign_form(&run.run_id, r))}
            {t.error.map(|e| view! {
                <p role="alert" class="mt-3 rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-800">
                    {e["message"].as_str().map(str::to_string).unwrap_or_else(|| e.to_string())}
                </p>
            })}
        </section>
        <section class=CARD aria-labelledby="audit-heading">
            <h2 id="audit-heading" class="text-lg font-semibold">"Decisions"</h2>
            {if t.audit.is_empty() {
                view! { <p class="mt-3 text-sm text-slate-600">"Nobody has voted on this run."</p> }.into_any()
            } else {
                view! {
                    <div class="mt-3 overflow-x-auto">
                        <table id="audit" class=TABLE>
                            <caption class="sr-only">"Who decided what, and why they were allowed to"</caption>
                            {thead(&["Node", "Who", "Action", "Allowed via", "When"])}
                            <tbody class="divide-y divide-slate-100">
                                {t.audit.into_iter().map(|a| view! {
                                    <tr data-principal=a.principal.clone()>
                                        <td class=TD>{format!("{} (visit {})", a.node_id, a.visit)}</td>
                                        <td class=TD>
                                            {a.principal.clone()}
                                            {a.cast_by.clone().map(|by| view! { <span class="on-behalf block text-xs text-slate-600" data-cast-by=by.clone()>{format!("cast by {by} on behalf of {}", a.principal)}</span> })}
                                        </td>
                                        <td class=TD>{a.action.as_str()}{(!a.counted).then_some(" (replaced)")}</td>
                                        <td class=format!("{TD} font-mono text-xs")>{a.eligible_via.clone()}</td>
                                        <td class=TD><When at=a.decided_at.clone() /></td>
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
        <section class=CARD aria-labelledby="events-heading">
            <h2 id="events-heading" class="text-lg font-semibold">"Event log"</h2>
            <ol id="timeline" class="mt-3 space-y-2 border-l-2 border-slate-200 pl-4 text-sm">
                {t.events.into_iter().map(|e| {
                    let payload = serde_json::to_string_pretty(&e.payload).unwrap_or_default();
                    view! {
                        <li data-type=e.event_type.as_str() data-sequence=e.sequence.to_string()>
                            <p>
                                <span class="font-mono text-xs text-slate-500">{format!("#{} ", e.sequence)}</span>
                                <span class="font-semibold">{e.event_type.as_str()}</span>
                                {e.node_id.map(|n| view! { <span class="text-slate-600">{format!(" · {n}")}</span> })}
                                <When at=e.timestamp.clone() class="ml-2 text-xs text-slate-500" />
                            </p>
                            <details class="mt-1">
                                <summary class="cursor-pointer text-xs text-indigo-800">"Payload"</summary>
                                <pre class="mt-1 overflow-x-auto rounded bg-slate-50 p-2 text-xs">{payload}</pre>
                            </details>
                        </li>
                    }
                }).collect_view()}
            </ol>
        </section>
    }
    .into_any()
}

// ----- people ----------------------------------------------------------------------------

#[component]
pub fn People() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_people());
    let query = use_query_map();
    let editing = move || query.with(|q| q.get("edit"));
    view! {
        <Frame title="People">
            <Suspense fallback=|| ()>
                {move || data.get().map(|r| match r {
                    Err(e) => error_box(e.to_string()),
                    Ok(d) => people_view(d, editing()),
                })}
            </Suspense>
        </Frame>
    }
}

fn text_field(
    id: &'static str,
    name: &'static str,
    label: &'static str,
    value: String,
    hint: Option<&'static str>,
) -> impl IntoView {
    let hint_id = format!("{id}-hint");
    view! {
        <div>
            <label for=id class="block text-sm font-medium text-slate-800">{label}</label>
            <input id=id name=name type="text" value=value class=INPUT aria-describedby=hint.map(|_| hint_id.clone()) />
            {hint.map(|h| view! { <p id=hint_id.clone() class="mt-1 text-xs text-slate-600">{h}</p> })}
        </div>
    }
}

fn people_view(d: PeopleData, editing: Option<String>) -> AnyView {
    let dir = d.directory;
    let edit = editing.and_then(|id| {
        dir.people
            .iter()
            .find(|p| p.principal.id == id)
            .map(|p| p.principal.clone())
    });
    let is_edit = edit.is_some();
    let e = edit.unwrap_or(Person {
        id: String::new(),
        tenant: String::new(),
        name: String::new(),
        email: None,
        groups: vec![],
        roles: vec![],
        is_override: false,
    });
    let ids: Vec<String> = dir.people.iter().map(|p| p.principal.id.clone()).collect();
    view! {
        {flash_view(d.flash)}
        <section class=CARD aria-labelledby="people-heading">
            <h2 id="people-heading" class="text-lg font-semibold">"Everyone"</h2>
            <div class="mt-3 overflow-x-auto">
                <table id="people" class=TABLE>
                    <caption class="sr-only">"People in the directory"</caption>
                    {thead(&["Id", "Name", "Email", "Groups", "Roles", "Sign-in", ""])}
                    <tbody class="divide-y divide-slate-100">
                        {dir.people.into_iter().map(|p| {
                            let pid = p.principal.id.clone();
                            view! {
                                <tr data-person=pid.clone()>
                                    <td class=TD>{pid.clone()}{p.principal.is_override.then(|| view! { <span class="ml-1 rounded bg-amber-100 px-1 text-xs text-amber-900">"override"</span> })}</td>
                                    <td class=TD>{p.principal.name.clone()}</td>
                                    <td class=TD>{p.principal.email.clone().unwrap_or_default()}</td>
                                    <td class=TD data-groups="">{p.principal.groups.join(", ")}</td>
                                    <td class=TD data-roles="">{p.principal.roles.join(", ")}</td>
                                    <td class=TD>{if p.has_password { "password set" } else { "no password" }}</td>
                                    <td class=TD><a href=format!("/dashboard/people?edit={pid}") class=LINK aria-label=format!("Edit {pid}")>"Edit"</a></td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
        </section>
        <div class="grid gap-6 lg:grid-cols-2">
            <section class=CARD aria-labelledby="person-form-heading">
                <h2 id="person-form-heading" class="text-lg font-semibold">{if is_edit { format!("Edit {}", e.id) } else { "Add a person".to_string() }}</h2>
                <form method="post" action="/dashboard/people" class="mt-4 space-y-4" id="person-form">
                    {if is_edit {
                        view! { <input type="hidden" name="id" value=e.id.clone() /> }.into_any()
                    } else {
                        text_field("person-id", "id", "Id", String::new(), Some("Letters, digits and . _ - ~ @ :; used in approver lists.")).into_any()
                    }}
                    {text_field("person-name", "name", "Name", e.name.clone(), None)}
                    {text_field("person-email", "email", "Email", e.email.clone().unwrap_or_default(), Some("Interrupt links are mailed here."))}
                    {text_field("person-groups", "groups", "Groups", e.groups.join(", "), Some("Comma-separated."))}
                    {text_field("person-roles", "roles", "Roles", e.roles.join(", "), Some("Comma-separated; \"admin\" opens this dashboard."))}
                    <div class="flex items-center gap-2">
                        <input id="person-override" type="checkbox" name="override" value="1" checked=e.is_override class="h-4 w-4 rounded border-slate-400" />
                        <label for="person-override" class="text-sm font-medium text-slate-800">"May override quorum where a gate allows it"</label>
                    </div>
                    <button type="submit" id="person-save" class=BUTTON>{if is_edit { "Save changes" } else { "Add person" }}</button>
                    {is_edit.then(|| view! { <a href="/dashboard/people" class=format!("ml-3 {LINK}")>"Cancel"</a> })}
                </form>
            </section>
            <section class=CARD aria-labelledby="password-heading">
                <h2 id="password-heading" class="text-lg font-semibold">"Set a password"</h2>
                <form method="post" action="/dashboard/people/password" class="mt-4 space-y-4" id="password-form">
                    <div>
                        <label for="password-person" class="block text-sm font-medium text-slate-800">"Person"</label>
                        <select id="password-person" name="id" class=SELECT>
                            {ids.iter().map(|id| view! { <option value=id.clone() selected=*id == e.id>{id.clone()}</option> }).collect_view()}
                        </select>
                    </div>
                    <div>
                        <label for="password-new" class="block text-sm font-medium text-slate-800">"New password"</label>
                        <input id="password-new" name="password" type="password" autocomplete="new-password" class=INPUT aria-describedby="password-hint" />
                        <p id="password-hint" class="mt-1 text-xs text-slate-600">"At least 8 characters. Stored as an argon2 hash."</p>
                    </div>
                    <div class="flex flex-wrap gap-3">
                        <button type="submit" id="password-save" name="op" value="set" class=BUTTON>"Set password"</button>
                        <button type="submit" id="password-remove" name="op" value="remove" class=BUTTON_SECONDARY>"Remove sign-in"</button>
                    </div>
                </form>
            </section>
        </div>
        <div class="grid gap-6 lg:grid-cols-2">
            {membership_section("group", "Groups", dir.groups, &ids)}
            {membership_section("role", "Roles", dir.roles, &ids)}
        </div>
    }
    .into_any()
}

fn membership_section(
    kind: &'static str,
    title: &'static str,
    list: Vec<Membership>,
    ids: &[String],
) -> impl IntoView {
    let ids = ids.to_vec();
    view! {
        <section class=CARD aria-labelledby=format!("{kind}s-heading") id=format!("{kind}s")>
            <h2 id=format!("{kind}s-heading") class="text-lg font-semibold">{title}</h2>
            <ul class="mt-3 space-y-3 text-sm">
                {list.into_iter().map(|m| {
                    let name = m.name.clone();
                    view! {
                        <li data-membership=name.clone()>
                            <p class="font-semibold">{name.clone()}</p>
                            <ul class="mt-1 flex flex-wrap gap-2">
                                {m.members.into_iter().map(|member| view! {
                                    <li class="inline-flex items-center gap-1 rounded bg-slate-100 px-2 py-0.5">
                                        {member.clone()}
                                        <form method="post" action="/dashboard/memberships" class="inline">
                                            <input type="hidden" name="kind" value=kind />
                                            <input type="hidden" name="name" value=name.clone() />
                                            <input type="hidden" name="principal" value=member.clone() />
                                            <button type="submit" name="op" value="remove" class="ml-1 rounded px-1 text-red-800 hover:bg-red-100 focus:outline-none focus:ring-2 focus:ring-red-500" aria-label=format!("Remove {member} from {name}")>"×"</button>
                                        </form>
                                    </li>
                                }).collect_view()}
                            </ul>
                        </li>
                    }
                }).collect_view()}
            </ul>
            <form method="post" action="/dashboard/memberships" class="mt-4 flex flex-wrap items-end gap-3" id=format!("{kind}-add")>
                <input type="hidden" name="kind" value=kind />
                <input type="hidden" name="op" value="add" />
                <div>
                    <label for=format!("{kind}-add-principal") class="block text-sm font-medium text-slate-800">"Person"</label>
                    <select id=format!("{kind}-add-principal") name="principal" class=SELECT>
                        {ids.iter().map(|id| view! { <option value=id.clone()>{id.clone()}</option> }).collect_view()}
                    </select>
                </div>
                <div>
                    <label for=format!("{kind}-add-name") class="block text-sm font-medium text-slate-800">{format!("{} name", if kind == "group" { "Group" } else { "Role" })}</label>
                    <input id=format!("{kind}-add-name") name="name" type="text" class=INPUT />
                </div>
                <button type="submit" id=format!("{kind}-add-submit") class=BUTTON_SECONDARY>"Add"</button>
            </form>
        </section>
    }
}

// ----- keys -----------------------------------------------------------------------------------

#[component]
pub fn Keys() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_keys());
    // `?revoke=<id>`: the confirmation step of revoking that key.
    let query = use_query_map();
    view! {
        <Frame title="Keys">
            <Suspense fallback=|| ()>
                {move || data.get().map(|r| match r {
                    Err(e) => error_box(e.to_string()),
                    Ok(d) => keys_view(d, query.with(|q| q.get("revoke"))),
                })}
            </Suspense>
        </Frame>
    }
}

fn keys_view(d: KeysData, revoke: Option<String>) -> AnyView {
    let confirm = revoke.map(|id| confirm::confirm_revoke_key(&id, d.api_keys.iter().find(|k| k.id == id)));
    view! {
        {flash_view(d.flash)}
        {confirm}
        <section class=CARD aria-labelledby="api-keys-heading">
            <h2 id="api-keys-heading" class="text-lg font-semibold">"API keys"</h2>
            <p class="mt-1 text-sm text-slate-600">"Only a digest of each key is stored; a key is shown once, when it is created."</p>
            <div class="mt-3 overflow-x-auto">
                <table id="api-keys" class=TABLE>
                    <caption class="sr-only">"API keys"</caption>
                    {thead(&["Id", "Label", "Acts as", "Scopes", "Created", "State"])}
                    <tbody class="divide-y divide-slate-100">
                        {d.api_keys.into_iter().map(|k| {
                            let id = k.id.clone();
                            let revoked = k.revoked_at.is_some();
                            view! {
                                <tr data-key=id.clone() data-revoked=revoked.to_string()>
                                    <td class=format!("{TD} font-mono text-xs")>{id.clone()}</td>
                                    <td class=TD>{k.label.clone().unwrap_or_default()}</td>
                                    <td class=TD>{k.principal.clone()}</td>
                                    <td class=TD>{k.scopes.join(" ")}</td>
                                    <td class=TD><When at=k.created_at.clone() /></td>
                                    <td class=TD>
                                        {match k.revoked_at {
                                            Some(at) => view! { <span class="text-red-800">"Revoked: "<When at=at /></span> }.into_any(),
                                            None => view! {
                                                {confirm::revoke_key_button(&id)}
                                            }.into_any(),
                                        }}
                                    </td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            <form method="post" action="/dashboard/keys" id="api-key-form" class="mt-6 space-y-4 border-t border-slate-200 pt-4">
                <h3 class="font-semibold">"Create a key"</h3>
                <div class="flex flex-wrap gap-4">
                    <div>
                        <label for="key-principal" class="block text-sm font-medium text-slate-800">"Acts as"</label>
                        <select id="key-principal" name="principal" class=SELECT>
                            {d.principals.iter().map(|p| view! { <option value=p.clone()>{p.clone()}</option> }).collect_view()}
                        </select>
                    </div>
                    <div class="min-w-64 flex-1">
                        <label for="key-label" class="block text-sm font-medium text-slate-800">"Label"</label>
                        <input id="key-label" name="label" type="text" class=INPUT />
                    </div>
                </div>
                <fieldset>
                    <legend class="text-sm font-medium text-slate-800">"Scopes"</legend>
                    <div class="mt-2 flex flex-wrap gap-4">
                        {d.scopes.iter().map(|s| {
                            let id = format!("scope-{}", s.replace(':', "-"));
                            view! {
                                <span class="inline-flex items-center gap-2">
                                    <input id=id.clone() type="checkbox" name="scope" value=s.clone() class="h-4 w-4 rounded border-slate-400" />
                                    <label for=id class="text-sm text-slate-800">{s.clone()}</label>
                                </span>
                            }
                        }).collect_view()}
                    </div>
                </fieldset>
                <button type="submit" id="key-create" class=BUTTON>"Create key"</button>
            </form>
        </section>
        <p id="token-keys-note" class="text-sm text-slate-600">"The keys that sign interrupt links belong to the instance operator: they are kept in the server's configuration and managed with "<code>"tollgate token-key"</code>", not in the dashboard."</p>
    }
    .into_any()
}

// ----- outbox ---------------------------------------------------------------------------------

#[component]
pub fn Outbox() -> impl IntoView {
    let query = use_query_map();
    let key = move || query.with(|q| (q.get("kind"), q.get("status")));
    let data = Resource::new(key, |(kind, status)| load_outbox(kind, status));
    view! {
        <Frame title="Outbox">
            <Suspense fallback=|| ()>
                {move || data.get().map(|r| match r {
                    Err(e) => error_box(e.to_string()),
                    Ok(d) => {
                        let (kind, status) = key();
                        outbox_view(d, kind, status)
                    }
                })}
            </Suspense>
        </Frame>
    }
}

fn outbox_view(d: OutboxData, kind: Option<String>, status: Option<String>) -> AnyView {
    let option = |value: &'static str, label: &'static str, current: &Option<String>| {
        view! { <option value=value selected=current.as_deref().unwrap_or("") == value>{label}</option> }
    };
    view! {
        {flash_view(d.flash)}
        <form method="get" action="/dashboard/outbox" class="flex flex-wrap items-end gap-4 rounded-lg border border-slate-200 bg-white p-4" aria-label="Filter the outbox">
            <div>
                <label for="outbox-kind" class="block text-sm font-medium text-slate-800">"Kind"</label>
                <select id="outbox-kind" name="kind" class=SELECT>
                    {option("", "Emails and callbacks", &kind)}
                    {option("email", "Emails", &kind)}
                    {option("callback", "Callbacks", &kind)}
                </select>
            </div>
            <div>
                <label for="outbox-status" class="block text-sm font-medium text-slate-800">"State"</label>
                <select id="outbox-status" name="status" class=SELECT>
                    {option("", "Any state", &status)}
                    {option("pending", "Pending", &status)}
                    {option("sent", "Sent", &status)}
                    {option("failed", "Failed", &status)}
                    {option("dropped", "Dropped", &status)}
                </select>
            </div>
            <button type="submit" id="outbox-apply" class=BUTTON>"Apply"</button>
        </form>
        {if d.rows.is_empty() {
            view! { <p id="outbox-empty" class="text-slate-600">"Nothing in the outbox."</p> }.into_any()
        } else {
            view! {
                <div class="overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
                    <table id="outbox" class=TABLE>
                        <caption class="sr-only">"Outbox, newest first"</caption>
                        {thead(&["#", "Kind", "To", "Why", "State", "Attempts", "Created", ""])}
                        <tbody class="divide-y divide-slate-100">
                            {d.rows.into_iter().map(|r| {
                                let retry = matches!(r.status, OutboxStatus::Failed | OutboxStatus::Dropped);
                                let id = r.id;
                                view! {
                                    <tr data-outbox=id.to_string() data-status=r.status.as_str()>
                                        <td class=TD>{id.to_string()}</td>
                                        <td class=TD>{r.kind.as_str()}</td>
                                        <td class=TD>{format!("{} <{}>", r.recipient, r.address)}</td>
                                        <td class=TD>{format!("{} · {}", r.reason, r.node_id)}</td>
                                        <td class=TD>
                                            {r.status.as_str()}
                                            {r.last_error.clone().map(|e| view! { <p class="text-xs text-red-800">{e}</p> })}
                                        </td>
                                        <td class=TD>{r.attempts.to_string()}</td>
                                        <td class=TD><When at=r.created_at.clone() /></td>
                                        <td class=TD>
                                            {retry.then(|| view! {
                                                <form method="post" action="/dashboard/outbox/retry">
                                                    <input type="hidden" name="id" value=id.to_string() />
                                                    <button type="submit" class=BUTTON_SECONDARY aria-label=format!("Retry message {id}")>"Retry"</button>
                                                </form>
                                            })}
                                        </td>
                                    </tr>
                                }
                            }).collect_view()}
                        </tbody>
                    </table>
                </div>
            }.into_any()
        }}
    }
    .into_any()
}
