//! Pages of the console: the inbox, sign-in, an interrupt and a token link.
//! Every form is a plain HTML form that posts to the server, so all of it
//! works without JavaScript; hydration adds a live refresh of the inbox.

use crate::api::Me;
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::use_query_map;
use tollgate_wire::InterruptKind;

mod inbox;
mod interrupt;

pub use inbox::Inbox;
pub use interrupt::{InterruptPage, TokenPage};

pub(crate) const BUTTON: &str = "inline-flex items-center rounded-md bg-indigo-700 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-indigo-800 focus:outline-none focus:ring-2 focus:ring-indigo-500 focus:ring-offset-2";
pub(crate) const BUTTON_SECONDARY: &str = "inline-flex items-center rounded-md border border-slate-300 bg-white px-4 py-2 text-sm font-semibold text-slate-800 shadow-sm hover:bg-slate-50 focus:outline-none focus:ring-2 focus:ring-indigo-500 focus:ring-offset-2";
pub(crate) const BUTTON_DANGER: &str = "inline-flex items-center rounded-md bg-red-700 px-4 py-2 text-sm font-semibold text-white shadow-sm hover:bg-red-800 focus:outline-none focus:ring-2 focus:ring-red-500 focus:ring-offset-2";
pub(crate) const CARD: &str = "rounded-lg border border-slate-200 bg-white p-6 shadow-sm";
pub(crate) const LINK: &str = "font-medium text-indigo-800 underline decoration-indigo-300 underline-offset-2 hover:decoration-indigo-700 focus:outline-none focus:ring-2 focus:ring-indigo-500";
pub(crate) const SELECT: &str = "mt-1 block rounded-md border border-slate-300 bg-white px-3 py-2 text-sm text-slate-900 focus:border-indigo-500 focus:outline-none focus:ring-2 focus:ring-indigo-500";

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

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <main class="mx-auto max-w-3xl p-8">
            <h1 class="text-2xl font-semibold">"Page not found"</h1>
            <a href="/" class=LINK>"Back to the start"</a>
        </main>
    }
}
