//! API keys and token-signing keys: made, listed, revoked.

use super::api::*;
use super::confirm;
use super::{flash_view, thead, Frame, INPUT, TABLE, TD};
use crate::pages::{error_box, BUTTON, CARD, SELECT};
use crate::when::When;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

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
