//! Tollgate console: the Leptos application shared by the server (SSR) and the browser (hydrate).
// Large server-rendered views (the dashboard) nest deeply in tachys types.
#![recursion_limit = "256"]

pub mod admin;
pub mod api;
pub mod delegations;
pub mod form;
#[cfg(feature = "ssr")]
pub mod mail;
pub mod pages;
pub mod security;
pub mod when;

use leptos::prelude::*;
use leptos_meta::{provide_meta_context, MetaTags, Stylesheet, Title};
use leptos_router::{
    components::{Route, Router, Routes},
    ParamSegment, SsrMode, StaticSegment,
};

/// The HTML document around every page; rendered on the server only.
pub fn shell(options: LeptosOptions) -> impl IntoView {
    #[cfg(feature = "ssr")]
    security::set_page_policy();
    view! {
        <!DOCTYPE html>
        <html lang="en">
            <head>
                <meta charset="utf-8" />
                <meta name="viewport" content="width=device-width, initial-scale=1" />
                <HydrationScripts options />
                <MetaTags />
            </head>
            <body class="min-h-screen bg-slate-50 text-slate-900">
                <App />
            </body>
        </html>
    }
}

#[component]
pub fn App() -> impl IntoView {
    provide_meta_context();
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));
    view! {
        <Stylesheet id="leptos" href="/pkg/tollgate.css" />
        <Title text="Tollgate" />
        <Router>
            // Set once the page is interactive; browser tests wait for it.
            <div id="app-root" data-hydrated=move || if hydrated.get() { "true" } else { "false" }>
                // Async: every page arrives complete, so it reads (and its
                // forms post) without JavaScript.
                <Routes fallback=|| view! { <pages::NotFound /> }>
                    <Route path=StaticSegment("") view=pages::Inbox ssr=SsrMode::Async />
                    // A refused "Approve / Reject selected" is drawn at its own address.
                    <Route path=(StaticSegment("inbox"), StaticSegment("decide")) view=pages::Inbox ssr=SsrMode::Async />
                    <Route path=StaticSegment("signin") view=pages::SignIn ssr=SsrMode::Async />
                    <Route path=(StaticSegment("me"), StaticSegment("delegations")) view=delegations::DelegationsPage ssr=SsrMode::Async />
                    <Route
                        path=(StaticSegment("runs"), ParamSegment("run_id"), StaticSegment("interrupts"), ParamSegment("node_id"))
                        view=pages::InterruptPage
                        ssr=SsrMode::Async
                    />
                    <Route path=(StaticSegment("t"), ParamSegment("token")) view=pages::TokenPage ssr=SsrMode::Async />
                    <Route path=StaticSegment("dashboard") view=admin::Overview ssr=SsrMode::Async />
                    <Route path=(StaticSegment("dashboard"), StaticSegment("runs")) view=admin::Runs ssr=SsrMode::Async />
                    <Route
                        path=(StaticSegment("dashboard"), StaticSegment("runs"), ParamSegment("run_id"))
                        view=admin::RunTimeline
                        ssr=SsrMode::Async
                    />
                    <Route path=(StaticSegment("dashboard"), StaticSegment("people")) view=admin::People ssr=SsrMode::Async />
                    <Route path=(StaticSegment("dashboard"), StaticSegment("keys")) view=admin::Keys ssr=SsrMode::Async />
                    <Route path=(StaticSegment("dashboard"), StaticSegment("outbox")) view=admin::Outbox ssr=SsrMode::Async />
                </Routes>
            </div>
        </Router>
    }
}

#[cfg(feature = "hydrate")]
#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_body(App);
}
