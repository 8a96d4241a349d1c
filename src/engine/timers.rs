//! Timers: passed deadlines (a timeout rejects) and due delays.

use super::*;
use crate::store::changes::Change;
use tollgate_wire::MailReason;

impl Engine {
    /// Fires every passed deadline and due delay; returns how many fired.
    /// A deadline missed while the server was down fires on the first call.
    pub async fn fire_due(&self) -> Result<usize> {
        let now = self.now();
        let due_interrupts = self.inner.store.due_deadlines(now).await?;
        let due_delays = self.inner.store.due_delays(now).await?;
        let mut fired = 0;
        let mut tasks = Vec::new();
        for (interrupt_id, run_id) in due_interrupts {
            let this = self.clone();
            tasks.push(tokio::spawn(async move {
                let rid = run_id.clone();
                let t = this.clone();
                let r = this
                    .inner
                    .store
                    .write(move |conn| t.apply_timeout(conn, &interrupt_id, now))
                    .await;
                (rid, r)
            }));
        }
        for (run_id, node_id) in due_delays {
            let this = self.clone();
            tasks.push(tokio::spawn(async move {
                let rid = run_id.clone();
                let t = this.clone();
                let r = this
                    .inner
                    .store
                    .write(move |conn| t.apply_delay(conn, &RunId::trusted(run_id), &node_id, now))
                    .await;
                (rid, r)
            }));
        }
        for t in tasks {
            match t.await {
                Ok((run_id, Ok(true))) => {
                    fired += 1;
                    self.notify(&run_id);
                }
                Ok((_, Ok(false))) => {}
                Ok((run_id, Err(e))) => tracing::error!(run = %run_id, error = %e, "timer failed"),
                Err(e) => tracing::error!(error = %e, "timer task panicked"),
            }
        }
        Ok(fired)
    }

    pub(super) fn apply_timeout(&self, conn: &WriteConn, interrupt_id: &str, now: Millis) -> Result<bool> {
        let Some(interrupt) = pending_interrupt_for_update(conn, interrupt_id)? else {
            return Ok(false);
        };
        if interrupt.deadline_at.is_none_or(|d| d > now) {
            return Ok(false);
        }
        let Some(run) = load_run_for_update(conn, &interrupt.run_id)? else {
            return Ok(false);
        };
        // Read again under the run's lock: another instance may have fired
        // or resolved it between the first read and the lock.
        let Some(interrupt) = pending_interrupt_for_update(conn, interrupt_id)? else {
            return Ok(false);
        };
        if run.is_terminal() {
            return Ok(false);
        }
        let wf = self.workflow_version(conn, &run.workflow_digest)?;
        let (resolved, failure) = timeout_resolution(&interrupt);
        let tenant = run.tenant.clone();
        let mut exec = Exec::load(conn, &wf, run, now)?;
        exec.resolve(&interrupt, resolved, None, Some(failure))?;
        exec.finish()?;
        // `onTimeout: escalate` notifies the gate's people; it never extends or grants.
        let rules = interrupt.rules.clone();
        if rules
            .as_ref()
            .is_some_and(|r| r.on_timeout == crate::approval::OnTimeout::Escalate)
        {
            let audience = interrupt.data_member("audience")?;
            let notice = crate::notify::Notice {
                tenant: tenant.as_str(),
                kind: interrupt.kind,
                rules: rules.as_ref(),
                audience: audience.as_ref(),
                requester: &interrupt.owner_subject,
            };
            let directory = crate::runtime::load_directory(conn, &tenant)?;
            let mails = crate::notify::recipients(&notice, &directory)
                .into_iter()
                .map(|p| Change::Email {
                    reason: MailReason::Escalation,
                    run_id: interrupt.run_id.clone(),
                    node_id: interrupt.node_id.clone(),
                    interrupt_id: interrupt.interrupt_id.clone(),
                    recipient: p.id.clone(),
                    address: p.email.clone(),
                    at: now,
                })
                .collect();
            crate::store::changes::apply(conn, mails)?;
        }
        Ok(true)
    }

    pub(super) fn apply_delay(
        &self,
        conn: &WriteConn,
        run_id: &RunId,
        node_id: &str,
        now: Millis,
    ) -> Result<bool> {
        let Some(run) = load_run_for_update(conn, run_id)? else {
            return Ok(false);
        };
        if run.is_terminal() {
            return Ok(false);
        }
        let wf = self.workflow_version(conn, &run.workflow_digest)?;
        let mut exec = Exec::load(conn, &wf, run, now)?;
        if !exec.finish_delay(node_id)? {
            return Ok(false);
        }
        exec.finish()?;
        Ok(true)
    }
}
