//! The inbox at scale: search, the deadline filter and "Approve / Reject
//! selected", on SQLite, or on PostgreSQL when `TOLLGATE_TEST_POSTGRES` is set
//! (as `tests/engine.rs`).

use serde_json::{json, Value};
mod common;

use common::TestEngine;
use std::path::Path;
use tollgate::engine::inbox::{InboxDue, InboxFilter, InboxPage, BULK_MAX_PICKS, SEARCH_MAX_CHARS};
use tollgate::{Actor, CreateRun, Engine, EngineError, Principal, RunId};

const HOUR: i64 = 3_600_000;

async fn fixture() -> TestEngine {
    let t = common::engine().await;
    let engine = &t.engine;
    let conformance = Path::new(env!("CARGO_MANIFEST_DIR")).join("workflows/conformance");
    for (path, r) in engine.load_workflow_dir(&conformance).await {
        r.unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    // Two tenants whose names differ in one letter: neither may see the other's.
    common::add(
        engine,
        [
            common::person("owner", "acme", &[], &[], false),
            common::person("ann", "acme", &["finance"], &[], false),
            common::person("bob", "acme", &["finance"], &[], false),
            common::person("cat", "acme", &[], &[], false),
            common::person("eve", "acmf", &["finance"], &[], false),
        ],
    )
    .await;
    let gate = |id: &str, config: Value| json!({"id": id, "nodes": [{"id": "gate", "typeId": "core.approvalGate", "config": config}]});
    for def in [
        // Title and request data from the run's inputs.
        gate(
            "buy",
            json!({"actions": ["accept", "reject"], "approverGroupRefs": ["finance"],
                "title": {"$bind": {"type": "template", "template": "{{ inputs.title }}"}},
                "artifactData": {"$bind": {"type": "variable", "variableName": "artifact"}}}),
        ),
        gate(
            "pair",
            json!({"title": "Two approvals", "actions": ["accept", "reject"], "requiredApprovals": 2}),
        ),
        gate(
            "commented",
            json!({"title": "Say why", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"],
                "resumeSchema": {"type": "object", "required": ["action", "comment"],
                    "properties": {"action": {"type": "string"}, "comment": {"type": "string"}}}}),
        ),
    ]
    .into_iter()
    .chain([1000, HOUR, 3 * 24 * HOUR, 30 * 24 * HOUR].map(|ms| {
        gate(
            &format!("timed-{ms}"),
            json!({"title": "Timed", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"], "timeoutMs": ms}),
        )
    })) {
        engine.register_workflow(def).await.unwrap();
    }
    t
}

async fn person(e: &Engine, id: &str) -> Principal {
    e.principal(id).await.unwrap().unwrap()
}

/// Starts a run as `who` (an API actor of their tenant).
async fn start_as(e: &Engine, who: &str, workflow: &str, inputs: Value) -> RunId {
    let req: CreateRun = serde_json::from_value(json!({"workflowId": workflow, "inputs": inputs})).unwrap();
    let actor = Actor::api_key(person(e, who).await, tollgate::auth::ALL_SCOPES[..4].to_vec());
    e.create_run(req, &actor, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

async fn buy(e: &Engine, who: &str, title: &str, artifact: Value) -> RunId {
    start_as(e, who, "buy", json!({"title": title, "artifact": artifact})).await
}

async fn search(e: &Engine, who: &str, q: &str) -> InboxPage {
    let filter = InboxFilter {
        search: Some(q.into()),
        ..Default::default()
    };
    e.pending_for(&person(e, who).await, &filter).await.unwrap()
}

fn titles(page: &InboxPage) -> Vec<String> {
    let mut t: Vec<String> = page.items.iter().map(|i| i.title.clone()).collect();
    t.sort();
    t
}

fn pick(run: &RunId) -> String {
    tollgate_wire::inbox::pick_value(&tollgate::ids::encode_path_id(run), "gate")
}

async fn decide(
    e: &Engine,
    who: &str,
    action: &str,
    picks: &[String],
) -> Vec<tollgate::engine::inbox::BulkResult> {
    let actor = Actor::session(person(e, who).await);
    e.decide_many(&actor, action, picks).await.unwrap()
}

fn field_of(e: EngineError) -> Option<String> {
    match e {
        EngineError::Validation { field, .. } => field,
        other => panic!("not a validation error: {other:?}"),
    }
}

async fn status(e: &Engine, run: &RunId) -> (String, usize) {
    let view = e
        .inspect_interrupt(run, "gate", &Actor::session(person(e, "owner").await))
        .await
        .unwrap();
    (
        view.status.to_string(),
        view.votes.iter().filter(|v| v.counted).count(),
    )
}

#[tokio::test]
async fn search_matches_titles_and_request_data_in_the_own_tenant_only() {
    let f = fixture().await;
    let e = &f.engine;
    buy(
        e,
        "owner",
        "Invoice ACME-17 for widgets",
        json!({"vendor": "Globex 100%_off"}),
    )
    .await;
    buy(
        e,
        "owner",
        "Laptop back\\slash order",
        json!({"vendor": "Initech"}),
    )
    .await;
    buy(e, "owner", "Chairs", json!({"vendor": "Umbrella"})).await;
    buy(e, "eve", "Invoice acmf secret", json!({"vendor": "Globex"})).await;

    assert_eq!(
        titles(&search(e, "ann", "INVOICE").await),
        ["Invoice ACME-17 for widgets"]
    );
    // Request data, any case; the count is of the matches.
    let globex = search(e, "ann", "globex").await;
    assert_eq!(
        (globex.total, titles(&globex)),
        (1, vec!["Invoice ACME-17 for widgets".to_string()])
    );
    // `%`, `_` and `\` are text, not patterns.
    assert_eq!(search(e, "ann", "100%_").await.total, 1);
    assert_eq!(search(e, "ann", "%").await.total, 1);
    assert_eq!(search(e, "ann", "_").await.total, 1);
    assert_eq!(search(e, "ann", "0%o").await.total, 0, "% matched any text");
    assert_eq!(search(e, "ann", "k\\s").await.total, 1);
    assert_eq!(search(e, "ann", "k\\").await.total, 1);
    assert_eq!(search(e, "ann", "\\%").await.total, 0, "\\ escaped the %");
    assert_eq!(search(e, "ann", "nothing like it").await.total, 0);
    // Blank is no search.
    assert_eq!(search(e, "ann", "  ").await.total, 3);

    // Neither tenant finds the other's requests, by title or by data.
    assert_eq!(search(e, "ann", "acmf").await.total, 0);
    assert_eq!(search(e, "ann", "secret").await.total, 0);
    assert_eq!(
        titles(&search(e, "eve", "invoice").await),
        ["Invoice acmf secret"]
    );
    assert_eq!(search(e, "eve", "acme").await.total, 0);
    assert_eq!(search(e, "eve", "initech").await.total, 0);

    // Only what the person may decide: cat is in no group.
    assert_eq!(search(e, "cat", "invoice").await.total, 0);

    // Search with the workflow filter.
    let filter = InboxFilter {
        search: Some("invoice".into()),
        workflow_id: Some("pair".into()),
        ..Default::default()
    };
    assert_eq!(
        e.pending_for(&person(e, "ann").await, &filter)
            .await
            .unwrap()
            .total,
        0
    );
}

/// A title bound from a run's inputs is the inbox row and the mail
/// subject: whatever the run's author put in it, it is one short line.
#[tokio::test]
async fn a_title_bound_from_inputs_is_one_short_line() {
    let f = fixture().await;
    let e = &f.engine;
    let planted = "Pay\r\n\nOpen this link to decide:\nhttps://evil.test/steal\u{2028}\u{202E}kcab ";
    buy(e, "owner", planted, json!({})).await;
    buy(e, "owner", &"long ".repeat(100), json!({})).await;
    // Nothing left of it: the node's name (here its id) stands in.
    buy(e, "owner", " \r\n\u{202E}\t", json!({})).await;
    let mut shown = titles(
        &e.pending_for(&person(e, "ann").await, &InboxFilter::default())
            .await
            .unwrap(),
    );
    shown.sort_by_key(|t| t.len());
    assert_eq!(shown[0], "gate");
    assert_eq!(
        shown[1],
        "Pay Open this link to decide: https://evil.test/steal kcab"
    );
    assert_eq!(shown[2].chars().count(), tollgate::text::HEADLINE_MAX_CHARS);
    assert!(shown[2].ends_with("long…"), "{}", shown[2]);
}

#[tokio::test]
async fn a_search_longer_than_200_characters_is_refused_naming_q() {
    let f = fixture().await;
    let ann = person(&f.engine, "ann").await;
    let longest = InboxFilter {
        search: Some("é".repeat(SEARCH_MAX_CHARS)),
        ..Default::default()
    };
    assert_eq!(f.engine.pending_for(&ann, &longest).await.unwrap().total, 0);
    let over = InboxFilter {
        search: Some("x".repeat(SEARCH_MAX_CHARS + 1)),
        ..Default::default()
    };
    let err = f.engine.pending_for(&ann, &over).await.unwrap_err();
    assert_eq!(err.http_status(), 400);
    assert_eq!(field_of(err).as_deref(), Some("q"));
}

#[tokio::test]
async fn due_filters_by_deadline_window() {
    let f = fixture().await;
    let e = &f.engine;
    let late = start_as(e, "owner", &format!("timed-{}", 1000), json!({})).await;
    f.clock.advance(2000);
    let hour = start_as(e, "owner", &format!("timed-{}", HOUR), json!({})).await;
    let days = start_as(e, "owner", &format!("timed-{}", 3 * 24 * HOUR), json!({})).await;
    let month = start_as(e, "owner", &format!("timed-{}", 30 * 24 * HOUR), json!({})).await;
    let never = buy(e, "owner", "No deadline", json!({})).await;
    let ann = person(e, "ann").await;
    let runs = |due: InboxDue| {
        let ann = ann.clone();
        async move {
            let filter = InboxFilter {
                due: Some(due),
                ..Default::default()
            };
            let page = e.pending_for(&ann, &filter).await.unwrap();
            assert_eq!(page.total, page.items.len());
            page.items.into_iter().map(|i| i.run_id).collect::<Vec<_>>()
        }
    };
    assert_eq!(runs(InboxDue::Overdue).await, [late.to_string()]);
    assert_eq!(runs(InboxDue::Day).await, [hour.to_string()]);
    let mut week = runs(InboxDue::Week).await;
    week.sort();
    let mut want = vec![hour.to_string(), days.to_string()];
    want.sort();
    assert_eq!(week, want);
    assert_eq!(runs(InboxDue::Never).await, [never.to_string()]);
    let all = e.pending_for(&ann, &InboxFilter::default()).await.unwrap();
    assert_eq!(all.total, 5);
    assert!(all.items.iter().any(|i| i.run_id == month.as_str()));

    assert_eq!(
        InboxDue::parse_param(Some("overdue")).unwrap(),
        Some(InboxDue::Overdue)
    );
    assert_eq!(InboxDue::parse_param(Some("")).unwrap(), None);
    assert_eq!(
        field_of(InboxDue::parse_param(Some("soon")).unwrap_err()).as_deref(),
        Some("due")
    );
}

#[tokio::test]
async fn bulk_approve_is_one_ordinary_resolve_per_pick() {
    let f = fixture().await;
    let e = &f.engine;
    let a = buy(e, "owner", "A", json!({})).await;
    let b = buy(e, "owner", "B", json!({})).await;
    let results = decide(e, "ann", "accept", &[pick(&a), pick(&b), pick(&a)]).await;
    assert_eq!(results.len(), 2, "a pick listed twice is decided once");
    assert!(results.iter().all(|r| r.decided), "{results:?}");
    assert_eq!(results[0].title.as_deref(), Some("A"));
    assert_eq!(status(e, &a).await.0, "resolved");
    assert_eq!(
        e.pending_for(&person(e, "ann").await, &InboxFilter::default())
            .await
            .unwrap()
            .total,
        0
    );

    // Already decided: refused, nothing changes.
    let again = decide(e, "bob", "reject", &[pick(&a)]).await;
    assert!(!again[0].decided);
    assert!(again[0].message.contains("resolved"), "{}", again[0].message);

    let r = buy(e, "owner", "R", json!({})).await;
    let rejected = decide(e, "ann", "reject", &[pick(&r)]).await;
    assert!(rejected[0].decided, "{rejected:?}");
    let view = e
        .inspect_interrupt(&r, "gate", &Actor::session(person(e, "owner").await))
        .await
        .unwrap();
    assert_eq!(view.votes[0].action, tollgate_wire::ApprovalAction::Reject);
}

#[tokio::test]
async fn bulk_refuses_per_pick_what_a_single_decision_would() {
    let f = fixture().await;
    let e = &f.engine;
    let finance = buy(e, "owner", "Finance only", json!({})).await;
    let own = start_as(e, "ann", "pair", json!({})).await;
    let commented = start_as(e, "owner", "commented", json!({})).await;
    let clarify = start_as(e, "owner", "conformance-clarification", json!({})).await;
    let theirs = buy(e, "eve", "Acmf private title", json!({})).await;
    let clarify_pick = tollgate_wire::inbox::pick_value(&tollgate::ids::encode_path_id(&clarify), "ask");
    let results = decide(
        e,
        "ann",
        "accept",
        &[
            pick(&own),
            pick(&commented),
            clarify_pick,
            pick(&theirs),
            "not-a-pick".into(),
        ],
    )
    .await;
    assert!(results.iter().all(|r| !r.decided), "{results:?}");
    // Their own request: no self-approval.
    assert!(results[0].message.contains("own gate"), "{}", results[0].message);
    // A gate whose resume needs a comment: refused by its schema.
    assert!(
        results[1].message.contains("needs an answer"),
        "{}",
        results[1].message
    );
    assert!(
        results[2].message.contains("only approvals"),
        "{}",
        results[2].message
    );
    // Another tenant's: refused, and nothing of it is told.
    assert_eq!(results[3].title, None);
    assert!(
        !results[3].message.contains("Acmf private"),
        "{}",
        results[3].message
    );
    assert_eq!(results[4].title, None);
    for run in [&own, &commented] {
        assert_eq!(status(e, run).await, ("pending".to_string(), 0));
    }

    // Not eligible: cat is in no group.
    let refused = decide(e, "cat", "accept", &[pick(&finance)]).await;
    assert!(!refused[0].decided);
    assert_eq!(status(e, &finance).await, ("pending".to_string(), 0));
}

/// A pick spelled another way (the escapes of its run id in either case,
/// or escaping a letter that needs none) is the same pick: decided once.
#[tokio::test]
async fn a_pick_spelled_twice_is_decided_once() {
    let f = fixture().await;
    let e = &f.engine;
    let run = start_as(e, "owner", "pair", json!({})).await;
    let encoded = tollgate::ids::encode_path_id(&run);
    assert!(encoded.contains("~2F"), "{encoded}");
    let spellings = [
        pick(&run),
        tollgate_wire::inbox::pick_value(&encoded.replace("~2F", "~2f"), "gate"),
        tollgate_wire::inbox::pick_value(
            &format!("~{:02X}{}", encoded.as_bytes()[0], &encoded[1..]),
            "gate",
        ),
    ];
    let results = decide(e, "ann", "reject", &spellings).await;
    assert_eq!(results.len(), 1, "{results:?}");
    assert!(results[0].decided, "{results:?}");
}

#[tokio::test]
async fn a_repeated_bulk_vote_counts_once() {
    let f = fixture().await;
    let e = &f.engine;
    let run = start_as(e, "owner", "pair", json!({})).await;
    let first = decide(e, "ann", "accept", &[pick(&run)]).await;
    assert!(first[0].decided, "{first:?}");
    decide(e, "ann", "accept", &[pick(&run), pick(&run)]).await;
    assert_eq!(status(e, &run).await, ("pending".to_string(), 1));
    let item = e
        .pending_for(&person(e, "bob").await, &InboxFilter::default())
        .await
        .unwrap();
    assert_eq!(item.items[0].accepts, Some(1));
    decide(e, "bob", "accept", &[pick(&run)]).await;
    assert_eq!(status(e, &run).await.0, "resolved");
}

#[tokio::test]
async fn whole_call_errors_name_their_field() {
    let f = fixture().await;
    let e = &f.engine;
    let run = buy(e, "owner", "A", json!({})).await;
    let ann = Actor::session(person(e, "ann").await);
    let field = |r: Result<_, EngineError>| field_of(r.unwrap_err());
    assert_eq!(
        field(e.decide_many(&ann, "refine", &[pick(&run)]).await).as_deref(),
        Some("action")
    );
    assert_eq!(
        field(e.decide_many(&ann, "accept", &[]).await).as_deref(),
        Some("pick")
    );
    let many: Vec<String> = (0..=BULK_MAX_PICKS).map(|i| format!("x{i}/gate")).collect();
    assert_eq!(
        field(e.decide_many(&ann, "accept", &many).await).as_deref(),
        Some("pick")
    );
    // Nothing was decided by a refused call.
    assert_eq!(status(e, &run).await, ("pending".to_string(), 0));
}

/// The instance's pending count (the metrics gauge) is summed from the kept
/// counts, not counted row by row: it must follow every way an interrupt
/// closes, in both tenants.
#[tokio::test]
async fn the_instances_pending_count_follows_every_way_an_interrupt_closes() {
    let f = fixture().await;
    let e = &f.engine;
    assert_eq!(e.pending_interrupts().await.unwrap(), 0);
    assert!(!e.has_runs().await.unwrap());

    let decided = buy(e, "owner", "decided", json!({})).await;
    let cancelled = buy(e, "owner", "cancelled", json!({})).await;
    let pair = start_as(e, "owner", "pair", json!({})).await;
    let timed = start_as(e, "owner", "timed-1000", json!({})).await;
    let elsewhere = buy(e, "eve", "elsewhere", json!({})).await;
    assert!(e.has_runs().await.unwrap());
    assert_eq!(e.run_count().await.unwrap(), 5);
    assert_eq!(e.pending_interrupts().await.unwrap(), 5);

    assert!(decide(e, "ann", "accept", &[pick(&decided)]).await[0].decided);
    // A vote that does not decide leaves the interrupt pending.
    assert!(decide(e, "ann", "accept", &[pick(&pair)]).await[0].decided);
    assert_eq!(status(e, &pair).await, ("pending".to_string(), 1));
    let owner = Actor::api_key(person(e, "owner").await, tollgate::auth::ALL_SCOPES[..4].to_vec());
    e.cancel_run(&cancelled, None, &owner, None)
        .await
        .unwrap()
        .result
        .unwrap();
    f.clock.advance(1000);
    e.fire_due().await.unwrap();
    assert_eq!(status(e, &timed).await.0, "resolved", "by its timeout");
    assert_eq!(e.pending_interrupts().await.unwrap(), 2, "the pair and eve's");

    assert!(decide(e, "bob", "accept", &[pick(&pair)]).await[0].decided);
    let eve = Actor::session(person(e, "eve").await);
    let view = e.inspect_interrupt(&elsewhere, "gate", &eve).await.unwrap();
    assert_eq!(view.status.to_string(), "pending");
    assert!(decide(e, "eve", "reject", &[pick(&elsewhere)]).await[0].decided);
    assert_eq!(e.pending_interrupts().await.unwrap(), 0);
    assert_eq!(e.run_count().await.unwrap(), 5, "runs are kept");
}

/// A node id that is not one is refused naming `nodeId`, and not repeated.
#[tokio::test]
async fn an_interrupt_asked_for_by_a_malformed_node_id_is_refused_naming_it() {
    let f = fixture().await;
    let e = &f.engine;
    let run = start_as(e, "owner", "pair", json!({})).await;
    let actor = Actor::session(person(e, "ann").await);
    for node in [
        "x".repeat(200_000),
        "ga te".into(),
        "g\u{0}".into(),
        String::new(),
    ] {
        let refused = e.inspect_interrupt(&run, &node, &actor).await.unwrap_err();
        assert!(
            !refused.to_string().contains(&node) || node.is_empty(),
            "{refused}"
        );
        assert_eq!(field_of(refused).as_deref(), Some("nodeId"));
    }
}
