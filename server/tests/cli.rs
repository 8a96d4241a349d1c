//! The operator CLI (`tollgate run|interrupt|schema|workflow|token|user|key`)
//! run as the real binary against a live server.

mod common;

use common::*;
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// What one CLI invocation did.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// stdout as one JSON document.
    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    #[track_caller]
    fn ok(&self) -> &Self {
        assert_eq!(
            self.code, 0,
            "exit code; stdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// Runs the binary with `args` (no TOLLGATE_* from the environment) and optional stdin.
fn cli_with(args: &[&str], env: &[(&str, &str)], stdin: Option<&str>) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(args)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, _) in std::env::vars() {
        if k.starts_with("TOLLGATE_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn tollgate");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
    }
    let out = child.wait_with_output().expect("wait");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn cli(args: &[&str]) -> Out {
    cli_with(args, &[], None)
}

/// Runs a remote command against `server` with `key` (via the environment).
fn remote(server: &Server, key: &str, args: &[&str]) -> Out {
    cli_with(
        args,
        &[("TOLLGATE_URL", &server.base), ("TOLLGATE_API_KEY", key)],
        None,
    )
}

#[tokio::test]
async fn run_lifecycle_start_inspect_resume_events_cancel() {
    let (server, _dir) = Server::start_fresh().await;

    // start (flags instead of the environment)
    let started = cli(&[
        "run",
        "start",
        "conformance-approval",
        "--url",
        &server.base,
        "--key",
        OWNER,
        "--inputs",
        r#"{"amount": 3}"#,
        "--idempotency-key",
        "cli-test-idempotency-key-0001",
    ]);
    started.ok();
    let run = started.json()["runId"].as_str().expect("runId").to_string();
    assert!(run.starts_with("acme/"), "{run}");
    // The same key and body replays the first answer.
    let again = cli(&[
        "run",
        "start",
        "conformance-approval",
        "--url",
        &server.base,
        "--key",
        OWNER,
        "--inputs",
        r#"{"amount": 3}"#,
        "--idempotency-key",
        "cli-test-idempotency-key-0001",
    ]);
    assert_eq!(again.ok().json()["runId"], run.as_str());
    server.wait_status(&run, "waiting-approval", 20).await;

    // inspect: the snapshot, by tenant/opaque and by the path form
    let snap = remote(&server, OWNER, &["run", "inspect", &run]);
    let snap = snap.ok().json();
    assert_eq!(snap["status"], "waiting-approval");
    assert_eq!(snap["runId"], run.as_str());
    let snap2 = remote(&server, OWNER, &["run", "inspect", &seg(&run)])
        .ok()
        .json();
    assert_eq!(snap2["runId"], run.as_str());

    // inspect --node: payload, contract, votes
    let i = remote(&server, OWNER, &["run", "inspect", &run, "--node", "gate"])
        .ok()
        .json();
    assert_eq!(i["status"], "pending");
    assert_eq!(i["kind"], "approval");
    assert!(i["resumeSchema"].is_object(), "{i}");
    assert!(i["payload"]["data"]["title"].is_string(), "{i}");
    assert!(i["votes"].is_array(), "{i}");

    // interrupt list
    let list = remote(
        &server,
        OWNER,
        &[
            "interrupt",
            "list",
            "--status",
            "pending",
            "--workflow",
            "conformance-approval",
            "--kind",
            "approval",
        ],
    )
    .ok()
    .json();
    let items = list["interrupts"].as_array().expect("interrupts");
    assert!(items.iter().any(|x| x["runId"] == run.as_str()), "{list}");
    let none = remote(&server, OWNER, &["interrupt", "list", "--kind", "credential"])
        .ok()
        .json();
    assert!(none["interrupts"].as_array().expect("interrupts").is_empty());

    // resume refused by the resume schema: 400, field named, nothing changes
    let bad = remote(
        &server,
        OWNER,
        &["run", "resume", &run, "gate", "--value", r#"{"action":"maybe"}"#],
    );
    assert_ne!(bad.code, 0);
    assert!(bad.stdout.is_empty(), "no data on failure: {}", bad.stdout);
    assert!(bad.stderr.contains("400"), "{}", bad.stderr);
    assert!(bad.stderr.contains("validation_error"), "{}", bad.stderr);
    assert!(bad.stderr.contains("resumeValue.action"), "{}", bad.stderr);
    assert_eq!(server.snapshot(&run).await["status"], "waiting-approval");

    // a value that is not JSON never leaves the machine
    let garbage = remote(
        &server,
        OWNER,
        &["run", "resume", &run, "gate", "--value", "{nope"],
    );
    assert_ne!(garbage.code, 0);
    assert!(garbage.stderr.contains("not JSON"), "{}", garbage.stderr);

    // resume from a file
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("accept.json");
    std::fs::write(&file, r#"{"action":"accept","feedback":"fine"}"#).expect("write");
    let at = format!("@{}", file.display());
    let ok = remote(&server, BOB, &["run", "resume", &run, "gate", "--value", &at])
        .ok()
        .json();
    assert_eq!(ok["runId"], run.as_str());
    assert_eq!(ok["nodeId"], "gate");
    server.wait_status(&run, "completed", 20).await;

    // a second resolve: 409
    let late = remote(
        &server,
        BOB,
        &["run", "resume", &run, "gate", "--value", r#"{"action":"accept"}"#],
    );
    assert_ne!(late.code, 0);
    assert!(late.stderr.contains("409"), "{}", late.stderr);

    // events: one JSON event per line, ending in run.completed
    let ev = remote(&server, OWNER, &["run", "events", &run])
        .ok()
        .stdout
        .clone();
    let events: Vec<Value> = ev
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON event per line"))
        .collect();
    assert_eq!(
        events.first().map(|e| e["type"].clone()),
        Some(json!("run.started"))
    );
    assert_eq!(
        events.last().map(|e| e["type"].clone()),
        Some(json!("run.completed"))
    );
    assert!(types(&events).contains(&"interrupt.resolved".to_string()));
    let seqs: Vec<i64> = events.iter().filter_map(|e| e["sequence"].as_i64()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "{seqs:?}");
    // --follow returns once the run is terminal and drained
    let followed = remote(&server, OWNER, &["run", "events", &run, "--follow"])
        .ok()
        .stdout
        .clone();
    assert_eq!(followed.lines().count(), events.len());
    // --after skips what was seen
    let after = seqs[seqs.len() - 2].to_string();
    let tail = remote(&server, OWNER, &["run", "events", &run, "--after", &after])
        .ok()
        .stdout
        .clone();
    assert_eq!(tail.lines().count(), 1, "{tail}");

    // cancel: a second run, followed live while it is cancelled
    let run2 = remote(&server, OWNER, &["run", "start", "conformance-approval"])
        .ok()
        .json()["runId"]
        .as_str()
        .expect("runId")
        .to_string();
    server.wait_status(&run2, "waiting-approval", 20).await;
    let (base, run2c) = (server.base.clone(), run2.clone());
    let follower = std::thread::spawn(move || {
        cli_with(
            &["run", "events", &run2c, "--follow"],
            &[("TOLLGATE_URL", &base), ("TOLLGATE_API_KEY", OWNER)],
            None,
        )
    });
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let c = remote(
        &server,
        OWNER,
        &["run", "cancel", &run2, "--reason", "not needed"],
    )
    .ok()
    .json();
    assert_eq!(c["status"], "cancelled");
    let followed = follower.join().expect("follower");
    followed.ok();
    let last: Value = serde_json::from_str(followed.stdout.lines().last().expect("events")).expect("json");
    assert_eq!(last["type"], "run.cancelled");
    assert_eq!(last["payload"]["reason"], "not needed");
    // cancelling again: 409 run_terminal
    let again = remote(&server, OWNER, &["run", "cancel", &run2]);
    assert_ne!(again.code, 0);
    assert!(
        again.stderr.contains("409") && again.stderr.contains("run_terminal"),
        "{}",
        again.stderr
    );
}

#[tokio::test]
async fn remote_errors_are_words_on_stderr_and_non_zero() {
    let (server, _dir) = Server::start_fresh().await;
    // no key
    let r = cli(&["run", "inspect", "acme/x", "--url", &server.base]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("no API key"), "{}", r.stderr);
    // wrong key
    let r = remote(&server, "not-a-key-at-all-000", &["interrupt", "list"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("401"), "{}", r.stderr);
    // unknown workflow
    let r = remote(&server, OWNER, &["run", "start", "no-such-workflow"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("404"), "{}", r.stderr);
    // a server that is not there
    let r = cli_with(
        &["interrupt", "list", "--url", "http://127.0.0.1:9", "--key", OWNER],
        &[],
        None,
    );
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("cannot reach"), "{}", r.stderr);
    // usage errors are clap's (exit 2)
    assert_eq!(cli(&["run", "resume", "acme/x"]).code, 2);
}

#[tokio::test]
async fn typed_interrupt_resume_names_the_field_and_every_failure() {
    let (server, _dir) = Server::start_fresh().await;
    let def = json!({
        "id": "cli-typed",
        "name": "typed",
        "version": "1",
        "nodes": [{
            "id": "ask",
            "typeId": "core.interrupt",
            "config": {
                "kind": "custom",
                "data": {"customKind": "amount", "payload": {"prompt": "how much?"}},
                "resumeSchema": {
                    "type": "object",
                    "required": ["amount", "currency"],
                    "properties": {
                        "amount": {"type": "integer", "minimum": 1},
                        "currency": {"type": "string", "enum": ["EUR", "USD"]}
                    }
                }
            }
        }]
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("typed.json");
    std::fs::write(&file, def.to_string()).expect("write");
    let file = file.to_string_lossy().into_owned();

    // validate offline, then put (admin only)
    assert_eq!(cli(&["workflow", "validate", &file]).ok().json()["valid"], true);
    let denied = remote(&server, OWNER, &["workflow", "put", &file]);
    assert_ne!(denied.code, 0);
    assert!(denied.stderr.contains("403"), "{}", denied.stderr);
    remote(&server, ADMIN, &["workflow", "put", &file]).ok();

    let run = remote(&server, OWNER, &["run", "start", "cli-typed"]).ok().json()["runId"]
        .as_str()
        .expect("runId")
        .to_string();
    server.wait_status(&run, "waiting-input", 20).await;
    let bad = remote(
        &server,
        OWNER,
        &["run", "resume", &run, "ask", "--value", r#"{"amount": 0}"#],
    );
    assert_ne!(bad.code, 0);
    assert!(bad.stderr.contains("400"), "{}", bad.stderr);
    assert!(bad.stderr.contains("resumeValue.amount"), "{}", bad.stderr);
    assert!(bad.stderr.contains("currency"), "{}", bad.stderr);
    let i = server.interrupt(&run, "ask").await;
    assert_eq!(i["status"], "pending");
    remote(
        &server,
        OWNER,
        &[
            "run",
            "resume",
            &run,
            "ask",
            "--value",
            r#"{"amount": 5, "currency": "EUR"}"#,
        ],
    )
    .ok();
    server.wait_status(&run, "completed", 20).await;
}

#[test]
fn schema_prints_json_schemas() {
    for name in [
        "InterruptNode",
        "Workflow",
        "InterruptPayload",
        "RunSnapshot",
        "ResumeValue",
        "Event",
        "ErrorEnvelope",
    ] {
        let out = cli(&["schema", name]);
        out.ok();
        let s = out.json();
        assert_eq!(
            s["$schema"], "https://json-schema.org/draft/2020-12/schema",
            "{name}"
        );
        assert!(s["title"].is_string(), "{name}");
        assert!(s["type"].is_string() || s["anyOf"].is_array(), "{name}");
        assert!(s["properties"].is_object(), "{name}");
        // every local $ref resolves
        let text = out.stdout.clone();
        for part in text.split("\"$ref\": \"#/$defs/").skip(1) {
            let def = part.split('"').next().unwrap_or("");
            assert!(s["$defs"][def].is_object(), "{name}: $defs/{def} missing");
        }
    }
    let unknown = cli(&["schema", "Nope"]);
    assert_eq!(unknown.code, 2);
}

#[test]
fn schemas_agree_with_real_shapes() {
    let payload = cli(&["schema", "InterruptPayload"]).json();
    assert_eq!(payload["required"], json!(["kind", "key", "data"]));
    let snapshot = cli(&["schema", "RunSnapshot"]).json();
    for m in ["runId", "workflowId", "status", "owner", "eventLogSchemaVersion"] {
        assert!(snapshot["required"]
            .as_array()
            .expect("required")
            .contains(&json!(m)));
    }
    let envelope = cli(&["schema", "ErrorEnvelope"]).json();
    assert_eq!(envelope["additionalProperties"], false);
    let event = cli(&["schema", "Event"]).json();
    assert_eq!(event["additionalProperties"], false);
}

/// Output into a pipe nobody reads any more (`… | head`) ends the command
/// quietly: no panic, no error.
#[test]
fn a_closed_output_pipe_ends_a_command_quietly() {
    let good =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workflows/conformance/conformance-approval.json");
    for args in [
        vec!["workflow", "validate", good.to_str().unwrap()],
        vec!["schema", "Event"],
    ] {
        let (reader, writer) = std::io::pipe().expect("a pipe");
        drop(reader);
        let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("the binary runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {:?}\n{stderr}", out.status);
        assert!(stderr.is_empty(), "{args:?}: {stderr}");
    }
}

#[test]
fn workflow_validate_good_and_bad() {
    let good =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../workflows/conformance/conformance-approval.json");
    let out = cli(&["workflow", "validate", &good.to_string_lossy()]);
    out.ok();
    let v = out.json();
    assert_eq!(v["valid"], true);
    assert_eq!(v["id"], "conformance-approval");

    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        json!({"id": "bad", "nodes": [{"id": "g", "typeId": "core.approvalGate", "config": {}}]}).to_string(),
    )
    .expect("write");
    let out = cli(&["workflow", "validate", &bad.to_string_lossy()]);
    assert_eq!(out.code, 1);
    let v = out.json();
    assert_eq!(v["valid"], false);
    assert!(v["error"].as_str().expect("error").contains("title"), "{v}");

    let not_json = dir.path().join("x.json");
    std::fs::write(&not_json, "{").expect("write");
    let out = cli(&["workflow", "validate", &not_json.to_string_lossy()]);
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("not JSON"), "{}", out.stderr);
    let missing = cli(&["workflow", "validate", "/no/such/file.json"]);
    assert_ne!(missing.code, 0);
}

#[tokio::test]
async fn offline_user_and_key_then_used_against_the_server() {
    let dir = TestDir::new();
    let db = dir.db_url();

    let user = cli_with(
        &[
            "user",
            "add",
            "--db",
            &db,
            "--id",
            "zed",
            "--name",
            "Zed Z",
            "--email",
            "zed@example.com",
            "--tenant",
            TENANT,
            "--group",
            "finance",
            "--group",
            "ops",
            "--role",
            "cfo",
            "--password-stdin",
        ],
        &[],
        Some("correct horse battery\n"),
    );
    let u = user.ok().json();
    assert_eq!(u["id"], "zed");
    assert_eq!(u["groups"], json!(["finance", "ops"]));
    assert_eq!(u["password"], true);

    // unknown principal and bad scope are refused
    let r = cli(&[
        "key",
        "create",
        "--db",
        &db,
        "--principal",
        "nobody",
        "--scope",
        "runs:read",
    ]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("unknown principal"), "{}", r.stderr);
    let r = cli(&[
        "key",
        "create",
        "--db",
        &db,
        "--principal",
        "zed",
        "--scope",
        "everything",
    ]);
    assert_ne!(r.code, 0);

    let created = cli(&[
        "key",
        "create",
        "--db",
        &db,
        "--principal",
        "zed",
        "--scope",
        "runs:create",
        "--scope",
        "runs:read",
        "--scope",
        "approvals:respond",
        "--label",
        "cli test",
    ]);
    let k = created.ok().json();
    let key = k["key"].as_str().expect("key").to_string();
    assert!(key.starts_with("tg_"), "{key}");
    assert_eq!(
        k["scopes"],
        json!(["runs:create", "runs:read", "approvals:respond"])
    );
    assert!(created.stderr.contains("only this once"));
    // only the digest is stored
    if tollgate::store::testing::postgres_server().is_none() {
        let raw = std::fs::read(dir.dir.path().join("t.db")).expect("db");
        assert!(!raw.windows(key.len()).any(|w| w == key.as_bytes()));
    }
    let pool = common::raw_db(&dir).await;
    let stored: Vec<String> = sqlx::query_scalar("SELECT key_hash FROM api_keys")
        .fetch_all(&pool)
        .await
        .unwrap();
    assert!(!stored.is_empty() && !stored.iter().any(|h| h.contains(key.as_str())));

    // A second key, listed and revoked offline: the server refuses it.
    let doomed = cli(&[
        "key",
        "create",
        "--db",
        &db,
        "--principal",
        "zed",
        "--scope",
        "runs:read",
    ]);
    let doomed = doomed.ok().json();
    let doomed_key = doomed["key"].as_str().expect("key").to_string();
    let doomed_id = doomed["id"].as_str().expect("id").to_string();
    let listed = cli(&["key", "list", "--db", &db]).ok().json();
    let keys = listed["keys"].as_array().expect("keys");
    assert_eq!(keys.len(), 2, "{listed}");
    assert!(keys
        .iter()
        .any(|k| k["id"] == doomed_id.as_str() && k["revokedAt"].is_null()));
    assert!(!listed.to_string().contains(&doomed_key), "keys are never listed");
    let r = cli(&["key", "revoke", "--db", &db, "--id", "abc"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("8 hex"), "{}", r.stderr);
    let revoked = cli_with(
        &["key", "revoke", "--db", &db, "--key-stdin"],
        &[],
        Some(&format!("{doomed_key}\n")),
    );
    let revoked = revoked.ok().json();
    assert_eq!(revoked["id"], doomed_id.as_str());
    assert!(revoked["revokedAt"].is_string());

    let server = Server::start(&dir).await;
    let r = remote(&server, &doomed_key, &["interrupt", "list"]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("401"), "{}", r.stderr);
    let run = remote(&server, &key, &["run", "start", "conformance-approval"])
        .ok()
        .json()["runId"]
        .as_str()
        .expect("runId")
        .to_string();
    assert!(run.starts_with("acme/"));
    server.wait_status(&run, "waiting-approval", 20).await;
    let list = remote(&server, &key, &["interrupt", "list", "--status", "pending"])
        .ok()
        .json();
    assert!(list["interrupts"]
        .as_array()
        .expect("list")
        .iter()
        .any(|i| i["runId"] == run.as_str()));
    // zed may not cancel (no runs:cancel)
    let r = remote(&server, &key, &["run", "cancel", &run]);
    assert_ne!(r.code, 0);
    assert!(r.stderr.contains("403"), "{}", r.stderr);
}

#[tokio::test]
async fn token_mint() {
    let dir = TestDir::new();
    let mut config = std::fs::read_to_string(dir.config_path()).expect("config");
    config.push_str("\n[[token_keys]]\nkid = \"k1\"\nsecret = \"0123456789abcdef0123456789abcdef-cli\"\n");
    std::fs::write(dir.config_path(), config).expect("config");
    let server = Server::start(&dir).await;
    let run = server.create("conformance-approval").await;
    server.wait_status(&run, "waiting-approval", 20).await;

    // online: the server's token for the calling key, when it offers one
    let online = remote(&server, BOB, &["token", "mint", &run, "gate"]);
    if online.code == 0 {
        let t = online.json();
        let token = t["token"].as_str().expect("token");
        assert!(token.starts_with("ow2.hs256."), "{t}");
        assert_eq!(t["url"], format!("{}/t/{token}", server.base));
    } else {
        assert!(online.stderr.contains("no token"), "{}", online.stderr);
    }

    // offline, with the server's configuration
    let config = dir.config_path().to_string_lossy().into_owned();
    let out = cli(&[
        "token",
        "mint",
        &run,
        "gate",
        "--config",
        &config,
        "--principal",
        "bob",
        "--intent",
        "inspect",
    ]);
    let t = out.ok().json();
    let token = t["token"].as_str().expect("token").to_string();
    assert!(token.starts_with("ow2.hs256.k1."), "{t}");
    assert!(t["expiresAt"].is_string());
    assert_eq!(t["url"], format!("http://tollgate.test/t/{token}"));
    // the server accepts it, as an inspect token
    let r = server
        .call(
            reqwest::Method::GET,
            &format!("/interrupts/{token}"),
            None,
            None,
            &[],
        )
        .await;
    r.expect(200, None);
    assert_eq!(r.header("x-tollgate-intent"), Some("inspect"));
    assert_eq!(r.header("x-tollgate-expires-at"), t["expiresAt"].as_str());

    // --config needs --principal; an unknown principal or node is refused
    assert_eq!(cli(&["token", "mint", &run, "gate", "--config", &config]).code, 2);
    let r = cli(&[
        "token",
        "mint",
        &run,
        "gate",
        "--config",
        &config,
        "--principal",
        "nobody",
    ]);
    assert_ne!(r.code, 0);
    let r = cli(&[
        "token",
        "mint",
        &run,
        "nope",
        "--config",
        &config,
        "--principal",
        "bob",
    ]);
    assert_ne!(r.code, 0);
}

#[tokio::test]
async fn delegation_add_list_revoke_and_interrupt_reassign() {
    let dir = TestDir::new();
    dir.give_addresses(&["ann", "bob", "cat", "dan"]);
    let server = Server::start(&dir).await;
    server
        .register(gate_workflow(
            "pair",
            json!({"requiredApprovals": 2, "approverGroupRefs": ["finance"]}),
        ))
        .await;
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let until = tollgate::clock::rfc3339(now_ms + 30 * 86_400_000);
    let added = remote(
        &server,
        ANN,
        &["delegation", "add", "dan", "--until", &until, "--reason", "leave"],
    );
    let d = added.ok().json();
    assert_eq!(
        (d["delegator"].as_str(), d["state"].as_str()),
        (Some("ann"), Some("active"))
    );
    let id = d["delegationId"].as_str().unwrap().to_string();
    let list = remote(&server, DAN, &["delegation", "list"]).ok().json();
    assert_eq!(list["items"][0]["delegationId"], id.as_str());
    // Refusals are words on stderr naming the field, and a non-zero exit.
    let bad = remote(&server, ANN, &["delegation", "add", "dan", "--until", "someday"]);
    assert_ne!(bad.code, 0);
    assert!(
        bad.stderr.contains("400") && bad.stderr.contains("field: endsAt"),
        "{}",
        bad.stderr
    );
    let revoked = remote(&server, DAN, &["delegation", "revoke", &id]).ok().json();
    assert_eq!(revoked["state"], "revoked");
    assert_ne!(remote(&server, DAN, &["delegation", "revoke", &id]).code, 0);

    let run = server.create("pair").await;
    let moved = remote(
        &server,
        ADMIN,
        &[
            "interrupt",
            "reassign",
            &run,
            "gate",
            "--from",
            "bob",
            "--to",
            "cat",
        ],
    );
    assert_eq!(moved.ok().json()["delegator"], "bob");
    server
        .resolve(&run, "gate", CAT, json!({"action": "accept"}))
        .await
        .expect(200, None);
    let not_admin = remote(
        &server,
        ANN,
        &[
            "interrupt",
            "reassign",
            &run,
            "gate",
            "--from",
            "ann",
            "--to",
            "dan",
        ],
    );
    assert!(not_admin.stderr.contains("403"), "{}", not_admin.stderr);
}

#[test]
fn help_on_every_command_and_resume_says_validated() {
    let resume = cli(&["run", "resume", "--help"]);
    resume.ok();
    let text = resume.stdout.replace('\n', " ");
    assert!(
        text.contains("validated against the interrupt's resume schema before anything changes"),
        "{}",
        resume.stdout
    );
    for args in [
        vec!["--help"],
        vec!["run", "--help"],
        vec!["run", "start", "--help"],
        vec!["run", "inspect", "--help"],
        vec!["run", "cancel", "--help"],
        vec!["run", "events", "--help"],
        vec!["interrupt", "list", "--help"],
        vec!["interrupt", "reassign", "--help"],
        vec!["delegation", "add", "--help"],
        vec!["delegation", "list", "--help"],
        vec!["delegation", "revoke", "--help"],
        vec!["schema", "--help"],
        vec!["workflow", "validate", "--help"],
        vec!["workflow", "put", "--help"],
        vec!["token", "mint", "--help"],
        vec!["user", "add", "--help"],
        vec!["key", "create", "--help"],
    ] {
        let out = cli(&args);
        out.ok();
        assert!(out.stdout.contains("Usage: tollgate"), "{args:?}: {}", out.stdout);
    }
}
