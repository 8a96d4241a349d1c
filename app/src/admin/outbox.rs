//! The outbox: mail and callbacks waiting, sent or failed, and their retries.

use super::api::*;
use super::{flash_view, thead, Frame, TABLE, TD};
use crate::pages::{error_box, BUTTON, BUTTON_SECONDARY, SELECT};
use crate::when::When;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;
use tollgate_wire::OutboxStatus;

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
