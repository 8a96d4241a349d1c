//! Runs: create, read, cancel, resolve (one atomic command each), and run
//! callbacks' URL policy.

use super::idempotency::run_idempotent;
use super::*;
use crate::store::nodes::node_rows;

impl Engine {
    /// Starts a run of a registered workflow.
    pub async fn create_run(
        &self,
        req: CreateRun,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<RunCreated>> {
        actor.require(Scope::RunsCreate)?;
        let tenant = actor.tenant().to_string();
        if let Some(t) = &req.tenant_id {
            if *t != tenant {
                return Err(EngineError::TenantMismatch);
            }
        }
        let callback_url = match &req.callback_url {
            None => None,
            Some(url) => Some(self.check_callback_url(url)?),
        };
        let inputs = match req.inputs {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(EngineError::validation("inputs", "inputs must be an object")),
        };
        crate::text::refuse_nul(&inputs, "inputs")?;
        for (field, value) in [("tags", &req.tags), ("metadata", &req.metadata)] {
            if let Some(v) = value {
                crate::text::refuse_nul(v, field)?;
            }
        }
        if let Some(c) = &req.configurable {
            check_configurable(c)?;
        }
        if let Some(t) = &req.tags {
            if !t.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                return Err(EngineError::validation(
                    "tags",
                    "tags must be an array of strings",
                ));
            }
        }
        if let Some(m) = &req.metadata {
            if !m.is_object() {
                return Err(EngineError::validation("metadata", "metadata must be an object"));
            }
        }
        let (digest, wf, _) = self
            .visible_workflow_now(&tenant, &req.workflow_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no workflow \"{}\"", req.workflow_id)))?;
        let requested_by = match &req.requested_by {
            None => None,
            Some(person) => Some(self.check_requested_by(person, actor).await?),
        };
        let owner = json!({ "tenant": tenant, "subject": actor.subject() });
        let now = self.now();
        let run_id = RunId::trusted(ids::new_tenant_bound(&tenant));
        let new = NewRun {
            run_id: run_id.clone(),
            workflow_digest: digest,
            inputs,
            owner,
            configurable: req.configurable,
            tags: req.tags,
            metadata: req.metadata,
            callback_url,
            requested_by,
        };
        let caller = actor.principal.id.clone();
        // Exec reads and decides, and writes only in `finish`.
        let outcome = self
            .inner
            .store
            .write_decided(move |conn| {
                run_idempotent(conn, &tenant, &caller, idem, |conn| {
                    let run = Exec::start(conn, &wf, new, now)?.finish()?;
                    Ok(RunCreated {
                        run_id: run.run_id,
                        status: run.status,
                    })
                })
            })
            .await?;
        if !outcome.replayed {
            self.notify(&run_id);
        }
        Ok(outcome)
    }

    /// `requestedBy`: a person of the caller's own tenant (exactly), named
    /// by a caller that may act on behalf of others, unless it names the
    /// caller. An unknown person and one of another tenant get the same 400.
    async fn check_requested_by(&self, person: &str, actor: &Actor) -> Result<String> {
        crate::text::refuse_nul_str(person, "requestedBy")?;
        if person != actor.principal.id && !actor.allows(Scope::RunsOnBehalf) {
            return Err(EngineError::Forbidden(
                "requestedBy names another person: creating a run on their behalf needs the runs:on-behalf scope"
                    .into(),
            ));
        }
        match self.principal(person).await? {
            Some(p) if p.tenant == actor.tenant() => Ok(p.id),
            _ => Err(EngineError::validation(
                "requestedBy",
                format!("requestedBy: no person {person:?} in this tenant"),
            )),
        }
    }

    pub(super) async fn read_run(&self, run_id: &RunId, actor: &Actor) -> Result<RunRow> {
        actor.require(Scope::RunsRead)?;
        if ids::tenant_of(run_id) != actor.tenant() {
            return Err(EngineError::TenantMismatch);
        }
        self.inner
            .store
            .run(run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no run {run_id}")))
    }

    /// RunSnapshot v2.
    pub async fn snapshot(&self, run_id: &RunId, actor: &Actor) -> Result<Value> {
        let run = self.read_run(run_id, actor).await?;
        Ok(snapshot_of(&run))
    }

    /// Cancels a live run; its interrupts can no longer be resolved.
    pub async fn cancel_run(
        &self,
        run_id: &RunId,
        reason: Option<String>,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<RunCreated>> {
        actor.require(Scope::RunsCancel)?;
        if ids::tenant_of(run_id) != actor.tenant() {
            return Err(EngineError::TenantMismatch);
        }
        let this = self.clone();
        let (rid, tenant, by) = (
            run_id.to_string(),
            actor.tenant().to_string(),
            actor.principal.id.clone(),
        );
        let now = self.now();
        let outcome = self
            .inner
            .store
            .write(move |conn| {
                let caller = by.clone();
                run_idempotent(conn, &tenant, &caller, idem, |conn| {
                    let run = load_run_for_update(conn, &rid)?
                        .ok_or_else(|| EngineError::NotFound(format!("no run {rid}")))?;
                    if run.is_terminal() {
                        return Err(EngineError::RunTerminal(run.status));
                    }
                    let wf = this.workflow_version(conn, &run.workflow_digest)?;
                    let mut exec = Exec::load(conn, &wf, run, now)?;
                    exec.cancel(reason, Some(by))?;
                    let run = exec.finish()?;
                    Ok(RunCreated {
                        run_id: run.run_id,
                        status: run.status,
                    })
                })
            })
            .await?;
        self.notify(run_id);
        Ok(outcome)
    }

    /// Resolves (or votes on) the pending interrupt of `node_id` in a run.
    pub async fn resolve(
        &self,
        run_id: &RunId,
        node_id: &str,
        resume_value: Value,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<Resolved>> {
        self.resolve_visit(run_id, node_id, None, resume_value, actor, idem)
            .await
    }

    /// [`Engine::resolve`], and with `interrupt_id` only that interrupt (a
    /// link's visit): a later visit pending at the node is refused (409),
    /// checked inside the same writer command as the resolve.
    pub(super) async fn resolve_visit(
        &self,
        run_id: &RunId,
        node_id: &str,
        interrupt_id: Option<String>,
        resume_value: Value,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<Resolved>> {
        actor.require(Scope::ApprovalsRespond)?;
        if ids::tenant_of(run_id) != actor.tenant() {
            return Err(EngineError::TenantMismatch);
        }
        crate::text::refuse_nul(&resume_value, "resumeValue")?;
        let this = self.clone();
        let (rid, nid, tenant, actor) = (
            run_id.clone(),
            node_id.to_string(),
            actor.tenant().to_string(),
            actor.clone(),
        );
        // `apply_resolve` reads and decides, then writes once.
        let outcome = self
            .inner
            .store
            .write_decided(move |conn| {
                run_idempotent(conn, &tenant, &actor.principal.id, idem, |conn| {
                    this.apply_resolve(conn, &rid, &nid, interrupt_id.as_deref(), resume_value, &actor)
                })
            })
            .await?;
        if outcome.result.is_ok() && !outcome.replayed {
            self.notify(run_id);
        }
        Ok(outcome)
    }

    pub(super) fn apply_resolve(
        &self,
        conn: &WriteConn,
        run_id: &RunId,
        node_id: &str,
        interrupt_id: Option<&str>,
        resume_value: Value,
        actor: &Actor,
    ) -> Result<Resolved> {
        let run = load_run_for_update(conn, run_id)?
            .ok_or_else(|| EngineError::NotFound(format!("no run {run_id}")))?;
        // Who votes, and when, as of now that the run is held: a request that
        // waited for the run (another instance's command holding it) is judged
        // by the directory and the clock after the wait, so a removal, a group
        // change or the deadline committed meanwhile is not overtaken.
        let now = self.now();
        let principal = &crate::store::directory::principal_now(conn, &actor.principal.id)?
            .filter(|p| p.tenant == actor.principal.tenant)
            .ok_or_else(|| {
                EngineError::Forbidden(format!(
                    "{} is no longer in the directory of this tenant",
                    actor.principal.id
                ))
            })?;
        // The node state names the row of its interrupt (SQLite), saving a search.
        let nodes = node_rows(&run)?;
        let known = nodes
            .iter()
            .find(|n| n.node_id.as_str() == node_id)
            .and_then(|n| n.interrupt);
        let interrupt = latest_interrupt_for_update(conn, run_id, node_id, known)?.ok_or_else(|| {
            EngineError::NotFound(format!("no interrupt on node \"{node_id}\" in run {run_id}"))
        })?;
        if interrupt_id.is_some_and(|id| id != interrupt.interrupt_id) {
            // The node was asked again (a loop): this link's visit is closed.
            return Err(EngineError::AlreadyResolved(format!(
                "this link was for an earlier visit of \"{node_id}\", which is closed"
            )));
        }
        if interrupt.status != InterruptStatus::Pending || run.is_terminal() {
            return Err(EngineError::AlreadyResolved(format!(
                "the interrupt on \"{node_id}\" is {} (run {})",
                if interrupt.status == InterruptStatus::Pending {
                    "closed"
                } else {
                    interrupt.status.as_str()
                },
                run.status
            )));
        }
        if let Some(deadline) = interrupt.deadline_at.filter(|&d| d <= now) {
            // Passed, though the timer has not fired it yet: a vote now could
            // grant what the timeout rejects. Nothing is written; the timer
            // resolves it as a timeout.
            return Err(EngineError::AlreadyResolved(format!(
                "the deadline of the interrupt on \"{node_id}\" passed at {}: it times out, and a timeout rejects",
                crate::clock::rfc3339(deadline)
            )));
        }
        // A delegate's seat: read only when the caster is not eligible themselves.
        let delegators =
            || crate::store::delegations::delegators_of(conn, principal, &interrupt.interrupt_id, now);
        match decide(&run, &interrupt, &resume_value, actor, principal, delegators, now)? {
            Decision::Recorded(writes) => {
                crate::store::changes::apply(conn, writes)?;
                Ok(Resolved {
                    run_id: run.run_id,
                    node_id: NodeId::trusted(node_id),
                    status: run.status,
                })
            }
            Decision::Resolve {
                resolved,
                resume_value,
                failure,
                writes,
            } => {
                let wf = self.workflow_version(conn, &run.workflow_digest)?;
                let mut exec = Exec::with_nodes(conn, &wf, run, nodes, now)?;
                exec.prepend_changes(writes);
                exec.resolve(&interrupt, resolved, Some(resume_value), failure)?;
                let run = exec.finish()?;
                Ok(Resolved {
                    run_id: run.run_id,
                    node_id: NodeId::trusted(node_id),
                    status: run.status,
                })
            }
        }
    }

    // ----- callbacks ---------------------------------------------------------------------

    /// Turns callback delivery on (with the egress policy that judges URLs and
    /// addresses) or off (`None`: `callbackUrl` is refused).
    pub fn set_callback_policy(&self, policy: Option<crate::egress::EgressPolicy>) {
        *self.inner.callbacks.write().expect("lock") = policy;
    }

    /// The callback egress policy, when this host delivers callbacks.
    pub fn callback_policy(&self) -> Option<crate::egress::EgressPolicy> {
        *self.inner.callbacks.read().expect("lock")
    }

    /// Judges a `callbackUrl` at create: refused (400, `field: callbackUrl`)
    /// when delivery is off or the egress guard refuses it; else normalized.
    pub fn check_callback_url(&self, url: &str) -> Result<String> {
        let refuse = |why: String| EngineError::Validation {
            message: format!("callbackUrl is refused: {why}"),
            field: Some("callbackUrl".into()),
            details: None,
        };
        let policy = self.callback_policy().ok_or_else(|| {
            refuse("this host does not deliver callbacks (no [callbacks] secret configured)".into())
        })?;
        crate::egress::check_new_url(url, policy)
            .map(|u| u.to_string())
            .map_err(refuse)
    }
}

/// The largest `configurable.run.recursionLimit` (visits per node) accepted.
pub const MAX_RECURSION_LIMIT: u64 = 10_000;

fn check_configurable(c: &Value) -> Result<()> {
    let obj = c
        .as_object()
        .ok_or_else(|| EngineError::validation("configurable", "configurable must be an object"))?;
    if obj.get("version") != Some(&json!(1)) {
        return Err(EngineError::validation(
            "configurable.version",
            "configurable.version must be 1",
        ));
    }
    if let Some(extra) = obj.keys().find(|k| !["version", "run"].contains(&k.as_str())) {
        return Err(EngineError::validation(
            format!("configurable.{extra}"),
            "unknown member",
        ));
    }
    if let Some(run) = obj.get("run") {
        let run = run
            .as_object()
            .ok_or_else(|| EngineError::validation("configurable.run", "must be an object"))?;
        if let Some(l) = run.get("recursionLimit") {
            if l.as_u64().is_none_or(|n| !(1..=MAX_RECURSION_LIMIT).contains(&n)) {
                return Err(EngineError::validation(
                    "configurable.run.recursionLimit",
                    format!("recursionLimit must be an integer from 1 to {MAX_RECURSION_LIMIT}"),
                ));
            }
        }
        if let Some(t) = run.get("escalationThreshold") {
            if !t.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x)) {
                return Err(EngineError::validation(
                    "configurable.run.escalationThreshold",
                    "escalationThreshold must be a number between 0 and 1",
                ));
            }
        }
    }
    Ok(())
}

/// RunSnapshot v2 from the runs projection.
pub(crate) fn snapshot_of(run: &RunRow) -> Value {
    let mut s = json!({
        "runId": run.run_id,
        "workflowId": run.workflow_id,
        "status": run.status,
        "owner": run.owner,
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "startedAt": rfc3339(run.created_at),
        "inputs": run.inputs,
    });
    if let Some(n) = &run.current_node_id {
        s["currentNodeId"] = json!(n);
    }
    if let Some(e) = &run.error {
        s["error"] = e.clone();
    }
    if let Some(t) = run.completed_at {
        s["completedAt"] = json!(rfc3339(t));
    }
    for (k, v) in [
        ("configurable", &run.configurable),
        ("tags", &run.tags),
        ("metadata", &run.metadata),
    ] {
        if let Some(v) = v {
            s[k] = v.clone();
        }
    }
    if let Some(person) = &run.requested_by {
        // The snapshot is closed: host state goes in `extensions`.
        s["extensions"] = json!({ SNAPSHOT_EXTENSION: { "requestedBy": person } });
    }
    s
}

/// The snapshot's `extensions` record of Tollgate's own run state.
pub const SNAPSHOT_EXTENSION: &str = "tollgate.run";
