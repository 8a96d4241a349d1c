//! Pages of the console: the inbox, sign-in, an interrupt and a token link.
//! Every form is a plain HTML form that posts to the server, so all of it
//! works without JavaScript; hydration adds a live refresh of the inbox.

use crate::api::{
    load_inbox, load_interrupt, load_token, InboxData, InboxQuery, InboxRow, InterruptData, LinkProblem, Me,
    TokenData,
};
use crate::form::{default_values, field_tree, SchemaForm, SchemaView};
use crate::when::{Said, When};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use tollgate_wire::present::KindDetails;
use tollgate_wire::{ApprovalAction, DeadlineState, InterruptKind, InterruptStatus};

pub(crate) const BUTTON: &str = "inline-flex items-center rounded-md bg-indigo-700 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-indigo-800 focus:outline-none focus:ring-2 focus:ring-indigo-500 focus:ring-offset-2";
pub(crate) const BUTTON_SECONDARY: &str = "inline-flex items-center rounded-md border border-slate-300 bg-white px-4 py-2 text-sm font-semibold text-slate-800 shadow-sm hover:bg-slate-50 focus:outline-none focus:ring-2 focus:ring-indigo-500 focus:ring-offset-2";
pub(crate) const BUTTON_DANGER: &str = "inline-flex items-center rounded-md bg-red-700 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-red-800 focus:outline-none focus:ring-2 focus:ring-red-500 focus:ring-offset-2";
pub(crate) const CARD: &str = "rounded-lg border border-slate-200 bg-white p-6 shadow-sm";
pub(crate) const LINK: &str = "font-medium text-indigo-800 underline decoration-indigo-300 underline-offset-2 hover:decoration-indigo-700 focus:outline-none focus:ring-2 focus:ring-indigo-500";
pub(crate) const SELECT: &str = "mt-1 block rounded-md border border-slate-300 bg-white px-3 py-2 text-sm text-slate-900 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500";

fn action_label(action: ApprovalAction) -> &'static str {
    match action {
        ApprovalAction::Accept => "Approve",
        ApprovalAction::Reject => "Reject",
        ApprovalAction::Refine => "Request changes",
        ApprovalAction::EditAccept => "Edit and approve",
        ApprovalAction::Ask => "Ask a question",
        ApprovalAction::Timeout => "Submit",
    }
}

pub(crate) fn kind_label(kind: InterruptKind) -> String {
    match kind {
        InterruptKind::Approval => "Approval",
        InterruptKind::Clarification => "Clarification",
        InterruptKind::ExternalEvent => "External event",
        InterruptKind::Custom => "Custom",
        InterruptKind::ConversationStart => "Conversation start",
        InterruptKind::ConversationExchange => "Conversation turn",
        InterruptKind::ConversationClose => "Conversation close",
        InterruptKind::LowConfidence => "Low confidence",
        InterruptKind::Credential => "Credential",
    }
    .to_string()
}

/// The bar above every signed-in page.
#[component]
pub(crate) fn Header(me: Option<Me>) -> impl IntoView {
    view! {
        <header class="border-b border-slate-200 bg-white">
            <div class="mx-auto flex max-w-5xl items-center justify-between px-6 py-3">
                <a href="/" class="text-lg font-semibold tracking-tight text-slate-900 focus:outline-none focus:ring-2 focus:ring-indigo-500">
                    "Tollgate"
                </a>
                {me.map(|me| view! {
                    <div class="flex items-center gap-4 text-sm">
                        <a href="/" class=LINK>"Inbox"</a>
                        <a href="/me/delegations" id="nav-delegations" class=LINK>"Delegations"</a>
                        {me.is_admin.then(|| view! { <a href="/dashboard" id="nav-dashboard" class=LINK>"Dashboard"</a> })}
                        <span id="signed-in-as" class="text-slate-700">{me.name}</span>
                        <form method="post" action="/signout">
                            <button type="submit" id="sign-out" class=BUTTON_SECONDARY>"Sign out"</button>
                        </form>
                    </div>
                })}
            </div>
        </header>
    }
}

pub(crate) fn error_box(message: String) -> AnyView {
    view! {
        <main class="mx-auto max-w-3xl p-8">
            <div role="alert" class="rounded-md border border-red-200 bg-red-50 p-4 text-red-800">{message}</div>
            <p class="mt-4"><a href="/" class=LINK>"Back to the inbox"</a></p>
        </main>
    }
    .into_any()
}

// ----- inbox ----------------------------------------------------------------------

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

// ----- sign-in ----------------------------------------------------------------------

#[component]
pub fn SignIn() -> impl IntoView {
    let query = use_query_map();
    let error = move || query.with(|q| q.get("error"));
    let retry = move || query.with(|q| q.get("retry").and_then(|r| r.parse::<u64>().ok()).unwrap_or(60));
    let next = move || {
        query.with(|q| {
            q.get("next")
                .filter(|n| n.starts_with('/') && !n.starts_with("//"))
                .unwrap_or_else(|| "/".into())
        })
    };
    let signed_out = move || query.with(|q| q.get("signed_out").is_some());
    view! {
        <Title text="Sign in · Tollgate" />
        <Header me=None />
        <main class="mx-auto max-w-md px-6 py-12">
            <h1 class="text-2xl font-semibold tracking-tight">"Sign in"</h1>
            <p class="mt-1 text-sm text-slate-600">"Sign in to decide the requests waiting for you."</p>
            {move || signed_out().then(|| view! { <p role="status" class="mt-4 rounded-md bg-slate-100 p-3 text-sm text-slate-800">"You are signed out."</p> })}
            {move || error().map(|e| {
                let text = match e.as_str() {
                    "throttled" => format!("Too many sign-in attempts. Try again in {} seconds.", retry()),
                    "busy" => "Too many sign-ins at once. Try again in a moment.".to_string(),
                    _ => "That name and password do not match.".to_string(),
                };
                view! { <p id="signin-error" role="alert" data-error=e class="mt-4 rounded-md border border-red-200 bg-red-50 p-3 text-sm text-red-800">{text}</p> }
            })}
            <form method="post" action="/signin" class=format!("mt-6 space-y-5 {CARD}")>
                <input type="hidden" name="next" value=next />
                <div>
                    <label for="signin-user" class="block text-sm font-medium text-slate-800">"User name"</label>
                    <input id="signin-user" name="user" type="text" autocomplete="username" required class="mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500" />
                </div>
                <div>
                    <label for="signin-password" class="block text-sm font-medium text-slate-800">"Password"</label>
                    <input id="signin-password" name="password" type="password" autocomplete="current-password" required class="mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500" />
                </div>
                <button type="submit" id="signin-submit" class=BUTTON>"Sign in"</button>
            </form>
        </main>
    }
}

// ----- one interrupt ----------------------------------------------------------------

#[component]
pub fn InterruptPage() -> impl IntoView {
    let params = use_params_map();
    let key = move || {
        params.with(|p| {
            (
                p.get("run_id").unwrap_or_default(),
                p.get("node_id").unwrap_or_default(),
            )
        })
    };
    let data = Resource::new(key, |(run, node)| load_interrupt(run, node));
    let query = use_query_map();
    let decided = move || query.with(|q| q.get("decided").is_some());
    view! {
        <Title text="Request · Tollgate" />
        {move || decided().then(|| view! {
            <p id="decided" role="status" class="mx-auto mt-6 max-w-3xl rounded-md border border-emerald-200 bg-emerald-50 p-4 text-emerald-900">
                "Your decision was recorded."
            </p>
        })}
        <Suspense fallback=|| view! { <p class="p-8">"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(d) => view! { <Header me=d.me.clone() /><InterruptDetail data=d /> }.into_any(),
                Err(e) => view! { <Header me=None />{error_box(e.to_string())} }.into_any(),
            })}
        </Suspense>
    }
}

#[component]
pub fn TokenPage() -> impl IntoView {
    let params = use_params_map();
    let token = move || params.with(|p| p.get("token").unwrap_or_default());
    let data = Resource::new(token, load_token);
    view! {
        <Title text="Request · Tollgate" />
        <Header me=None />
        <Suspense fallback=|| view! { <p class="p-8">"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(TokenData::Open(d)) => view! { <InterruptDetail data=*d /> }.into_any(),
                Ok(TokenData::Problem(p)) => view! { <Problem problem=p token=token() /> }.into_any(),
                Err(e) => error_box(e.to_string()),
            })}
        </Suspense>
    }
}

#[component]
fn Problem(problem: LinkProblem, token: String) -> impl IntoView {
    let ok = problem.status == 200;
    // A plain form: asking for a fresh link works without JavaScript. The
    // server sends it only to the link's own recipient.
    let fresh = problem.offers_fresh_link.then(|| {
        view! {
            <form method="post" action=format!("/t/{token}/fresh") class="mt-6">
                <button id="fresh-link" type="submit" class=BUTTON>"Send me a fresh link"</button>
            </form>
        }
    });
    let notice = problem.notice.map(|n| {
        view! { <p id="fresh-link-notice" role="status" class="mt-4 rounded bg-slate-100 p-3 text-slate-800">{n}</p> }
    });
    view! {
        <main class="mx-auto max-w-xl px-6 py-12">
            <div id="link-problem" data-status=problem.status.to_string() class=CARD>
                <h1 class=if ok { "text-2xl font-semibold text-emerald-800" } else { "text-2xl font-semibold text-slate-900" }>
                    {problem.title}
                </h1>
                <p class="mt-3 text-slate-700">{problem.message}</p>
                {notice}
                {fresh}
                <p class="mt-6"><a href="/signin" class=LINK>"Sign in to the console"</a></p>
            </div>
        </main>
    }
}

/// The label of a button that sets `member` to `value` (an approval's
/// `action`, an `outcome`).
fn choice_label(member: &str, value: &str) -> String {
    match (member, value) {
        ("action", a) => {
            ApprovalAction::parse(a).map_or_else(|| a.to_string(), |a| action_label(a).to_string())
        }
        ("outcome", "confirmed") => "Confirm".into(),
        ("outcome", "replaced") => "Replace".into(),
        ("outcome", "authorized") => "Authorized".into(),
        ("outcome", "declined") => "Declined".into(),
        (_, v) => v.to_string(),
    }
}

fn choice_class(value: &str, first: bool) -> &'static str {
    match value {
        "reject" | "declined" => BUTTON_DANGER,
        "accept" | "confirmed" | "authorized" => BUTTON,
        _ if first => BUTTON,
        _ => BUTTON_SECONDARY,
    }
}

/// The heading of the answer section and the label of its single submit button.
fn answer_words(kind: InterruptKind) -> (&'static str, &'static str) {
    match kind {
        InterruptKind::Approval | InterruptKind::LowConfidence => ("Your decision", "Submit"),
        InterruptKind::Clarification => ("Your answers", "Submit answers"),
        InterruptKind::ExternalEvent => ("Record the event", "Record the event"),
        InterruptKind::Credential => ("After connecting", "Submit"),
        InterruptKind::Custom => ("Your answer", "Submit answer"),
        InterruptKind::ConversationStart => ("Your reply", "Start the conversation"),
        InterruptKind::ConversationExchange => ("Your reply", "Send reply"),
        InterruptKind::ConversationClose => ("Your reply", "Close the conversation"),
    }
}

fn json_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// One row of a definition list.
fn dl_item(term: &'static str, value: AnyView) -> AnyView {
    view! {
        <div class="py-2 sm:grid sm:grid-cols-3 sm:gap-4">
            <dt class="text-sm font-medium text-slate-600">{term}</dt>
            <dd class="mt-1 text-sm text-slate-900 sm:col-span-2 sm:mt-0">{value}</dd>
        </div>
    }
    .into_any()
}

fn credential_reason(reason: &str) -> String {
    match reason {
        "missing" => "No account is connected yet.".into(),
        "expired" => "The connection has expired.".into(),
        "insufficient_scope" => "The connection needs more access.".into(),
        other => other.to_string(),
    }
}

/// What the interrupt asks, drawn for its kind. `answering`: the form
/// below is drawn (a clarification's questions are its labels then).
fn kind_section(data: &InterruptData, answering: bool) -> AnyView {
    let request = || {
        view! {
            <section class=CARD aria-labelledby="request-heading">
                <h2 id="request-heading" class="text-lg font-semibold">"Request"</h2>
                <div class="mt-3"><SchemaView value=data.request.clone() schema=data.request_schema.clone() /></div>
            </section>
        }
        .into_any()
    };
    // Bound inputs of other kinds, when there are any.
    let extra_request = || {
        data.request
            .as_object()
            .is_some_and(|m| !m.is_empty())
            .then(request)
    };
    match data.details.clone() {
        KindDetails::Approval => request(),
        KindDetails::Custom { custom_kind } => view! {
            <section class=CARD aria-labelledby="request-heading">
                <h2 id="request-heading" class="text-lg font-semibold">"Request"</h2>
                <p class="mt-1 text-sm text-slate-600">"Kind: "<code id="custom-kind" class="font-mono">{custom_kind}</code></p>
                <div class="mt-3"><SchemaView value=data.request.clone() schema=data.request_schema.clone() /></div>
            </section>
        }
        .into_any(),
        // The form's fields are labelled with the questions.
        KindDetails::Clarification { .. } if answering => extra_request().into_any(),
        KindDetails::Clarification { questions } => {
            let items = questions
                .into_iter()
                .map(|q| view! { <li data-question=q.id class="pl-1">{q.question}</li> })
                .collect_view();
            view! {
                <section class=CARD aria-labelledby="questions-heading">
                    <h2 id="questions-heading" class="text-lg font-semibold">"Questions"</h2>
                    <ol id="questions" class="mt-3 list-decimal space-y-1 pl-5 text-slate-900">{items}</ol>
                </section>
                {extra_request()}
            }
            .into_any()
        }
        KindDetails::ExternalEvent { event_type, correlation } => {
            let rows = correlation
                .into_iter()
                .map(|(k, v)| {
                    let name = k.clone();
                    view! {
                        <div class="py-2 sm:grid sm:grid-cols-3 sm:gap-4" data-correlation=name>
                            <dt class="text-sm font-medium text-slate-600"><code class="font-mono">{k}</code></dt>
                            <dd class="mt-1 text-sm text-slate-900 sm:col-span-2 sm:mt-0">{json_text(&v)}</dd>
                        </div>
                    }
                })
                .collect_view();
            let note = if answering {
                "The run goes on when the event arrives. If it happened and did not reach Tollgate, you may record it below."
            } else {
                "The run goes on when the event arrives."
            };
            view! {
                <section class=CARD aria-labelledby="waiting-heading">
                    <h2 id="waiting-heading" class="text-lg font-semibold">"Waiting for an event"</h2>
                    <dl id="waiting-for" class="mt-3 divide-y divide-slate-100">
                        {dl_item("Event", view! { <code id="event-type" class="font-mono">{event_type}</code> }.into_any())}
                        {rows}
                    </dl>
                    <p class="mt-3 text-sm text-slate-600">{note}</p>
                </section>
                {extra_request()}
            }
            .into_any()
        }
        KindDetails::LowConfidence { agent_id, threshold, observed, decision } => {
            let decision = decision.map_or_else(|| "None given".to_string(), |d| json_text(&d));
            view! {
                <section class=CARD aria-labelledby="agent-heading">
                    <h2 id="agent-heading" class="text-lg font-semibold">"The agent's decision"</h2>
                    <p class="mt-1 text-sm text-slate-600">"The agent was less sure than its threshold: confirm its decision or replace it."</p>
                    <dl id="agent-decision" class="mt-3 divide-y divide-slate-100">
                        {dl_item("Agent", view! { <code id="agent-id" class="font-mono">{agent_id}</code> }.into_any())}
                        {dl_item("Proposed decision", view! { <span id="agent-proposal" class="font-semibold">{decision}</span> }.into_any())}
                        {dl_item("Confidence", view! { <span id="agent-confidence">{observed.map_or_else(|| "—".to_string(), percent)}</span> }.into_any())}
                        {dl_item("Threshold", view! { <span id="agent-threshold">{threshold.map_or_else(|| "—".to_string(), percent)}</span> }.into_any())}
                    </dl>
                </section>
            }
            .into_any()
        }
        KindDetails::Credential { provider, scopes, reason, connect_url } => {
            let scopes = if scopes.is_empty() {
                view! { <span>"None named"</span> }.into_any()
            } else {
                view! {
                    <ul id="credential-scopes" class="flex flex-wrap gap-2">
                        {scopes.into_iter().map(|s| view! { <li><code class="rounded bg-slate-100 px-1.5 py-0.5 font-mono text-xs">{s}</code></li> }).collect_view()}
                    </ul>
                }
                .into_any()
            };
            let link = match connect_url.filter(|u| u.starts_with("https://")) {
                Some(url) => {
                    let text = format!("Open the {provider} connect page");
                    view! {
                        <p class="mt-4"><a id="connect-link" href=url rel="noopener noreferrer" class=LINK>{text}</a></p>
                        <p class="mt-2 text-sm text-slate-600">"Connect the account on that page, then say here whether you authorized it. No password or token is entered in Tollgate."</p>
                    }
                    .into_any()
                }
                None => view! { <p class="mt-4 text-sm text-slate-600">"No connect page was given."</p> }.into_any(),
            };
            view! {
                <section class=CARD aria-labelledby="credential-heading">
                    <h2 id="credential-heading" class="text-lg font-semibold">"Connect an account"</h2>
                    <dl id="credential" class="mt-3 divide-y divide-slate-100">
                        {dl_item("Provider", view! { <span id="credential-provider" class="font-semibold">{provider.clone()}</span> }.into_any())}
                        {dl_item("Access asked for", scopes)}
                        {dl_item("Why", view! { <span id="credential-reason">{reason.as_deref().map(credential_reason).unwrap_or_else(|| "Not given.".into())}</span> }.into_any())}
                    </dl>
                    {link}
                </section>
            }
            .into_any()
        }
        KindDetails::Conversation { conversation_id, title, prompt, reason } => {
            let thread = data.thread.clone();
            let title = thread.as_ref().and_then(|t| t.title.clone()).or(title);
            let entries = thread.as_ref().map(|t| t.entries.clone()).unwrap_or_default();
            let closed = thread.as_ref().and_then(|t| t.closed.clone());
            let items = entries
                .into_iter()
                .map(|e| {
                    let label = match e.kind {
                        InterruptKind::ConversationStart => "Opened".to_string(),
                        InterruptKind::ConversationClose => "Closing".to_string(),
                        _ => format!("Turn {}", e.turn_index.map_or(1, |t| t.saturating_add(1))),
                    };
                    let answer = match (&e.answer, e.ended_without_answer, &e.answered_at) {
                        (Some(a), _, _) => view! {
                            <div class="mt-2 rounded-md border border-indigo-100 bg-indigo-50 p-3" data-answer="">
                                <p class="text-xs font-semibold uppercase tracking-wide text-indigo-900">"Answer"</p>
                                <SchemaView value=a.clone() schema=e.answer_schema.clone() />
                            </div>
                        }
                        .into_any(),
                        (None, true, _) => view! { <p class="mt-2 text-sm text-slate-600">"Ended without an answer."</p> }.into_any(),
                        (None, false, Some(_)) => view! { <p class="mt-2 text-sm text-slate-600">"Acknowledged."</p> }.into_any(),
                        (None, false, None) if e.current => view! { <p class="mt-2 text-sm font-medium text-amber-800">"Waiting for your reply."</p> }.into_any(),
                        (None, false, None) => view! { <p class="mt-2 text-sm text-slate-600">"Waiting."</p> }.into_any(),
                    };
                    let current = e.current.then_some("step");
                    let class = if e.current {
                        "rounded-md border-2 border-indigo-400 p-3"
                    } else {
                        "rounded-md border border-slate-200 p-3"
                    };
                    view! {
                        <li class=class aria-current=current data-node=e.node_id.clone() data-kind=e.kind.as_str()>
                            <p class="text-xs font-semibold uppercase tracking-wide text-slate-600">
                                {label}" · "<When at=e.asked_at.clone() />
                            </p>
                            {e.prompt.map(|p| view! { <p class="mt-1 whitespace-pre-wrap text-slate-900" data-prompt="">{p}</p> })}
                            {answer}
                        </li>
                    }
                })
                .collect_view();
            let fallback = (thread.is_none()).then(|| prompt.map(|p| view! { <p class="mt-3 whitespace-pre-wrap">{p}</p> }));
            let closing = reason.map(|r| view! { <p class="mt-3 text-sm text-slate-700">{format!("Closing because: {r}")}</p> });
            let closed = closed.map(|r| {
                let text = match r {
                    Some(r) => format!("The conversation is closed ({r})."),
                    None => "The conversation is closed.".to_string(),
                };
                view! { <p id="thread-closed" class="mt-3 text-sm text-slate-700">{text}</p> }
            });
            view! {
                <section class=CARD aria-labelledby="thread-heading">
                    <h2 id="thread-heading" class="text-lg font-semibold">{title.unwrap_or_else(|| "Conversation".into())}</h2>
                    <p class="mt-1 text-sm text-slate-600">"Conversation "<code id="conversation-id" class="font-mono">{conversation_id}</code></p>
                    <ol id="thread" class="mt-4 space-y-3" aria-label="The conversation so far">{items}</ol>
                    {fallback}
                    {closing}
                    {closed}
                </section>
                {extra_request()}
            }
            .into_any()
        }
    }
}

#[component]
fn InterruptDetail(data: InterruptData) -> impl IntoView {
    let is_approval = data.kind == InterruptKind::Approval;
    let posted = data.posted.clone().unwrap_or_default();
    let done = posted.done;
    let tree = field_tree(&data.answer_form.schema);
    let choice = data.answer_form.choice.clone();
    let answering = data.status == InterruptStatus::Pending && data.may_decide;
    let (answer_heading, submit_label) = answer_words(data.kind);
    let deadline = data.deadline.clone().map(|d| {
        let class = match data.deadline_state {
            DeadlineState::Overdue => "font-semibold text-red-800",
            DeadlineState::Soon => "font-semibold text-amber-800",
            DeadlineState::Ok | DeadlineState::None => "text-slate-700",
        };
        view! { <p id="deadline" class=format!("text-sm {class}") data-deadline=data.deadline_state.as_str()><When at=d said=Said::Deadline /></p> }
    });
    let quorum = data.required_approvals.map(|n| {
        let a = data.accepts.unwrap_or(0);
        view! {
            <p id="quorum" class="text-sm font-medium text-slate-800">{format!("{a} of {n} approvals")}</p>
            <progress class="mt-1 w-full" max=n.to_string() value=a.to_string() aria-label="Approvals so far">{format!("{a} of {n}")}</progress>
        }
    });
    let votes = data.votes.clone();
    let still = data.still_to_vote.clone();
    let form = if data.status != InterruptStatus::Pending {
        view! { <p id="closed" class="text-slate-700">{format!("This request is {}.", data.status)}</p> }
            .into_any()
    } else if !data.may_decide {
        view! { <p id="not-eligible" class="text-slate-700">{data.why_not.clone().unwrap_or_else(|| "You may not decide this request.".into())}</p> }.into_any()
    } else {
        let in_place = data.in_place_of.clone().map(|name| view! {
            <p id="in-place-of" class="mb-4 rounded-md border border-indigo-200 bg-indigo-50 p-3 text-sm text-indigo-900">
                {format!("You decide in {name}'s place: {name} handed this to you. Your vote counts as {name}'s, and {name}'s own vote would replace it.")}
            </p>
        });
        let form = match tree {
            Err(e) => {
                view! { <p role="alert" class="text-red-800">{format!("This form cannot be drawn: {e}")}</p> }
                    .into_any()
            }
            Ok(tree) => {
                let values = if posted.values.is_empty() {
                    default_values(&tree)
                } else {
                    posted.values.clone()
                };
                let errors = posted.errors.clone();
                let options = choice.as_ref().map(|c| c.options.clone()).unwrap_or_default();
                let buttons = match &choice {
                    Some(c) => c.options.iter().enumerate().map(|(i, o)| {
                        let id = format!("{}-{o}", c.member);
                        view! { <button type="submit" name=c.member.clone() value=o.clone() id=id class=choice_class(o, i == 0)>{choice_label(&c.member, o)}</button> }
                    }).collect_view().into_any(),
                    None => view! { <button type="submit" id="action-submit" class=BUTTON>{submit_label}</button> }
                        .into_any(),
                };
                let has = |o: &str| options.iter().any(|x| x == o);
                let hint = if is_approval && (has("refine") || has("edit-accept") || has("ask")) {
                    Some("Each button sends the comment and only its own part of the form: “Request changes” the changes asked for, “Edit and approve” the edited data, “Ask a question” the question.")
                } else if data.kind == InterruptKind::LowConfidence {
                    Some("“Confirm” goes on with the agent's decision; “Replace” goes on with the decision chosen above instead.")
                } else if data.kind == InterruptKind::Credential {
                    Some("“Authorized” once you connected the account on the provider's page; “Declined” if you will not.")
                } else {
                    None
                };
                let hint = hint.map(|h| view! { <p class="text-sm text-slate-600">{h}</p> });
                view! {
                    <form method="post" action=data.action_url.clone() id="decide-form" class="space-y-6" novalidate>
                        <SchemaForm tree=tree values=values errors=errors id_prefix="answer" />
                        {hint}
                        <div class="flex flex-wrap gap-3">{buttons}</div>
                    </form>
                }.into_any()
            }
        };
        view! { {in_place}{form} }.into_any()
    };
    let kind = kind_section(&data, answering);
    view! {
        <main class="mx-auto max-w-3xl space-y-6 px-6 py-8">
            <div>
                <p class="text-sm font-medium text-slate-600">
                    <span id="interrupt-kind" data-kind=data.kind.as_str()>{kind_label(data.kind)}</span>
                    {format!(" · {}", data.workflow_id)}
                </p>
                <h1 id="interrupt-title" class="mt-1 text-2xl font-semibold tracking-tight">{data.title.clone()}</h1>
                {data.description.clone().map(|d| view! { <p class="mt-2 text-slate-700">{d}</p> })}
                <div class="mt-3 flex flex-wrap gap-x-6 gap-y-1 text-sm text-slate-600">
                    <p>"Raised: "<When at=data.created_at.clone() /></p>
                    {deadline}
                </div>
            </div>
            {done.then(|| view! { <p id="decided" role="status" class="rounded-md border border-emerald-200 bg-emerald-50 p-4 text-emerald-900">{posted.message.clone().unwrap_or_else(|| "Your decision was recorded.".into())}</p> })}
            {(!done).then(|| posted.message.clone().map(|m| view! { <p id="form-message" role="alert" class="rounded-md border border-red-200 bg-red-50 p-4 text-red-800">{m}</p> }))}
            {kind}
            {is_approval.then(|| view! {
                <section class=CARD aria-labelledby="votes-heading">
                    <h2 id="votes-heading" class="text-lg font-semibold">"Votes"</h2>
                    <div class="mt-3">{quorum}</div>
                    {if votes.is_empty() {
                        view! { <p class="mt-3 text-sm text-slate-600">"No votes yet."</p> }.into_any()
                    } else {
                        view! {
                            <ul id="votes" class="mt-3 divide-y divide-slate-100 text-sm">
                                {votes.into_iter().map(|v| view! {
                                    <li class="py-2">
                                        <span class="font-medium">{v.principal.clone()}</span>
                                        {v.cast_by.clone().map(|by| view! { <span class="vote-by text-slate-600">{format!(" (by {by}, in {}'s place)", v.principal)}</span> })}
                                        " — "{v.action.as_str()}
                                        {(!v.counted).then_some(" (replaced)")}
                                        " · "<When at=v.decided_at.clone() />
                                    </li>
                                }).collect_view()}
                            </ul>
                        }.into_any()
                    }}
                    <p id="still-to-vote" class="mt-3 text-sm text-slate-700">
                        {if still.is_empty() { "Nobody else may vote.".to_string() } else { format!("May still vote: {}", still.join(", ")) }}
                    </p>
                </section>
            })}
            <section class=CARD aria-labelledby="answer-heading">
                <h2 id="answer-heading" class="text-lg font-semibold">{answer_heading}</h2>
                <div class="mt-4">{form}</div>
            </section>
        </main>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <main class="mx-auto max-w-3xl p-8">
            <h1 class="text-2xl font-semibold">"Page not found"</h1>
            <a href="/" class=LINK>"Back to the start"</a>
        </main>
    }
}
