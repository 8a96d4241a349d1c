//! One interrupt, opened from the inbox or from a token link: what is asked,
//! by kind, and the form that answers it.

use super::{error_box, kind_label, Header, BUTTON, BUTTON_DANGER, BUTTON_SECONDARY, CARD, LINK};
use crate::api::{load_interrupt, load_token, InterruptData, LinkProblem, TokenData};
use crate::form::{default_values, field_tree, SchemaForm, SchemaView};
use crate::when::{Said, When};
use leptos::prelude::*;
use leptos_meta::Title;
use leptos_router::hooks::{use_params_map, use_query_map};
use tollgate_wire::present::KindDetails;
use tollgate_wire::{ApprovalAction, DeadlineState, InterruptKind, InterruptStatus};

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
