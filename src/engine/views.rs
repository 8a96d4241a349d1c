//! Reads: event logs, long polls, interrupt views and lists, the overview,
//! the projection check.

use super::*;

impl Engine {
    /// Events with `sequence > after`, oldest first.
    /// Also returns the run's snapshot as of the read.
    pub async fn events_after(
        &self,
        run_id: &RunId,
        actor: &Actor,
        after: i64,
        limit: i64,
    ) -> Result<(Vec<RunEvent>, Value)> {
        let run = self.read_run(run_id, actor).await?;
        let events = self.read_events(run_id, after, limit).await?;
        Ok((events, snapshot_of(&run)))
    }

    pub(super) async fn read_events(&self, run_id: &RunId, after: i64, limit: i64) -> Result<Vec<RunEvent>> {
        self.inner.store.events(run_id, after, limit).await
    }

    /// Long poll: waits up to `timeout` for events after `after`.
    pub async fn poll_events(
        &self,
        run_id: &RunId,
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
                    Ok(Ok(id)) if id == run_id.as_str() => break,
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
        run_id: &RunId,
        node_id: &str,
        actor: &Actor,
    ) -> Result<InterruptView> {
        self.read_run(run_id, actor).await?;
        crate::ids::check_node_id(node_id)?;
        let row = self
            .inner
            .store
            .latest_interrupt(run_id, node_id)
            .await?
            .ok_or_else(|| {
                EngineError::NotFound(format!("no interrupt on node \"{node_id}\" in run {run_id}"))
            })?;
        self.interrupt_view(row).await
    }

    /// The thread of the conversation an interrupt belongs to (its
    /// `data.conversationId`): each `conversation.*` interrupt of the run
    /// for that conversation, in order, with its prompt and answer; the
    /// interrupt itself is marked `current`. `None` for other kinds. Checked
    /// like [`Engine::inspect_interrupt`] (the run is in the caller's tenant).
    pub async fn conversation_thread(
        &self,
        run_id: &RunId,
        node_id: &str,
        actor: &Actor,
    ) -> Result<Option<tollgate_wire::present::Thread>> {
        let view = self.inspect_interrupt(run_id, node_id, actor).await?;
        self.thread_of(&view).await
    }

    /// [`Engine::conversation_thread`] for the interrupt of a token link
    /// (checked as [`Engine::inspect_by_token`]).
    pub async fn conversation_thread_by_token(
        &self,
        token: &str,
    ) -> Result<Option<tollgate_wire::present::Thread>> {
        let (view, _) = self.inspect_by_token(token).await?;
        self.thread_of(&view).await
    }

    async fn thread_of(&self, view: &InterruptView) -> Result<Option<tollgate_wire::present::Thread>> {
        if !view.kind.is_conversation() {
            return Ok(None);
        }
        let Some(id) = view.payload["data"]["conversationId"].as_str() else {
            return Ok(None);
        };
        let events = self.read_events(&view.run_id, -1, i64::MAX).await?;
        Ok(Some(crate::present::thread(id, &events, &view.key)))
    }

    pub(super) async fn interrupt_view(&self, row: InterruptRow) -> Result<InterruptView> {
        let votes: Vec<VoteView> = self
            .inner
            .store
            .votes(&row.interrupt_id)
            .await?
            .into_iter()
            .map(|v| VoteView {
                counted: !v.superseded && v.action.is_vote(),
                principal: v.principal,
                cast_by: v.cast_by,
                action: v.action,
                eligible_via: v.eligible_via,
                decided_at: rfc3339(v.decided_at),
                resume_value: v.resume_value,
            })
            .collect();
        let payload = row.payload()?;
        let (request, resolution) = row.request_and_resolution()?;
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
        // The compiled contracts are cached by their text: no parse per view.
        let contract = crate::contract::cached(&row.contract)?.contract().clone();
        let requires_sign_in = super::tokens::requires_sign_in(&row);
        Ok(InterruptView {
            payload,
            request: request.unwrap_or(Value::Null),
            resolution,
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
            requires_sign_in,
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
        let query = crate::store::reads::InterruptQuery {
            tenant: actor.tenant(),
            status: filter.status,
            workflow_id: filter.workflow_id.as_deref(),
            kind: filter.kind,
            limit,
        };
        let rows = self.inner.store.interrupts(&query).await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(self.interrupt_view(r).await?);
        }
        Ok(out)
    }

    /// Whether the database answers (the health check: cheap at any size).
    pub async fn ping(&self) -> Result<()> {
        self.inner.store.ping().await
    }

    /// Interrupts waiting for a decision, over the whole instance, from the
    /// counts kept with every write (the metrics gauge: cheap at any size).
    pub async fn pending_interrupts(&self) -> Result<i64> {
        self.inner.store.pending_total().await
    }

    /// Whether the instance stores any run.
    pub async fn has_runs(&self) -> Result<bool> {
        self.inner.store.has_runs().await
    }

    /// Every run of the instance, counted row by row: its cost grows with
    /// the store (tools and tests; the dashboard counts per tenant).
    pub async fn run_count(&self) -> Result<i64> {
        self.inner.store.run_count().await
    }

    /// Rebuilds a run's projection from its event log alone and compares it
    /// with the stored projection, and the inbox counts of its tenant with its
    /// pending rows; returns the differences (empty when equal).
    pub async fn verify_projection(&self, run_id: &RunId) -> Result<Vec<String>> {
        let events = self.read_events(run_id, -1, i64::MAX).await?;
        let folded = crate::projection::fold(&events);
        let run = self
            .inner
            .store
            .run(run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(run_id.to_string()))?;
        let (nodes, interrupts) = self.inner.store.projection(run_id).await?;
        let mut diff = folded.diff(&run, &nodes, &interrupts);
        diff.extend(
            self.inner
                .store
                .inbox_drift(crate::ids::tenant_of(run_id))
                .await?,
        );
        Ok(diff)
    }
}
