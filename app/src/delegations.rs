//! The delegations page (`/me/delegations`): a person hands their decisions to
//! someone else of the tenant for a while (out of office), sees what they
//! gave and were given, and ends a delegation early. The forms post to the
//! server (`server/src/delegations.rs`), which redirects back here with a
//! one-time message, so the page works without JavaScript.

use crate::admin::api::Flash;
use crate::admin::flash_view;
use crate::api::Me;
use crate::pages::{Header, BUTTON, BUTTON_SECONDARY, CARD, LINK, SELECT};
use crate::when::When;
use leptos::prelude::*;
use leptos_meta::Title;
use serde::{Deserialize, Serialize};
use tollgate_wire::delegation::{Delegation, DelegationState};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DelegationsData {
    pub me: Me,
    pub delegations: Vec<Delegation>,
    /// Whom decisions can be handed to: (id, name).
    pub people: Vec<(String, String)>,
    pub flash: Option<Flash>,
}

#[server]
pub async fn load_delegations() -> Result<DelegationsData, ServerFnError> {
    use crate::api::{fail as err, me_of, require_actor};
    let engine = expect_context::<tollgate::Engine>();
    let actor = require_actor()?;
    Ok(DelegationsData {
        me: me_of(&actor.principal),
        delegations: engine.delegations(&actor, false).await.map_err(err)?,
        people: engine.colleagues(&actor).await.map_err(err)?,
        flash: crate::admin::api::take_flash(),
    })
}

fn state_label(s: DelegationState) -> &'static str {
    match s {
        DelegationState::Upcoming => "Starts later",
        DelegationState::Active => "Active",
        DelegationState::Ended => "Ended",
        DelegationState::Revoked => "Ended early",
    }
}

#[component]
pub fn DelegationsPage() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_delegations());
    view! {
        <Title text="Delegations · Tollgate" />
        <Suspense fallback=|| view! { <p class="p-8">"Loading…"</p> }>
            {move || data.get().map(|r| match r {
                Ok(d) => view! { <DelegationsView data=d /> }.into_any(),
                Err(e) => crate::pages::error_box(e.to_string()),
            })}
        </Suspense>
    }
}

#[component]
fn DelegationsView(data: DelegationsData) -> impl IntoView {
    let me = data.me.id.clone();
    let rows = data.delegations.clone();
    let empty = rows.is_empty();
    view! {
        <Header me=Some(data.me.clone()) />
        <main class="mx-auto max-w-5xl space-y-6 px-6 py-8">
            <div>
                <h1 class="text-2xl font-semibold tracking-tight">"Delegations"</h1>
                <p class="mt-1 text-sm text-slate-600">"While you are away, someone else can decide in your place. Their vote counts as yours: it never adds a second vote, and your own vote replaces theirs. Nobody decides their own requests this way."</p>
            </div>
            {flash_view(data.flash.clone())}
            <section class=CARD aria-labelledby="new-heading">
                <h2 id="new-heading" class="text-lg font-semibold">"Hand over your decisions"</h2>
                <form method="post" action="/me/delegations" id="delegate-form" class="mt-4 flex flex-wrap items-end gap-4">
                    <div>
                        <label for="delegate" class="block text-sm font-medium text-slate-800">"To"</label>
                        <select id="delegate" name="delegate" required class=SELECT>
                            <option value="">"Choose a person"</option>
                            {data.people.iter().map(|(id, name)| view! { <option value=id.clone()>{format!("{name} ({id})")}</option> }).collect_view()}
                        </select>
                    </div>
                    <div>
                        <label for="starts" class="block text-sm font-medium text-slate-800">"From (UTC day; empty: now)"</label>
                        <input id="starts" name="starts" type="date" class=SELECT />
                    </div>
                    <div>
                        <label for="ends" class="block text-sm font-medium text-slate-800">"Until and including (UTC day)"</label>
                        <input id="ends" name="ends" type="date" required class=SELECT />
                    </div>
                    <div class="min-w-64 flex-1">
                        <label for="reason" class="block text-sm font-medium text-slate-800">"Reason (optional)"</label>
                        <input id="reason" name="reason" type="text" maxlength="500" class=format!("{SELECT} w-full") />
                    </div>
                    <button type="submit" id="delegate-submit" class=BUTTON>"Delegate"</button>
                </form>
            </section>
            <section class=CARD aria-labelledby="list-heading">
                <h2 id="list-heading" class="text-lg font-semibold">"Given and received"</h2>
                {if empty {
                    view! { <p id="no-delegations" class="mt-3 text-sm text-slate-600">"No delegations yet."</p> }.into_any()
                } else {
                    view! {
                        <div class="mt-3 overflow-x-auto">
                            <table id="delegations" class="min-w-full divide-y divide-slate-200 text-sm">
                                <caption class="sr-only">"Delegations you gave or were given"</caption>
                                <thead class="text-left text-slate-700">
                                    <tr>
                                        <th scope="col" class="px-3 py-2 font-semibold">"Whose decisions"</th>
                                        <th scope="col" class="px-3 py-2 font-semibold">"Decided by"</th>
                                        <th scope="col" class="px-3 py-2 font-semibold">"From"</th>
                                        <th scope="col" class="px-3 py-2 font-semibold">"Until"</th>
                                        <th scope="col" class="px-3 py-2 font-semibold">"State"</th>
                                        <th scope="col" class="px-3 py-2 font-semibold">"Reason"</th>
                                        <th scope="col" class="px-3 py-2 font-semibold"><span class="sr-only">"Actions"</span></th>
                                    </tr>
                                </thead>
                                <tbody class="divide-y divide-slate-100">
                                    {rows.into_iter().map(|d| delegation_row(d, &me)).collect_view()}
                                </tbody>
                            </table>
                        </div>
                    }.into_any()
                }}
            </section>
            <p class="text-sm"><a href="/" class=LINK>"Back to the inbox"</a></p>
        </main>
    }
}

fn delegation_row(d: Delegation, me: &str) -> impl IntoView {
    let live = matches!(d.state, DelegationState::Active | DelegationState::Upcoming);
    let what = match &d.interrupt {
        Some(i) => format!("{} (only “{}”)", d.delegator_name, i.title),
        None => d.delegator_name.clone(),
    };
    let mine = if d.delegator == me { "you" } else { "" };
    let until = match d.ends_at.clone() {
        Some(e) => view! { <When at=e /> }.into_any(),
        None => view! { <span>"until it is decided"</span> }.into_any(),
    };
    view! {
        <tr data-delegation=d.delegation_id.clone() data-state=d.state.as_str()>
            <td class="px-3 py-2" data-you=mine>{what}</td>
            <td class="px-3 py-2">{d.delegate_name.clone()}</td>
            <td class="px-3 py-2"><When at=d.starts_at.clone() /></td>
            <td class="px-3 py-2">{until}</td>
            <td class="px-3 py-2">{state_label(d.state)}</td>
            <td class="px-3 py-2">{d.reason.clone().unwrap_or_default()}</td>
            <td class="px-3 py-2">
                {live.then(|| view! {
                    <form method="post" action="/me/delegations/revoke">
                        <input type="hidden" name="id" value=d.delegation_id.clone() />
                        <button type="submit" class=BUTTON_SECONDARY>"End now"<span class="sr-only">{format!(": the delegation to {}", d.delegate_name)}</span></button>
                    </form>
                })}
            </td>
        </tr>
    }
}
