//! Server functions: the console's only way to reach the engine. Plain serde
//! types cross the wire; the engine is only linked under `ssr`.

use crate::form::FormValues;
use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;
use tollgate_wire::present::{AnswerForm, KindDetails, Thread};
use tollgate_wire::{ApprovalAction, DeadlineState, InterruptKind, InterruptStatus};

/// The signed-in person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Me {
    pub id: String,
    pub name: String,
    /// May use the admin dashboard.
    pub is_admin: bool,
}

/// Query parameters of the inbox (`?q=&kind=&workflow=&due=&sort=&page=`;
/// the older `overdue=1` reads as `due=overdue`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct InboxQuery {
    /// Search text.
    pub q: Option<String>,
    pub kind: Option<String>,
    pub workflow: Option<String>,
    /// `overdue`, `day`, `week` or `never`.
    pub due: Option<String>,
    /// `for`: the person whose decisions to list, who delegated them to the viewer.
    #[serde(default)]
    pub for_person: Option<String>,
    pub sort: Option<String>,
    /// 1-based. Not optional: the server function's form body must never be
    /// empty, or the call fails with "missing field `query`".
    pub page: usize,
}

/// One inbox row: the engine's item and where it links to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxRow {
    pub href: String,
    pub item: tollgate_wire::inbox::InboxItem,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InboxData {
    pub me: Me,
    pub rows: Vec<InboxRow>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    pub workflows: Vec<String>,
    pub kinds: Vec<InterruptKind>,
    /// The engine's change count before the query: the live inbox stream
    /// (`/inbox/stream?since=`) starts with an event if anything changed since.
    pub changes: u64,
    /// What "Approve / Reject selected" just did, shown once.
    #[serde(default)]
    pub bulk: Option<BulkOutcome>,
    /// Whose decisions these are (id, name) when not the viewer's own.
    #[serde(default)]
    pub on_behalf_of: Option<(String, String)>,
    /// The live delegations to the viewer: whose decisions they take, and
    /// the interrupts reassigned to them.
    #[serde(default)]
    pub delegated: Vec<tollgate_wire::delegation::Delegation>,
}

/// What "Approve / Reject selected" left for the inbox drawn next.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BulkOutcome {
    /// One per pick, in order.
    pub results: Vec<tollgate_wire::inbox::BulkResult>,
    /// The whole call was refused (no pick, too many, an unknown action): why.
    pub error: Option<String>,
}

/// What a post left behind: the person's input and the errors beside it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct PostedForm {
    pub values: FormValues,
    pub errors: HashMap<String, String>,
    /// A message for the whole form (a refusal, a conflict).
    pub message: Option<String>,
    /// The decision was recorded.
    pub done: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VoteRow {
    /// The seat: whose vote it counts as.
    pub principal: String,
    /// The delegate who cast it in `principal`'s place.
    #[serde(default)]
    pub cast_by: Option<String>,
    pub action: ApprovalAction,
    pub decided_at: String,
    pub counted: bool,
}

/// Everything the interrupt page and the token page draw.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct InterruptData {
    pub me: Option<Me>,
    pub run_id: String,
    pub node_id: String,
    pub kind: InterruptKind,
    pub title: String,
    pub description: Option<String>,
    pub status: InterruptStatus,
    pub workflow_id: String,
    pub created_at: String,
    pub deadline: Option<String>,
    pub deadline_state: DeadlineState,
    pub request: Value,
    pub request_schema: Value,
    pub resume_schema: Value,
    /// What it asks, by kind (the engine reads it from the payload).
    pub details: KindDetails,
    /// The form the answer is drawn from, and the buttons that submit it.
    pub answer_form: AnswerForm,
    /// A conversation's thread (the `conversation.*` kinds).
    pub thread: Option<Thread>,
    pub votes: Vec<VoteRow>,
    pub accepts: Option<u32>,
    pub rejects: Option<u32>,
    pub required_approvals: Option<u32>,
    /// Names of the people who may still vote (approvals).
    pub still_to_vote: Vec<String>,
    /// Whether this person may decide, and if not, why.
    pub may_decide: bool,
    /// The name of the person in whose place they decide (a delegation or a reassignment).
    #[serde(default)]
    pub in_place_of: Option<String>,
    pub why_not: Option<String>,
    /// Where the form posts.
    pub action_url: String,
    pub posted: Option<PostedForm>,
}

/// A token link that cannot be used, explained for a person.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinkProblem {
    pub status: u16,
    pub title: String,
    pub message: String,
    /// The page offers "send me a fresh link" (an expired link).
    #[serde(default)]
    pub offers_fresh_link: bool,
    /// What became of a request for a fresh link, when one was just made.
    #[serde(default)]
    pub notice: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TokenData {
    Open(Box<InterruptData>),
    Problem(LinkProblem),
}

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use super::*;
    use tollgate::{Actor, Principal};

    /// Put into request extensions by the server's session layer.
    #[derive(Clone, Debug)]
    pub struct SignedIn(pub Principal);

    /// Provided as context when a page is drawn again after a post.
    #[derive(Clone, Debug)]
    pub struct Posted(pub PostedForm);

    /// Put into request extensions by the server: the outcome of a bulk
    /// decision for the inbox drawn next.
    #[derive(Clone, Debug)]
    pub struct BulkDone(pub BulkOutcome);

    pub fn signed_in() -> Option<Principal> {
        use_context::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<SignedIn>().map(|s| s.0.clone()))
    }

    pub fn require_actor() -> Result<Actor, ServerFnError> {
        let principal =
            signed_in().ok_or_else(|| fail(tollgate::EngineError::Forbidden("please sign in".into())))?;
        Ok(Actor::session(principal))
    }

    /// The engine's error as a server function's error, with its HTTP status
    /// on the response: a page answers with it, and so does a direct
    /// `/api/…` call (server functions would answer every error with 500).
    pub fn fail(e: tollgate::EngineError) -> ServerFnError {
        if let Some(options) = use_context::<leptos_axum::ResponseOptions>() {
            if let Ok(code) = http::StatusCode::from_u16(e.http_status()) {
                options.set_status(code);
            }
        }
        ServerFnError::new(e.to_string())
    }

    pub fn me_of(p: &Principal) -> Me {
        Me {
            id: p.id.clone(),
            name: p.name.clone(),
            is_admin: tollgate::engine::admin::is_admin(p),
        }
    }

    /// The page data for one interrupt as `actor` sees it (`thread`: its
    /// conversation's, read by the caller through the same check as `view`).
    pub async fn interrupt_data(
        engine: &tollgate::Engine,
        view: tollgate::InterruptView,
        actor: &Actor,
        action_url: String,
        me: Option<Me>,
        thread: Option<Thread>,
    ) -> Result<InterruptData, tollgate::EngineError> {
        let may = engine.may_decide(&view.run_id, &view.node_id, actor).await?;
        let still = engine.may_still_vote(&view.run_id, &view.node_id, actor).await?;
        let q = view.quorum.clone().unwrap_or(Value::Null);
        let as_u32 = |v: &Value| v.as_u64().map(|n| n as u32);
        Ok(InterruptData {
            me,
            details: tollgate::present::details(view.kind, &view.payload),
            answer_form: tollgate::present::answer_form(
                view.kind,
                &view.payload,
                &view.resume_schema,
                &view.request,
                &view.request_schema,
            ),
            thread,
            deadline_state: engine.deadline_state(view.deadline.as_deref()),
            description: view.payload["description"]
                .as_str()
                .or_else(|| view.payload["data"]["description"].as_str())
                .map(str::to_string),
            run_id: view.run_id.into_string(),
            node_id: view.node_id.into_string(),
            kind: view.kind,
            title: view.title,
            status: view.status,
            workflow_id: view.workflow_id,
            created_at: view.created_at,
            deadline: view.deadline,
            request: view.request,
            request_schema: view.request_schema,
            resume_schema: view.resume_schema,
            votes: view
                .votes
                .into_iter()
                .map(|v| VoteRow {
                    principal: v.principal,
                    cast_by: v.cast_by,
                    action: v.action,
                    decided_at: v.decided_at,
                    counted: v.counted,
                })
                .collect(),
            accepts: as_u32(&q["accepts"]),
            rejects: as_u32(&q["rejects"]),
            required_approvals: as_u32(&q["requiredApprovals"]),
            still_to_vote: still.into_iter().map(|v| v.name).collect(),
            may_decide: may.is_ok(),
            in_place_of: may
                .as_ref()
                .ok()
                .and_then(|a| a.on_behalf_of.as_ref())
                .map(|v| v.name.clone()),
            why_not: may.err(),
            action_url,
            posted: use_context::<Posted>().map(|p| p.0),
        })
    }

    /// Sets the HTTP status of the page being drawn on the server, so a
    /// problem page answers with its status (410, 409, 401, 403, 404) and
    /// not 200. Only for page requests: a server-function call (`/api/…`)
    /// keeps 200 so the browser can read the result it carries.
    pub fn set_page_status(status: u16) {
        let on_page =
            use_context::<http::request::Parts>().is_some_and(|p| !p.uri.path().starts_with("/api/"));
        let code = http::StatusCode::from_u16(status);
        if let (true, Some(res), Ok(code)) = (on_page, use_context::<leptos_axum::ResponseOptions>(), code) {
            res.set_status(code);
        }
    }

    /// A token link that cannot be used: its page, with the page's status set.
    pub fn problem_page(problem: LinkProblem) -> TokenData {
        set_page_status(problem.status);
        TokenData::Problem(problem)
    }

    /// A person-readable page for an unusable token link.
    pub fn link_problem(e: &tollgate::EngineError) -> LinkProblem {
        let (title, message) = match e.http_status() {
            410 => (
                "This link has expired",
                "Links in notifications only work for a limited time. We can mail a fresh link to the address this one was sent to, or sign in to the console to see the request.".to_string(),
            ),
            409 => (
                "This request is already decided",
                format!("Nothing more to do here: {e}."),
            ),
            401 => (
                "This link is not valid",
                "The link may be incomplete or changed. Copy the whole link from the message, or sign in to the console.".to_string(),
            ),
            403 => ("This link cannot decide", e.to_string()),
            404 => ("Nothing found", "The request this link points at does not exist.".to_string()),
            _ => ("Something went wrong", e.to_string()),
        };
        LinkProblem {
            status: e.http_status(),
            title: title.into(),
            message,
            offers_fresh_link: e.http_status() == 410,
            notice: None,
        }
    }
}

#[server]
pub async fn load_inbox(query: InboxQuery) -> Result<InboxData, ServerFnError> {
    use tollgate::engine::inbox::{InboxDue, InboxFilter, InboxSort};
    let engine = expect_context::<tollgate::Engine>();
    let actor = require_actor()?;
    // Before the query: a change committed after this is either in the
    // result or makes the live stream send an event on connect.
    let changes = engine.change_count(actor.tenant());
    // A refused filter (a search too long, an unknown `due`) answers with its status.
    let filter = InboxFilter {
        kind: tollgate::error::parse_param("kind", query.kind.as_deref()).map_err(fail)?,
        workflow_id: query.workflow.filter(|s| !s.is_empty()),
        due: InboxDue::parse_param(query.due.as_deref()).map_err(fail)?,
        search: query.q,
        sort: InboxSort::parse(query.sort.as_deref().unwrap_or("")),
        page: query.page,
        on_behalf_of: query.for_person.filter(|s| !s.is_empty()),
    };
    let page = engine
        .pending_for(&actor.principal, &filter)
        .await
        .map_err(fail)?;
    let bulk = use_context::<http::request::Parts>()
        .and_then(|p| p.extensions.get::<BulkDone>().map(|b| b.0.clone()));
    Ok(InboxData {
        me: me_of(&actor.principal),
        rows: page
            .items
            .into_iter()
            .map(|i| InboxRow {
                href: format!(
                    "/runs/{}/interrupts/{}",
                    tollgate::ids::encode_path_id(&i.run_id),
                    i.node_id
                ),
                item: i,
            })
            .collect(),
        total: page.total,
        page: page.page,
        pages: page.pages,
        workflows: page.workflows,
        kinds: page.kinds,
        changes,
        bulk,
        on_behalf_of: page.on_behalf_of.map(|v| (v.id, v.name)),
        delegated: page.delegated,
    })
}

#[server]
pub async fn load_interrupt(run: String, node: String) -> Result<InterruptData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let actor = require_actor()?;
    // A page that cannot be shown answers with its status (another tenant's run: 403).
    let run_id = tollgate::ids::parse_run_id(&run).map_err(fail)?;
    let view = engine
        .inspect_interrupt(&run_id, &node, &actor)
        .await
        .map_err(fail)?;
    let url = format!(
        "/runs/{}/interrupts/{}",
        tollgate::ids::encode_path_id(&run_id),
        node
    );
    let me = Some(me_of(&actor.principal));
    let thread = if view.kind.is_conversation() {
        engine
            .conversation_thread(&run_id, &node, &actor)
            .await
            .map_err(fail)?
    } else {
        None
    };
    interrupt_data(&engine, view, &actor, url, me, thread)
        .await
        .map_err(fail)
}

/// GET of a token link: shows, never changes anything.
#[server]
pub async fn load_token(token: String) -> Result<TokenData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    if let Some(p) = use_context::<Posted>().filter(|p| p.0.done) {
        // Just decided through this link: the link is used now; say so kindly.
        return Ok(problem_page(LinkProblem {
            status: 200,
            title: "Thank you, your decision was recorded".into(),
            message: p.0.message.unwrap_or_else(|| "You can close this page.".into()),
            offers_fresh_link: false,
            notice: None,
        }));
    }
    let (view, claims) = match engine.inspect_by_token(&token).await {
        Ok(v) => v,
        Err(e) => {
            let mut problem = link_problem(&e);
            // What `POST /t/{token}/fresh` answered, when it was just asked.
            problem.notice = use_context::<Posted>().and_then(|p| p.0.message);
            return Ok(problem_page(problem));
        }
    };
    // The recipient as the directory has them now (and whether they still hold approvals:respond).
    let actor = match engine.token_actor(&claims).await {
        Ok(a) => a,
        Err(tollgate::EngineError::Forbidden(_)) => {
            return Ok(problem_page(LinkProblem {
                status: 403,
                title: "This link cannot decide".into(),
                message: "The person this link was made for no longer exists.".into(),
                offers_fresh_link: false,
                notice: None,
            }))
        }
        Err(e) => return Err(fail(e)),
    };
    let url = format!("/t/{token}");
    let sign_in_gate = view.requires_sign_in;
    let thread = if view.kind.is_conversation() {
        engine.conversation_thread_by_token(&token).await.map_err(fail)?
    } else {
        None
    };
    let mut data = interrupt_data(&engine, view, &actor, url, None, thread)
        .await
        .map_err(fail)?;
    if claims.t == tollgate::token::Intent::Inspect {
        data.may_decide = false;
        data.why_not = Some(if sign_in_gate {
            "This request is decided only by signed-in approvers: sign in to Tollgate to decide it.".into()
        } else {
            "This link may only show the request.".into()
        });
    }
    Ok(TokenData::Open(Box::new(data)))
}
