//! Two `tollgate serve` processes on one PostgreSQL database, as behind a
//! load balancer: races split across both, a quorum voted through both,
//! timers and mail that happen once, caches that follow the other instance,
//! and one instance killed with SIGKILL under load.
//!
//! PostgreSQL only: run with TOLLGATE_TEST_POSTGRES (scripts/test.sh does);
//! on SQLite each test says it was skipped.

mod common;

use common::smtp::Smtp;
use common::*;
use serde_json::{json, Value};
use std::time::Duration;

fn on_postgres(test: &str) -> bool {
    let yes = tollgate::store::testing::postgres_server().is_some();
    if !yes {
        eprintln!("{test}: skipped, it needs PostgreSQL (set TOLLGATE_TEST_POSTGRES)");
    }
    yes
}

/// A test directory whose configuration gets `extra` appended.
fn dir_with(extra: &str) -> TestDir {
    let dir = TestDir::new();
    let mut config = std::fs::read_to_string(dir.config_path()).unwrap();
    config.push_str(extra);
    std::fs::write(dir.config_path(), config).unwrap();
    dir
}

/// `POST /runs/{run}/interrupts/gate {accept}` at `base` as `key`, from a
/// spawned task; the status (0 when the connection failed).
fn accept_at(base: &str, run: &str, key: &'static str) -> tokio::task::JoinHandle<u16> {
    let url = format!("{base}/runs/{}/interrupts/gate", seg(run));
    tokio::spawn(async move {
        reqwest::Client::new()
            .post(url)
            .bearer_auth(key)
            .json(&json!({"resumeValue": {"action": "accept"}}))
            .send()
            .await
            .map(|r| r.status().as_u16())
            .unwrap_or(0)
    })
}

/// The instance that serves request `i` (alternating, as a round-robin balancer).
fn pick<'s>(i: usize, a: &'s Server, b: &'s Server) -> &'s Server {
    if i % 2 == 0 {
        a
    } else {
        b
    }
}

/// Two instances of one configuration (so one database).
async fn two(dir: &TestDir) -> (Server, Server) {
    let a = Server::start(dir).await;
    let b = Server::start(dir).await;
    (a, b)
}

#[tokio::test]
async fn of_32_resolves_split_across_two_instances_exactly_one_wins() {
    if !on_postgres("race") {
        return;
    }
    let dir = TestDir::new();
    let (a, b) = two(&dir).await;
    a.register(gate_workflow("race", json!({}))).await;
    for round in 0..3 {
        let run = a.create("race").await;
        let mut tasks = Vec::new();
        for i in 0..32 {
            tasks.push(accept_at(
                &pick(i, &a, &b).base,
                &run,
                [ANN, BOB, CAT, DAN][i % 4],
            ));
        }
        let mut statuses = Vec::new();
        for t in tasks {
            statuses.push(t.await.unwrap());
        }
        let won = statuses.iter().filter(|s| **s == 200).count();
        let lost = statuses.iter().filter(|s| **s == 409).count();
        assert_eq!((won, lost), (1, 31), "round {round}: {statuses:?}");
        let events = b.events(&run).await;
        assert_eq!(count(&events, "interrupt.resolved"), 1, "round {round}");
        assert_eq!(count(&events, "run.completed"), 1, "round {round}");
        let sequences: Vec<i64> = events.iter().map(|e| e["sequence"].as_i64().unwrap()).collect();
        assert_eq!(
            sequences,
            (0..sequences.len() as i64).collect::<Vec<_>>(),
            "one gapless log"
        );
    }
}

#[tokio::test]
async fn a_quorum_voted_through_both_instances_counts_each_person_once() {
    if !on_postgres("quorum") {
        return;
    }
    let dir = TestDir::new();
    let (a, b) = two(&dir).await;
    a.register(gate_workflow("quorum", json!({"requiredApprovals": 2})))
        .await;
    let run = b.create("quorum").await;
    // Ann votes on both instances at once: one person, one vote.
    let (x, y) = tokio::join!(
        a.resolve(&run, "gate", ANN, json!({"action": "accept"})),
        b.resolve(&run, "gate", ANN2, json!({"action": "accept"}))
    );
    assert!(
        x.status < 300 && y.status < 300,
        "{} {} / {} {}",
        x.status,
        x.body,
        y.status,
        y.body
    );
    assert_eq!(a.snapshot(&run).await["status"], "waiting-approval");
    // Bob and Cat at once, on different instances: the second vote grants, the third finds it decided.
    let (x, y) = tokio::join!(
        b.resolve(&run, "gate", BOB, json!({"action": "accept"})),
        a.resolve(&run, "gate", CAT, json!({"action": "accept"}))
    );
    let mut statuses = [x.status, y.status];
    statuses.sort();
    assert_eq!(statuses, [200, 409], "{} / {}", x.body, y.body);
    assert_eq!(b.snapshot(&run).await["status"], "completed");
    let events = a.events(&run).await;
    assert_eq!(count(&events, "interrupt.resolved"), 1);
    let inspected = b.interrupt(&run, "gate").await;
    let voters: Vec<&str> = inspected["votes"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["counted"] == json!(true))
        .map(|v| v["principal"].as_str().unwrap())
        .collect();
    let mut distinct = voters.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), voters.len(), "no one counted twice: {inspected}");
    assert_eq!(voters.len(), 2, "{inspected}");
}

#[tokio::test]
async fn an_idempotency_key_replays_on_the_other_instance() {
    if !on_postgres("idempotency") {
        return;
    }
    let dir = TestDir::new();
    let (a, b) = two(&dir).await;
    a.register(gate_workflow("idem", json!({}))).await;
    let body = json!({"workflowId": "idem"});
    let key = [("idempotency-key", "instances-idem-key-0123456789")];
    let (x, y) = tokio::join!(
        a.call(reqwest::Method::POST, "/runs", Some(OWNER), Some(&body), &key),
        b.call(reqwest::Method::POST, "/runs", Some(OWNER), Some(&body), &key)
    );
    x.expect(201, None);
    y.expect(201, None);
    assert_eq!(x.body["runId"], y.body["runId"], "one run, answered twice");
    let replayed = [
        x.header("openwop-idempotent-replay"),
        y.header("openwop-idempotent-replay"),
    ];
    assert_eq!(
        replayed.iter().filter(|h| **h == Some("true")).count(),
        1,
        "one answer is the stored replay: {replayed:?}"
    );
}

#[tokio::test]
async fn a_deadline_fires_once_with_two_timers_polling() {
    if !on_postgres("timer") {
        return;
    }
    let dir = TestDir::new();
    let (a, b) = two(&dir).await;
    a.register(gate_workflow("timer", json!({"timeoutMs": 300})))
        .await;
    let runs = [
        a.create("timer").await,
        b.create("timer").await,
        a.create("timer").await,
    ];
    for run in &runs {
        let s = b.wait_status(run, "failed", 20).await;
        assert_eq!(s["status"], "failed", "{s}");
    }
    // Both timers have had many more turns since.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for run in &runs {
        let events = a.events(run).await;
        assert_eq!(count(&events, "interrupt.resolved"), 1, "{run}");
        assert_eq!(count(&events, "run.failed"), 1, "{run}");
    }
}

#[tokio::test]
async fn each_mail_is_sent_once_by_one_of_the_instances() {
    if !on_postgres("mail") {
        return;
    }
    let mut smtp = Smtp::start().await;
    let dir = dir_with(&format!(
        r#"
[[principals]]
id = "mia"
email = "mia@example.com"
groups = ["reviewers"]

[[principals]]
id = "moe"
email = "moe@example.com"
groups = ["reviewers"]

[[token_keys]]
kid = "instances"
secret = "0123456789abcdef0123456789abcdef-instances"

[notifications]
poll_interval_ms = 20
{smtp}"#,
        smtp = smtp.toml()
    ));
    let (a, b) = two(&dir).await;
    a.register(gate_workflow(
        "mailed",
        json!({"approverGroupRefs": ["reviewers"]}),
    ))
    .await;
    let mut runs = Vec::new();
    for i in 0..10 {
        runs.push(pick(i, &a, &b).create("mailed").await);
    }
    let mut messages = Vec::new();
    while messages.len() < 20 {
        match smtp.next(Duration::from_secs(20)).await {
            Some(m) => messages.push(m),
            None => panic!("only {} of 20 messages arrived", messages.len()),
        }
    }
    // Both mailers keep polling: nothing more arrives.
    assert!(
        smtp.next(Duration::from_millis(1500)).await.is_none(),
        "a message was sent twice"
    );
    assert_eq!(runs.len(), 10);
    let mia = messages
        .iter()
        .filter(|m| m.to.contains("mia@example.com"))
        .count();
    let moe = messages
        .iter()
        .filter(|m| m.to.contains("moe@example.com"))
        .count();
    assert_eq!((mia, moe), (10, 10));
}

#[tokio::test]
async fn a_key_revoked_through_one_instance_is_refused_by_the_other_within_a_second() {
    if !on_postgres("revoke") {
        return;
    }
    let dir = TestDir::new();
    let (a, b) = two(&dir).await;
    a.register(gate_workflow("revoke", json!({}))).await;
    let run = a.create("revoke").await;
    let path = format!("/runs/{}", seg(&run));
    let db = dir.db_url();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args([
            "key",
            "create",
            "--db",
            &db,
            "--principal",
            "cat",
            "--scope",
            "runs:read",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    let key = created["key"].as_str().unwrap().to_string();
    let id = created["id"].as_str().unwrap().to_string();
    // Both instances learn the key (and cache its grant).
    a.get(&path, &key).await.expect(200, None);
    b.get(&path, &key).await.expect(200, None);
    // Revoked by a third process on the database (the operator's CLI).
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .args(["key", "revoke", "--db", &db, "--id", &id])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let started = tokio::time::Instant::now();
    for server in [&a, &b] {
        loop {
            let r = server.get(&path, &key).await;
            if r.status == 401 {
                break;
            }
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "still accepted {:?} after the revoke",
                started.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

#[tokio::test]
async fn an_instance_killed_under_load_loses_nothing_it_acknowledged() {
    if !on_postgres("kill") {
        return;
    }
    let dir = TestDir::new();
    let (mut a, b) = two(&dir).await;
    a.register(gate_workflow("storm", json!({}))).await;
    let mut runs = Vec::new();
    for i in 0..60 {
        runs.push(pick(i, &a, &b).create("storm").await);
    }
    let mut tasks = Vec::new();
    for (i, run) in runs.iter().enumerate() {
        tasks.push((run.clone(), accept_at(&pick(i, &a, &b).base, run, ANN)));
    }
    tokio::time::sleep(Duration::from_millis(30)).await;
    a.kill9();
    let mut answered = Vec::new();
    for (run, t) in tasks {
        answered.push((run, t.await.unwrap()));
    }
    for (run, status) in &answered {
        let s = b.snapshot(run).await;
        if *status == 200 {
            assert_eq!(s["status"], "completed", "acknowledged, then lost: {run}");
        }
        // Unanswered (the killed instance): sent again to the survivor.
        if *status != 200 {
            let r = b.resolve(run, "gate", ANN, json!({"action": "accept"})).await;
            assert!(
                r.status == 200 || r.code() == "interrupt_already_resolved",
                "{run}: {} {}",
                r.status,
                r.body
            );
        }
        let s = b.wait_status(run, "completed", 10).await;
        assert_eq!(s["status"], "completed", "{run}");
        let events = b.events(run).await;
        assert_eq!(count(&events, "interrupt.resolved"), 1, "{run}");
    }
    assert!(answered.iter().any(|(_, s)| *s == 200));
}
