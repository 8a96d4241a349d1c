//! Engine hot paths on a real database (durability FULL): create a run that
//! suspends at an approval gate, and resolve it, alone and with 16
//! concurrent callers (where group commit shares one fsync). The group
//! `directory` does it in a tenant of `BENCH_PEOPLE` people (1,000): a
//! create that tells a group of them, and who may still vote as an
//! approval's page names them.
//!
//! A SQLite file by default; with `TOLLGATE_TEST_POSTGRES` set to a server
//! URL (`scripts/pg.sh start`), a fresh database of that PostgreSQL server.

use criterion::{criterion_group, criterion_main, Criterion};
use serde_json::json;
use std::time::{Duration, Instant};
use tollgate::{Actor, CreateRun, Engine, EngineOptions, Principal};

struct Bench {
    rt: tokio::runtime::Runtime,
    engine: Engine,
    actor: Actor,
    _dir: tempfile::TempDir,
}

fn setup() -> Bench {
    setup_with(tollgate::Durability::Full)
}

fn setup_with(durability: tollgate::Durability) -> Bench {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (engine, actor) = rt.block_on(async {
        let url = tollgate::store::testing::database_url(&dir.path().join("bench.db"))
            .await
            .unwrap();
        let mut options = EngineOptions::new(url);
        options.durability = durability;
        let engine = Engine::open(options).await.unwrap();
        let p = Principal {
            id: "bench".into(),
            tenant: "bench".into(),
            name: "bench".into(),
            email: None,
            groups: vec![],
            roles: vec![],
            is_override: false,
        };
        engine.upsert_principal(p.clone()).await.unwrap();
        engine
            .register_workflow(
                json!({"id": "gate", "nodes": [{"id": "gate", "typeId": "core.approvalGate",
                "config": {"title": "Bench", "actions": ["accept", "reject"]}}]}),
            )
            .await
            .unwrap();
        (engine, Actor::operator(p))
    });
    Bench {
        rt,
        engine,
        actor,
        _dir: dir,
    }
}

async fn create(b: &Bench) -> tollgate::RunId {
    let req = CreateRun {
        workflow_id: "gate".into(),
        ..Default::default()
    };
    b.engine
        .create_run(req, &b.actor, None)
        .await
        .unwrap()
        .result
        .unwrap()
        .run_id
}

async fn resolve(b: &Bench, run: &tollgate::RunId) {
    let r = b
        .engine
        .resolve(run, "gate", json!({"action": "accept"}), &b.actor, None)
        .await;
    assert_eq!(r.unwrap().result.unwrap().status, "completed");
}

fn engine_paths(c: &mut Criterion) {
    let relaxed = std::env::var("BENCH_DURABILITY").is_ok_and(|v| v == "relaxed");
    let b = if relaxed {
        setup_with(tollgate::Durability::Relaxed)
    } else {
        setup()
    };
    let mut g = c.benchmark_group(if relaxed { "engine_relaxed" } else { "engine" });
    g.sample_size(20).measurement_time(Duration::from_secs(8));

    g.bench_function("create_run", |bench| {
        bench.iter_custom(|iters| {
            b.rt.block_on(async {
                let t = Instant::now();
                for _ in 0..iters {
                    create(&b).await;
                }
                t.elapsed()
            })
        })
    });

    g.bench_function("resolve", |bench| {
        bench.iter_custom(|iters| {
            b.rt.block_on(async {
                let mut runs = Vec::with_capacity(iters as usize);
                for _ in 0..iters {
                    runs.push(create(&b).await);
                }
                let t = Instant::now();
                for r in &runs {
                    resolve(&b, r).await;
                }
                t.elapsed()
            })
        })
    });

    // Per-resolve time when 16 callers resolve at once (group commit).
    g.bench_function("resolve_x16_concurrent", |bench| {
        bench.iter_custom(|iters| {
            b.rt.block_on(async {
                let n = (iters as usize).max(16);
                let mut runs = Vec::with_capacity(n);
                for _ in 0..n {
                    runs.push(create(&b).await);
                }
                let t = Instant::now();
                let chunks: Vec<Vec<tollgate::RunId>> =
                    runs.chunks(n.div_ceil(16)).map(|c| c.to_vec()).collect();
                let mut tasks = Vec::new();
                for chunk in chunks {
                    let (engine, actor) = (b.engine.clone(), b.actor.clone());
                    tasks.push(tokio::spawn(async move {
                        for r in chunk {
                            engine
                                .resolve(&r, "gate", json!({"action": "accept"}), &actor, None)
                                .await
                                .unwrap();
                        }
                    }));
                }
                for task in tasks {
                    task.await.unwrap();
                }
                t.elapsed().mul_f64(iters as f64 / n as f64)
            })
        })
    });

    g.bench_function("inspect_interrupt", |bench| {
        let run = b.rt.block_on(create(&b));
        bench.iter(|| {
            b.rt.block_on(b.engine.inspect_interrupt(&run, "gate", &b.actor))
                .unwrap()
        })
    });
    g.finish();
}

/// A tenant of `n` people with an address, every 200th in `finance`, and a
/// gate that group decides; the bench principal starts runs.
fn setup_people(n: usize) -> Bench {
    let b = setup();
    b.rt.block_on(async {
        for i in 0..n {
            let p = Principal {
                id: format!("person-{i}"),
                tenant: "bench".into(),
                name: format!("Person {i}"),
                email: Some(format!("person-{i}@example.com")),
                groups: if i % 200 == 0 { vec!["finance".into()] } else { vec![] },
                roles: vec![],
                is_override: false,
            };
            b.engine.upsert_principal(p).await.unwrap();
        }
        b.engine
            .register_workflow(json!({"id": "by-group", "nodes": [{"id": "gate", "typeId": "core.approvalGate",
                "config": {"title": "Bench", "actions": ["accept", "reject"], "approverGroupRefs": ["finance"],
                           "requiredApprovals": 2}}]}))
            .await
            .unwrap();
    });
    b
}

fn directory_paths(c: &mut Criterion) {
    let people = std::env::var("BENCH_PEOPLE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let b = setup_people(people);
    let mut g = c.benchmark_group("directory");
    g.sample_size(20).measurement_time(Duration::from_secs(8));
    let start = |b: &Bench| {
        let req = CreateRun {
            workflow_id: "by-group".into(),
            ..Default::default()
        };
        b.rt.block_on(b.engine.create_run(req, &b.actor, None))
            .unwrap()
            .result
            .unwrap()
            .run_id
    };
    g.bench_function(format!("create_run_{people}_people"), |bench| {
        bench.iter(|| start(&b))
    });
    let run = start(&b);
    g.bench_function(format!("may_still_vote_{people}_people"), |bench| {
        bench.iter(|| {
            let still =
                b.rt.block_on(b.engine.may_still_vote(&run, "gate", &b.actor))
                    .unwrap();
            assert_eq!(still.len(), people.div_ceil(200));
        })
    });
    g.finish();
}

criterion_group!(benches, engine_paths, directory_paths);
criterion_main!(benches);
