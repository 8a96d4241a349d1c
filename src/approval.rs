//! Approval gates: actions and their required fields, quorum, rejection
//! policy, override, eligibility, timeout-as-reject. Pure functions; the
//! runtime applies their verdicts.

use crate::directory::Principal;
use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use tollgate_wire::ApprovalAction;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub enum RejectionPolicy {
    #[default]
    #[serde(rename = "single-veto")]
    SingleVeto,
    #[serde(rename = "majority")]
    Majority,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum OnTimeout {
    #[default]
    Reject,
    /// Treated as reject: a timeout never grants.
    Approve,
    /// Notifies; never extends or grants.
    Escalate,
}

/// Who may decide and how many must agree; copied onto each pending interrupt
/// so a later change of the definition never changes an open gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApprovalRules {
    pub actions: Vec<ApprovalAction>,
    pub required_approvals: u32,
    pub rejection_policy: RejectionPolicy,
    pub override_bypasses_quorum: bool,
    pub approvers_list: Vec<String>,
    pub approver_group_refs: Vec<String>,
    pub approver_role_refs: Vec<String>,
    /// Tollgate extension (`preventSelfApproval`): the run's owner may not vote.
    pub prevent_self_approval: bool,
    pub on_timeout: OnTimeout,
    /// `profile: "openwop-interrupt-auth-required"`: only a signed-in
    /// principal (an API key or a console session) decides; no link does.
    /// Absent in rules stored before it, which allowed links.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub requires_sign_in: bool,
}

/// The one gate profile this host implements (OpenWOP v1's
/// `openwop-interrupt-auth-required`): resolves only by a signed-in principal.
pub const AUTH_REQUIRED_PROFILE: &str = "openwop-interrupt-auth-required";

impl ApprovalRules {
    /// Reads the rules from a `core.approvalGate` config (or approval `data`);
    /// errors name the field.
    pub fn from_config(config: &Value) -> std::result::Result<Self, String> {
        let actions: Vec<ApprovalAction> = match config.get("actions") {
            Some(Value::Array(items)) if !items.is_empty() => {
                let mut out = Vec::new();
                for a in items {
                    match a.as_str().and_then(ApprovalAction::parse) {
                        Some(action) if ApprovalAction::OFFERABLE.contains(&action) => {
                            if !out.contains(&action) {
                                out.push(action)
                            }
                        }
                        _ => {
                            let names: Vec<&str> =
                                ApprovalAction::OFFERABLE.iter().map(|a| a.as_str()).collect();
                            return Err(format!("actions: {a} is not one of {}", names.join(", ")));
                        }
                    }
                }
                out
            }
            _ => return Err("actions: required, a non-empty array".into()),
        };
        let required_approvals = match config.get("requiredApprovals") {
            None | Some(Value::Null) => 1,
            Some(v) => match v.as_u64() {
                Some(n) if (1..=1000).contains(&n) => n as u32,
                _ => return Err("requiredApprovals: must be an integer ≥ 1".into()),
            },
        };
        let rejection_policy = match config.get("rejectionPolicy") {
            None | Some(Value::Null) => RejectionPolicy::SingleVeto,
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| "rejectionPolicy: must be \"single-veto\" or \"majority\"".to_string())?,
        };
        let on_timeout = match config.get("onTimeout") {
            None | Some(Value::Null) => OnTimeout::Reject,
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|_| "onTimeout: must be \"reject\", \"approve\" or \"escalate\"".to_string())?,
        };
        let requires_sign_in = match config.get("profile") {
            None | Some(Value::Null) => false,
            Some(Value::String(p)) if p == AUTH_REQUIRED_PROFILE => true,
            Some(other) => {
                return Err(format!(
                    "profile: {other} is not a profile this host implements (the one it does is \"{AUTH_REQUIRED_PROFILE}\")"
                ))
            }
        };
        let bool_field = |name: &str, default: bool| -> std::result::Result<bool, String> {
            match config.get(name) {
                None | Some(Value::Null) => Ok(default),
                Some(Value::Bool(b)) => Ok(*b),
                Some(_) => Err(format!("{name}: must be a boolean")),
            }
        };
        let list = |name: &str| -> std::result::Result<Vec<String>, String> {
            match config.get(name) {
                None | Some(Value::Null) => Ok(vec![]),
                Some(Value::Array(items)) => items
                    .iter()
                    .map(|i| {
                        i.as_str()
                            .filter(|s| !s.is_empty())
                            .map(str::to_string)
                            .ok_or_else(|| format!("{name}: entries must be non-empty strings"))
                    })
                    .collect(),
                Some(_) => Err(format!("{name}: must be an array of strings")),
            }
        };
        Ok(ApprovalRules {
            actions,
            required_approvals,
            rejection_policy,
            override_bypasses_quorum: bool_field("overrideBypassesQuorum", false)?,
            approvers_list: list("approversList")?,
            approver_group_refs: list("approverGroupRefs")?,
            approver_role_refs: list("approverRoleRefs")?,
            prevent_self_approval: bool_field("preventSelfApproval", required_approvals > 1)?,
            on_timeout,
            requires_sign_in,
        })
    }

    /// Decides whether `principal` may vote; returns the ref that admits them.
    /// Membership is read from the principal as it is now (decision time).
    /// `holds_respond`: whether the voter holds `approvals:respond` (the
    /// only thing that admits anyone to a gate without approver refs).
    /// `requesters`: whose request the run is (its owner, and the person it
    /// is for when created on their behalf); where self-approval is refused,
    /// none of them may vote.
    pub fn eligibility(
        &self,
        principal: &Principal,
        requesters: &[impl AsRef<str>],
        holds_respond: bool,
    ) -> Result<String> {
        match self.seat(principal, requesters, holds_respond) {
            Ok(Seat::Respond) => Ok("scope:approvals:respond".into()),
            Ok(Seat::Listed) => Ok(format!("principal:{}", principal.id)),
            Ok(Seat::Group(g)) => Ok(format!("group:{g}")),
            Ok(Seat::Role(r)) => Ok(format!("role:{r}")),
            Err(Refusal::OwnRequest) => Err(EngineError::Forbidden(
                "the run was started by or for this principal, who may not approve its own gate".into(),
            )),
            Err(Refusal::NoRespond) => Err(EngineError::Forbidden(format!(
                "{} does not hold approvals:respond, which this gate (without approver refs) requires",
                principal.id
            ))),
            Err(Refusal::NotEligible) => Err(EngineError::Forbidden(format!(
                "{} is not an eligible approver of this gate",
                principal.id
            ))),
        }
    }

    /// Whether `principal` may vote: [`ApprovalRules::eligibility`] without
    /// its texts, for asking it of a whole directory (`crate::notify`).
    pub fn admits(&self, principal: &Principal, requesters: &[impl AsRef<str>], holds_respond: bool) -> bool {
        self.seat(principal, requesters, holds_respond).is_ok()
    }

    /// The rule behind both: what seats `principal`, or why nothing does.
    fn seat(
        &self,
        principal: &Principal,
        requesters: &[impl AsRef<str>],
        holds_respond: bool,
    ) -> std::result::Result<Seat<'_>, Refusal> {
        if self.prevent_self_approval && requesters.iter().any(|r| r.as_ref() == principal.id) {
            return Err(Refusal::OwnRequest);
        }
        if self.approvers_list.is_empty()
            && self.approver_group_refs.is_empty()
            && self.approver_role_refs.is_empty()
        {
            return if holds_respond {
                Ok(Seat::Respond)
            } else {
                Err(Refusal::NoRespond)
            };
        }
        if self
            .approvers_list
            .iter()
            .any(|a| crate::directory::names(a, &principal.id))
        {
            return Ok(Seat::Listed);
        }
        if let Some(g) = self
            .approver_group_refs
            .iter()
            .find(|g| principal.groups.contains(g))
        {
            return Ok(Seat::Group(g));
        }
        if let Some(r) = self
            .approver_role_refs
            .iter()
            .find(|r| principal.roles.contains(r))
        {
            return Ok(Seat::Role(r));
        }
        Err(Refusal::NotEligible)
    }
}

/// What admits a voter to a gate.
enum Seat<'r> {
    /// `approvals:respond`, at a gate without approver refs.
    Respond,
    /// The gate's `approversList` names them.
    Listed,
    Group(&'r str),
    Role(&'r str),
}

/// Why a voter is not admitted.
enum Refusal {
    /// The run was started by or for them, and the gate refuses self-approval.
    OwnRequest,
    /// A gate without approver refs, and they lack `approvals:respond`.
    NoRespond,
    /// No ref of the gate names them.
    NotEligible,
}

/// A checked approval resume value.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalResume {
    pub action: ApprovalAction,
    pub value: Value,
}

/// Checks an approval resume value against the gate's actions and the
/// per-action required fields. `timeout` is record-only and always refused.
pub fn parse_resume(rules: &ApprovalRules, value: &Value) -> Result<ApprovalResume> {
    let obj = value
        .as_object()
        .ok_or_else(|| EngineError::validation("resumeValue", "resumeValue must be an object"))?;
    let action = match obj.get("action") {
        Some(Value::String(a)) => a.as_str(),
        Some(_) => {
            return Err(EngineError::validation(
                "resumeValue.action",
                "action must be a string",
            ))
        }
        None => {
            return Err(EngineError::validation(
                "resumeValue.action",
                "action is required",
            ))
        }
    };
    if ApprovalAction::parse(action) == Some(ApprovalAction::Timeout) {
        return Err(EngineError::validation(
            "resumeValue.action",
            "action \"timeout\" is recorded by the engine when a deadline passes; it cannot be requested",
        ));
    }
    let allowed = ApprovalAction::parse(action).filter(|a| rules.actions.contains(a));
    let Some(action) = allowed else {
        let names: Vec<&str> = rules.actions.iter().map(|a| a.as_str()).collect();
        return Err(EngineError::validation(
            "resumeValue.action",
            format!(
                "action \"{action}\" is not allowed here; allowed: {}",
                names.join(", ")
            ),
        ));
    };
    match action {
        ApprovalAction::Refine => {
            let fb = obj.get("refineFeedback").ok_or_else(|| {
                EngineError::validation("resumeValue.refineFeedback", "refine requires refineFeedback")
            })?;
            check_refine_feedback(fb)?;
        }
        ApprovalAction::EditAccept => match obj.get("editedArtifactData") {
            None | Some(Value::Null) => {
                return Err(EngineError::validation(
                    "resumeValue.editedArtifactData",
                    "edit-accept requires editedArtifactData",
                ))
            }
            Some(_) => {}
        },
        _ => {}
    }
    if let Some(v) = obj.get("decidedAt") {
        let ok = v
            .as_str()
            .is_some_and(|s| chrono::DateTime::parse_from_rfc3339(s).is_ok());
        if !ok {
            return Err(EngineError::validation(
                "resumeValue.decidedAt",
                "decidedAt must be an RFC 3339 date-time",
            ));
        }
    }
    if let Some(v) = obj.get("decidedBy") {
        if !v.is_string() {
            return Err(EngineError::validation(
                "resumeValue.decidedBy",
                "decidedBy must be a string",
            ));
        }
    }
    if let Some(v) = obj.get("feedback") {
        if !v.is_string() {
            return Err(EngineError::validation(
                "resumeValue.feedback",
                "feedback must be a string",
            ));
        }
    }
    Ok(ApprovalResume {
        action,
        value: value.clone(),
    })
}

fn check_refine_feedback(fb: &Value) -> Result<()> {
    let f = "resumeValue.refineFeedback";
    let obj = fb
        .as_object()
        .ok_or_else(|| EngineError::validation(f, "refineFeedback must be an object"))?;
    match obj.get("scope").and_then(Value::as_str) {
        Some("whole" | "section" | "items") => {}
        _ => {
            return Err(EngineError::validation(
                format!("{f}.scope"),
                "scope must be \"whole\", \"section\" or \"items\"",
            ))
        }
    }
    for (k, ok) in [
        ("sectionPath", obj.get("sectionPath").is_none_or(Value::is_string)),
        ("text", obj.get("text").is_none_or(Value::is_string)),
        (
            "itemIds",
            obj.get("itemIds")
                .is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string))),
        ),
        (
            "tags",
            obj.get("tags")
                .is_none_or(|v| v.as_array().is_some_and(|a| a.iter().all(Value::is_string))),
        ),
    ] {
        if !ok {
            return Err(EngineError::validation(
                format!("{f}.{k}"),
                format!("{k} has the wrong type"),
            ));
        }
    }
    if let Some(extra) = obj
        .keys()
        .find(|k| !["scope", "sectionPath", "itemIds", "tags", "text"].contains(&k.as_str()))
    {
        return Err(EngineError::validation(format!("{f}.{extra}"), "unknown member"));
    }
    Ok(())
}

/// One counted vote (the latest of its principal).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ballot {
    pub principal: String,
    pub action: ApprovalAction,
    pub is_override: bool,
    /// What an approving vote approved: `None` for the artifact as requested
    /// (`accept`, or an `edit-accept` that changed nothing), else the
    /// `editedArtifactData`. Only votes that approved the same data add up.
    #[serde(default)]
    pub approves: Option<Value>,
}

impl Ballot {
    /// `accept` and `edit-accept` approve.
    pub fn approves_something(&self) -> bool {
        self.action.approves()
    }
    /// `reject` and `refine` reject (a refine is a rejection that carries feedback).
    pub fn rejects(&self) -> bool {
        self.action.rejects()
    }
}

/// The artifact data an approving vote approved, for counting a quorum:
/// `None` for the requested artifact (`accept`, or an `edit-accept` whose
/// data equals `original`), else the edited data.
pub fn approved_data(
    action: ApprovalAction,
    resume_value: &Value,
    original: Option<&Value>,
) -> Option<Value> {
    if action != ApprovalAction::EditAccept {
        return None;
    }
    match resume_value.get("editedArtifactData") {
        None | Some(Value::Null) => None,
        Some(edited) if Some(edited) == original => None,
        Some(edited) => Some(edited.clone()),
    }
}

/// The largest number of approving votes that approved the same data.
pub fn agreeing_approvals(ballots: &[Ballot]) -> u32 {
    let approving: Vec<&Ballot> = ballots.iter().filter(|b| b.approves_something()).collect();
    approving
        .iter()
        .map(|b| approving.iter().filter(|o| o.approves == b.approves).count() as u32)
        .max()
        .unwrap_or(0)
}

/// What a gate's votes amount to.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// Not decided yet; the run keeps waiting. `accepts` is the largest group
    /// of approvals of the same data; `rejects` counts rejects and refines.
    Pending { accepts: u32, rejects: u32 },
    Granted {
        action: ApprovalAction,
        decision: &'static str,
    },
    /// Rejected by the deciding vote, `reject` or `refine` (the node fails with `approval_rejected`).
    Rejected { action: ApprovalAction },
}

/// Tallies the latest vote per principal (`ballots` in arrival order; the
/// last one is the vote just cast).
pub fn tally(rules: &ApprovalRules, ballots: &[Ballot]) -> Verdict {
    let Some(last) = ballots.last() else {
        return Verdict::Pending {
            accepts: 0,
            rejects: 0,
        };
    };
    if last.is_override && rules.override_bypasses_quorum {
        if last.approves_something() {
            return Verdict::Granted {
                action: last.action,
                decision: "overridden",
            };
        }
        if last.rejects() {
            return Verdict::Rejected { action: last.action };
        }
    }
    // Only approvals of the same data as the vote just cast can have reached
    // the quorum now (a group that reached it earlier would have decided).
    let accepts = if last.approves_something() {
        ballots
            .iter()
            .filter(|b| b.approves_something() && b.approves == last.approves)
            .count() as u32
    } else {
        agreeing_approvals(ballots)
    };
    let rejects = ballots.iter().filter(|b| b.rejects()).count() as u32;
    let rejected = match rules.rejection_policy {
        RejectionPolicy::SingleVeto => rejects >= 1,
        RejectionPolicy::Majority => rejects * 2 > rules.required_approvals,
    };
    if rejected {
        // The deciding vote names the action; an accept cannot tip a rejection.
        let action = if last.rejects() {
            last.action
        } else {
            ApprovalAction::Reject
        };
        return Verdict::Rejected { action };
    }
    if last.approves_something() && accepts >= rules.required_approvals {
        return Verdict::Granted {
            action: last.action,
            decision: "granted",
        };
    }
    Verdict::Pending { accepts, rejects }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rules(cfg: Value) -> ApprovalRules {
        ApprovalRules::from_config(&cfg).unwrap()
    }

    #[test]
    fn the_auth_required_profile_is_read_and_any_other_is_refused() {
        assert!(!rules(json!({"actions": ["accept"]})).requires_sign_in);
        assert!(
            rules(json!({"actions": ["accept"], "profile": "openwop-interrupt-auth-required"}))
                .requires_sign_in
        );
        for bad in [
            json!("openwop-interrupt-quorum"),
            json!("OPENWOP-INTERRUPT-AUTH-REQUIRED"),
            json!(true),
        ] {
            let err =
                ApprovalRules::from_config(&json!({"actions": ["accept"], "profile": bad})).unwrap_err();
            assert!(err.starts_with("profile: "), "{err}");
        }
        // Rules stored before the profile existed read as allowing links,
        // and rules without it are stored as before.
        let stored = serde_json::to_value(rules(json!({"actions": ["accept"]}))).unwrap();
        assert!(stored.get("requiresSignIn").is_none(), "{stored}");
        let back: ApprovalRules = serde_json::from_value(stored).unwrap();
        assert!(!back.requires_sign_in);
        let strict = rules(json!({"actions": ["accept"], "profile": "openwop-interrupt-auth-required"}));
        let back: ApprovalRules = serde_json::from_value(serde_json::to_value(&strict).unwrap()).unwrap();
        assert_eq!(back, strict);
    }

    fn b(p: &str, a: &str) -> Ballot {
        Ballot {
            principal: p.into(),
            action: a.parse().unwrap(),
            is_override: false,
            approves: None,
        }
    }

    fn edit(p: &str, data: Value) -> Ballot {
        Ballot {
            approves: Some(data),
            ..b(p, "edit-accept")
        }
    }

    fn person(id: &str, groups: &[&str], roles: &[&str]) -> Principal {
        Principal {
            id: id.into(),
            tenant: "t".into(),
            name: id.into(),
            email: None,
            groups: groups.iter().map(|s| s.to_string()).collect(),
            roles: roles.iter().map(|s| s.to_string()).collect(),
            is_override: false,
        }
    }

    #[test]
    fn config_errors_name_the_field() {
        for (cfg, field) in [
            (json!({}), "actions"),
            (json!({"actions": []}), "actions"),
            (json!({"actions": ["maybe"]}), "actions"),
            (
                json!({"actions": ["accept"], "requiredApprovals": 0}),
                "requiredApprovals",
            ),
            (
                json!({"actions": ["accept"], "rejectionPolicy": "x"}),
                "rejectionPolicy",
            ),
            (json!({"actions": ["accept"], "onTimeout": "grant"}), "onTimeout"),
            (
                json!({"actions": ["accept"], "approversList": [1]}),
                "approversList",
            ),
            (
                json!({"actions": ["accept"], "overrideBypassesQuorum": "yes"}),
                "overrideBypassesQuorum",
            ),
        ] {
            let err = ApprovalRules::from_config(&cfg).unwrap_err();
            assert!(err.starts_with(field), "{cfg}: {err}");
        }
    }

    #[test]
    fn self_approval_default_follows_quorum() {
        assert!(!rules(json!({"actions": ["accept"]})).prevent_self_approval);
        assert!(rules(json!({"actions": ["accept"], "requiredApprovals": 2})).prevent_self_approval);
        assert!(
            !rules(json!({"actions": ["accept"], "requiredApprovals": 2, "preventSelfApproval": false}))
                .prevent_self_approval
        );
    }

    #[test]
    fn resume_checks_actions_and_required_fields() {
        let r = rules(json!({"actions": ["accept", "reject", "refine", "edit-accept", "ask"]}));
        let field = |v: Value| match parse_resume(&r, &v).unwrap_err() {
            EngineError::Validation { field, .. } => field.unwrap(),
            e => panic!("{e:?}"),
        };
        assert_eq!(field(json!({})), "resumeValue.action");
        assert_eq!(field(json!({"action": "timeout"})), "resumeValue.action");
        assert_eq!(field(json!({"action": "refine"})), "resumeValue.refineFeedback");
        assert_eq!(
            field(json!({"action": "refine", "refineFeedback": {"scope": "all"}})),
            "resumeValue.refineFeedback.scope"
        );
        assert_eq!(
            field(json!({"action": "edit-accept"})),
            "resumeValue.editedArtifactData"
        );
        assert_eq!(
            field(json!({"action": "accept", "decidedAt": "yesterday"})),
            "resumeValue.decidedAt"
        );
        assert!(parse_resume(
            &r,
            &json!({"action": "refine", "refineFeedback": {"scope": "whole", "text": "more"}})
        )
        .is_ok());
        assert!(parse_resume(
            &r,
            &json!({"action": "edit-accept", "editedArtifactData": {"a": 1}})
        )
        .is_ok());
        let only_accept = rules(json!({"actions": ["accept"]}));
        assert!(parse_resume(&only_accept, &json!({"action": "reject"})).is_err());
    }

    #[test]
    fn quorum_counts_each_principal_once_and_policies_differ() {
        let veto = rules(json!({"actions": ["accept", "reject"], "requiredApprovals": 3}));
        let majority = rules(
            json!({"actions": ["accept", "reject"], "requiredApprovals": 3, "rejectionPolicy": "majority"}),
        );
        assert_eq!(
            tally(&veto, &[b("a", "accept"), b("b", "accept")]),
            Verdict::Pending {
                accepts: 2,
                rejects: 0
            }
        );
        assert!(matches!(
            tally(&veto, &[b("a", "accept"), b("b", "accept"), b("c", "accept")]),
            Verdict::Granted {
                decision: "granted",
                ..
            }
        ));
        assert!(matches!(
            tally(&veto, &[b("a", "reject")]),
            Verdict::Rejected { .. }
        ));
        assert_eq!(
            tally(&majority, &[b("a", "reject")]),
            Verdict::Pending {
                accepts: 0,
                rejects: 1
            }
        );
        assert!(matches!(
            tally(&majority, &[b("a", "reject"), b("b", "reject")]),
            Verdict::Rejected { .. }
        ));
        // edit-accept counts as an accept.
        assert!(matches!(
            tally(
                &rules(json!({"actions": ["edit-accept"]})),
                &[b("a", "edit-accept")]
            ),
            Verdict::Granted { .. }
        ));
    }

    #[test]
    fn override_decides_alone_only_when_the_gate_allows_it() {
        let mut o = b("boss", "accept");
        o.is_override = true;
        let bypass =
            rules(json!({"actions": ["accept"], "requiredApprovals": 3, "overrideBypassesQuorum": true}));
        let counted = rules(json!({"actions": ["accept"], "requiredApprovals": 3}));
        assert!(matches!(
            tally(&bypass, &[o.clone()]),
            Verdict::Granted {
                decision: "overridden",
                ..
            }
        ));
        assert_eq!(
            tally(&counted, &[o]),
            Verdict::Pending {
                accepts: 1,
                rejects: 0
            }
        );
    }

    #[test]
    fn eligibility_by_list_group_role_and_self() {
        let r = rules(
            json!({"actions": ["accept"], "approversList": ["ann"], "approverGroupRefs": ["finance"], "approverRoleRefs": ["cfo"]}),
        );
        assert_eq!(
            r.eligibility(&person("ann", &[], &[]), &["x"], true).unwrap(),
            "principal:ann"
        );
        assert_eq!(
            r.eligibility(&person("bob", &["finance"], &[]), &["x"], false)
                .unwrap(),
            "group:finance"
        );
        assert_eq!(
            r.eligibility(&person("cat", &[], &["cfo"]), &["x"], false)
                .unwrap(),
            "role:cfo"
        );
        assert!(matches!(
            r.eligibility(&person("dan", &["ops"], &["dev"]), &["x"], true),
            Err(EngineError::Forbidden(_))
        ));
        let open = rules(json!({"actions": ["accept"], "requiredApprovals": 2}));
        assert!(matches!(
            open.eligibility(&person("own", &[], &[]), &["own"], true),
            Err(EngineError::Forbidden(_))
        ));
        assert!(open
            .eligibility(&person("other", &[], &[]), &["own"], true)
            .is_ok());
        // A run started on someone's behalf: neither its owner nor that person votes.
        for who in ["svc", "linus"] {
            assert!(matches!(
                open.eligibility(&person(who, &[], &[]), &["svc", "linus"], true),
                Err(EngineError::Forbidden(_))
            ));
        }
        // A gate without approver refs is open only to holders of approvals:respond.
        assert!(matches!(
            open.eligibility(&person("other", &[], &[]), &["own"], false),
            Err(EngineError::Forbidden(_))
        ));
    }

    #[test]
    fn a_listed_id_may_name_the_directory_and_admits_says_what_eligibility_says() {
        let r = rules(
            json!({"actions": ["accept"], "approversList": ["tollgate:ann", "tollgatex:bob", "tollgate:"], "approverGroupRefs": ["finance"]}),
        );
        assert_eq!(
            r.eligibility(&person("ann", &[], &[]), &["x"], true).unwrap(),
            "principal:ann"
        );
        // Another issuer's id names no one here, nor does the issuer alone.
        for who in ["bob", "tollgate"] {
            assert!(
                r.eligibility(&person(who, &[], &[]), &["x"], true).is_err(),
                "{who}"
            );
        }
        let open = rules(json!({"actions": ["accept"], "requiredApprovals": 2}));
        for rules in [&r, &open] {
            for p in [
                person("ann", &[], &[]),
                person("bob", &[], &[]),
                person("cat", &["finance"], &[]),
                person("own", &["finance"], &[]),
            ] {
                for respond in [true, false] {
                    assert_eq!(
                        rules.admits(&p, &["own"], respond),
                        rules.eligibility(&p, &["own"], respond).is_ok(),
                        "{} {respond}",
                        p.id
                    );
                }
            }
        }
    }

    #[test]
    fn refine_is_a_rejecting_vote_under_the_rejection_policy() {
        let veto = rules(json!({"actions": ["accept", "refine"], "requiredApprovals": 2}));
        // One refine on a two-approver gate rejects it, naming refine.
        assert_eq!(
            tally(&veto, &[b("a", "refine")]),
            Verdict::Rejected {
                action: ApprovalAction::Refine
            }
        );
        assert_eq!(
            tally(&veto, &[b("a", "accept"), b("b", "refine")]),
            Verdict::Rejected {
                action: ApprovalAction::Refine
            }
        );
        let majority = rules(
            json!({"actions": ["accept", "reject", "refine"], "requiredApprovals": 3, "rejectionPolicy": "majority"}),
        );
        // Refines and rejects add up to the majority; the deciding vote names the action.
        assert_eq!(
            tally(&majority, &[b("a", "refine")]),
            Verdict::Pending {
                accepts: 0,
                rejects: 1
            }
        );
        assert_eq!(
            tally(&majority, &[b("a", "reject"), b("b", "refine")]),
            Verdict::Rejected {
                action: ApprovalAction::Refine
            }
        );
        assert_eq!(
            tally(&majority, &[b("a", "refine"), b("b", "reject")]),
            Verdict::Rejected {
                action: ApprovalAction::Reject
            }
        );
        // A refine never counts towards the quorum of approvals.
        assert_eq!(
            tally(&majority, &[b("a", "accept"), b("b", "refine"), b("c", "accept")]),
            Verdict::Pending {
                accepts: 2,
                rejects: 1
            }
        );
        // An override's refine decides alone where overrides bypass the quorum.
        let bypass = rules(
            json!({"actions": ["accept", "refine"], "requiredApprovals": 3, "rejectionPolicy": "majority", "overrideBypassesQuorum": true}),
        );
        let mut o = b("boss", "refine");
        o.is_override = true;
        assert_eq!(
            tally(&bypass, &[o]),
            Verdict::Rejected {
                action: ApprovalAction::Refine
            }
        );
    }

    #[test]
    fn a_quorum_counts_only_approvals_of_the_same_data() {
        let two = rules(json!({"actions": ["accept", "edit-accept"], "requiredApprovals": 2}));
        // Two approvers who approved different data do not make a quorum.
        assert_eq!(
            tally(
                &two,
                &[edit("a", json!({"amount": 1})), edit("b", json!({"amount": 2}))]
            ),
            Verdict::Pending {
                accepts: 1,
                rejects: 0
            }
        );
        assert_eq!(
            tally(&two, &[b("a", "accept"), edit("b", json!({"amount": 2}))]),
            Verdict::Pending {
                accepts: 1,
                rejects: 0
            }
        );
        assert!(matches!(
            tally(
                &two,
                &[edit("a", json!({"amount": 2})), edit("b", json!({"amount": 2}))]
            ),
            Verdict::Granted { .. }
        ));
        assert!(matches!(
            tally(
                &two,
                &[
                    edit("a", json!({"amount": 2})),
                    b("b", "accept"),
                    b("c", "accept")
                ]
            ),
            Verdict::Granted { .. }
        ));
        // An edit that changes nothing approves the artifact as requested.
        let original = json!({"amount": 1});
        assert_eq!(
            approved_data(
                ApprovalAction::EditAccept,
                &json!({"editedArtifactData": {"amount": 1}}),
                Some(&original)
            ),
            None
        );
        assert_eq!(
            approved_data(
                ApprovalAction::EditAccept,
                &json!({"editedArtifactData": {"amount": 3}}),
                Some(&original)
            ),
            Some(json!({"amount": 3}))
        );
        assert_eq!(
            approved_data(
                ApprovalAction::Accept,
                &json!({"editedArtifactData": {"x": 1}}),
                None
            ),
            None
        );
        assert_eq!(
            agreeing_approvals(&[edit("a", json!(1)), edit("b", json!(2)), edit("c", json!(2))]),
            2
        );
    }

    /// policy × action × quorum: what one more vote by a fresh principal does
    /// after one earlier accept.
    #[test]
    fn decision_table() {
        use RejectionPolicy::*;
        let all = ["accept", "reject", "refine", "edit-accept"];
        // (policy, required, action, expected)
        let cases: &[(RejectionPolicy, u32, &str, &str)] = &[
            (SingleVeto, 1, "accept", "granted"),
            (SingleVeto, 1, "edit-accept", "granted"),
            (SingleVeto, 1, "reject", "rejected"),
            (SingleVeto, 1, "refine", "rejected"),
            (SingleVeto, 3, "accept", "pending"),
            (SingleVeto, 3, "reject", "rejected"),
            (SingleVeto, 3, "refine", "rejected"),
            (SingleVeto, 2, "accept", "granted"),
            (Majority, 1, "reject", "rejected"),
            (Majority, 3, "reject", "pending"),
            (Majority, 3, "accept", "pending"),
            (Majority, 2, "accept", "granted"),
            (Majority, 2, "reject", "pending"),
            (Majority, 3, "refine", "pending"),
            (Majority, 1, "refine", "rejected"),
            (Majority, 2, "refine", "pending"),
        ];
        for &(policy, required, action, expected) in cases {
            let r = ApprovalRules {
                actions: all.iter().map(|s| s.parse().unwrap()).collect(),
                required_approvals: required,
                rejection_policy: policy,
                ..rules(json!({"actions": ["accept"]}))
            };
            // An earlier accept by someone else, except for the single-vote cases.
            let mut ballots = if required > 1 {
                vec![b("first", "accept")]
            } else {
                vec![]
            };
            ballots.push(b("second", action));
            let got = match tally(&r, &ballots) {
                Verdict::Pending { .. } => "pending",
                Verdict::Granted { .. } => "granted",
                Verdict::Rejected { .. } => "rejected",
            };
            assert_eq!(got, expected, "{policy:?} required={required} action={action}");
        }
    }
}
