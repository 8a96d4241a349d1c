//! What a mail about an open interrupt says besides the request: who else
//! may still decide, and how many approvals the gate still needs. Decided
//! here, by the one "may decide" rule ([`super::inbox::eligible_by`]) and the
//! tally's count of agreeing approvals, so a mail cannot promise what the
//! engine would refuse.

use super::*;
use crate::approval::{agreeing_approvals, approved_data, ApprovalRules, Ballot};

/// Who may still decide an open interrupt, as one recipient is told.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StillOpen {
    /// The names of the other people who may decide and have not voted, in
    /// directory order (the recipient is never among them).
    pub others: Vec<String>,
    /// Approvals the gate still needs: its quorum less the largest group of
    /// approvals of the same data so far. `None` for the kinds one answer
    /// decides.
    pub approvals_needed: Option<u32>,
}

/// The rule itself, on loaded rows. `people`: the persons of the run's
/// tenant (every person holds `approvals:respond`); `ballots`: the counted
/// votes; `requesters`: whose request the run is.
pub fn still_open(
    kind: InterruptKind,
    rules: Option<&ApprovalRules>,
    requesters: &[String],
    people: &[Principal],
    ballots: &[Ballot],
    recipient: &str,
) -> StillOpen {
    let others = people
        .iter()
        .filter(|p| p.id != recipient)
        .filter(|p| !ballots.iter().any(|b| b.principal == p.id))
        .filter(|p| super::inbox::eligible_by(kind, rules, requesters, p, true).is_ok())
        .map(|p| p.name.clone())
        .collect();
    let approvals_needed = rules
        .filter(|_| kind == InterruptKind::Approval)
        .map(|r| r.required_approvals.saturating_sub(agreeing_approvals(ballots)));
    StillOpen {
        others,
        approvals_needed,
    }
}

impl Engine {
    /// [`still_open`] for the pending interrupt `interrupt_id` as
    /// `recipient` is told now; `NotFound` once it is no longer pending.
    pub async fn still_open_for(&self, interrupt_id: &str, recipient: &str) -> Result<StillOpen> {
        let interrupt = self.pending_interrupt(interrupt_id).await?;
        let requesters = self.requesters_of(&interrupt.run_id).await?;
        let tenant = ids::tenant_of(&interrupt.run_id).to_string();
        // Service principals are not named.
        let people = self.persons_of(&tenant).await?;
        let original = interrupt.data_member("artifactData")?;
        let ballots: Vec<Ballot> = self
            .inner
            .store
            .votes(interrupt_id)
            .await?
            .into_iter()
            .filter(|v| !v.superseded && v.action.is_vote())
            .map(|v| Ballot {
                approves: approved_data(v.action, &v.resume_value, original.as_ref()),
                principal: v.principal,
                action: v.action,
                is_override: false,
            })
            .collect();
        Ok(still_open(
            interrupt.kind,
            interrupt.rules.as_ref(),
            &requesters,
            &people,
            &ballots,
            recipient,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use tollgate_wire::ApprovalAction;

    fn person(id: &str, groups: &[&str]) -> Principal {
        Principal {
            id: id.into(),
            tenant: "t".into(),
            name: format!("{id} name"),
            email: Some(format!("{id}@x")),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            roles: vec![],
            is_override: false,
        }
    }

    fn vote(id: &str, action: ApprovalAction) -> Ballot {
        Ballot {
            principal: id.into(),
            action,
            is_override: false,
            approves: None,
        }
    }

    #[test]
    fn the_others_who_may_decide_and_have_not_voted_and_the_approvals_still_needed() {
        let people = [
            person("ann", &["fin"]),
            person("bob", &["fin"]),
            person("cat", &["fin"]),
            person("dan", &["ops"]),
            person("own", &["fin"]),
        ];
        let rules = ApprovalRules::from_config(&json!({"actions": ["accept", "reject"],
            "approverGroupRefs": ["fin"], "requiredApprovals": 2, "preventSelfApproval": true}))
        .unwrap();
        let requesters = vec!["own".to_string()];
        let open = still_open(
            InterruptKind::Approval,
            Some(&rules),
            &requesters,
            &people,
            &[],
            "ann",
        );
        // Not ann (the recipient), not dan (not eligible), not own (self-approval refused).
        assert_eq!(open.others, ["bob name", "cat name"]);
        assert_eq!(open.approvals_needed, Some(2));

        let ballots = [vote("bob", ApprovalAction::Accept)];
        let open = still_open(
            InterruptKind::Approval,
            Some(&rules),
            &requesters,
            &people,
            &ballots,
            "ann",
        );
        assert_eq!(open.others, ["cat name"]);
        assert_eq!(open.approvals_needed, Some(1));

        // A rejection is no approval: still two needed.
        let ballots = [vote("bob", ApprovalAction::Reject)];
        let open = still_open(
            InterruptKind::Approval,
            Some(&rules),
            &requesters,
            &people,
            &ballots,
            "cat",
        );
        assert_eq!(open.others, ["ann name"]);
        assert_eq!(open.approvals_needed, Some(2));
    }

    #[test]
    fn other_kinds_are_decided_by_one_answer_of_anyone_of_the_tenant() {
        let people = [person("ann", &[]), person("bob", &[])];
        let open = still_open(
            InterruptKind::Clarification,
            None,
            &["own".to_string()],
            &people,
            &[],
            "ann",
        );
        assert_eq!(open.others, ["bob name"]);
        assert_eq!(open.approvals_needed, None);
    }
}
