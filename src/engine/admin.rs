//! The admin dashboard's reads and writes: runs by status, pending interrupts
//! by deadline, the chart series, a run's timeline with its audit, the
//! directory and API keys.
//!
//! Everything is scoped to the admin's tenant. Token signing keys are the
//! instance operator's (see `token_keys`), not the dashboard's.

use super::inbox::deadline_state;
use super::Engine;
use crate::auth;
use crate::auth::Scope;
use crate::clock::{rfc3339, Millis};
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use tollgate_wire::{ApprovalAction, InterruptKind, RunId, RunStatus};

pub use tollgate_wire::admin::{
    AdminOverview, ApiKeyRow, AuditRow, Bucket, DayDecisions, Directory, DirectoryEntry, Membership,
    OutboxRow, PendingRow, RunPage, RunRow, StatusCount, Timeline, TimelineEvent,
};

/// Principals with this role may use the dashboard.
pub const ADMIN_ROLE: &str = "admin";
/// The most urgent pending interrupts the overview lists.
pub const OVERVIEW_PENDING: i64 = 50;
/// Rows per page of the runs list.
pub const RUNS_PAGE_SIZE: usize = 50;
/// An API key's label, in characters.
pub const MAX_LABEL_CHARS: usize = 200;
/// Groups, or roles, one person may hold.
pub const MAX_MEMBERSHIPS: usize = 100;
/// Upper bounds (exclusive) of the pending-age buckets, with their labels.
const AGE_BUCKETS: [(Millis, &str); 5] = [
    (HOUR, "< 1 h"),
    (4 * HOUR, "1–4 h"),
    (24 * HOUR, "4–24 h"),
    (72 * HOUR, "1–3 d"),
    (Millis::MAX, "> 3 d"),
];
const HOUR: Millis = 3_600_000;
const DAY: Millis = 24 * HOUR;
/// An API key is shown by the first characters of its digest.
const KEY_ID_LEN: usize = 12;

#[derive(Debug, Clone, Default)]
pub struct RunFilter {
    pub status: Option<RunStatus>,
    pub workflow_id: Option<String>,
    /// 1-based.
    pub page: usize,
}

/// What the dashboard may change on a principal.
#[derive(Debug, Clone, Default)]
pub struct PrincipalEdit {
    pub id: String,
    pub name: String,
    pub email: Option<String>,
    pub groups: Vec<String>,
    pub roles: Vec<String>,
    pub is_override: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MembershipKind {
    Group,
    Role,
}

/// A new key: `key` is shown once and never stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct NewApiKey {
    pub id: String,
    pub key: String,
}

/// Whether `p` may use the dashboard.
pub fn is_admin(p: &Principal) -> bool {
    p.roles.iter().any(|r| r == ADMIN_ROLE)
}

/// The tenant an admin operation acts on: the actor's own, once the actor
/// is checked to hold `admin` (an admin API key, or a person with the admin
/// role signed in). Every tenant admin operation starts here, so no adapter
/// can reach one without the check.
pub fn admin_tenant(actor: &Actor) -> Result<&str> {
    if actor.allows(Scope::Admin) {
        Ok(actor.tenant())
    } else {
        Err(EngineError::Forbidden(format!(
            "{} may not administer tenant {}: this needs the admin scope (or the \"{ADMIN_ROLE}\" role in the console)",
            actor.principal.id,
            actor.tenant()
        )))
    }
}

/// Refuses anyone without the admin role.
pub fn require_admin(p: &Principal) -> Result<()> {
    if is_admin(p) {
        Ok(())
    } else {
        Err(EngineError::Forbidden(format!(
            "the dashboard needs the \"{ADMIN_ROLE}\" role"
        )))
    }
}

/// Directory names (ids, groups, roles): what fits in a path segment and a config file.
fn check_name(field: &str, value: &str) -> Result<()> {
    let ok = !value.is_empty()
        && value.len() <= 128
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '~' | '@' | ':'));
    if ok {
        Ok(())
    } else {
        Err(EngineError::validation(
            field,
            format!("{field} \"{value}\" must be 1–128 characters of letters, digits and . _ - ~ @ :"),
        ))
    }
}

/// A person's `field` (groups or roles) past [`MAX_MEMBERSHIPS`].
fn too_many_memberships(field: &str) -> EngineError {
    EngineError::validation(field, format!("{field}: at most {MAX_MEMBERSHIPS} per person"))
}

/// The membership bound for every directory write (dashboard, CLI, configuration).
pub(crate) fn check_memberships(p: &Principal) -> Result<()> {
    for (field, list) in [("groups", &p.groups), ("roles", &p.roles)] {
        if list.len() > MAX_MEMBERSHIPS {
            return Err(too_many_memberships(field));
        }
    }
    Ok(())
}

fn check_email(email: &str) -> Result<()> {
    let valid = email
        .split_once('@')
        .is_some_and(|(local, domain)| !local.is_empty() && domain.contains('.') && !domain.starts_with('.'))
        && !email.chars().any(|c| c.is_whitespace() || c.is_control());
    if valid {
        Ok(())
    } else {
        Err(EngineError::validation(
            "email",
            format!("\"{email}\" is not an email address"),
        ))
    }
}

fn pages_of(total: usize, size: usize) -> usize {
    total.div_ceil(size).max(1)
}

fn opt_time(ms: Option<Millis>) -> Option<String> {
    ms.map(rfc3339)
}

use crate::store::admin::{RunQuery, RunTuple};

fn run_row(
    (run_id, workflow_id, status, current_node_id, owner, created, completed): RunTuple,
) -> Result<RunRow> {
    let owner: Value = serde_json::from_str(&owner)
        .map_err(|e| EngineError::Storage(format!("runs.owner of {run_id}: {e}")))?;
    Ok(RunRow {
        status: status.parse()?,
        owner: owner["subject"]["subjectId"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        run_id,
        workflow_id,
        current_node_id,
        created_at: rfc3339(created),
        completed_at: opt_time(completed),
    })
}

impl Engine {
    /// Every tenant with a principal (for offline listings).
    pub async fn tenants(&self) -> Result<Vec<String>> {
        self.inner.store.tenants().await
    }

    // ----- overview and charts ------------------------------------------------------

    /// The dashboard's front page for `tenant`; `days` of decisions, ending today.
    pub async fn admin_overview(&self, actor: &Actor, days: usize) -> Result<AdminOverview> {
        let tenant = admin_tenant(actor)?;
        let now = self.now();
        let store = &self.inner.store;
        let runs_by_status = self.runs_by_status(tenant).await?;
        // Counted in the database: a tenant may have thousands pending.
        let bounds = [
            AGE_BUCKETS[0].0,
            AGE_BUCKETS[1].0,
            AGE_BUCKETS[2].0,
            AGE_BUCKETS[3].0,
        ];
        let buckets = store.pending_by_age(tenant, now, bounds).await?;
        let mut age_counts = [0i64; AGE_BUCKETS.len()];
        for (bucket, count) in buckets {
            age_counts[bucket as usize] = count;
        }
        let overdue = store.overdue_count(tenant, now).await?;
        let pending_rows = store.most_urgent(tenant, OVERVIEW_PENDING).await?;
        let pending: Vec<PendingRow> = pending_rows
            .into_iter()
            .map(
                |(run_id, node_id, kind, title, workflow_id, created, deadline, votes)| {
                    Ok(PendingRow {
                        run_id,
                        node_id,
                        kind: kind.parse()?,
                        title,
                        workflow_id,
                        created_at: rfc3339(created),
                        age_ms: now - created,
                        deadline: opt_time(deadline),
                        deadline_in_ms: deadline.map(|d| d - now),
                        deadline_state: deadline_state(deadline, now),
                        votes,
                    })
                },
            )
            .collect::<Result<_>>()?;
        let outbox_backlog = store.outbox_backlog_of(tenant).await?;
        Ok(AdminOverview {
            runs_by_status,
            pending_total: age_counts.iter().sum(),
            overdue,
            outbox_backlog,
            age_buckets: AGE_BUCKETS
                .iter()
                .zip(age_counts)
                .map(|((_, label), count)| Bucket {
                    label: label.to_string(),
                    count,
                })
                .collect(),
            decisions: self.decisions_per_day(tenant, days).await?,
            pending,
        })
    }

    async fn runs_by_status(&self, tenant: &str) -> Result<Vec<StatusCount>> {
        let counts = self.inner.store.run_status_counts(tenant).await?;
        // Every status, in the order the dashboard lists them; a stored
        // status this build does not know is an error, not a hidden row.
        let mut out: Vec<StatusCount> = RunStatus::ALL
            .iter()
            .map(|&status| StatusCount { status, count: 0 })
            .collect();
        for (status, count) in &counts {
            let status: RunStatus = status.parse()?;
            if let Some(row) = out.iter_mut().find(|r| r.status == status) {
                row.count = *count;
            }
        }
        Ok(out)
    }

    /// Interrupts resolved per UTC day over the last `days` days (oldest first, every day present).
    async fn decisions_per_day(&self, tenant: &str, days: usize) -> Result<Vec<DayDecisions>> {
        let days = days.clamp(1, 366);
        let today = self.now().div_euclid(DAY);
        let first = today - (days as Millis - 1);
        let rows = self.inner.store.resolved_since(tenant, first * DAY).await?;
        let mut by_day: Vec<DayDecisions> = (first..=today)
            .map(|d| DayDecisions {
                day: rfc3339(d * DAY)[..10].to_string(),
                ..Default::default()
            })
            .collect();
        for (at, kind, decision, reason, action) in rows {
            let Some(slot) = by_day.get_mut((at.div_euclid(DAY) - first) as usize) else {
                continue;
            };
            let kind: InterruptKind = kind.parse()?;
            let action = action.as_deref().map(str::parse::<ApprovalAction>).transpose()?;
            if reason.as_deref() == Some("timeout") {
                slot.timed_out += 1;
            } else if kind != InterruptKind::Approval {
                slot.answered += 1;
            } else if decision.as_deref() == Some("rejected") || action.is_some_and(ApprovalAction::rejects) {
                slot.rejected += 1;
            } else {
                slot.approved += 1;
            }
        }
        Ok(by_day)
    }

    // ----- runs and timelines --------------------------------------------------------

    /// Runs of `tenant`, newest first, filtered and cut into pages.
    pub async fn admin_runs(&self, actor: &Actor, filter: &RunFilter) -> Result<RunPage> {
        let tenant = admin_tenant(actor)?;
        let store = &self.inner.store;
        let page = filter.page.max(1);
        let query = RunQuery {
            tenant,
            status: filter.status,
            workflow_id: filter.workflow_id.as_deref(),
            limit: RUNS_PAGE_SIZE as i64,
            // Past the last page is an empty page, however far past.
            offset: i64::try_from((page - 1).saturating_mul(RUNS_PAGE_SIZE)).unwrap_or(i64::MAX),
        };
        let (total, rows) = store.run_page(&query).await?;
        let workflows = store.run_workflows(tenant).await?;
        Ok(RunPage {
            items: rows.into_iter().map(run_row).collect::<Result<_>>()?,
            total: total as usize,
            page,
            pages: pages_of(total as usize, RUNS_PAGE_SIZE),
            by_status: self.runs_by_status(tenant).await?,
            workflows,
        })
    }

    /// A run's event log and the audit of every vote on its interrupts.
    pub async fn run_timeline(&self, actor: &Actor, run_id: &RunId) -> Result<Timeline> {
        let tenant = admin_tenant(actor)?;
        let store = &self.inner.store;
        let row = store.timeline_run(run_id).await?;
        let Some((run, error, run_tenant)) = row else {
            return Err(EngineError::NotFound(format!("run \"{run_id}\" not found")));
        };
        if run_tenant != tenant {
            // Another tenant's run does not exist for this admin.
            return Err(EngineError::NotFound(format!("run \"{run_id}\" not found")));
        }
        let events = store.event_rows(run_id).await?;
        let audit = store.audit(run_id).await?;
        Ok(Timeline {
            run: run_row(run)?,
            error: error
                .map(|e| serde_json::from_str(&e))
                .transpose()
                .map_err(|e| EngineError::Storage(format!("runs.error of {run_id}: {e}")))?,
            events: events
                .into_iter()
                .map(|(sequence, event_type, node_id, ts, payload)| {
                    Ok(TimelineEvent {
                        sequence,
                        event_type: event_type.parse()?,
                        node_id,
                        timestamp: rfc3339(ts),
                        payload: serde_json::from_str(&payload).map_err(|e| {
                            EngineError::Storage(format!(
                                "event {sequence} of {run_id}: payload is not JSON: {e}"
                            ))
                        })?,
                    })
                })
                .collect::<Result<_>>()?,
            audit: audit
                .into_iter()
                .map(
                    |(node_id, visit, principal, action, eligible_via, at, superseded, cast_by)| {
                        Ok(AuditRow {
                            node_id,
                            visit,
                            principal,
                            cast_by,
                            action: action.parse()?,
                            eligible_via,
                            decided_at: rfc3339(at),
                            counted: superseded == 0,
                        })
                    },
                )
                .collect::<Result<_>>()?,
        })
    }

    // ----- directory -------------------------------------------------------------------

    /// Everyone in `tenant`, with the groups and roles they make up.
    pub async fn directory(&self, actor: &Actor) -> Result<Directory> {
        let tenant = admin_tenant(actor)?;
        let rows = self.inner.store.tenant_principals(tenant).await?;
        let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let mut roles: BTreeMap<String, Vec<String>> = BTreeMap::new();
        let people: Vec<DirectoryEntry> = rows
            .into_iter()
            .map(|(id, name, email, g, r, o, phc)| {
                let principal = crate::directory::principal_from_columns(
                    id,
                    tenant.to_string(),
                    name,
                    email,
                    &g,
                    &r,
                    o != 0,
                )?;
                for g in &principal.groups {
                    groups.entry(g.clone()).or_default().push(principal.id.clone());
                }
                for r in &principal.roles {
                    roles.entry(r.clone()).or_default().push(principal.id.clone());
                }
                Ok(DirectoryEntry {
                    principal,
                    has_password: phc.is_some(),
                })
            })
            .collect::<Result<_>>()?;
        let list = |m: BTreeMap<String, Vec<String>>| {
            m.into_iter()
                .map(|(name, members)| Membership { name, members })
                .collect()
        };
        Ok(Directory {
            people,
            groups: list(groups),
            roles: list(roles),
        })
    }

    /// Creates or edits a principal of `tenant`. An id of another tenant is refused.
    pub async fn save_principal(&self, actor: &Actor, edit: PrincipalEdit) -> Result<Principal> {
        let tenant = admin_tenant(actor)?;
        let id = edit.id.trim().to_string();
        check_name("id", &id)?;
        let name = edit.name.trim();
        if name.is_empty() || name.len() > 200 {
            return Err(EngineError::validation("name", "name must be 1–200 characters"));
        }
        crate::text::refuse_nul_str(name, "name")?;
        crate::text::refuse_control_str(name, "name")?;
        let email = edit.email.map(|e| e.trim().to_string()).filter(|e| !e.is_empty());
        if let Some(e) = &email {
            check_email(e)?;
        }
        let clean = |field: &str, list: Vec<String>| -> Result<Vec<String>> {
            let mut seen = HashSet::new();
            let mut out: Vec<String> = Vec::new();
            for item in list.iter().map(|s| s.trim()).filter(|s| !s.is_empty()) {
                check_name(field, item)?;
                if seen.insert(item) {
                    out.push(item.to_string());
                }
            }
            Ok(out)
        };
        let groups = clean("groups", edit.groups)?;
        let roles = clean("roles", edit.roles)?;
        let principal = Principal {
            id,
            tenant: tenant.to_string(),
            name: name.to_string(),
            email,
            groups,
            roles,
            is_override: edit.is_override,
        };
        self.upsert_tenant_principal(principal.clone()).await?;
        Ok(principal)
    }

    /// Adds `principal` to (or removes it from) a group or role.
    pub async fn set_membership(
        &self,
        actor: &Actor,
        principal_id: &str,
        kind: MembershipKind,
        name: &str,
        member: bool,
    ) -> Result<Principal> {
        let tenant = admin_tenant(actor)?;
        let field = match kind {
            MembershipKind::Group => "group",
            MembershipKind::Role => "role",
        };
        check_name(field, name.trim())?;
        let mut p = self.tenant_principal(tenant, principal_id).await?;
        let list = match kind {
            MembershipKind::Group => &mut p.groups,
            MembershipKind::Role => &mut p.roles,
        };
        list.retain(|n| n != name.trim());
        if member {
            if list.len() >= MAX_MEMBERSHIPS {
                return Err(too_many_memberships(field));
            }
            list.push(name.trim().to_string());
        }
        self.upsert_tenant_principal(p.clone()).await?;
        Ok(p)
    }

    /// Sets (or, with `None`, removes) a principal's console password.
    pub async fn admin_set_password(
        &self,
        actor: &Actor,
        principal_id: &str,
        password: Option<&str>,
    ) -> Result<()> {
        let tenant = admin_tenant(actor)?;
        self.tenant_principal(tenant, principal_id).await?;
        let phc = match password {
            Some(p) => {
                crate::passwords::check_new(p)?;
                Some(self.hash_password(p).await?)
            }
            None => None,
        };
        // The write checks the tenant again: the id may have moved to another
        // tenant while the password was hashed.
        self.set_password_hash_in(Some(tenant), principal_id, phc.as_deref())
            .await
    }

    async fn tenant_principal(&self, tenant: &str, id: &str) -> Result<Principal> {
        match self.principal(id).await? {
            Some(p) if p.tenant == tenant => Ok(p),
            _ => Err(EngineError::NotFound(format!("principal \"{id}\" not found"))),
        }
    }

    // ----- API keys ----------------------------------------------------------------------

    /// The API keys of the admin's tenant's principals, newest first.
    pub async fn api_keys(&self, actor: &Actor) -> Result<Vec<ApiKeyRow>> {
        let tenant = admin_tenant(actor)?.to_string();
        self.operator_api_keys(&tenant).await
    }

    /// The API keys of `tenant`'s principals: the instance operator's view
    /// (the CLI on the database), for any tenant.
    pub async fn operator_api_keys(&self, tenant: &str) -> Result<Vec<ApiKeyRow>> {
        let rows = self.inner.store.tenant_api_keys(tenant).await?;
        Ok(rows
            .into_iter()
            .map(|(hash, principal, scopes, label, created, revoked)| ApiKeyRow {
                id: hash[..KEY_ID_LEN.min(hash.len())].to_string(),
                principal,
                scopes: scopes.split_whitespace().map(str::to_string).collect(),
                label,
                created_at: rfc3339(created),
                revoked_at: opt_time(revoked),
            })
            .collect())
    }

    /// Generates a key for a principal of `tenant`; the plain key is returned once.
    pub async fn create_api_key(
        &self,
        actor: &Actor,
        principal_id: &str,
        scopes: &[String],
        label: Option<String>,
    ) -> Result<NewApiKey> {
        let tenant = admin_tenant(actor)?;
        self.tenant_principal(tenant, principal_id).await?;
        let scopes = auth::parse_scopes(scopes).map_err(|e| EngineError::validation("scopes", e))?;
        if scopes.is_empty() {
            return Err(EngineError::validation("scopes", "choose at least one scope"));
        }
        let label = crate::text::optional_text(label, "label", MAX_LABEL_CHARS)?;
        let key = auth::generate_key();
        self.insert_tenant_api_key(tenant, &key, principal_id, &scopes, label)
            .await?;
        Ok(NewApiKey {
            id: auth::hash_key(&key)[..KEY_ID_LEN].to_string(),
            key,
        })
    }

    /// Revokes the key of the admin's tenant whose digest starts with `id`
    /// (at least 8 characters, one match); another tenant's key does not exist here.
    pub async fn revoke_api_key(&self, actor: &Actor, id: &str) -> Result<ApiKeyRow> {
        let tenant = admin_tenant(actor)?.to_string();
        self.revoke_key(Some(&tenant), id).await
    }

    /// Revokes any tenant's key: the instance operator's act (the CLI on the database).
    pub async fn operator_revoke_api_key(&self, id: &str) -> Result<ApiKeyRow> {
        self.revoke_key(None, id).await
    }

    async fn revoke_key(&self, tenant: Option<&str>, id: &str) -> Result<ApiKeyRow> {
        let id = id.trim().to_ascii_lowercase();
        if id.len() < 8 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(EngineError::validation(
                "id",
                "a key id is at least 8 hex characters of the key's digest",
            ));
        }
        let matches = self.inner.store.keys_by_prefix(&id).await?;
        let matches: Vec<String> = matches
            .into_iter()
            .filter(|(_, t)| tenant.is_none_or(|want| want == t))
            .map(|(h, _)| h)
            .collect();
        let hash = match matches.as_slice() {
            [one] => one.clone(),
            [] => return Err(EngineError::NotFound(format!("no API key with id \"{id}\""))),
            _ => {
                return Err(EngineError::validation(
                    "id",
                    format!("\"{id}\" matches several keys; give more characters"),
                ))
            }
        };
        let (h, now) = (hash.clone(), self.now());
        let notice = self.peer_message(super::peers::Change::ApiKey(hash.clone()));
        self.inner
            .store
            .write(move |conn| {
                super::peers::notify_in(conn, &notice)?;
                crate::store::admin::revoke_key(conn, &h, now)
            })
            .await?;
        self.forget_api_key(&hash);
        let row = self.inner.store.api_key(&hash).await?;
        Ok(ApiKeyRow {
            id: hash[..KEY_ID_LEN].to_string(),
            principal: row.0,
            scopes: row.1.split_whitespace().map(str::to_string).collect(),
            label: row.2,
            created_at: rfc3339(row.3),
            revoked_at: opt_time(row.4),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_emails() {
        assert!(check_name("id", "ana.lopez").is_ok());
        assert!(check_name("id", "").is_err());
        assert!(check_name("id", "a b").is_err());
        assert!(check_name("id", "a/b").is_err());
        assert!(check_email("ana@example.com").is_ok());
        assert!(check_email("ana@").is_err());
        assert!(check_email("ana example.com").is_err());
    }

    #[test]
    fn admin_role() {
        let mut p = Principal {
            id: "a".into(),
            tenant: "t".into(),
            name: "A".into(),
            email: None,
            groups: vec![],
            roles: vec!["oncall".into()],
            is_override: false,
        };
        assert!(require_admin(&p).is_err());
        p.roles.push(ADMIN_ROLE.into());
        assert!(require_admin(&p).is_ok());
    }
}
