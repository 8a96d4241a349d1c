//! Raising interrupts (gates, agent escalations) and resuming a node with its decision.

use super::conversation::ConversationRefusal;
use super::{after, Exec};
use crate::definition::{DecisionSpec, InterruptSpec, NodeBehaviour};
use crate::error::{EngineError, Result};
use crate::events::payloads;
use crate::ids;
use crate::interrupt::{reentry_key, InterruptKind};
use crate::store::changes::{Change, InboxCount, NewInterrupt};
use crate::store::directory_cache::load_directory;
use crate::store::json_text;
use crate::store::nodes::InterruptRef;
use crate::store::rows::next_interrupt_row;
use crate::store::rows::{InterruptRow, RunRow};
use serde_json::{json, Map, Value};
use tollgate_wire::{EventType, MailReason, NodeId, NodeStatus};

/// `configurable.run.escalationThreshold`, when the run sets one.
fn run_escalation_threshold(run: &RunRow) -> Option<f64> {
    run.configurable
        .as_ref()
        .and_then(|c| c["run"]["escalationThreshold"].as_f64())
}

impl<'a> Exec<'a> {
    /// A `core.agentDecision`: records `agent.decided`, then goes on with the
    /// agent's decision, or escalates to a person below the threshold.
    pub(super) fn agent_decides(&mut self, node_id: &str, visit: i64, spec: &DecisionSpec) -> Result<()> {
        let bound = match self.bound_inputs(node_id) {
            Ok(b) => b,
            Err(error) => return self.fail(node_id, error),
        };
        let invalid = |field: &str, message: String| json!({"code": "validation_error", "message": format!("node \"{node_id}\": {message}"), "details": {"nodeId": node_id, "field": field}, "retryable": false});
        let Some(decision) = bound.get("decision").cloned() else {
            return self.fail(
                node_id,
                invalid(
                    "inputs.decision",
                    "inputs.decision is not bound to a value".into(),
                ),
            );
        };
        let confidence = match bound.get("confidence") {
            None => None,
            Some(c) => match c.as_f64() {
                Some(x) if (0.0..=1.0).contains(&x) => Some(x),
                _ => {
                    return self.fail(
                        node_id,
                        invalid(
                            "inputs.confidence",
                            format!("inputs.confidence must be a number between 0 and 1, not {c}"),
                        ),
                    )
                }
            },
        };
        let mut decided = json!({ "agentId": spec.agent_id, "decision": decision });
        if let Some(c) = confidence {
            decided["confidence"] = json!(c);
        }
        self.emit(EventType::AgentDecided, Some(node_id), decided)?;
        let threshold = run_escalation_threshold(&self.run)
            .or(spec.threshold)
            .unwrap_or(crate::definition::DEFAULT_ESCALATION_THRESHOLD);
        match confidence {
            // Absent confidence is "no signal": no escalation (agent.decided).
            Some(observed) if observed < threshold => {
                let data = json!({
                    "agentId": spec.agent_id,
                    "threshold": threshold,
                    "observed": observed,
                    "decision": decision,
                });
                self.raise(node_id, visit, &spec.escalation, Some(data))
            }
            _ => self.complete(
                node_id,
                json!({ "decision": decision, "confidence": confidence, "escalated": false }),
            ),
        }
    }

    /// Fails `node_id` because its interrupt payload could not be built or is not valid.
    fn fail_payload(&mut self, node_id: &str, member: &str, message: String) -> Result<()> {
        self.fail(
            node_id,
            json!({
                "code": "validation_error",
                "message": format!("node \"{node_id}\": {member}: {message}"),
                "details": {"nodeId": node_id, "field": member},
                "retryable": false
            }),
        )
    }

    /// Raises the node's interrupt: binds its data (or takes `data` as
    /// given), checks the payload against its kind and contract, and
    /// suspends. A payload that fails fails the node; nothing is requested.
    pub(super) fn raise(
        &mut self,
        node_id: &str,
        visit: i64,
        spec: &InterruptSpec,
        data: Option<Value>,
    ) -> Result<()> {
        let wf = self.wf;
        let node = wf.node(node_id).expect("checked by fire");
        let bound = match self.bound_inputs(node_id) {
            Ok(b) => b,
            Err(error) => return self.fail(node_id, error),
        };
        let mut data = match data {
            Some(d) => d,
            None if spec.bound => match crate::binding::bind_tree(&spec.data, &self.scope(), "data") {
                Ok(d) => d,
                Err(e) => return self.fail_payload(node_id, &e.member, e.message),
            },
            None => spec.data.clone(),
        };
        let request = if !bound.is_empty() {
            Value::Object(bound)
        } else {
            match (spec.kind, data.get("artifactData"), data.get("payload")) {
                (InterruptKind::Approval, Some(a), _) if a.is_object() => a.clone(),
                (InterruptKind::Custom, _, Some(p)) if p.is_object() => p.clone(),
                _ => json!({}),
            }
        };
        if let Err(e) = spec.contract.validate_request(&request) {
            let message = format!("node \"{node_id}\": request payload does not match requestSchema: {e}");
            let field = match &e {
                EngineError::Validation { field, .. } => field.clone(),
                _ => None,
            };
            return self
                .fail(
                    node_id,
                    json!({"code": "validation_error", "message": message, "details": {"nodeId": node_id, "field": field}, "retryable": false}),
                );
        }
        match spec.kind {
            InterruptKind::Approval if request.as_object().is_some_and(|m| !m.is_empty()) => {
                data["artifactData"] = request.clone();
            }
            InterruptKind::Custom if request.as_object().is_some_and(|m| !m.is_empty()) => {
                data["payload"] = request.clone();
            }
            _ => {}
        }
        let conversation = match self.conversation_turn(spec.kind, &mut data) {
            Ok(c) => c,
            Err(ConversationRefusal::Fail { member, message }) => {
                return self.fail_payload(node_id, &member, message)
            }
            Err(ConversationRefusal::Refuse(e)) => return Err(e),
        };
        let key = reentry_key(&self.run.run_id, node_id, visit);
        // Written once: the interrupt's row and its `interrupt.requested` event store the same text.
        let payload = serde_json::to_string(&payloads::InterruptRequested {
            data: &data,
            key: &key,
            kind: spec.kind.as_str(),
            resume_schema: spec.contract.resume_schema_text(),
            timeout_ms: spec.timeout_ms,
        })?;
        // An unbound payload was checked at registration; what a run adds to it
        // (`artifactData`, `payload`, `turnIndex`) the kind's schema admits.
        let checked = if spec.bound {
            crate::interrupt::check_payload(spec.kind, &serde_json::from_str(&payload)?)
        } else {
            Ok(())
        };
        if let Err(e) = checked {
            let member = match &e {
                EngineError::Validation { field: Some(f), .. } => {
                    f.trim_start_matches("interrupt.").to_string()
                }
                _ => "data".to_string(),
            };
            return self.fail_payload(
                node_id,
                &member,
                format!("the interrupt payload does not match its kind: {e}"),
            );
        }
        // The inbox row and the mail subject: one short line, whatever a
        // binding put into the payload.
        let title = [
            data.get("title").and_then(Value::as_str),
            data["questions"][0]["question"].as_str(),
            data["prompt"].as_str(),
            Some(node.name.as_str()),
        ]
        .into_iter()
        .flatten()
        .map(crate::text::headline)
        .find(|t| !t.is_empty())
        .unwrap_or_else(|| node_id.to_string());
        let owner_subject = self.run.requester();
        let deadline = spec.timeout_ms.map(|t| after(self.now, t));
        let interrupt_id = ids::new_tenant_bound(&self.run.tenant);
        let row_id = self.next_interrupt_row()?;
        self.changes.push(Change::Interrupt(Box::new(NewInterrupt {
            row_id,
            interrupt_id: interrupt_id.clone(),
            run_id: self.run.run_id.clone(),
            node_id: NodeId::trusted(node_id),
            key: key.clone(),
            visit,
            kind: spec.kind,
            payload: payload.clone(),
            contract: spec.contract.text().to_string(),
            request: json_text(&request),
            rules: spec.rules_text().to_string(),
            workflow_id: wf.id.clone(),
            title,
            owner_subject,
            created_at: self.now,
            deadline_at: deadline,
        })));
        self.queue_notifications(spec, &data, &interrupt_id, node_id, MailReason::Requested)?;
        if let Some(opened) = conversation {
            self.emit(EventType::ConversationOpened, Some(node_id), opened)?;
        }
        self.emit_text(EventType::InterruptRequested, Some(node_id), payload)?;
        self.emit_typed(
            EventType::NodeSuspended,
            Some(node_id),
            &payloads::NodeSuspended {
                interrupt_id: &interrupt_id,
                key: &key,
                kind: spec.kind.as_str(),
                node_id,
                reason: (spec.kind == InterruptKind::LowConfidence).then_some("low-confidence"),
            },
        )?;
        let st = self.state_mut(node_id);
        st.status = NodeStatus::Suspended;
        st.waiting = Some(spec.kind.waiting_status());
        st.interrupt = row_id.map(|row_id| InterruptRef { row_id, visit });
        Ok(())
    }

    /// The rowid of the next interrupt this command inserts, on SQLite
    /// (`None` on PostgreSQL): the table's largest plus one, read at the
    /// first and counted on from there, since the inserts run only when the
    /// command finishes.
    fn next_interrupt_row(&mut self) -> Result<Option<i64>> {
        let next = match self.next_interrupt_row {
            Some(counted) => counted,
            None => next_interrupt_row(self.conn)?,
        };
        self.next_interrupt_row = Some(next.and_then(|n| n.checked_add(1)));
        Ok(next)
    }

    /// Queues an email for each person to notify (see [`crate::notify`]:
    /// the audience, or else the people who may decide), in the same
    /// transaction as the interrupt. The row names the recipient only; their
    /// link, and what it may do, is minted at delivery.
    fn queue_notifications(
        &mut self,
        spec: &crate::definition::InterruptSpec,
        data: &Value,
        interrupt_id: &str,
        node_id: &str,
        reason: MailReason,
    ) -> Result<()> {
        let requester = self.run.requester();
        let notice = crate::notify::Notice {
            tenant: self.run.tenant.as_str(),
            kind: spec.kind,
            rules: spec.approval(),
            audience: data.get("audience"),
            requester: &requester,
        };
        let directory = load_directory(self.conn, &self.run.tenant)?;
        let told = crate::notify::recipients(&notice, &directory);
        // Only someone told can have a delegate to tell as well.
        let delegations = if told.is_empty() {
            Vec::new()
        } else {
            crate::store::delegations::live_pairs(self.conn, &self.run.tenant, self.now)?
        };
        for p in crate::notify::with_delegates(told, &delegations, &directory, &requester) {
            self.changes.push(Change::Email {
                reason,
                run_id: self.run.run_id.clone(),
                node_id: NodeId::trusted(node_id),
                interrupt_id: interrupt_id.to_string(),
                recipient: p.id.clone(),
                address: p.email.clone(),
                at: self.now,
            });
        }
        Ok(())
    }

    /// Puts writes decided before the run was loaded (a vote) ahead of this command's own.
    pub fn prepend_changes(&mut self, mut earlier: Vec<Change>) {
        earlier.append(&mut self.changes);
        self.changes = earlier;
    }

    /// Resolves a pending interrupt: records the decision, resumes the node
    /// and runs on. `failure` carries the node error when the decision fails the node.
    pub fn resolve(
        &mut self,
        interrupt: &InterruptRow,
        resolved: Value,
        resume_value: Option<Value>,
        failure: Option<Value>,
    ) -> Result<()> {
        let node_id = interrupt.node_id.as_str();
        // Only a condition reads the facts.
        let routed = self.wf.outgoing(node_id).any(|e| e.condition.is_some());
        let facts = routed
            .then(|| resolution_facts(interrupt, &resolved))
            .transpose()?;
        // The interrupt's resolution is its `interrupt.resolved` payload: written once.
        let resolution = json_text(&resolved);
        drop(resolved);
        self.changes.push(Change::Resolve {
            interrupt_id: interrupt.interrupt_id.clone(),
            row_id: interrupt.row_id,
            inbox: interrupt.inbox_group.clone().map(|group| InboxCount {
                group,
                owner_subject: interrupt.owner_subject.clone(),
            }),
            at: self.now,
            resolution: resolution.clone(),
            votes: None,
        });
        self.emit_text(EventType::InterruptResolved, Some(node_id), resolution)?;
        if let Some(rv) = &resume_value {
            self.emit_typed(
                EventType::NodeResumed,
                Some(node_id),
                &payloads::NodeResumed {
                    interrupt_id: &interrupt.interrupt_id,
                    node_id,
                    resume_value: rv,
                },
            )?;
        }
        if failure.is_none() {
            self.conversation_answered(interrupt, resume_value.as_ref())?;
        }
        if let Some(facts) = facts {
            self.facts.insert(interrupt.node_id.clone(), facts);
        }
        match failure {
            Some(error) => self.fail(node_id, error)?,
            None => {
                let outputs = self.outputs_of(interrupt, resume_value.unwrap_or(Value::Null))?;
                self.complete(node_id, outputs)?
            }
        }
        self.drain()
    }

    /// A resumed node's outputs: `{resumeValue}`; an agent decision's also
    /// carry the decision it goes on with (the agent's, confirmed, or the
    /// person's replacement).
    fn outputs_of(&self, interrupt: &InterruptRow, resume_value: Value) -> Result<Value> {
        let decision_node = self
            .wf
            .node(interrupt.node_id.as_str())
            .is_some_and(|n| matches!(n.behaviour, NodeBehaviour::Decision(_)));
        if !decision_node {
            return Ok(json!({ "resumeValue": resume_value }));
        }
        let payload = interrupt.payload()?;
        let data = &payload["data"];
        let decision = if resume_value["outcome"] == "replaced" {
            resume_value["decision"].clone()
        } else {
            data["decision"].clone()
        };
        Ok(json!({
            "decision": decision,
            "confidence": data["observed"],
            "escalated": true,
            "resumeValue": resume_value,
        }))
    }
}
/// What edge conditions see of a decided interrupt: the `interrupt.resolved`
/// members that say what was decided, and the `outcome` (an approval's action,
/// else the resume value's declared or only outcome).
fn resolution_facts(interrupt: &InterruptRow, resolved: &Value) -> Result<Value> {
    let mut facts = Map::new();
    for k in [
        "kind",
        "decision",
        "action",
        "reason",
        "resumeValue",
        "refineFeedback",
        "editedArtifactData",
    ] {
        if let Some(v) = resolved.get(k) {
            facts.insert(k.into(), v.clone());
        }
    }
    let outcome = if interrupt.kind == InterruptKind::Approval {
        resolved.get("action").cloned()
    } else {
        let contract = crate::contract::cached(&interrupt.contract)?;
        resolved
            .get("resumeValue")
            .and_then(|rv| contract.contract().outcome_of(rv).ok().flatten())
            .map(Value::String)
    };
    if let Some(o) = outcome {
        facts.insert("outcome".into(), o);
    }
    Ok(Value::Object(facts))
}
