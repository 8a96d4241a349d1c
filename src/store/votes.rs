//! An interrupt's votes as stored: a JSON array in its row
//! (`interrupts.votes`, migration 0023), in the order they were cast. The
//! command that records a vote holds the run's row and writes the array
//! whole, so the array is never written by two commands at once.

use crate::clock::Millis;
use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tollgate_wire::ApprovalAction;

/// One vote (or `ask`) on an interrupt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "Element", into = "Element")]
pub(crate) struct StoredVote {
    /// The seat: whose vote this counts as.
    pub principal: String,
    /// The delegate who cast it in `principal`'s seat.
    pub cast_by: Option<String>,
    pub action: ApprovalAction,
    pub eligible_via: String,
    pub decided_at: Millis,
    /// A later vote of the same person replaced it.
    pub superseded: bool,
    pub resume_value: Value,
}

/// One element of the array: principal, action, eligible_via, decided_at,
/// superseded (0/1), resume_value, cast_by.
type Element = (String, ApprovalAction, String, Millis, i64, Value, Option<String>);

impl From<Element> for StoredVote {
    fn from(
        (principal, action, eligible_via, decided_at, superseded, resume_value, cast_by): Element,
    ) -> Self {
        StoredVote {
            principal,
            cast_by,
            action,
            eligible_via,
            decided_at,
            superseded: superseded != 0,
            resume_value,
        }
    }
}

impl From<StoredVote> for Element {
    fn from(v: StoredVote) -> Self {
        (
            v.principal,
            v.action,
            v.eligible_via,
            v.decided_at,
            i64::from(v.superseded),
            v.resume_value,
            v.cast_by,
        )
    }
}

impl StoredVote {
    /// Counts toward the tally: a vote (not `ask`) no later vote replaced.
    pub fn counts(&self) -> bool {
        !self.superseded && self.action.is_vote()
    }

    /// Who cast it: the delegate, else the seat's holder.
    pub fn caster(&self) -> &str {
        self.cast_by.as_deref().unwrap_or(&self.principal)
    }
}

/// An interrupt's `votes` column (binds the interrupt id; no row: no such interrupt).
pub(crate) const VOTES_OF_SQL: &str = "SELECT votes FROM interrupts WHERE interrupt_id = ?";

/// The votes of interrupt `interrupt_id` from its `votes` column.
pub(crate) fn parse(interrupt_id: &str, text: &str) -> Result<Vec<StoredVote>> {
    serde_json::from_str(text).map_err(|e| EngineError::Storage(format!("votes of {interrupt_id}: {e}")))
}

/// The `votes` column holding `votes`.
pub(crate) fn to_json(votes: &[StoredVote]) -> Result<String> {
    Ok(serde_json::to_string(votes)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn votes_read_back_as_written_in_cast_order() {
        let votes = vec![
            StoredVote {
                principal: "acme/ann".into(),
                cast_by: None,
                action: ApprovalAction::Accept,
                eligible_via: "approvers".into(),
                decided_at: 5,
                superseded: true,
                resume_value: json!({"action": "accept", "comment": "a \"quoted\" word"}),
            },
            StoredVote {
                principal: "acme/bob".into(),
                cast_by: Some("acme/dan".into()),
                action: ApprovalAction::Reject,
                eligible_via: "delegate".into(),
                decided_at: 7,
                superseded: false,
                resume_value: json!({"action": "reject"}),
            },
        ];
        let text = to_json(&votes).unwrap();
        assert!(
            text.starts_with(r#"[["acme/ann","accept","approvers",5,1,{"#),
            "{text}"
        );
        assert_eq!(parse("i", &text).unwrap(), votes);
        assert!(votes[1].counts() && !votes[0].counts());
        assert_eq!(votes[1].caster(), "acme/dan");
        assert!(matches!(parse("acme/i1", "[1]"), Err(EngineError::Storage(m)) if m.contains("acme/i1")));
    }

    /// Migration 0023 (postgres/0011) on a store written before it: each
    /// interrupt's votes move into its row in the order they were cast
    /// (`seq`), whatever order the rows were stored in.
    #[tokio::test]
    async fn the_migration_moves_votes_into_the_interrupt_row() {
        use crate::store::{Durability, Store};
        let dir = tempfile::tempdir().unwrap();
        let mut setup = String::new();
        for (id, visit) in [("t/i1", 1), ("t/i2", 2)] {
            setup.push_str(&format!(
                "INSERT INTO interrupts (interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, eligibility, workflow_id, title, owner_subject, created_at) \
                 VALUES ('{id}', 't/r1', 'gate', '{id}', {visit}, 'approval', 'pending', '{{}}', '{{}}', 'null', 'w', 't', 'o', 0);\n"
            ));
        }
        setup.push_str(
            "INSERT INTO votes (interrupt_id, seq, principal, action, resume_value, eligible_via, decided_at, superseded, cast_by) VALUES \
             ('t/i1', 2, 't/bob', 'reject', '{\"action\": \"reject\", \"reason\": \"it''s \\\"late\\\"\"}', 'approvers', 30, 0, NULL), \
             ('t/i1', 0, 't/ann', 'accept', '{\"action\": \"accept\"}', 'approvers', 10, 1, NULL), \
             ('t/i1', 1, 't/ann', 'accept', '{\"action\": \"accept\"}', 'delegate', 20, 0, 't/dan');",
        );
        let url = crate::store::testing::migrated_before(&dir.path().join("old.db"), "0023", "0011", &setup)
            .await
            .unwrap();
        let store = Store::open(&url, Durability::Full).await.unwrap();
        let votes = store.votes("t/i1").await.unwrap();
        let seen: Vec<_> = votes
            .iter()
            .map(|v| {
                (
                    v.principal.as_str(),
                    v.action,
                    v.decided_at,
                    v.superseded,
                    v.cast_by.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            seen,
            [
                ("t/ann", ApprovalAction::Accept, 10, true, None),
                ("t/ann", ApprovalAction::Accept, 20, false, Some("t/dan")),
                ("t/bob", ApprovalAction::Reject, 30, false, None),
            ]
        );
        assert_eq!(votes[1].eligible_via, "delegate");
        assert_eq!(
            votes[2].resume_value,
            json!({"action": "reject", "reason": "it's \"late\""})
        );
        assert!(store.votes("t/i2").await.unwrap().is_empty());
    }
}
