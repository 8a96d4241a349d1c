//! Pages of the console.

use crate::api::{load_overview, Overview};
use leptos::prelude::*;

#[component]
pub fn Home() -> impl IntoView {
    // Set once the page is interactive; browser tests wait for it.
    let (hydrated, set_hydrated) = signal(false);
    Effect::new(move |_| set_hydrated.set(true));

    let overview = Resource::new(|| (), |_| load_overview());
    let refresh = ServerAction::<crate::api::LoadOverview>::new();
    let latest = move || refresh.value().get().or_else(|| overview.get());

    view! {
        <main
            id="app-root"
            class="mx-auto max-w-3xl p-8"
            data-hydrated=move || if hydrated.get() { "true" } else { "false" }
        >
            <h1 class="text-3xl font-semibold tracking-tight">"Tollgate"</h1>
            <p class="mt-2 text-slate-600">
                "Durable interrupts and an approver console for workflow runs."
            </p>
            <section class="mt-8 rounded-lg border border-slate-200 bg-white p-6 shadow-sm">
                <h2 class="text-lg font-medium">"Overview"</h2>
                <Suspense fallback=|| view! { <p>"Loading…"</p> }>
                    {move || latest().map(|result| match result {
                        Ok(o) => view! { <OverviewTable overview=o /> }.into_any(),
                        Err(e) => view! { <p class="text-red-700">{e.to_string()}</p> }.into_any(),
                    })}
                </Suspense>
                <ActionForm action=refresh attr:class="mt-4">
                    <button
                        id="refresh-overview"
                        type="submit"
                        class="rounded-md bg-indigo-600 px-4 py-2 text-white hover:bg-indigo-700 focus:outline-none focus:ring-2 focus:ring-indigo-500"
                    >
                        "Refresh"
                    </button>
                </ActionForm>
                <p id="refresh-count" class="mt-2 text-sm text-slate-500">
                    {move || format!("Refreshed {} times", refresh.version().get())}
                </p>
            </section>
        </main>
    }
}

#[component]
fn OverviewTable(overview: Overview) -> impl IntoView {
    view! {
        <dl id="overview" class="mt-4 grid grid-cols-3 gap-4">
            <div>
                <dt class="text-sm text-slate-500">"Workflows"</dt>
                <dd id="overview-workflows" class="text-2xl font-semibold">{overview.workflows}</dd>
            </div>
            <div>
                <dt class="text-sm text-slate-500">"Runs"</dt>
                <dd id="overview-runs" class="text-2xl font-semibold">{overview.runs}</dd>
            </div>
            <div>
                <dt class="text-sm text-slate-500">"Pending interrupts"</dt>
                <dd id="overview-pending" class="text-2xl font-semibold">
                    {overview.pending_interrupts}
                </dd>
            </div>
        </dl>
    }
}

#[component]
pub fn NotFound() -> impl IntoView {
    view! {
        <main class="mx-auto max-w-3xl p-8">
            <h1 class="text-2xl font-semibold">"Page not found"</h1>
            <a href="/" class="text-indigo-700 underline">"Back to the start"</a>
        </main>
    }
}
