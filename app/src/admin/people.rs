//! The directory: people, their groups and roles, and who holds what.

use super::api::*;
use super::{flash_view, thead, Frame, INPUT, TABLE, TD};
use crate::pages::{error_box, BUTTON, BUTTON_SECONDARY, CARD, LINK, SELECT};
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

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
