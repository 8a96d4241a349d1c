//! Shared harness for the HTTP integration tests: each test starts the real
//! `tollgate` binary on a free port with its own temporary SQLite database
//! and talks to it over HTTP.

#![allow(dead_code)]

pub mod smtp;

use reqwest::header::HeaderMap;
use reqwest::Method;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Tenant of every configured principal except `eve`.
pub const TENANT: &str = "acme";

/// `owner` starts runs: create, read, cancel, respond.
pub const OWNER: &str = "owner-key-0123456789";
/// Full administrator (`admin` scope) of principal `root`.
pub const ADMIN: &str = "admin-key-0123456789";
/// Approvers. `ann` (group finance) has two keys.
pub const ANN: &str = "ann-key-0123456789ab";
pub const ANN2: &str = "ann-second-key-01234";
/// `bob`: group finance, role cfo.
pub const BOB: &str = "bob-key-0123456789ab";
/// `cat`: no groups or roles.
pub const CAT: &str = "cat-key-0123456789ab";
/// `dan`: role cfo only.
pub const DAN: &str = "dan-key-0123456789ab";
/// `boss`: an override principal.
pub const BOSS: &str = "boss-key-0123456789a";
/// A low-scope key of principal `cat`: `runs:read` only.
pub const READER: &str = "reader-key-012345678";
/// A key of `ann` that may respond and read but not create runs.
pub const APPROVER_ONLY: &str = "approver-only-key-01";
/// `eve` lives in tenant `other`.
pub const EVE: &str = "eve-key-0123456789ab";

/// The temporary home of one server: config file and database.
pub struct TestDir {
    pub dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> TestDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let config = config_text(dir.path());
        std::fs::write(dir.path().join("tollgate.toml"), config).expect("write config");
        TestDir { dir }
    }

    pub fn config_path(&self) -> PathBuf {
        self.dir.path().join("tollgate.toml")
    }

    /// Gives these principals of the configuration an email address (a
    /// person, who can be handed decisions), before the server starts.
    pub fn give_addresses(&self, ids: &[&str]) {
        let path = self.config_path();
        let mut text = std::fs::read_to_string(&path).expect("config");
        for id in ids {
            text = text.replace(
                &format!("id = \"{id}\"\n"),
                &format!("id = \"{id}\"\nemail = \"{id}@example.test\"\n"),
            );
        }
        std::fs::write(&path, text).expect("write config");
    }

    /// The URL of this server's database (SQLite file or PostgreSQL database,
    /// see `tollgate::store::testing`), for the CLI's `--db` and direct reads.
    pub fn db_url(&self) -> String {
        db_url(self.dir.path())
    }
}

impl Default for TestDir {
    fn default() -> Self {
        TestDir::new()
    }
}

fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("string")
}

fn db_url(dir: &Path) -> String {
    tollgate::store::testing::database_url_blocking(&dir.join("t.db")).expect("test database")
}

/// A read pool on a test server's database (statements with `$1`-style
/// parameters run on both back ends).
pub async fn raw_db(dir: &TestDir) -> sqlx::AnyPool {
    sqlx::any::install_default_drivers();
    sqlx::AnyPool::connect(&dir.db_url()).await.expect("database")
}

fn config_text(dir: &Path) -> String {
    let workflows = Path::new(env!("CARGO_MANIFEST_DIR")).join("../workflows/conformance");
    let workflows = workflows.canonicalize().expect("conformance fixtures");
    let db = db_url(dir);
    format!(
        r#"
[server]
bind = "127.0.0.1:0"
public_url = "http://tollgate.test"
tenant = "{TENANT}"
timer_interval_ms = 50

[database]
url = {db}

[workflows]
dirs = [{workflows}]

[[principals]]
id = "owner"
name = "Olivia Owner"

[[principals]]
id = "root"
name = "Root Admin"

[[principals]]
id = "ann"
groups = ["finance"]

[[principals]]
id = "bob"
groups = ["finance"]
roles = ["cfo"]

[[principals]]
id = "cat"

[[principals]]
id = "dan"
roles = ["cfo"]

[[principals]]
id = "boss"
override = true

[[principals]]
id = "eve"
tenant = "other"

[[api_keys]]
key = "{OWNER}"
principal = "owner"
scopes = ["runs:create", "runs:read", "runs:cancel", "approvals:respond"]

[[api_keys]]
key = "{ADMIN}"
principal = "root"
scopes = ["admin"]

[[api_keys]]
key = "{ANN}"
principal = "ann"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{ANN2}"
principal = "ann"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{APPROVER_ONLY}"
principal = "ann"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{BOB}"
principal = "bob"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{CAT}"
principal = "cat"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{DAN}"
principal = "dan"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{BOSS}"
principal = "boss"
scopes = ["runs:read", "approvals:respond"]

[[api_keys]]
key = "{READER}"
principal = "cat"
scopes = ["runs:read"]

[[api_keys]]
key = "{EVE}"
principal = "eve"
scopes = ["runs:create", "runs:read", "runs:cancel", "approvals:respond"]
"#,
        db = toml_str(&db),
        workflows = toml_str(&workflows.to_string_lossy()),
    )
}

/// A running `tollgate serve` child process; killed (SIGKILL) on drop.
pub struct Server {
    child: Option<Child>,
    pub base: String,
    pub client: reqwest::Client,
    log: Arc<Mutex<Vec<String>>>,
}

/// An HTTP answer: status, headers and the body as JSON (`Null` when empty,
/// a JSON string when the body is not JSON).
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The error code of an error envelope.
    pub fn code(&self) -> &str {
        self.body["error"].as_str().unwrap_or("")
    }

    /// Asserts the status and, for errors, the envelope's code.
    #[track_caller]
    pub fn expect(&self, status: u16, code: Option<&str>) -> &Self {
        assert_eq!(self.status, status, "unexpected status; body: {}", self.body);
        if let Some(c) = code {
            assert_eq!(self.code(), c, "unexpected error code; body: {}", self.body);
            assert!(
                self.body["message"].as_str().is_some_and(|m| !m.is_empty()),
                "an error envelope carries a message: {}",
                self.body
            );
            let closed = self.body.as_object().is_some_and(|o| {
                o.keys()
                    .all(|k| ["error", "message", "details"].contains(&k.as_str()))
            });
            assert!(closed, "the error envelope is closed: {}", self.body);
            if let Some(d) = self.body.get("details") {
                assert!(d.is_object(), "details is an object: {}", self.body);
            }
        }
        self
    }
}

impl Server {
    /// Starts a server on a fresh temporary directory.
    pub async fn start_fresh() -> (Server, TestDir) {
        let dir = TestDir::new();
        let server = Server::start(&dir).await;
        (server, dir)
    }

    /// Starts the binary on `dir`'s configuration and waits for its
    /// `tollgate listening on http://ADDR` line.
    pub async fn start(dir: &TestDir) -> Server {
        let config = dir.config_path();
        let cwd = dir.dir.path().to_path_buf();
        let log = Arc::new(Mutex::new(Vec::new()));
        let log2 = log.clone();
        let (child, addr) = tokio::task::spawn_blocking(move || spawn_child(&config, &cwd, log2))
            .await
            .expect("spawn task");
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(90))
            .build()
            .expect("client");
        Server {
            child: Some(child),
            base: format!("http://{addr}"),
            client,
            log,
        }
    }

    /// SIGKILL: no graceful shutdown, no chance to flush anything.
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGTERM, then waits for the process to exit; `None` if it has not
    /// exited within `within` (a graceful shutdown that hangs).
    pub async fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        let mut child = self.child.take()?;
        let pid = child.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().expect("kill");
        assert!(sent.success(), "kill -TERM {pid}");
        let deadline = tokio::time::Instant::now() + within;
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                return Some(status);
            }
            if tokio::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// What the server printed so far (for failure messages).
    pub fn output(&self) -> String {
        self.log.lock().map(|l| l.join("\n")).unwrap_or_default()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base, path)
    }

    /// A request with an optional bearer key, JSON body and extra headers.
    pub async fn call(
        &self,
        method: Method,
        path: &str,
        key: Option<&str>,
        body: Option<&Value>,
        headers: &[(&str, &str)],
    ) -> Resp {
        let mut req = self.client.request(method, self.url(path));
        if let Some(k) = key {
            req = req.bearer_auth(k);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let res = req
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}\nserver output:\n{}", self.output()));
        let status = res.status().as_u16();
        let headers = res.headers().clone();
        let text = res.text().await.expect("body");
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        self.call(Method::GET, path, Some(key), None, &[]).await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.call(Method::POST, path, Some(key), Some(body), &[]).await
    }

    pub async fn put(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.call(Method::PUT, path, Some(key), Some(body), &[]).await
    }

    /// `POST /runs` as `key`; asserts 201 and returns the run id.
    pub async fn create_as(&self, key: &str, body: Value) -> String {
        let r = self.post("/runs", key, &body).await;
        r.expect(201, None);
        r.body["runId"].as_str().expect("runId").to_string()
    }

    /// `POST /runs {workflowId}` as `owner`.
    pub async fn create(&self, workflow: &str) -> String {
        self.create_as(OWNER, json!({ "workflowId": workflow })).await
    }

    /// `GET /runs/{runId}` as `owner`; asserts 200.
    pub async fn snapshot(&self, run: &str) -> Value {
        let r = self.get(&format!("/runs/{}", seg(run)), OWNER).await;
        r.expect(200, None);
        r.body
    }

    /// `POST /runs/{runId}/interrupts/{nodeId} {resumeValue}` as `key`.
    pub async fn resolve(&self, run: &str, node: &str, key: &str, resume_value: Value) -> Resp {
        self.post(
            &format!("/runs/{}/interrupts/{node}", seg(run)),
            key,
            &json!({ "resumeValue": resume_value }),
        )
        .await
    }

    /// `GET /runs/{runId}/interrupts/{nodeId}` as `owner`; asserts 200.
    pub async fn interrupt(&self, run: &str, node: &str) -> Value {
        let r = self
            .get(&format!("/runs/{}/interrupts/{node}", seg(run)), OWNER)
            .await;
        r.expect(200, None);
        r.body
    }

    /// The whole event log (JSON variant of `GET /runs/{runId}/events`).
    pub async fn events(&self, run: &str) -> Vec<Value> {
        let r = self
            .call(
                Method::GET,
                &format!("/runs/{}/events", seg(run)),
                Some(OWNER),
                None,
                &[("accept", "application/json")],
            )
            .await;
        r.expect(200, None);
        r.body["events"].as_array().expect("events").clone()
    }

    /// Polls the snapshot (every 50 ms, at most `secs`) until `status` is reached
    /// or the run is terminal; returns the last snapshot.
    pub async fn wait_status(&self, run: &str, status: &str, secs: u64) -> Value {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let s = self.snapshot(run).await;
            let st = s["status"].as_str().unwrap_or("");
            if st == status || is_terminal(st) || tokio::time::Instant::now() >= deadline {
                return s;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Registers a workflow with the admin key; asserts 200 or 201.
    pub async fn register(&self, def: Value) {
        let id = def["id"].as_str().expect("id").to_string();
        let r = self.put(&format!("/workflows/{id}"), ADMIN, &def).await;
        assert!(
            r.status == 201 || r.status == 200,
            "PUT /workflows/{id}: {} {}",
            r.status,
            r.body
        );
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.kill9();
    }
}

fn spawn_child(config: &Path, cwd: &Path, log: Arc<Mutex<Vec<String>>>) -> (Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.arg("serve")
        .arg("--config")
        .arg(config)
        .current_dir(cwd)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    // The configuration under test is the file alone.
    for (k, _) in std::env::vars() {
        if k.starts_with("TOLLGATE_") {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd.spawn().expect("spawn tollgate");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    // Reads every line (so the pipe never fills) and reports the address.
    std::thread::spawn(move || {
        let mut tx = Some(tx);
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if let Some(addr) = line.strip_prefix("tollgate listening on http://") {
                if let Some(tx) = tx.take() {
                    let _ = tx.send(addr.trim().to_string());
                }
            }
            if let Ok(mut l) = log.lock() {
                l.push(line);
            }
        }
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(addr) => (child, addr),
        Err(_) => {
            let _ = child.kill();
            let _ = child.wait();
            panic!("tollgate did not print its listening line within 60 s");
        }
    }
}

/// The v2 path projection of a tenant-bound id (`tenant~2Fopaque`).
pub fn seg(id: &str) -> String {
    id.replacen('/', "~2F", 1)
}

pub fn is_terminal(status: &str) -> bool {
    matches!(status, "completed" | "failed" | "cancelled")
}

pub fn types(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or("").to_string())
        .collect()
}

/// Events of `type_` (optionally at `node`).
pub fn of_type<'a>(events: &'a [Value], type_: &str, node: Option<&str>) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["type"] == type_)
        .filter(|e| node.is_none_or(|n| e["nodeId"] == n || e["payload"]["nodeId"] == n))
        .collect()
}

pub fn count(events: &[Value], type_: &str) -> usize {
    of_type(events, type_, None).len()
}

/// A `core.approvalGate` node.
pub fn gate(id: &str, config: Value) -> Value {
    json!({ "id": id, "typeId": "core.approvalGate", "config": config })
}

/// A one-gate workflow; `extra` is merged into the gate's config.
pub fn gate_workflow(id: &str, extra: Value) -> Value {
    let mut config = json!({ "title": format!("Gate of {id}"), "actions": ["accept", "reject"] });
    if let (Some(c), Some(e)) = (config.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            c.insert(k.clone(), v.clone());
        }
    }
    json!({ "id": id, "name": id, "version": "1", "nodes": [gate("gate", config)] })
}

/// Members allowed on the vendor hatch of closed event payloads.
fn is_vendor_member(k: &str) -> bool {
    k.starts_with("openwop-") || k.starts_with("x-") || k.starts_with("vendor.")
}

#[track_caller]
fn assert_members(what: &str, v: &Value, required: &[&str], allowed: &[&str], hatch: bool) {
    let obj = v
        .as_object()
        .unwrap_or_else(|| panic!("{what}: not an object: {v}"));
    for r in required {
        assert!(obj.contains_key(*r), "{what}: required member {r} missing: {v}");
    }
    for k in obj.keys() {
        assert!(
            allowed.contains(&k.as_str()) || (hatch && is_vendor_member(k)),
            "{what}: member {k} is not in the closed v2 schema: {v}"
        );
    }
}

/// The OpenWOP v2 Subject (closed).
#[track_caller]
pub fn assert_subject(what: &str, v: &Value) {
    assert_members(
        what,
        v,
        &["issuer", "subjectId", "tenant", "lane", "kind"],
        &[
            "issuer",
            "subjectId",
            "tenant",
            "lane",
            "kind",
            "keyClass",
            "actor",
        ],
        false,
    );
}

#[track_caller]
fn assert_error_object(what: &str, v: &Value) {
    assert_members(
        what,
        v,
        &["code", "message"],
        &["code", "message", "details", "retryable"],
        true,
    );
}

/// Checks every event payload against the closed definitions of
/// `schemas/v2/run-event-payloads.schema.json` (members only) and the
/// InterruptPayload of `suspend-request.schema.json`.
#[track_caller]
pub fn assert_v2_event_payloads(events: &[Value]) {
    for e in events {
        let t = e["type"].as_str().unwrap_or("");
        let p = &e["payload"];
        let what = format!("{t} payload");
        let (required, allowed): (&[&str], &[&str]) = match t {
            "run.started" => (
                &["workflowId"],
                &[
                    "workflowId",
                    "inputs",
                    "transport",
                    "engineVersion",
                    "owner",
                    "tags",
                    "metadata",
                ],
            ),
            "run.completed" => (&["outputs"], &["outputs", "durationMs"]),
            "run.failed" => (&["error"], &["error", "failedNodeId", "durationMs"]),
            "run.cancelled" => (&[], &["reason", "cancelledBy", "durationMs", "parentRunId"]),
            "node.started" => (&["nodeId", "typeId"], &["nodeId", "typeId", "attempt"]),
            "node.completed" => (&["nodeId"], &["nodeId", "outputs", "durationMs"]),
            "node.failed" => (&["nodeId", "error"], &["nodeId", "error", "attempts"]),
            "node.suspended" => (
                &["nodeId", "interruptId"],
                &["nodeId", "interruptId", "kind", "reason", "key"],
            ),
            "node.resumed" => (&["nodeId"], &["nodeId", "interruptId", "resumeValue"]),
            "node.skipped" | "node.cancelled" => (&["nodeId"], &["nodeId", "reason"]),
            "agent.decided" => (&["agentId", "decision"], &["agentId", "decision", "confidence"]),
            "conversation.opened" => (&["conversationId"], &["conversationId"]),
            "conversation.exchanged" => (
                &["conversationId", "turnIndex"],
                &["conversationId", "turnIndex", "outcome"],
            ),
            "conversation.closed" => (&["conversationId"], &["conversationId", "reason", "turnCount"]),
            "interrupt.resolved" => (
                &["nodeId", "interruptId"],
                &[
                    "nodeId",
                    "interruptId",
                    "kind",
                    "reason",
                    "resumeValue",
                    "resolvedBy",
                    "decision",
                    "action",
                    "refineFeedback",
                    "editedArtifactData",
                ],
            ),
            "interrupt.requested" => {
                assert_members(
                    &what,
                    p,
                    &["kind", "key", "data"],
                    &["kind", "key", "resumeSchema", "timeoutMs", "data"],
                    false,
                );
                let data_allowed: &[&str] = match p["kind"].as_str() {
                    Some("approval") => &[
                        "artifactId",
                        "artifactType",
                        "title",
                        "onTimeout",
                        "description",
                        "artifactData",
                        "actions",
                        "requiredApprovals",
                        "approversList",
                        "rejectionPolicy",
                        "overrideBypassesQuorum",
                        "approverGroupRefs",
                        "approverRoleRefs",
                        "audience",
                    ],
                    Some("clarification") => &["questions", "contextType"],
                    _ => continue,
                };
                assert_members(&format!("{what} data"), &p["data"], &[], data_allowed, false);
                continue;
            }
            _ => panic!("unexpected event type {t}"),
        };
        assert_members(&what, p, required, allowed, true);
        if let Some(n) = p.get("nodeId") {
            assert_eq!(Some(n), e.get("nodeId"), "{what}: nodeId agrees with the event");
        }
        if p.get("error").is_some() {
            assert_error_object(&format!("{what} error"), &p["error"]);
        }
        if let Some(s) = p.get("resolvedBy") {
            assert_subject(&format!("{what} resolvedBy"), s);
        }
        if t == "interrupt.resolved" {
            if let Some(d) = p.get("decision") {
                assert!(["granted", "rejected", "overridden"].contains(&d.as_str().unwrap_or("")));
            }
            if let Some(a) = p.get("action") {
                assert!(["accept", "reject", "refine", "edit-accept", "timeout"]
                    .contains(&a.as_str().unwrap_or("")));
            }
        }
    }
}

/// Checks a RunSnapshot against the closed v2 snapshot schema (members only).
#[track_caller]
pub fn assert_v2_snapshot(s: &Value) {
    assert_members(
        "snapshot",
        s,
        &["runId", "workflowId", "status", "owner", "eventLogSchemaVersion"],
        &[
            "runId",
            "workflowId",
            "status",
            "compensationStatus",
            "owner",
            "currentNodeId",
            "startedAt",
            "completedAt",
            "agent",
            "runOrchestrator",
            "nodeStates",
            "variables",
            "channels",
            "error",
            "engineVersion",
            "eventLogSchemaVersion",
            "tags",
            "metadata",
            "configurable",
            "metrics",
            "parentRunId",
            "inputs",
            "extensions",
        ],
        false,
    );
    assert!(
        [
            "pending",
            "running",
            "paused",
            "waiting-approval",
            "waiting-input",
            "waiting-external",
            "completed",
            "failed",
            "cancelling",
            "cancelled"
        ]
        .contains(&s["status"].as_str().unwrap_or("")),
        "{s}"
    );
    assert_members(
        "snapshot owner",
        &s["owner"],
        &["tenant", "subject"],
        &["tenant", "workspace", "subject"],
        false,
    );
    assert_subject("snapshot owner subject", &s["owner"]["subject"]);
    if let Some(e) = s.get("error") {
        assert_members(
            "snapshot error",
            e,
            &["code", "message"],
            &["code", "message", "details"],
            false,
        );
    }
}

/// A console session: signs in with the form and keeps the cookie (posts
/// send the same-origin header the console requires).
pub struct Browser<'a> {
    s: &'a Server,
    client: reqwest::Client,
    cookie: String,
}

impl<'a> Browser<'a> {
    pub async fn sign_in(s: &'a Server, user: &str, password: &str) -> Browser<'a> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let res = client
            .post(s.url("/signin"))
            .header("origin", &s.base)
            .form(&[("user", user), ("password", password), ("next", "/")])
            .send()
            .await
            .unwrap();
        assert_eq!(res.status().as_u16(), 303, "sign-in redirects");
        assert_eq!(res.headers()["location"], "/", "signed in");
        let cookie = res
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(|v| v.split(';').next().unwrap_or("").to_string())
            .collect::<Vec<_>>()
            .join("; ");
        assert!(cookie.contains("tollgate_session="), "{cookie}");
        Browser { s, client, cookie }
    }

    pub async fn page(&self, path: &str) -> (u16, String) {
        let res = self
            .client
            .get(self.s.url(path))
            .header("cookie", &self.cookie)
            .header("accept", "text/html")
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }

    /// Opens the live inbox stream.
    pub async fn stream(&self) -> reqwest::Response {
        let res = self.try_stream().await;
        assert_eq!(res.status().as_u16(), 200);
        res
    }

    /// Asks for the live inbox stream, whatever the answer.
    pub async fn try_stream(&self) -> reqwest::Response {
        self.client
            .get(self.s.url("/inbox/stream"))
            .header("cookie", &self.cookie)
            .header("accept", "text/event-stream")
            .send()
            .await
            .unwrap()
    }

    /// A form post from another site that also carries `authorization` (as
    /// a browser adds credentials it holds for a proxy by itself).
    pub async fn post_cross_site(&self, path: &str, fields: &[(&str, &str)], authorization: &str) -> u16 {
        self.post_from(
            "cross-site",
            path,
            fields,
            "application/x-www-form-urlencoded",
            Some(authorization),
        )
        .await
    }

    /// A post from a sibling site's page (`same-site`: the browser sends a
    /// `Lax` cookie along) with this person's cookie, its body urlencoded
    /// under the `content_type` given (the case a page chose).
    pub async fn post_cross_site_as(
        &self,
        path: &str,
        fields: &[(&str, &str)],
        content_type: &str,
        authorization: Option<&str>,
    ) -> u16 {
        self.post_from("same-site", path, fields, content_type, authorization)
            .await
    }

    /// A post from another origin, its `Sec-Fetch-Site` as given.
    async fn post_from(
        &self,
        fetch_site: &str,
        path: &str,
        fields: &[(&str, &str)],
        content_type: &str,
        authorization: Option<&str>,
    ) -> u16 {
        let body = serde_urlencoded::to_string(fields).unwrap();
        let mut req = self
            .client
            .post(self.s.url(path))
            .header("cookie", &self.cookie)
            .header("origin", "http://evil.example")
            .header("sec-fetch-site", fetch_site)
            .header("content-type", content_type)
            .body(body);
        if let Some(authorization) = authorization {
            req = req.header("authorization", authorization);
        }
        req.send().await.unwrap().status().as_u16()
    }

    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> (u16, String) {
        let res = self
            .client
            .post(self.s.url(path))
            .header("cookie", &self.cookie)
            .header("origin", &self.s.base)
            .form(fields)
            .send()
            .await
            .unwrap();
        (res.status().as_u16(), res.text().await.unwrap())
    }
}
