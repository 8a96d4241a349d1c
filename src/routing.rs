//! Trigger-rule routing, as a pure rule: given the edges into a node and the
//! terminal statuses their sources delivered so far, does the node fire, get
//! skipped, or wait? The runtime applies the answer (`runtime::Exec`).

use crate::definition::{Edge, TriggerRule};
use std::collections::BTreeMap;
use tollgate_wire::NodeStatus;

/// What the incoming edges decide for their target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Trigger {
    /// Some rule among the incoming edges is satisfied: the node runs.
    Fire,
    /// Every incoming edge has delivered and no rule is satisfied: `node.skipped`.
    Skip,
    /// Not decided yet: more sources have to finish.
    Wait,
}

/// Decides a target from its incoming edges and what was delivered over
/// them (edge id → the source's terminal status: `completed`, `failed`,
/// `skipped`). Edges are grouped by rule; any satisfied group fires.
pub fn trigger<'e>(
    incoming: impl IntoIterator<Item = &'e Edge>,
    delivered: &BTreeMap<String, NodeStatus>,
) -> Trigger {
    let incoming: Vec<&Edge> = incoming.into_iter().collect();
    let mut rules: Vec<TriggerRule> = incoming.iter().map(|e| e.rule).collect();
    rules.dedup();
    let satisfied = rules.iter().any(|&rule| {
        let states: Vec<Option<NodeStatus>> = incoming
            .iter()
            .filter(|e| e.rule == rule)
            .map(|e| delivered.get(&e.id).copied())
            .collect();
        decide_rule(rule, &states)
    });
    if satisfied {
        Trigger::Fire
    } else if incoming.iter().all(|e| delivered.contains_key(&e.id)) {
        Trigger::Skip
    } else {
        Trigger::Wait
    }
}

/// Whether one rule's group of edges is satisfied by what they delivered
/// (`None`: that source has not finished yet).
fn decide_rule(rule: TriggerRule, states: &[Option<NodeStatus>]) -> bool {
    use NodeStatus::{Completed, Failed, Skipped};
    match rule {
        TriggerRule::AllSuccess => states.iter().all(|s| *s == Some(Completed)),
        TriggerRule::AnySuccess => states.contains(&Some(Completed)),
        TriggerRule::AllComplete => states.iter().all(Option::is_some),
        TriggerRule::NoneFailed => states.iter().all(|s| matches!(s, Some(Completed | Skipped))),
        TriggerRule::AnyFailed => states.contains(&Some(Failed)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use TriggerRule::*;

    fn edges(rules: &[TriggerRule]) -> Vec<Edge> {
        rules
            .iter()
            .enumerate()
            .map(|(i, &rule)| Edge {
                id: format!("e{i}"),
                source: format!("s{i}"),
                target: "t".into(),
                rule,
                condition: None,
            })
            .collect()
    }

    fn delivered(statuses: &[Option<&str>]) -> BTreeMap<String, NodeStatus> {
        statuses
            .iter()
            .enumerate()
            .filter_map(|(i, s)| s.map(|s| (format!("e{i}"), s.parse().unwrap())))
            .collect()
    }

    fn decide(rules: &[TriggerRule], statuses: &[Option<&str>]) -> Trigger {
        trigger(&edges(rules), &delivered(statuses))
    }

    #[test]
    fn all_success_waits_for_every_source_and_skips_on_any_other_end() {
        assert_eq!(
            decide(&[AllSuccess, AllSuccess], &[Some("completed"), None]),
            Trigger::Wait
        );
        assert_eq!(
            decide(&[AllSuccess, AllSuccess], &[Some("completed"), Some("completed")]),
            Trigger::Fire
        );
        assert_eq!(
            decide(&[AllSuccess, AllSuccess], &[Some("completed"), Some("failed")]),
            Trigger::Skip
        );
        assert_eq!(decide(&[AllSuccess], &[Some("skipped")]), Trigger::Skip);
    }

    #[test]
    fn any_success_fires_on_the_first_completed_source() {
        assert_eq!(
            decide(&[AnySuccess, AnySuccess], &[Some("completed"), None]),
            Trigger::Fire
        );
        assert_eq!(
            decide(&[AnySuccess, AnySuccess], &[Some("failed"), None]),
            Trigger::Wait
        );
        assert_eq!(
            decide(&[AnySuccess, AnySuccess], &[Some("failed"), Some("skipped")]),
            Trigger::Skip
        );
    }

    #[test]
    fn all_complete_fires_once_everything_ended_whatever_the_end() {
        assert_eq!(
            decide(&[AllComplete, AllComplete], &[Some("failed"), None]),
            Trigger::Wait
        );
        assert_eq!(
            decide(&[AllComplete, AllComplete], &[Some("failed"), Some("skipped")]),
            Trigger::Fire
        );
    }

    #[test]
    fn none_failed_accepts_skips_and_any_failed_wants_a_failure() {
        assert_eq!(
            decide(&[NoneFailed, NoneFailed], &[Some("completed"), Some("skipped")]),
            Trigger::Fire
        );
        assert_eq!(
            decide(&[NoneFailed, NoneFailed], &[Some("completed"), Some("failed")]),
            Trigger::Skip
        );
        assert_eq!(decide(&[AnyFailed], &[Some("failed")]), Trigger::Fire);
        assert_eq!(decide(&[AnyFailed], &[Some("completed")]), Trigger::Skip);
    }

    #[test]
    fn rules_are_grouped_and_any_satisfied_group_fires() {
        // A success path and a failure path into one node: either fires it.
        assert_eq!(
            decide(&[AllSuccess, AnyFailed], &[Some("completed"), None]),
            Trigger::Fire
        );
        assert_eq!(
            decide(&[AllSuccess, AnyFailed], &[None, Some("failed")]),
            Trigger::Fire
        );
        assert_eq!(
            decide(&[AllSuccess, AnyFailed], &[Some("skipped"), Some("completed")]),
            Trigger::Skip
        );
    }
}
