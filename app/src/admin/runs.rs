//! Runs: the list with its filters, and one run's timeline with its
//! pending interrupt (reassign, cancel).

use super::api::{self, *};
use super::confirm;
use super::{flash_view, status_badge, thead, Frame, TABLE, TD};
use crate::pages::{error_box, BUTTON, BUTTON_SECONDARY, CARD, LINK, SELECT};
use crate::when::When;
use leptos::prelude::*;
use leptos_router::hooks::{use_params_map, use_query_map};

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
