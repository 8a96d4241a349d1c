//! The per-kind resolve rules on loaded rows: no database.
use super::*;
use crate::approval::ApprovalAction;
use crate::auth::Scope;
use crate::directory::{Actor, Principal};
use crate::store::changes;
use tollgate_wire::InterruptStatus;

const RUN: &str = "acme/run1";

fn run_row() -> RunRow {
    RunRow {
        status: RunStatus::WaitingApproval,
        owner: json!({"tenant": "acme", "subject": {"subjectId": "owner"}}),
        current_node_id: Some(NodeId::trusted("gate")),
        next_sequence: 5,
        ..RunRow::sample(RUN)
    }
}

#[test]
fn far_waits_end_at_the_end_of_time() {
    assert_eq!(after(1_000, 5), 1_005);
    assert_eq!(after(1_000, i64::MAX as u64), i64::MAX);
    assert_eq!(after(1_000, u64::MAX), i64::MAX);
}

/// The interrupt row `raise` stores for `node` of a one-node workflow,
/// with earlier `votes`: each `[seat, action, superseded, is_override,
/// resume_value, cast_by?]` (an override as the directory says now).
fn interrupt_row(node: Value, votes: Value) -> InterruptRow {
    let mut stored = Vec::new();
    let mut overrides = Vec::new();
    for v in votes.as_array().expect("an array of votes") {
        stored.push(json!([v[0], v[1], "approvers", 0, v[2], v[4], v.get(5)]));
        if v[3] == 1 {
            overrides.push(v[0].clone());
        }
    }
    let wf = crate::definition::compile(json!({"id": "w", "nodes": [node]})).unwrap();
    let NodeBehaviour::Interrupt(spec) = &wf.nodes[0].behaviour else {
        panic!("not an interrupt node")
    };
    InterruptRow {
        interrupt_id: "acme/i1".into(),
        run_id: RunId::trusted(RUN),
        node_id: NodeId::trusted(&wf.nodes[0].id),
        key: "k".into(),
        visit: 0,
        kind: spec.kind,
        status: InterruptStatus::Pending,
        payload: json!({"kind": spec.kind.as_str(), "data": spec.data}).to_string(),
        contract: spec.contract.text().to_string(),
        request: Some("{}".into()),
        rules: spec.approval().cloned(),
        workflow_id: "w".into(),
        title: "t".into(),
        owner_subject: "owner".into(),
        created_at: 0,
        deadline_at: None,
        resolved_at: None,
        resolution: None,
        inbox_group: None,
        votes_json: Some(json!(stored).to_string()),
        override_voters: Some(json!(overrides).to_string()),
        row_id: None,
    }
}

fn person(id: &str, groups: &[&str]) -> Principal {
    Principal {
        id: id.into(),
        tenant: "acme".into(),
        name: id.into(),
        email: None,
        groups: groups.iter().map(|g| g.to_string()).collect(),
        roles: vec![],
        is_override: false,
    }
}

fn vote(p: &Principal, interrupt: &InterruptRow, rv: Value) -> Result<Decision> {
    let actor = Actor::api_key(p.clone(), vec![Scope::ApprovalsRespond]);
    decide(&run_row(), interrupt, &rv, &actor, p, || Ok(vec![]), 10)
}

/// `p` votes with `delegators` having handed them their decisions.
fn vote_for(
    p: &Principal,
    delegators: &[Principal],
    interrupt: &InterruptRow,
    rv: Value,
) -> Result<Decision> {
    let actor = Actor::api_key(p.clone(), vec![Scope::ApprovalsRespond]);
    decide(
        &run_row(),
        interrupt,
        &rv,
        &actor,
        p,
        || Ok(delegators.to_vec()),
        10,
    )
}

/// The earlier votes a decision marks replaced: "seat" or "seat by delegate".
fn replaced(changes: &[Change]) -> Vec<String> {
    changes
        .iter()
        .flat_map(|c| match c {
            Change::Votes { votes, .. } => votes[..votes.len() - 1]
                .iter()
                .filter(|v| v.superseded)
                .map(|v| match &v.cast_by {
                    Some(by) => format!("{} by {by}", v.principal),
                    None => v.principal.clone(),
                })
                .collect(),
            _ => Vec::new(),
        })
        .collect()
}

fn written_votes(d: &Decision) -> Vec<(String, Option<String>)> {
    let writes = match d {
        Decision::Recorded(w) => w,
        Decision::Resolve { writes, .. } => writes,
    };
    writes
        .iter()
        .filter_map(|c| match c {
            Change::Votes { votes, .. } => votes.last().map(|v| (v.principal.clone(), v.cast_by.clone())),
            _ => None,
        })
        .collect()
}

#[test]
fn edited_data_is_checked_against_the_declared_request_schema() {
    let node = gate(json!({
        "title": "Q", "actions": ["accept", "edit-accept"], "approverGroupRefs": ["finance"],
        "requestSchema": {"type": "object", "required": ["amount"], "properties": {"amount": {"type": "integer", "maximum": 500}}}
    }));
    let row = interrupt_row(node, json!([]));
    let ann = person("ann", &["finance"]);
    let edit = |data: Value| {
        vote(
            &ann,
            &row,
            json!({"action": "edit-accept", "editedArtifactData": data}),
        )
    };
    for (data, field) in [
        (json!({"amount": "lots"}), "resumeValue.editedArtifactData.amount"),
        (json!({"amount": 900}), "resumeValue.editedArtifactData.amount"),
        (json!({}), "resumeValue.editedArtifactData.amount"),
    ] {
        match edit(data.clone()) {
            Err(EngineError::Validation { field: Some(f), .. }) => assert_eq!(f, field, "{data}"),
            Err(other) => panic!("{data}: {other}"),
            Ok(_) => panic!("{data}: accepted"),
        }
    }
    assert!(matches!(
        edit(json!({"amount": 300})),
        Ok(Decision::Resolve { .. })
    ));
    // Without a declared request schema the edited data is not judged by shape.
    let open = interrupt_row(
        gate(json!({"title": "Q", "actions": ["accept", "edit-accept"], "approverGroupRefs": ["finance"]})),
        json!([]),
    );
    let free = vote(
        &ann,
        &open,
        json!({"action": "edit-accept", "editedArtifactData": {"anything": [1]}}),
    );
    assert!(matches!(free, Ok(Decision::Resolve { .. })));
}

#[test]
fn a_delegate_fills_the_delegators_seat_once_and_quorum_counts_seats() {
    let node = gate(
        json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
    );
    let (ann, bob, dan) = (
        person("ann", &["finance"]),
        person("bob", &["finance"]),
        person("dan", &[]),
    );
    // Dan, out of the finance group, votes in Ann's seat.
    let first = vote_for(
        &dan,
        std::slice::from_ref(&ann),
        &interrupt_row(node.clone(), json!([])),
        json!({"action": "accept"}),
    )
    .unwrap();
    assert!(matches!(first, Decision::Recorded(_)), "one seat of two");
    assert_eq!(
        written_votes(&first),
        [("ann".to_string(), Some("dan".to_string()))]
    );
    // Ann then votes herself: the same seat, so it replaces Dan's; still one of two.
    let after_dan = interrupt_row(
        node.clone(),
        json!([["ann", "accept", 0, 0, {"action": "accept"}, "dan"]]),
    );
    match vote(&ann, &after_dan, json!({"action": "accept"})).unwrap() {
        Decision::Recorded(changes) => assert_eq!(replaced(&changes), ["ann by dan"]),
        Decision::Resolve { .. } => panic!("Ann and her delegate are one seat"),
    }
    // Bob is a second seat: granted, and the event names whose seat Dan took.
    match vote(&bob, &after_dan, json!({"action": "accept"})).unwrap() {
        Decision::Resolve { resolved, .. } => {
            assert_eq!(resolved["decision"], "granted");
            assert!(
                resolved.get("x-tollgate-onBehalfOf").is_none(),
                "Bob voted for himself"
            );
        }
        Decision::Recorded(_) => panic!("two seats grant"),
    }
    // Dan holding Bob's seat too still casts one vote: his second replaces his first.
    let both = vote_for(
        &dan,
        &[bob.clone(), ann.clone()],
        &after_dan,
        json!({"action": "accept"}),
    )
    .unwrap();
    match &both {
        // Dan's vote in Ann's seat is replaced by his vote in Bob's.
        Decision::Recorded(changes) => {
            assert_eq!(replaced(changes), ["ann by dan"]);
            assert_eq!(
                written_votes(&both),
                [("bob".to_string(), Some("dan".to_string()))]
            );
        }
        Decision::Resolve { .. } => panic!("one person never fills two seats"),
    }
    // A delegate's deciding vote is marked with the seat it took.
    let bob_voted = interrupt_row(node, json!([["bob", "accept", 0, 0, {"action": "accept"}]]));
    match vote_for(&dan, &[ann], &bob_voted, json!({"action": "accept"})).unwrap() {
        Decision::Resolve { resolved, .. } => {
            assert_eq!(resolved["x-tollgate-onBehalfOf"], "ann");
            assert_eq!(resolved["resolvedBy"]["subjectId"], "dan");
        }
        Decision::Recorded(_) => panic!("Ann's seat (by Dan) and Bob's grant"),
    }
}

fn gate(config: Value) -> Value {
    json!({"id": "gate", "typeId": "core.approvalGate", "config": config})
}

#[test]
fn a_quorum_records_votes_until_enough_distinct_people_agree() {
    let node = gate(
        json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
    );
    let ann = person("ann", &["finance"]);
    let first = interrupt_row(node.clone(), json!([]));
    match vote(&ann, &first, json!({"action": "accept"})).unwrap() {
        Decision::Recorded(changes) => {
            assert_eq!(changes::votes_of(&changes), [("ann", ApprovalAction::Accept)]);
            assert_eq!(changes.len(), 1, "nothing to replace: {changes:?}");
        }
        Decision::Resolve { .. } => panic!("one of two approvals does not grant"),
    }
    // Ann again: her vote replaces her earlier one, still one of two.
    let again = interrupt_row(
        node.clone(),
        json!([["ann", "accept", 0, 0, {"action": "accept"}]]),
    );
    match vote(&ann, &again, json!({"action": "accept"})).unwrap() {
        Decision::Recorded(changes) => {
            assert_eq!(replaced(&changes), ["ann"]);
            assert_eq!(changes::votes_of(&changes), [("ann", ApprovalAction::Accept)]);
            assert!(
                matches!(&changes[0], Change::Votes { votes, .. } if votes.len() == 2 && !votes[1].superseded),
                "appended after the vote it replaces"
            );
        }
        Decision::Resolve { .. } => panic!("one person is one vote"),
    }
    // Bob is the second person: granted.
    let bob = person("bob", &["finance"]);
    match vote(&bob, &again, json!({"action": "accept"})).unwrap() {
        Decision::Resolve {
            resolved, failure, ..
        } => {
            assert_eq!(resolved["decision"], "granted");
            assert!(failure.is_none());
        }
        Decision::Recorded(_) => panic!("two distinct approvals grant"),
    }
}

#[test]
fn eligibility_self_approval_and_the_resume_shape_are_checked_before_anything_is_recorded() {
    let node = gate(
        json!({"title": "Q", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "preventSelfApproval": true}),
    );
    let row = interrupt_row(node, json!([]));
    let outsider = person("cat", &[]);
    assert!(matches!(
        vote(&outsider, &row, json!({"action": "accept"})),
        Err(EngineError::Forbidden(_))
    ));
    let owner = person("owner", &["finance"]);
    assert!(
        matches!(
            vote(&owner, &row, json!({"action": "accept"})),
            Err(EngineError::Forbidden(_))
        ),
        "no self-approval"
    );
    let ann = person("ann", &["finance"]);
    match vote(&ann, &row, json!({"action": "maybe"})) {
        Err(EngineError::Validation { field, .. }) => {
            assert!(field.is_some_and(|f| f.contains("action")))
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
}

#[test]
fn a_single_veto_rejects_and_fails_the_gate() {
    let node = gate(json!({"title": "Q", "actions": ["accept", "reject"], "requiredApprovals": 2}));
    let row = interrupt_row(node, json!([["ann", "accept", 0, 0, {"action": "accept"}]]));
    match vote(&person("bob", &[]), &row, json!({"action": "reject"})).unwrap() {
        Decision::Resolve {
            resolved, failure, ..
        } => {
            assert_eq!(resolved["decision"], "rejected");
            assert_eq!(failure.unwrap()["code"], "approval_rejected");
        }
        Decision::Recorded(_) => panic!("a reject under single-veto decides"),
    }
}

#[test]
fn an_external_event_must_match_its_correlation() {
    let node = json!({"id": "wait", "typeId": "core.interrupt", "config": {"kind": "external-event", "data": {"eventType": "paid", "correlation": {"orderId": "o-1"}}}});
    let row = interrupt_row(node, json!([]));
    let ann = person("ann", &[]);
    match vote(&ann, &row, json!({"orderId": "o-2"})) {
        Err(EngineError::Validation { field, .. }) => {
            assert_eq!(field.as_deref(), Some("resumeValue.orderId"))
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    assert!(matches!(
        vote(&ann, &row, json!({"orderId": "o-1"})).unwrap(),
        Decision::Resolve { .. }
    ));
}
