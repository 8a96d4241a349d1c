//! The confirmation step of the dashboard's destructive actions.
//!
//! A destructive button is a GET form: it changes nothing and leads to the
//! same page with the thing named in the address (`/dashboard/keys?revoke=…`,
//! `/dashboard/runs/…?cancel=1`). The page then shows what will be destroyed
//! and a second, explicit button that posts with a `confirm` field; the
//! server refuses a post without it (`server/src/dashboard.rs`), so a single
//! stray post destroys nothing. With or without JavaScript it is the same
//! two steps.

use crate::pages::{BUTTON_DANGER, BUTTON_SECONDARY};
use leptos::prelude::*;
use tollgate_wire::admin::{ApiKeyRow, RunRow};

/// The `confirm` value the server expects for revoking an API key.
pub const CONFIRM_REVOKE: &str = "revoke";
/// The `confirm` value the server expects for cancelling a run.
pub const CONFIRM_CANCEL: &str = "cancel";

const PANEL: &str = "rounded-lg border-2 border-red-300 bg-white p-6 shadow-sm";

/// The first step of revoking a key: a button that asks for confirmation.
pub fn revoke_key_button(id: &str) -> impl IntoView {
    view! {
        <form method="get" action="/dashboard/keys">
            <input type="hidden" name="revoke" value=id.to_string() />
            <button type="submit" class=BUTTON_DANGER aria-label=format!("Revoke key {id}…")>"Revoke…"</button>
        </form>
    }
}

/// The second step: names the key and revokes it with an explicit post.
pub fn confirm_revoke_key(id: &str, key: Option<&ApiKeyRow>) -> AnyView {
    let Some(key) = key.filter(|k| k.revoked_at.is_none()) else {
        return view! {
            <p id="confirm-revoke" role="alert" class="rounded-md border border-red-200 bg-red-50 p-4 text-red-800">
                {format!("There is no active key {id} to revoke.")}
            </p>
        }
        .into_any();
    };
    let label = key.label.clone().filter(|l| !l.is_empty());
    let what = match &label {
        Some(l) => format!("the key “{l}” ({})", key.id),
        None => format!("the key {}", key.id),
    };
    view! {
        <section id="confirm-revoke" class=PANEL aria-labelledby="confirm-revoke-heading">
            <h2 id="confirm-revoke-heading" class="text-lg font-semibold text-red-900">{format!("Revoke {what}?")}</h2>
            <dl class="mt-3 grid grid-cols-1 gap-x-6 gap-y-1 text-sm sm:grid-cols-3">
                <div><dt class="text-slate-600">"Acts as"</dt><dd>{key.principal.clone()}</dd></div>
                <div><dt class="text-slate-600">"Scopes"</dt><dd>{key.scopes.join(" ")}</dd></div>
                <div><dt class="text-slate-600">"Id"</dt><dd class="font-mono text-xs">{key.id.clone()}</dd></div>
            </dl>
            <p class="mt-3 text-sm text-slate-800">"Every program using this key is refused from the moment it is revoked. A revoked key cannot be used again; a new key has to be created and handed out."</p>
            <form method="post" action="/dashboard/keys/revoke" class="mt-4 flex flex-wrap gap-3">
                <input type="hidden" name="id" value=key.id.clone() />
                <input type="hidden" name="confirm" value=CONFIRM_REVOKE />
                <button type="submit" id="confirm-revoke-submit" class=BUTTON_DANGER>{format!("Revoke key {}", key.id)}</button>
                <a href="/dashboard/keys" id="confirm-revoke-keep" class=BUTTON_SECONDARY>"Keep the key"</a>
            </form>
        </section>
    }
    .into_any()
}

/// The first step of cancelling a run: a button that asks for confirmation.
pub fn cancel_run_button(href: &str) -> impl IntoView {
    view! {
        <form method="get" action=href.to_string() class="mt-4">
            <input type="hidden" name="cancel" value="1" />
            <button type="submit" id="run-cancel" class=BUTTON_DANGER>"Cancel run…"</button>
        </form>
    }
}

/// The second step: names the run and what cancelling it ends, with an
/// optional reason, and cancels with an explicit post.
pub fn confirm_cancel_run(run: &RunRow, href: &str) -> AnyView {
    view! {
        <section id="confirm-cancel" class=PANEL aria-labelledby="confirm-cancel-heading">
            <h2 id="confirm-cancel-heading" class="text-lg font-semibold text-red-900">
                {format!("Cancel run {} of {}?", run.run_id, run.workflow_id)}
            </h2>
            <p class="mt-2 text-sm text-slate-800">"The run stops where it is: its open requests can no longer be answered and its links stop working. A cancelled run cannot be resumed."</p>
            <form method="post" action="/dashboard/runs/cancel" class="mt-4 space-y-4">
                <input type="hidden" name="run" value=run.run_id.clone() />
                <input type="hidden" name="confirm" value=CONFIRM_CANCEL />
                <div>
                    <label for="cancel-reason" class="block text-sm font-medium text-slate-800">"Reason (optional, kept in the run's log)"</label>
                    <input id="cancel-reason" name="reason" type="text" maxlength="500" class="mt-1 block w-full rounded-md border border-slate-300 px-3 py-2 text-sm focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500" />
                </div>
                <div class="flex flex-wrap gap-3">
                    <button type="submit" id="confirm-cancel-submit" class=BUTTON_DANGER>{format!("Cancel run {}", run.run_id)}</button>
                    <a href=href.to_string() id="confirm-cancel-keep" class=BUTTON_SECONDARY>"Keep the run going"</a>
                </div>
            </form>
        </section>
    }
    .into_any()
}
