//! The console's inbox query (`Engine::pending_for`) for a person with 10,000
//! pending approvals (page size 50): first page newest first, a deep page,
//! deadline order, a filter that matches nothing, and a search whose text
//! every title holds and one none holds. Also the live inbox's
//! per-change relevance check (`Engine::inbox_concerns`).
//!
//! The store also holds `INBOX_STORED_RUNS` (1,000,000) finished runs, each
//! with its resolved approval, so the read models are measured at the size
//! of a store that has been in use for a while.
//!
//! cargo bench -p tollgate --bench inbox          (INBOX_PENDING=N to change 10,000)
//! On PostgreSQL: TOLLGATE_TEST_POSTGRES=$(scripts/pg.sh start) cargo bench …

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::time::{Duration, Instant};
use tollgate::engine::inbox::{InboxFilter, InboxSort};
use tollgate::{Actor, CreateRun, Engine, EngineOptions, Principal};

fn person(id: &str, groups: &[&str]) -> Principal {
    Principal {
        id: id.into(),
        tenant: "bench".into(),
        name: id.into(),
        email: None,
        groups: groups.iter().map(|g| g.to_string()).collect(),
        roles: vec![],
        is_override: false,
    }
}

/// Copies the run `template` (and its interrupt, resolved) `n` times as
/// finished runs of the same tenant, in bulk SQL: the engine would take
/// minutes to make a million runs, and only their presence matters here.
async fn fill(url: &str, template: &str, n: usize) {
    if n == 0 {
        return;
    }
    let t = Instant::now();
    let pool = sqlx::any::AnyPoolOptions::new()
        .max_connections(1)
        .connect(url)
        .await
        .unwrap();
    let postgres = url.starts_with("postgres");
    let mark = if postgres { "$1" } else { "?" };
    let series = format!("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {n}) ");
    let runs = format!(
        "{series}INSERT INTO runs (run_id, tenant, workflow_id, workflow_digest, status, owner, current_node_id, error, inputs, configurable, tags, metadata, callback_url, next_sequence, created_at, completed_at) \
         SELECT 'bench/fill-' || n.i, t.tenant, t.workflow_id, t.workflow_digest, 'completed', t.owner, NULL, NULL, t.inputs, t.configurable, t.tags, t.metadata, NULL, t.next_sequence, t.created_at - 86400000 - n.i, t.created_at - n.i \
         FROM n, (SELECT * FROM runs WHERE run_id = {mark}) t"
    );
    let interrupts = format!(
        "{series}INSERT INTO interrupts (interrupt_id, run_id, node_id, key, visit, kind, status, payload, contract, request, eligibility, workflow_id, title, owner_subject, created_at, deadline_at, resolved_at, resolution, inbox_group) \
         SELECT 'fill-' || n.i, 'bench/fill-' || n.i, t.node_id, t.key, t.visit, t.kind, 'resolved', t.payload, t.contract, t.request, t.eligibility, t.workflow_id, t.title, t.owner_subject, t.created_at - 86400000 - n.i, t.deadline_at, t.created_at - n.i, '{{}}', t.inbox_group \
         FROM n, (SELECT * FROM interrupts WHERE run_id = {mark}) t"
    );
    for sql in [runs, interrupts] {
        sqlx::query(&sql).bind(template).execute(&pool).await.unwrap();
    }
    if postgres {
        // As autovacuum would soon after a bulk load.
        sqlx::query("ANALYZE").execute(&pool).await.unwrap();
    }
    eprintln!("setup: {n} finished runs stored in {:.1?}", t.elapsed());
}

fn inbox(c: &mut Criterion) {
    let pending: usize = std::env::var("INBOX_PENDING")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    // Pending for the person without a deadline, besides `pending` with one:
    // the deadline order's last pages then read the undated range.
    let undated: usize = std::env::var("INBOX_UNDATED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let stored: usize = std::env::var("INBOX_STORED_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let (engine, ann, last_run) = rt.block_on(async {
        let url = tollgate::store::testing::database_url(&dir.path().join("inbox.db"))
            .await
            .unwrap();
        let mut options = EngineOptions::new(url.clone());
        // Only the setup writes; the measured reads do not depend on it.
        options.durability = tollgate::Durability::Relaxed;
        let engine = Engine::open(options).await.unwrap();
        let owner = person("owner", &[]);
        let ann = person("ann", &["finance"]);
        engine.upsert_principal(owner.clone()).await.unwrap();
        engine.upsert_principal(ann.clone()).await.unwrap();
        for (id, group) in [("inbox-finance", "finance"), ("inbox-legal", "legal")] {
            engine
                .register_workflow(
                    json!({"id": id, "nodes": [{"id": "gate", "typeId": "core.approvalGate",
                    "config": {"title": format!("Approve {id}"), "actions": ["accept", "reject"],
                               "approverGroupRefs": [group], "requiredApprovals": 1,
                               "timeoutMs": 86_400_000_i64}}]}),
                )
                .await
                .unwrap();
        }
        engine
            .register_workflow(
                json!({"id": "inbox-undated", "nodes": [{"id": "gate", "typeId": "core.approvalGate",
                "config": {"title": "Approve inbox-undated", "actions": ["accept", "reject"],
                           "approverGroupRefs": ["finance"], "requiredApprovals": 1}}]}),
            )
            .await
            .unwrap();
        let actor = Actor::operator(owner);
        let t = Instant::now();
        let mut last = String::new();
        // ann may decide `pending` of them; as many again are someone else's.
        for i in 0..pending * 2 {
            let req = CreateRun {
                workflow_id: if i % 2 == 0 {
                    "inbox-finance"
                } else {
                    "inbox-legal"
                }
                .into(),
                ..Default::default()
            };
            let run = engine
                .create_run(req, &actor, None)
                .await
                .unwrap()
                .result
                .unwrap();
            last = run.run_id.into_string();
        }
        for _ in 0..undated {
            let req = CreateRun {
                workflow_id: "inbox-undated".into(),
                ..Default::default()
            };
            engine
                .create_run(req, &actor, None)
                .await
                .unwrap()
                .result
                .unwrap();
        }
        eprintln!("setup: {} runs in {:.1?}", pending * 2 + undated, t.elapsed());
        fill(&url, &last, stored).await;
        (engine, ann, last)
    });
    let first = rt
        .block_on(engine.pending_for(&ann, &InboxFilter::default()))
        .unwrap();
    assert_eq!(first.total, pending + undated);
    assert_eq!(first.items.len(), 50.min(pending + undated));
    let last_page = (pending + undated).div_ceil(50).max(1);

    let mut g = c.benchmark_group(format!("inbox_{pending}"));
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    let cases = [
        ("page1_newest", InboxFilter::default()),
        (
            "page100_oldest",
            InboxFilter {
                sort: InboxSort::Oldest,
                page: 100,
                ..Default::default()
            },
        ),
        (
            "page1_deadline",
            InboxFilter {
                sort: InboxSort::Deadline,
                ..Default::default()
            },
        ),
        // Past the dated rows when INBOX_UNDATED is set.
        (
            "last_page_deadline",
            InboxFilter {
                sort: InboxSort::Deadline,
                page: last_page,
                ..Default::default()
            },
        ),
        (
            "filter_no_match",
            InboxFilter {
                workflow_id: Some("inbox-legal".into()),
                ..Default::default()
            },
        ),
        // Every title matches: the count reads all of the person's rows.
        (
            "search_all_match",
            InboxFilter {
                search: Some("FINANCE".into()),
                ..Default::default()
            },
        ),
        // Nothing matches: the page walks all of them and finds none.
        (
            "search_no_match",
            InboxFilter {
                search: Some("no such text".into()),
                ..Default::default()
            },
        ),
    ];
    for (name, filter) in cases {
        g.bench_function(name, |b| {
            b.iter(|| rt.block_on(engine.pending_for(&ann, &filter)).unwrap())
        });
    }
    g.bench_function("inbox_concerns", |b| {
        b.iter(|| {
            rt.block_on(engine.inbox_concerns(&ann, &tollgate::RunId::trusted(last_run.clone())))
                .unwrap()
        })
    });
    g.finish();
}

criterion_group!(benches, inbox);
criterion_main!(benches);
