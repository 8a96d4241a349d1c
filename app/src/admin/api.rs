//! The dashboard's server functions and the types they carry: the engine's
//! own dashboard types from `tollgate_wire::admin` (a crate the browser
//! build links too), plus the page data built around them here.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

pub use tollgate_wire::admin::{
    AdminOverview, ApiKeyRow, AuditRow, Bucket, DayDecisions, Directory, DirectoryEntry, Membership,
    OutboxRow, PendingRow, RunPage, RunRow, StatusCount, Timeline, TimelineEvent,
};
pub use tollgate_wire::Principal as Person;

/// What the last dashboard post left to say (shown once).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Flash {
    pub ok: bool,
    pub message: String,
    /// A secret shown exactly once (a new API key).
    pub secret: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OverviewData {
    pub overview: AdminOverview,
    /// Links to each pending interrupt's run timeline, by index of `overview.pending`.
    pub run_links: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunsQuery {
    pub status: Option<String>,
    pub workflow: Option<String>,
    pub page: Option<usize>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunsData {
    pub runs: RunPage,
    pub run_links: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineData {
    pub timeline: Timeline,
    /// Where the dashboard posts go for this run (`/dashboard/runs/{encoded}`).
    pub href: String,
    pub flash: Option<Flash>,
    /// The pending approval a seat on it can be reassigned, with the tenant's people (id, name).
    #[serde(default)]
    pub reassign: Option<Reassign>,
}

/// What the run page's "Reassign a seat" form offers.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reassign {
    pub node_id: String,
    pub title: String,
    pub people: Vec<(String, String)>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PeopleData {
    pub directory: Directory,
    pub flash: Option<Flash>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeysData {
    pub api_keys: Vec<ApiKeyRow>,
    pub principals: Vec<String>,
    pub scopes: Vec<String>,
    pub flash: Option<Flash>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxData {
    pub rows: Vec<OutboxRow>,
    pub flash: Option<Flash>,
}

#[cfg(feature = "ssr")]
pub use server_side::*;

#[cfg(feature = "ssr")]
mod server_side {
    use super::*;
    use tollgate::{EngineError, Principal};

    /// Put into request extensions by the server when the session holds a flash.
    #[derive(Clone, Debug)]
    pub struct FlashMessage(pub Flash);

    pub use crate::api::fail;

    /// The signed-in admin, or the reason there is none.
    pub fn require_admin() -> Result<Principal, ServerFnError> {
        let principal =
            crate::api::signed_in().ok_or_else(|| fail(EngineError::Forbidden("please sign in".into())))?;
        tollgate::engine::admin::require_admin(&principal).map_err(fail)?;
        Ok(principal)
    }

    /// The signed-in admin as the actor the engine's admin operations check.
    pub fn admin_actor() -> Result<tollgate::Actor, ServerFnError> {
        require_admin().map(tollgate::Actor::session)
    }

    pub fn take_flash() -> Option<Flash> {
        use_context::<http::request::Parts>()
            .and_then(|p| p.extensions.get::<FlashMessage>().map(|f| f.0.clone()))
    }

    pub fn run_href(run_id: &str) -> String {
        format!("/dashboard/runs/{}", tollgate::ids::encode_path_id(run_id))
    }
}

/// Days of decisions the overview charts.
pub const DECISION_DAYS: usize = 14;

#[server]
pub async fn load_admin_overview() -> Result<OverviewData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let overview = engine.admin_overview(&me, DECISION_DAYS).await.map_err(fail)?;
    let run_links = overview.pending.iter().map(|p| run_href(&p.run_id)).collect();
    Ok(OverviewData { overview, run_links })
}

#[server]
pub async fn load_admin_runs(query: RunsQuery) -> Result<RunsData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let filter = tollgate::engine::admin::RunFilter {
        status: tollgate::error::parse_param("status", query.status.as_deref()).map_err(fail)?,
        workflow_id: query.workflow.filter(|s| !s.is_empty()),
        page: query.page.unwrap_or(1),
    };
    let runs = engine.admin_runs(&me, &filter).await.map_err(fail)?;
    let run_links = runs.items.iter().map(|r| run_href(&r.run_id)).collect();
    Ok(RunsData { runs, run_links })
}

#[server]
pub async fn load_run_timeline(run: String) -> Result<TimelineData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let run_id = tollgate::ids::parse_run_id(&run).map_err(fail)?;
    let timeline = engine.run_timeline(&me, &run_id).await.map_err(fail)?;
    // A run waiting at an approval: its seats can be moved to someone else.
    let reassign = match timeline.run.current_node_id.clone() {
        Some(node) if timeline.run.status == tollgate::RunStatus::WaitingApproval => {
            let view = engine
                .inspect_interrupt(&run_id, &node, &me)
                .await
                .map_err(fail)?;
            let mut people = engine.colleagues(&me).await.map_err(fail)?;
            people.push((me.principal.id.clone(), me.principal.name.clone()));
            people.sort();
            (view.status == tollgate::InterruptStatus::Pending
                && view.kind == tollgate::InterruptKind::Approval)
                .then_some(Reassign {
                    node_id: node,
                    title: view.title,
                    people,
                })
        }
        _ => None,
    };
    Ok(TimelineData {
        timeline,
        href: run_href(&run_id),
        flash: take_flash(),
        reassign,
    })
}

#[server]
pub async fn load_people() -> Result<PeopleData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let directory = engine.directory(&me).await.map_err(fail)?;
    Ok(PeopleData {
        directory,
        flash: take_flash(),
    })
}

#[server]
pub async fn load_keys() -> Result<KeysData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let api_keys = engine.api_keys(&me).await.map_err(fail)?;
    let directory = engine.directory(&me).await.map_err(fail)?;
    Ok(KeysData {
        api_keys,
        principals: directory.people.into_iter().map(|p| p.principal.id).collect(),
        scopes: tollgate::auth::ALL_SCOPES
            .iter()
            .map(|s| s.as_str().to_string())
            .collect(),
        flash: take_flash(),
    })
}

#[server]
pub async fn load_outbox(kind: Option<String>, status: Option<String>) -> Result<OutboxData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let filter = tollgate::engine::outbox::OutboxFilter {
        tenant: None,
        kind: kind.filter(|s| !s.is_empty()),
        status: status.filter(|s| !s.is_empty()),
        limit: Some(200),
    };
    let rows = engine.outbox_list_for(&me, &filter).await.map_err(fail)?;
    let rows = rows.iter().map(|r| r.to_row()).collect();
    Ok(OutboxData {
        rows,
        flash: take_flash(),
    })
}
