//! Reads: event logs, long polls, interrupt views and lists, the overview,
//! the projection check.

use super::*;

impl Engine {
    /// Events with `sequence > after`, oldest first.
    /// Also returns the run's snapshot as of the read.
    pub async fn events_after(
        &self,
        run_id: &str,
        actor: &Actor,
        after: i64,
        limit: i64,
    ) -> Result<(Vec<RunEvent>, Value)> {
        let run = self.read_run(run_id, actor).await?;
        let events = self.read_events(run_id, after, limit).await?;
        Ok((events, snapshot_of(&run)))
    }

    pub(super) async fn read_events(&self, run_id: &str, after: i64, limit: i64) -> Result<Vec<RunEvent>> {
        let rows = sqlx::query_as::<_, EventRow>(&self.inner.store.q("SELECT run_id, sequence, event_id, type, node_id, payload, timestamp FROM events WHERE run_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"))
        .bind(run_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.inner.store.read)
        .await?;
        rows.into_iter().map(EventRow::into_event).collect()
    }

    /// Long poll: waits up to `timeout` for events after `after`.
    pub async fn poll_events(
        &self,
        run_id: &str,
        actor: &Actor,
        after: i64,
        timeout: std::time::Duration,
    ) -> Result<(Vec<RunEvent>, Value)> {
        let mut notices = self.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let (events, snapshot) = self.events_after(run_id, actor, after, 1000).await?;
            if !events.is_empty()
                || snapshot["status"]
                    .as_str()
                    .and_then(RunStatus::parse)
                    .is_some_and(RunStatus::is_terminal)
            {
                return Ok((events, snapshot));
            }
            loop {
                match tokio::time::timeout_at(deadline, notices.recv()).await {
                    Err(_) => return Ok((vec![], snapshot)),
                    Ok(Ok(id)) if id == run_id => break,
                    Ok(Ok(_)) => continue,
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => break,
                    Ok(Err(broadcast::error::RecvError::Closed)) => return Ok((vec![], snapshot)),
                }
            }
        }
    }

    /// The latest interrupt raised at `node_id` in a run, with its contract and votes.
    pub async fn inspect_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        actor: &Actor,
    ) -> Result<InterruptView> {
        self.read_run(run_id, actor).await?;
        let mut conn = self.inner.store.read.acquire().await?;
        let row = latest_interrupt(&mut conn, run_id, node_id)
            .await?
            .ok_or_else(|| {
                EngineError::NotFound(format!("no interrupt on node \"{node_id}\" in run {run_id}"))
            })?;
        drop(conn);
        self.interrupt_view(row).await
    }

    pub(super) async fn interrupt_view(&self, row: InterruptRow) -> Result<InterruptView> {
        let votes: Vec<(String, String, String, Millis, i64, String)> = sqlx::query_as(&self.inner.store.q("SELECT principal, action, eligible_via, decided_at, superseded, resume_value FROM votes WHERE interrupt_id = ? ORDER BY seq"))
        .bind(&row.interrupt_id)
        .fetch_all(&self.inner.store.read)
        .await?;
        let votes: Vec<VoteView> = votes
            .into_iter()
            .map(|(principal, action, eligible_via, at, superseded, rv)| {
                let action: ApprovalAction = action
                    .parse()
                    .map_err(|e| EngineError::Storage(format!("votes.action: {e}")))?;
                Ok(VoteView {
                    counted: superseded == 0 && action.is_vote(),
                    principal,
                    action,
                    eligible_via,
                    decided_at: rfc3339(at),
                    resume_value: serde_json::from_str(&rv)
                        .map_err(|e| EngineError::Storage(format!("votes.resume_value: {e}")))?,
                })
            })
            .collect::<Result<_>>()?;
        let payload = row.payload.clone();
        let quorum = row.rules.as_ref().map(|r| {
            // Counted as the tally counts: approvals of the same data; rejects and refines.
            let original = payload["data"].get("artifactData");
            let ballots: Vec<crate::approval::Ballot> = votes
                .iter()
                .filter(|v| v.counted)
                .map(|v| crate::approval::Ballot {
                    principal: v.principal.clone(),
                    action: v.action,
                    is_override: false,
                    approves: crate::approval::approved_data(v.action, &v.resume_value, original),
                })
                .collect();
            let accepts = crate::approval::agreeing_approvals(&ballots);
            let rejects = ballots.iter().filter(|b| b.rejects()).count();
            json!({
                "requiredApprovals": r.required_approvals,
                "rejectionPolicy": r.rejection_policy,
                "accepts": accepts,
                "rejects": rejects,
                "approversList": r.approvers_list,
                "approverGroupRefs": r.approver_group_refs,
                "approverRoleRefs": r.approver_role_refs,
                "preventSelfApproval": r.prevent_self_approval,
            })
        });
        let contract = row.contract_json()?;
        Ok(InterruptView {
            payload,
            request: row.request.unwrap_or(Value::Null),
            resolution: row.resolution,
            interrupt_id: row.interrupt_id,
            run_id: row.run_id,
            node_id: row.node_id,
            workflow_id: row.workflow_id,
            key: row.key,
            kind: row.kind,
            status: row.status,
            title: row.title,
            request_schema: contract.request_schema,
            resume_schema: contract.resume_schema,
            outcomes: contract.outcomes,
            typed: contract.typed,
            created_at: rfc3339(row.created_at),
            deadline: row.deadline_at.map(rfc3339),
            resolved_at: row.resolved_at.map(rfc3339),
            votes,
            quorum,
        })
    }

    /// Interrupts in the actor's tenant, newest first.
    pub async fn list_interrupts(
        &self,
        actor: &Actor,
        filter: &InterruptFilter,
    ) -> Result<Vec<InterruptView>> {
        actor.require(Scope::RunsRead)?;
        let limit = if filter.limit <= 0 {
            50
        } else {
            filter.limit.min(500)
        };
        let tenant = ids::TenantRange::of(actor.tenant());
        let sql = format!(
            "SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE {} \
             AND (? IS NULL OR status = ?) AND (? IS NULL OR workflow_id = ?) AND (? IS NULL OR kind = ?) \
             ORDER BY created_at DESC LIMIT ?",
            ids::TenantRange::sql("run_id")
        );
        let sql = self.inner.store.q(&sql);
        let status = filter.status.map(InterruptStatus::as_str);
        let kind = filter.kind.map(InterruptKind::as_str);
        let query = sqlx::query(&sql)
            .bind(&tenant.from)
            .bind(&tenant.to)
            .bind(status)
            .bind(status)
            .bind(&filter.workflow_id)
            .bind(&filter.workflow_id)
            .bind(kind)
            .bind(kind)
            .bind(limit);
        let rows = crate::store::fetch_rows(query, &self.inner.store.read, InterruptRow::from_row).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(self.interrupt_view(r).await?);
        }
        Ok(out)
    }

    /// Whether the database answers (the health check: cheap at any size).
    pub async fn ping(&self) -> Result<()> {
        let one: i64 = sqlx::query_scalar("SELECT 1")
            .fetch_one(&self.inner.store.read)
            .await?;
        if one == 1 {
            Ok(())
        } else {
            Err(EngineError::Storage(
                "the database answered SELECT 1 wrongly".into(),
            ))
        }
    }

    pub async fn overview(&self) -> Result<Overview> {
        let (runs, pending): (i64, i64) = sqlx::query_as(&self.inner.store.q(
            "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM interrupts WHERE status = 'pending')",
        ))
        .fetch_one(&self.inner.store.read)
        .await?;
        Ok(Overview {
            workflows: self.inner.current.read().expect("lock").len() as i64,
            runs,
            pending_interrupts: pending,
        })
    }

    /// Rebuilds a run's projection from its event log alone and compares it
    /// with the stored projection; returns the differences (empty when equal).
    pub async fn verify_projection(&self, run_id: &str) -> Result<Vec<String>> {
        let events = self.read_events(run_id, -1, i64::MAX).await?;
        let folded = crate::projection::fold(&events);
        let mut conn = self.inner.store.read.acquire().await?;
        let run = load_run(&mut conn, run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(run_id.into()))?;
        let nodes: Vec<(String, String, i64)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT node_id, status, visits FROM node_states WHERE run_id = ? ORDER BY node_id"),
        )
        .bind(run_id)
        .fetch_all(&mut *conn)
        .await?;
        let interrupts: Vec<(String, String)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT interrupt_id, status FROM interrupts WHERE run_id = ? ORDER BY interrupt_id"),
        )
        .bind(run_id)
        .fetch_all(&mut *conn)
        .await?;
        let nodes = nodes
            .into_iter()
            .map(|(node, status, visits)| Ok((node, status.parse()?, visits)))
            .collect::<Result<Vec<_>>>()?;
        let interrupts = interrupts
            .into_iter()
            .map(|(id, status)| Ok((id, status.parse()?)))
            .collect::<Result<Vec<_>>>()?;
        Ok(folded.diff(&run, &nodes, &interrupts))
    }
}
