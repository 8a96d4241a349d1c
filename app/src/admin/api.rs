//! The dashboard's server functions and the plain types they carry. The
//! types mirror the engine's `engine::admin` types field for field (the
//! engine is not linked into the browser build); they are converted with
//! serde, so a field added on one side and not the other fails the tests.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::Value;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct StatusCount {
    pub status: String,
    pub count: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct RunRow {
    pub run_id: String,
    pub workflow_id: String,
    pub status: String,
    pub current_node_id: Option<String>,
    pub owner: String,
    pub created_at: String,
    pub completed_at: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct PendingRow {
    pub run_id: String,
    pub node_id: String,
    pub kind: String,
    pub title: String,
    pub workflow_id: String,
    pub created_at: String,
    pub age_ms: i64,
    pub deadline: Option<String>,
    pub deadline_in_ms: Option<i64>,
    pub deadline_state: String,
    pub votes: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct Bucket {
    pub label: String,
    pub count: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct DayDecisions {
    pub day: String,
    pub approved: i64,
    pub rejected: i64,
    pub timed_out: i64,
    pub answered: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct AdminOverview {
    pub runs_by_status: Vec<StatusCount>,
    pub pending_total: i64,
    pub overdue: i64,
    pub outbox_backlog: i64,
    pub age_buckets: Vec<Bucket>,
    pub decisions: Vec<DayDecisions>,
    pub pending: Vec<PendingRow>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct RunPage {
    pub items: Vec<RunRow>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    pub by_status: Vec<StatusCount>,
    pub workflows: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct TimelineEvent {
    pub sequence: i64,
    pub event_type: String,
    pub node_id: Option<String>,
    pub timestamp: String,
    pub payload: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct AuditRow {
    pub node_id: String,
    pub visit: i64,
    pub principal: String,
    pub action: String,
    pub eligible_via: String,
    pub decided_at: String,
    pub counted: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct Timeline {
    pub run: RunRow,
    pub error: Option<Value>,
    pub events: Vec<TimelineEvent>,
    pub audit: Vec<AuditRow>,
}

/// Mirrors the engine's `Principal` (whose fields keep their snake_case names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Person {
    pub id: String,
    pub tenant: String,
    pub name: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub roles: Vec<String>,
    pub is_override: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct DirectoryEntry {
    pub principal: Person,
    pub has_password: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct Membership {
    pub name: String,
    pub members: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct Directory {
    pub people: Vec<DirectoryEntry>,
    pub groups: Vec<Membership>,
    pub roles: Vec<Membership>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[serde(deny_unknown_fields)]
pub struct ApiKeyRow {
    pub id: String,
    pub principal: String,
    pub scopes: Vec<String>,
    pub label: Option<String>,
    pub created_at: String,
    pub revoked_at: Option<String>,
}

/// One outbox row (an email or a callback) as the dashboard lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxRow {
    pub id: i64,
    pub kind: String,
    pub reason: String,
    pub run_id: String,
    pub node_id: String,
    pub recipient: String,
    pub address: String,
    pub status: String,
    pub attempts: i64,
    pub last_error: Option<String>,
    pub created_at: String,
    pub sent_at: Option<String>,
}

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

    /// Converts an engine type into its mirror here (same fields, same names).
    pub fn recast<T: Serialize, U: serde::de::DeserializeOwned>(value: T) -> Result<U, ServerFnError> {
        serde_json::to_value(value)
            .and_then(serde_json::from_value)
            .map_err(|e| ServerFnError::new(format!("dashboard data: {e}")))
    }

    /// The engine's error as the page's error, with its HTTP status on the response.
    pub fn fail(e: EngineError) -> ServerFnError {
        if let Some(options) = use_context::<leptos_axum::ResponseOptions>() {
            if let Ok(code) = http::StatusCode::from_u16(e.http_status()) {
                options.set_status(code);
            }
        }
        ServerFnError::new(e.to_string())
    }

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
    Ok(OverviewData {
        overview: recast(overview)?,
        run_links,
    })
}

#[server]
pub async fn load_admin_runs(query: RunsQuery) -> Result<RunsData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let filter = tollgate::engine::admin::RunFilter {
        status: query.status.filter(|s| !s.is_empty()),
        workflow_id: query.workflow.filter(|s| !s.is_empty()),
        page: query.page.unwrap_or(1),
    };
    let runs = engine.admin_runs(&me, &filter).await.map_err(fail)?;
    let run_links = runs.items.iter().map(|r| run_href(&r.run_id)).collect();
    Ok(RunsData {
        runs: recast(runs)?,
        run_links,
    })
}

#[server]
pub async fn load_run_timeline(run: String) -> Result<TimelineData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let run_id = tollgate::ids::parse_run_id(&run).map_err(fail)?;
    let timeline = engine.run_timeline(&me, &run_id).await.map_err(fail)?;
    Ok(TimelineData {
        timeline: recast(timeline)?,
        href: run_href(&run_id),
    })
}

#[server]
pub async fn load_people() -> Result<PeopleData, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let me = admin_actor()?;
    let directory = engine.directory(&me).await.map_err(fail)?;
    Ok(PeopleData {
        directory: recast(directory)?,
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
        api_keys: recast(api_keys)?,
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
    let rows = rows
        .into_iter()
        .map(|r| OutboxRow {
            created_at: r.created(),
            sent_at: r.sent_at.map(tollgate::clock::rfc3339),
            id: r.id,
            kind: r.kind,
            reason: r.reason,
            run_id: r.run_id,
            node_id: r.node_id,
            recipient: r.recipient,
            address: r.address,
            status: r.status,
            attempts: r.attempts,
            last_error: r.last_error,
        })
        .collect();
    Ok(OutboxData {
        rows,
        flash: take_flash(),
    })
}

#[cfg(all(test, feature = "ssr"))]
mod tests {
    use super::*;
    use tollgate::engine::admin as engine;

    /// The mirrors take exactly what the engine sends.
    #[test]
    fn mirrors_match_the_engine_types() {
        let overview = engine::AdminOverview {
            runs_by_status: vec![engine::StatusCount {
                status: "running".into(),
                count: 2,
            }],
            pending_total: 1,
            overdue: 0,
            outbox_backlog: 3,
            age_buckets: vec![engine::Bucket {
                label: "< 1 h".into(),
                count: 1,
            }],
            decisions: vec![engine::DayDecisions {
                day: "2026-11-30".into(),
                approved: 1,
                ..Default::default()
            }],
            pending: vec![engine::PendingRow {
                run_id: "t/r".into(),
                node_id: "n".into(),
                kind: "approval".into(),
                title: "T".into(),
                workflow_id: "w".into(),
                created_at: "2026-11-30T00:00:00.000Z".into(),
                age_ms: 5,
                deadline: None,
                deadline_in_ms: None,
                deadline_state: "none".into(),
                votes: 0,
            }],
        };
        let mirrored: AdminOverview = recast(overview.clone()).unwrap();
        assert_eq!(mirrored.pending[0].run_id, "t/r");
        assert_eq!(mirrored.decisions[0].approved, 1);

        let run = engine::RunRow {
            run_id: "t/r".into(),
            workflow_id: "w".into(),
            status: "completed".into(),
            current_node_id: None,
            owner: "o".into(),
            created_at: "c".into(),
            completed_at: Some("d".into()),
        };
        let page = engine::RunPage {
            items: vec![run.clone()],
            total: 1,
            page: 1,
            pages: 1,
            by_status: vec![],
            workflows: vec![],
        };
        let _: RunPage = recast(page).unwrap();
        let timeline = engine::Timeline {
            run,
            error: None,
            events: vec![engine::TimelineEvent {
                sequence: 0,
                event_type: "run.started".into(),
                node_id: None,
                timestamp: "t".into(),
                payload: Value::Null,
            }],
            audit: vec![engine::AuditRow {
                node_id: "n".into(),
                visit: 1,
                principal: "p".into(),
                action: "accept".into(),
                eligible_via: "group:g".into(),
                decided_at: "t".into(),
                counted: true,
            }],
        };
        let _: Timeline = recast(timeline).unwrap();
        let directory = engine::Directory {
            people: vec![engine::DirectoryEntry {
                principal: tollgate::Principal {
                    id: "p".into(),
                    tenant: "t".into(),
                    name: "P".into(),
                    email: None,
                    groups: vec!["g".into()],
                    roles: vec![],
                    is_override: true,
                },
                has_password: true,
            }],
            groups: vec![engine::Membership {
                name: "g".into(),
                members: vec!["p".into()],
            }],
            roles: vec![],
        };
        let d: Directory = recast(directory).unwrap();
        assert!(d.people[0].principal.is_override && d.people[0].has_password);
        let key = engine::ApiKeyRow {
            id: "abc".into(),
            principal: "p".into(),
            scopes: vec![],
            label: None,
            created_at: "c".into(),
            revoked_at: None,
        };
        let _: ApiKeyRow = recast(key).unwrap();
    }
}
