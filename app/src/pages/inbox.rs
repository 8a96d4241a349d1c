//! The inbox: pending interrupts by rule group, filters and pages, a live
//! refresh once hydrated, and the quick decisions its rows offer.

use super::{error_box, kind_label, Header, BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, LINK, SELECT};
use crate::api::{load_inbox, InboxData, InboxQuery, InboxRow};
use crate::when::{Said, When};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use tollgate_wire::{DeadlineState, InterruptKind};

fn query_from(map: &leptos_router::params::ParamsMap) -> InboxQuery {
    // Links made before `due` said `overdue=1`.
    let overdue = map
        .get("overdue")
        .is_some_and(|v| v == "1" || v == "on" || v == "true");
    InboxQuery {
        q: map.get("q").filter(|s| !s.trim().is_empty()),
        kind: map.get("kind").filter(|s| !s.is_empty()),
        workflow: map.get("workflow").filter(|s| !s.is_empty()),
        due: map
            .get("due")
            .filter(|s| !s.is_empty())
            .or_else(|| overdue.then(|| "overdue".to_string())),
        sort: map.get("sort").filter(|s| !s.is_empty()),
        for_person: map.get("for").filter(|s| !s.is_empty()),
        page: map.get("page").and_then(|p| p.parse().ok()).unwrap_or(1),
    }
}

/// Percent-encodes a query value (search text may hold anything).
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for b in value.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The query string of an inbox address (without `?`; empty for the plain inbox).
fn inbox_query(q: &InboxQuery, page: usize) -> String {
    let mut parts = Vec::new();
    for (name, value) in [
        ("q", &q.q),
        ("kind", &q.kind),
        ("workflow", &q.workflow),
        ("due", &q.due),
        ("sort", &q.sort),
        ("for", &q.for_person),
    ] {
        if let Some(v) = value {
            parts.push(format!("{name}={}", encode(v)));
        }
    }
    if page > 1 {
        parts.push(format!("page={page}"));
    }
    parts.join("&")
}

fn inbox_href(q: &InboxQuery, page: usize) -> String {
    match inbox_query(q, page) {
        s if s.is_empty() => "/".into(),
        s => format!("/?{s}"),
    }
}

#[component]
pub fn Inbox() -> impl IntoView {
    let query = use_query_map();
    let q = Memo::new(move |_| query.with(query_from));
    let inbox = Resource::new(move || q.get(), load_inbox);
    // Whether the live stream is open (browser tests wait for it).
    let (live, set_live) = signal(false);
    #[cfg(feature = "hydrate")]
    follow_inbox(inbox, set_live);
    #[cfg(not(feature = "hydrate"))]
    let _ = set_live;
    view! {
        <Title text="Inbox · Tollgate" />
        // A transition, not a suspense: a live refetch keeps the rows on the
        // screen until the new ones arrive.
        <div id="inbox-live" data-live=move || if live.get() { "open" } else { "closed" }>
            <Transition fallback=|| view! { <p class="p-8">"Loading…"</p> }>
                {move || inbox.get().map(|r| match r {
                    Ok(data) => view! { <InboxView data=data query=q.get_untracked() on_refresh=move || inbox.refetch() /> }.into_any(),
                    Err(e) => error_box(e.to_string()),
                })}
            </Transition>
        </div>
    }
}

/// Keeps a hydrated inbox up to date: once the first data is here, an
/// `EventSource` on `/inbox/stream?since=<change count>` (the server decides
/// which changes concern this person) refetches the inbox on every `inbox`
/// event and after a reconnect; it is closed when the inbox goes away.
/// Without JavaScript none of this runs and the Refresh link reloads the page.
#[cfg(feature = "hydrate")]
fn follow_inbox(inbox: Resource<Result<InboxData, ServerFnError>>, set_live: WriteSignal<bool>) {
    use send_wrapper::SendWrapper;
    use std::cell::{Cell, RefCell};
    use std::rc::Rc;
    use wasm_bindgen::{closure::Closure, JsCast};

    type Listener = Closure<dyn Fn()>;
    let slot: Rc<RefCell<Option<(web_sys::EventSource, [Listener; 3])>>> = Rc::default();
    let held = SendWrapper::new(slot.clone());
    on_cleanup(move || {
        if let Some((source, _)) = held.take().borrow_mut().take() {
            source.close();
        }
    });
    Effect::new(move |_| {
        let Some(Ok(data)) = inbox.get() else { return };
        if slot.borrow().is_some() {
            return;
        }
        let url = format!("/inbox/stream?since={}", data.changes);
        let Ok(source) = web_sys::EventSource::new(&url) else {
            return;
        };
        let on_change = Listener::new(move || inbox.refetch());
        let _ = source.add_event_listener_with_callback("inbox", on_change.as_ref().unchecked_ref());
        // The first open needs no refetch (`since` covers it); a reopen
        // after a lost connection may have missed events.
        let opened = Cell::new(0u32);
        let on_open = Listener::new(move || {
            opened.set(opened.get() + 1);
            set_live.set(true);
            if opened.get() > 1 {
                inbox.refetch();
            }
        });
        source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
        let on_error = Listener::new(move || set_live.set(false));
        source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
        *slot.borrow_mut() = Some((source, [on_change, on_open, on_error]));
    });
}

#[component]
fn InboxView(
    data: InboxData,
    query: InboxQuery,
    on_refresh: impl Fn() + Clone + Send + Sync + 'static,
) -> impl IntoView {
    let here = inbox_href(&query, data.page);
    let kinds = data.kinds.clone();
    let workflows = data.workflows.clone();
    let sort = query.sort.clone().unwrap_or_else(|| "newest".into());
    let prev = (data.page > 1).then(|| inbox_href(&query, data.page - 1));
    let next = (data.page < data.pages).then(|| inbox_href(&query, data.page + 1));
    let rows = data.rows.clone();
    let empty = rows.is_empty();
    let bulk = data.bulk.clone().unwrap_or_default();
    let results = bulk.results.clone();
    // Back to this same inbox (filters, page) after the post.
    let decide_url = match inbox_query(&query, data.page) {
        s if s.is_empty() => "/inbox/decide".to_string(),
        s => format!("/inbox/decide?{s}"),
    };
    let any_approval = rows.iter().any(|r| r.item.kind == InterruptKind::Approval);
    let whose = data.on_behalf_of.clone();
    let waiting = match &whose {
        Some((_, name)) => format!(
            "{} waiting for {name}, which you decide in their place",
            data.total
        ),
        None => format!("{} waiting for you", data.total),
    };
    let delegations = delegated_nav(&data, &query);
    let for_field = query
        .for_person
        .clone()
        .map(|p| view! { <input type="hidden" name="for" value=p /> });
    view! {
        <Header me=Some(data.me.clone()) />
        <main class="mx-auto max-w-5xl px-6 py-8">
            <div class="flex flex-wrap items-end justify-between gap-4">
                <div>
                    <h1 class="text-2xl font-semibold tracking-tight">
                        {match &whose { Some((_, name)) => format!("Inbox of {name}"), None => "Inbox".to_string() }}
                    </h1>
                    <p id="inbox-count" class="mt-1 text-sm text-slate-600" aria-live="polite">{waiting}</p>
                </div>
                <a
                    id="refresh-inbox"
                    href=here
                    class=BUTTON_SECONDARY
                    on:click=move |ev| {
                        ev.prevent_default();
                        on_refresh();
                    }
                >
                    "Refresh"
                </a>
            </div>
            {delegations}
            <form method="get" action="/" class="mt-6 flex flex-wrap items-end gap-4 rounded-lg border border-slate-200 bg-white p-4" aria-label="Filter the inbox">
                {for_field}
                <div>
                    <label for="filter-q" class="block text-sm font-medium text-slate-800">"Search"</label>
                    <input id="filter-q" type="search" name="q" maxlength="200" value=query.q.clone().unwrap_or_default() placeholder="Title or request data" class=SELECT />
                </div>
                <div>
                    <label for="filter-kind" class="block text-sm font-medium text-slate-800">"Kind"</label>
                    <select id="filter-kind" name="kind" class=SELECT>
                        <option value="" selected=query.kind.is_none()>"All kinds"</option>
                        {kinds.into_iter().map(|k| {
                            let selected = query.kind.as_deref() == Some(k.as_str());
                            view! { <option value=k.as_str() selected=selected>{kind_label(k)}</option> }
                        }).collect_view()}
                    </select>
                </div>
                <div>
                    <label for="filter-workflow" class="block text-sm font-medium text-slate-800">"Workflow"</label>
                    <select id="filter-workflow" name="workflow" class=SELECT>
                        <option value="" selected=query.workflow.is_none()>"All workflows"</option>
                        {workflows.into_iter().map(|w| {
                            let selected = query.workflow.as_deref() == Some(w.as_str());
                            view! { <option value=w.clone() selected=selected>{w.clone()}</option> }
                        }).collect_view()}
                    </select>
                </div>
                <div>
                    <label for="filter-sort" class="block text-sm font-medium text-slate-800">"Sort by"</label>
                    <select id="filter-sort" name="sort" class=SELECT>
                        <option value="newest" selected=sort == "newest">"Newest first"</option>
                        <option value="oldest" selected=sort == "oldest">"Oldest first"</option>
                        <option value="deadline" selected=sort == "deadline">"Deadline first"</option>
                    </select>
                </div>
                <div>
                    <label for="filter-due" class="block text-sm font-medium text-slate-800">"Deadline"</label>
                    <select id="filter-due" name="due" class=SELECT>
                        {[("", "Any deadline"), ("overdue", "Overdue"), ("day", "Due within a day"), ("week", "Due within a week"), ("never", "No deadline")].into_iter().map(|(v, label)| {
                            let selected = query.due.as_deref().unwrap_or("") == v;
                            view! { <option value=v selected=selected>{label}</option> }
                        }).collect_view()}
                    </select>
                </div>
                <button type="submit" id="apply-filters" class=BUTTON>"Apply"</button>
            </form>
            {bulk.error.clone().map(|e| view! { <p id="bulk-error" role="alert" class="mt-6 rounded-md border border-red-200 bg-red-50 p-4 text-red-800">{e}</p> })}
            {(!results.is_empty()).then(|| {
                let decided = results.iter().filter(|r| r.decided).count();
                let refused = results.len() - decided;
                view! {
                    <section id="bulk-results" role="status" class="mt-6 rounded-lg border border-slate-200 bg-white p-4" aria-labelledby="bulk-heading">
                        <h2 id="bulk-heading" class="text-base font-semibold">{format!("{decided} decided, {refused} refused")}</h2>
                        <ul class="mt-2 space-y-1 text-sm">
                            {results.iter().map(|r| {
                                let (mark, class) = if r.decided { ("Decided", "font-semibold text-emerald-800") } else { ("Refused", "font-semibold text-red-800") };
                                let what = r.title.clone().unwrap_or_else(|| r.pick.clone());
                                view! {
                                    <li data-pick=r.pick.clone() data-decided=if r.decided { "true" } else { "false" }>
                                        <span class=class>{mark}</span>" · "<span class="font-medium">{what}</span>" — "{r.message.clone()}
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    </section>
                }
            })}
            {if empty {
                view! { <p id="inbox-empty" class="mt-8 rounded-lg border border-dashed border-slate-300 p-8 text-center text-slate-600">"Nothing is waiting for you."</p> }.into_any()
            } else {
                view! {
                    <form method="post" action=decide_url id="bulk-form" aria-label="Decide selected approvals">
                    {any_approval.then(|| view! {
                        <div class="mt-6 flex flex-wrap items-center gap-3">
                            <button type="submit" name="action" value="accept" id="bulk-accept" class=BUTTON>"Approve selected"</button>
                            <button type="submit" name="action" value="reject" id="bulk-reject" class=BUTTON_DANGER>"Reject selected"</button>
                            <p class="text-sm text-slate-600">"For approvals that need no answer; the others are refused and stay here."</p>
                        </div>
                    })}
                    <div class="mt-6 overflow-x-auto rounded-lg border border-slate-200 bg-white shadow-sm">
                        <table id="inbox" class="min-w-full divide-y divide-slate-200 text-sm">
                            <caption class="sr-only">"Interrupts waiting for your decision"</caption>
                            <thead class="bg-slate-50 text-left text-slate-700">
                                <tr>
                                    <th scope="col" class="px-4 py-3 font-semibold"><span class="sr-only">"Select"</span></th>
                                    <th scope="col" class="px-4 py-3 font-semibold">"Request"</th>
                                    <th scope="col" class="px-4 py-3 font-semibold">"Kind"</th>
                                    <th scope="col" class="px-4 py-3 font-semibold">"Workflow"</th>
                                    <th scope="col" class="px-4 py-3 font-semibold">"Raised"</th>
                                    <th scope="col" class="px-4 py-3 font-semibold">"Deadline"</th>
                                    <th scope="col" class="px-4 py-3 font-semibold">"Approvals"</th>
                                </tr>
                            </thead>
                            <tbody class="divide-y divide-slate-100">
                                {rows.into_iter().map(|r| {
                                    let pick = pick_of(&r);
                                    let refused = results.iter().find(|b| !b.decided && b.pick == pick).map(|b| b.message.clone());
                                    view! { <InboxRowView row=r pick=pick refused=refused /> }
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                    </form>
                }.into_any()
            }}
            <nav class="mt-4 flex items-center justify-between text-sm" aria-label="Pages">
                <span id="inbox-page">{format!("Page {} of {}", data.page, data.pages)}</span>
                <span class="flex gap-4">
                    {prev.map(|h| view! { <a href=h rel="prev" class=LINK>"Previous page"</a> })}
                    {next.map(|h| view! { <a href=h rel="next" class=LINK>"Next page"</a> })}
                </span>
            </nav>
        </main>
    }
}

/// Whose decisions the inbox shows (the viewer's own, or a delegator's who
/// handed theirs to the viewer) and the requests reassigned to the viewer;
/// nothing when there are none.
fn delegated_nav(data: &InboxData, query: &InboxQuery) -> Option<AnyView> {
    if data.delegated.is_empty() {
        return None;
    }
    let current = query.for_person.clone();
    let people: Vec<_> = data
        .delegated
        .iter()
        .filter(|d| d.interrupt.is_none())
        .cloned()
        .collect();
    let reassigned: Vec<_> = data
        .delegated
        .iter()
        .filter_map(|d| d.interrupt.clone().map(|i| (d.delegator_name.clone(), i)))
        .collect();
    let tab = |href: String, label: String, on: bool, id: String| {
        let class = if on {
            "rounded-md bg-indigo-700 px-3 py-1 font-semibold text-white"
        } else {
            "rounded-md border border-slate-300 bg-white px-3 py-1 font-medium text-slate-800 hover:bg-slate-50"
        };
        view! { <li><a id=id href=href class=class aria-current=on.then_some("page")>{label}</a></li> }
    };
    Some(view! {
        <section id="delegated" class="mt-6 rounded-lg border border-indigo-200 bg-indigo-50 p-4" aria-labelledby="delegated-heading">
            <h2 id="delegated-heading" class="text-base font-semibold text-indigo-950">"Decisions handed to you"</h2>
            {(!people.is_empty()).then(|| view! {
                <ul class="mt-2 flex flex-wrap gap-2 text-sm" aria-label="Whose inbox">
                    {tab("/".into(), "Your own".into(), current.is_none(), "for-me".into())}
                    {people.into_iter().map(|d| {
                        let until = d.ends_at.clone().map(|e| format!(" (until {})", e.get(..10).unwrap_or(&e))).unwrap_or_default();
                        let on = current.as_deref() == Some(d.delegator.as_str());
                        tab(format!("/?for={}", encode(&d.delegator)), format!("{}{until}", d.delegator_name), on, format!("for-{}", d.delegator))
                    }).collect_view()}
                </ul>
            })}
            {(!reassigned.is_empty()).then(|| view! {
                <ul id="reassigned" class="mt-3 space-y-1 text-sm">
                    {reassigned.into_iter().map(|(from, i)| {
                        let href = format!("/runs/{}/interrupts/{}", tollgate_wire::ids::encode_path_id(&i.run_id), i.node_id);
                        view! { <li>"Reassigned to you in "{from.clone()}"'s place: "<a href=href class=LINK>{i.title.clone()}</a></li> }
                    }).collect_view()}
                </ul>
            })}
            <p class="mt-2 text-sm text-indigo-900"><a href="/me/delegations" class=LINK>"Delegations"</a></p>
        </section>
    }.into_any())
}

/// A row's checkbox value: its link's run and node (`tollgate_wire::inbox::pick_value`).
fn pick_of(row: &InboxRow) -> String {
    let run = row
        .href
        .strip_prefix("/runs/")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_default();
    tollgate_wire::inbox::pick_value(run, &row.item.node_id)
}

#[component]
fn InboxRowView(row: InboxRow, pick: String, refused: Option<String>) -> impl IntoView {
    let InboxRow { href, item: row } = row;
    // Only approvals are decided together; other kinds need their own form.
    let select = (row.kind == InterruptKind::Approval).then(|| {
        let label = format!("Select “{}”", row.title);
        view! { <input type="checkbox" name="pick" value=pick class="h-4 w-4 rounded border-slate-400 text-indigo-700 focus:ring-indigo-500" aria-label=label /> }
    });
    let refused = refused.map(|m| view! { <p class="mt-0.5 text-xs font-semibold text-red-800" data-refused="">{format!("Not decided: {m}")}</p> });
    let deadline = match &row.deadline {
        Some(d) => {
            let class = match row.deadline_state {
                DeadlineState::Overdue => "font-semibold text-red-800",
                DeadlineState::Soon => "font-semibold text-amber-800",
                DeadlineState::Ok | DeadlineState::None => "text-slate-700",
            };
            view! { <When at=d.clone() said=Said::Deadline class=class state=row.deadline_state.as_str() /> }
                .into_any()
        }
        None => view! { <span class="text-slate-500">"None"</span> }.into_any(),
    };
    let quorum = match (row.accepts, row.required_approvals) {
        (Some(a), Some(n)) => format!("{a} of {n}"),
        _ => "—".into(),
    };
    let mine = row.my_vote.map(|v| view! { <span class="ml-2 rounded bg-slate-100 px-1.5 py-0.5 text-xs text-slate-700">{format!("you: {v}")}</span> });
    view! {
        <tr class="hover:bg-slate-50" data-run=row.run_id.clone() data-node=row.node_id.clone()>
            <td class="px-4 py-3">{select}</td>
            <td class="px-4 py-3">
                <a href=href class=LINK>{row.title.clone()}</a>
                {row.summary.clone().map(|s| view! { <p class="mt-0.5 text-xs text-slate-600" data-summary="">{s}</p> })}
                {refused}
            </td>
            <td class="px-4 py-3 text-slate-700" data-kind=row.kind.as_str()>{kind_label(row.kind)}</td>
            <td class="px-4 py-3 text-slate-700">{row.workflow_id.clone()}</td>
            <td class="px-4 py-3 text-slate-700"><When at=row.created_at.clone() /></td>
            <td class="px-4 py-3">{deadline}</td>
            <td class="px-4 py-3 text-slate-700" data-quorum="">{quorum}{mine}</td>
        </tr>
    }
}
