//! The resolve rules on a loaded interrupt (who may vote, quorum, veto,
//! override, the resume shape): pure, no database.

use crate::approval::{self, ApprovalAction, Ballot, OnTimeout, Verdict};
use crate::clock::Millis;
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use crate::interrupt::InterruptKind;
use crate::store::changes::Change;
use crate::store::rows::{InterruptRow, RunRow};
use crate::store::votes::{self, StoredVote};
use serde_json::{json, Value};

/// The result of checking a resolve against an interrupt: what to record.
pub(crate) enum Decision {
    /// A vote to record (the changes); the gate stays open.
    Recorded(Vec<Change>),
    /// The interrupt resolves with this `interrupt.resolved` payload, after `writes` (the vote, if any).
    Resolve {
        resolved: Value,
        resume_value: Value,
        failure: Option<Value>,
        writes: Vec<Change>,
    },
}

/// Applies one resolve to a pending interrupt's rules. Validation and
/// eligibility run before anything is written.
/// `principal` is the voter's directory entry as it is now (decision time).
pub(crate) fn decide(
    run: &RunRow,
    interrupt: &InterruptRow,
    resume_value: &Value,
    actor: &Actor,
    principal: &Principal,
    delegators: impl FnOnce() -> Result<Vec<Principal>>,
    now: Millis,
) -> Result<Decision> {
    let kind = interrupt.kind;
    let subject = serde_json::to_value(actor.subject())?;
    let mut resolved = json!({
        "nodeId": interrupt.node_id,
        "interruptId": interrupt.interrupt_id,
        "kind": kind.as_str(),
        "resumeValue": resume_value,
        "resolvedBy": subject,
    });

    if kind == InterruptKind::Approval {
        // Every recorded approval carries when it was decided: the server's time unless the client said.
        let stamped;
        let resume_value = if resume_value.get("decidedAt").is_none() && resume_value.is_object() {
            let mut v = resume_value.clone();
            v["decidedAt"] = json!(crate::clock::rfc3339(now));
            stamped = v;
            resolved["resumeValue"] = stamped.clone();
            &stamped
        } else {
            resume_value
        };
        let rules = interrupt.rules.as_ref().ok_or_else(|| {
            EngineError::Storage(format!("approval {} has no rules", interrupt.interrupt_id))
        })?;
        // The whole array is written back: an interrupt loaded without it
        // must not be taken for one nobody voted on.
        let earlier = votes::parse(
            &interrupt.interrupt_id,
            interrupt.votes_json.as_deref().ok_or_else(|| {
                EngineError::Storage(format!(
                    "interrupt {} loaded without its votes",
                    interrupt.interrupt_id
                ))
            })?,
        )?;
        let overrides: Vec<String> = match interrupt.override_voters.as_deref() {
            Some(ids) => serde_json::from_str::<Option<Vec<String>>>(ids)?.unwrap_or_default(),
            None => Vec::new(),
        };
        // An override counts as one only when its holder cast it.
        let is_override = |v: &StoredVote| v.cast_by.is_none() && overrides.contains(&v.principal);
        let seat = crate::delegation::seat(
            rules,
            principal,
            &run.requesters(),
            actor.allows(crate::auth::Scope::ApprovalsRespond),
            delegators,
            |holder| {
                earlier
                    .iter()
                    .any(|b| b.counts() && b.principal == holder && b.cast_by.is_none())
            },
        )?;
        let parsed = approval::parse_resume(rules, resume_value)?;
        let contract = crate::contract::cached(&interrupt.contract)?;
        contract.validate_resume(resume_value)?;
        if parsed.action == ApprovalAction::EditAccept {
            if let Some(edited) = resume_value.get("editedArtifactData") {
                contract.validate_edited(edited)?;
            }
        }
        // What this vote replaces: the seat's counted vote (its holder's or
        // their delegate's), and anything else this person cast, so that one
        // person holds at most one counted vote however many seats they may take.
        let replaced = |b: &StoredVote| {
            b.counts() && (b.principal == seat.holder || b.caster() == principal.id.as_str())
        };
        let mut votes = earlier.clone();
        if parsed.action.is_vote() {
            for v in votes.iter_mut().filter(|v| replaced(v)) {
                v.superseded = true;
            }
        }
        votes.push(StoredVote {
            principal: seat.holder.clone(),
            cast_by: seat.cast_by.clone(),
            action: parsed.action,
            eligible_via: seat.via.clone(),
            decided_at: now,
            superseded: false,
            resume_value: resume_value.clone(),
        });
        let writes = vec![Change::Votes {
            interrupt_id: interrupt.interrupt_id.clone(),
            votes,
        }];
        if !parsed.action.is_vote() {
            return Ok(Decision::Recorded(writes));
        }
        let original = interrupt.data_member("artifactData")?;
        let original = original.as_ref();
        let mut ballots: Vec<Ballot> = earlier
            .iter()
            .filter(|b| b.counts() && !replaced(b))
            .map(|b| Ballot {
                approves: approval::approved_data(b.action, &b.resume_value, original),
                principal: b.principal.clone(),
                action: b.action,
                is_override: is_override(b),
            })
            .collect();
        ballots.push(Ballot {
            principal: seat.holder.clone(),
            action: parsed.action,
            is_override: seat.is_override,
            approves: approval::approved_data(parsed.action, resume_value, original),
        });
        resolved["action"] = json!(parsed.action);
        resolved["x-tollgate-eligibleVia"] = json!(seat.via);
        if seat.cast_by.is_some() {
            // The deciding vote was a delegate's: whose seat it took.
            resolved["x-tollgate-onBehalfOf"] = json!(seat.holder);
        }
        for k in ["refineFeedback", "editedArtifactData"] {
            if let Some(v) = resume_value.get(k) {
                resolved[k] = v.clone();
            }
        }
        return Ok(match approval::tally(rules, &ballots) {
            Verdict::Pending { .. } => Decision::Recorded(writes),
            Verdict::Granted { action, decision } => {
                resolved["action"] = json!(action);
                resolved["decision"] = json!(decision);
                Decision::Resolve {
                    writes,
                    resolved,
                    resume_value: resume_value.clone(),
                    failure: None,
                }
            }
            Verdict::Rejected { action } => {
                resolved["decision"] = json!("rejected");
                let mut failure = json!({
                    "code": "approval_rejected",
                    "message": format!("approval gate \"{}\" was rejected", interrupt.node_id),
                    "retryable": false
                });
                if action == ApprovalAction::Refine {
                    // The feedback travels with the failure, for a revision loop or a notice.
                    failure["message"] = json!(format!(
                        "approval gate \"{}\" was sent back for changes",
                        interrupt.node_id
                    ));
                    failure["details"] = json!({
                        "action": "refine",
                        "refineFeedback": resume_value.get("refineFeedback").cloned().unwrap_or(Value::Null),
                    });
                } else {
                    // A reject decided: a refine's feedback from an earlier vote is not this decision's.
                    if let Some(m) = resolved.as_object_mut() {
                        m.remove("refineFeedback");
                    }
                }
                resolved["action"] = json!(action);
                Decision::Resolve {
                    writes,
                    resolved,
                    resume_value: resume_value.clone(),
                    failure: Some(failure),
                }
            }
        });
    }

    let contract = crate::contract::cached(&interrupt.contract)?;
    contract.validate_resume(resume_value)?;
    let outcome = contract.contract().outcome_of(resume_value)?;
    let mut failure = None;
    match kind {
        InterruptKind::LowConfidence
            if outcome.as_deref() == Some("replaced")
                && resume_value.get("decision").is_none_or(Value::is_null) =>
        {
            return Err(EngineError::validation(
                "resumeValue.decision",
                "resumeValue.decision is required when the outcome is replaced (the decision that replaces the agent's)",
            ));
        }
        InterruptKind::ExternalEvent => {
            if let Some(Value::Object(corr)) = interrupt.data_member("correlation")? {
                for (k, expected) in &corr {
                    if resume_value.get(k) != Some(expected) {
                        return Err(EngineError::Validation {
                            message: format!("resumeValue.{k} does not match the interrupt's correlation (expected {expected})"),
                            field: Some(format!("resumeValue.{k}")),
                            details: None,
                        });
                    }
                }
            }
        }
        InterruptKind::Clarification => {
            let answers = match resume_value.get("answers") {
                Some(a @ Value::Object(_)) => a,
                _ => resume_value,
            };
            let questions = match interrupt.data_member("questions")? {
                Some(Value::Array(questions)) => questions,
                _ => Vec::new(),
            };
            for q in &questions {
                let qid = q["id"].as_str().unwrap_or_default();
                let field = format!("resumeValue.answers.{qid}");
                match answers.get(qid) {
                    None | Some(Value::Null) => {
                        return Err(EngineError::validation(
                            field,
                            format!("question \"{qid}\" needs an answer"),
                        ))
                    }
                    Some(answer) => {
                        if let Some(schema) = q.get("schema") {
                            let v = crate::contract::cached_validator(schema)?;
                            crate::contract::validate_with(&v, answer, &field)?;
                        }
                    }
                }
            }
        }
        InterruptKind::Credential if resume_value["outcome"] == "declined" => {
            failure = Some(json!({
                "code": "connector_auth_declined",
                "message": "the credential request was declined",
                "retryable": false
            }));
        }
        _ => {}
    }
    Ok(Decision::Resolve {
        resolved,
        resume_value: resume_value.clone(),
        failure,
        writes: Vec::new(),
    })
}

/// The `interrupt.resolved` a passed deadline records: always a rejection for
/// approvals, whatever `onTimeout` says.
pub(crate) fn timeout_resolution(interrupt: &InterruptRow) -> (Value, Value) {
    let kind = interrupt.kind;
    let mut resolved = json!({
        "nodeId": interrupt.node_id,
        "interruptId": interrupt.interrupt_id,
        "kind": kind.as_str(),
        "reason": "timeout",
    });
    let failure = if kind == InterruptKind::Approval {
        resolved["action"] = json!("timeout");
        resolved["decision"] = json!("rejected");
        if interrupt
            .rules
            .as_ref()
            .is_some_and(|r| r.on_timeout == OnTimeout::Escalate)
        {
            resolved["x-tollgate-escalated"] = json!(true);
        }
        json!({"code": "approval_rejected", "message": format!("approval gate \"{}\" timed out", interrupt.node_id), "retryable": false})
    } else {
        json!({"code": "interrupt_timeout", "message": format!("interrupt on \"{}\" timed out", interrupt.node_id), "retryable": false})
    };
    (resolved, failure)
}
