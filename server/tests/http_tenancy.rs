//! Tenancy, scopes and links against a real server with tenants whose ids
//! differ in one character (`acme-x`, `acme_x`) and in case (`ACME-X`):
//! each bypass is tried through REST, the console and the token page, and
//! must be refused with nothing decided and nothing of the other tenant shown.

mod common;

use common::{seg, Browser, Resp, Server, TestDir};
use reqwest::Method;
use serde_json::{json, Value};
use std::process::Command;

const DASH: &str = "acme-x";
const UNDER: &str = "acme_x";
const UPPER: &str = "ACME-X";

/// `acme-x`: an admin, a run owner, a finance approver and a read-only service.
const DX_ADMIN: &str = "dx-admin-key-0123456789";
const DX_OWNER: &str = "dx-owner-key-0123456789";
const DX_ANN: &str = "dx-ann-key-01234567890";
const DX_READER: &str = "dx-reader-key-012345678";
/// `acme_x`: the same cast.
const UX_ADMIN: &str = "ux-admin-key-0123456789";
const UX_OWNER: &str = "ux-owner-key-0123456789";
const UX_ANN: &str = "ux-ann-key-01234567890";
/// `ACME-X`: one owner.
const UP_OWNER: &str = "up-owner-key-0123456789";

const PASSWORD: &str = "tenancy-test-password";

fn config(dir: &TestDir) -> String {
    let workflows = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../workflows/conformance")
        .canonicalize()
        .expect("conformance fixtures");
    let db =
        tollgate::store::testing::database_url_blocking(&dir.dir.path().join("t.db")).expect("test database");
    let phc = tollgate::passwords::hash(PASSWORD).expect("hash");
    let mut principals = String::new();
    for (id, tenant, groups, roles, person) in [
        ("dx-admin", DASH, "[]", r#"["admin"]"#, true),
        ("dx-owner", DASH, "[]", "[]", false),
        ("dx-ann", DASH, r#"["finance"]"#, "[]", true),
        ("dx-reader", DASH, "[]", "[]", false),
        ("ux-admin", UNDER, "[]", r#"["admin"]"#, true),
        ("ux-owner", UNDER, "[]", "[]", false),
        ("ux-ann", UNDER, r#"["finance"]"#, "[]", true),
        ("up-owner", UPPER, "[]", "[]", false),
    ] {
        principals.push_str(&format!(
            "[[principals]]\nid = \"{id}\"\ntenant = \"{tenant}\"\ngroups = {groups}\nroles = {roles}\n"
        ));
        if person {
            principals.push_str(&format!(
                "email = \"{id}@example.com\"\npassword_hash = {}\n",
                serde_json::to_string(&phc).unwrap()
            ));
        }
        principals.push('\n');
    }
    let mut keys = String::new();
    for (key, principal, scopes) in [
        (DX_ADMIN, "dx-admin", r#"["admin"]"#),
        (
            DX_OWNER,
            "dx-owner",
            r#"["runs:create", "runs:read", "runs:cancel", "approvals:respond"]"#,
        ),
        (DX_ANN, "dx-ann", r#"["runs:read", "approvals:respond"]"#),
        (DX_READER, "dx-reader", r#"["runs:read"]"#),
        (UX_ADMIN, "ux-admin", r#"["admin"]"#),
        (
            UX_OWNER,
            "ux-owner",
            r#"["runs:create", "runs:read", "runs:cancel", "approvals:respond"]"#,
        ),
        (UX_ANN, "ux-ann", r#"["runs:read", "approvals:respond"]"#),
        (
            UP_OWNER,
            "up-owner",
            r#"["runs:create", "runs:read", "runs:cancel", "approvals:respond"]"#,
        ),
    ] {
        keys.push_str(&format!(
            "[[api_keys]]\nkey = \"{key}\"\nprincipal = \"{principal}\"\nscopes = {scopes}\n\n"
        ));
    }
    let secret = format!("{}{}", tollgate::ids::new_opaque(), tollgate::ids::new_opaque());
    format!(
        r#"
[server]
bind = "127.0.0.1:0"
tenant = "{DASH}"
timer_interval_ms = 50

[database]
url = {db}

[workflows]
dirs = [{workflows}]

[[token_keys]]
kid = "tenancy-1"
secret = "{secret}"

{principals}
{keys}
"#,
        db = serde_json::to_string(&db).unwrap(),
        workflows = serde_json::to_string(&workflows.to_string_lossy()).unwrap(),
    )
}

async fn start() -> (Server, TestDir) {
    let dir = TestDir::new();
    std::fs::write(dir.config_path(), config(&dir)).expect("write config");
    let server = Server::start(&dir).await;
    (server, dir)
}

/// A gate needing two finance approvals, then `pay` on success and `notify` on failure.
fn two_approver_gate(id: &str, required: u32) -> Value {
    json!({"id": id, "name": id, "version": "1", "nodes": [
        {"id": "gate", "typeId": "core.approvalGate", "config": {
            "title": format!("Pay {id}"), "actions": ["accept", "reject", "refine"],
            "requiredApprovals": required, "approverGroupRefs": ["finance"]}},
        {"id": "pay", "typeId": "core.noop"},
        {"id": "notify", "typeId": "core.noop"}],
     "edges": [
        {"id": "ok", "sourceNodeId": "gate", "targetNodeId": "pay", "triggerRule": "all_success"},
        {"id": "no", "sourceNodeId": "gate", "targetNodeId": "notify", "triggerRule": "any_failed"}]})
}

async fn create(s: &Server, key: &str, workflow: &str) -> String {
    let r = s.post("/runs", key, &json!({"workflowId": workflow})).await;
    r.expect(201, None);
    r.body["runId"].as_str().expect("runId").to_string()
}

async fn snapshot(s: &Server, key: &str, run: &str) -> Value {
    let r = s.get(&format!("/runs/{}", seg(run)), key).await;
    r.expect(200, None);
    r.body
}

async fn events(s: &Server, key: &str, run: &str) -> Vec<Value> {
    let r = s
        .call(
            Method::GET,
            &format!("/runs/{}/events", seg(run)),
            Some(key),
            None,
            &[("accept", "application/json")],
        )
        .await;
    r.expect(200, None);
    r.body["events"].as_array().expect("events").clone()
}

async fn inspect(s: &Server, key: &str, run: &str, node: &str, query: &str) -> Resp {
    s.get(&format!("/runs/{}/interrupts/{node}{query}", seg(run)), key)
        .await
}

/// Nothing was decided: no `interrupt.resolved`, no counted vote.
async fn assert_undecided(s: &Server, key: &str, run: &str) {
    let evs = events(s, key, run).await;
    assert!(
        !evs.iter().any(|e| e["type"] == "interrupt.resolved"),
        "nothing decided on {run}"
    );
    let view = inspect(s, key, run, "gate", "").await;
    view.expect(200, None);
    assert!(view.body["votes"].as_array().unwrap().is_empty(), "{}", view.body);
}

fn tollgate_cli(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tollgate"));
    cmd.args(args);
    for (k, _) in std::env::vars() {
        if k.starts_with("TOLLGATE_") {
            cmd.env_remove(k);
        }
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run tollgate");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Point 1: a tenant admin cannot replace another tenant's definition (it
/// registers its own instead), cannot replace an instance-wide one (403),
/// and runs execute their own tenant's definition.
#[tokio::test]
async fn tenants_own_their_definitions() {
    let (s, _dir) = start().await;
    // acme-x registers a two-approver gate.
    let r = s
        .put("/workflows/pay", DX_ADMIN, &two_approver_gate("pay", 2))
        .await;
    r.expect(201, None);
    assert_eq!(r.body["scope"], "tenant");
    // acme_x's admin "replaces" it: that registers acme_x's own, new (201), one-approver gate.
    let r = s
        .put("/workflows/pay", UX_ADMIN, &two_approver_gate("pay", 1))
        .await;
    r.expect(201, None);
    // acme-x's definition is untouched.
    let mine = s.get("/workflows/pay", DX_OWNER).await;
    mine.expect(200, None);
    assert_eq!(mine.body["nodes"][0]["config"]["requiredApprovals"], 2);
    let theirs = s.get("/workflows/pay", UX_OWNER).await;
    assert_eq!(theirs.body["nodes"][0]["config"]["requiredApprovals"], 1);
    // Replacing one's own answers 200.
    s.put("/workflows/pay", DX_ADMIN, &two_approver_gate("pay", 2))
        .await
        .expect(200, None);
    // ACME-X (case differs) has no "pay".
    s.get("/workflows/pay", UP_OWNER)
        .await
        .expect(404, Some("not_found"));
    s.post("/runs", UP_OWNER, &json!({"workflowId": "pay"}))
        .await
        .expect(404, Some("not_found"));

    // A run executes its tenant's definition: acme-x's needs two approvals.
    let run = create(&s, DX_OWNER, "pay").await;
    let view = inspect(&s, DX_OWNER, &run, "gate", "").await;
    assert_eq!(view.body["quorum"]["requiredApprovals"], 2);
    let other = create(&s, UX_OWNER, "pay").await;
    assert_eq!(
        inspect(&s, UX_OWNER, &other, "gate", "").await.body["quorum"]["requiredApprovals"],
        1
    );

    // Listings: own and instance-wide, never another tenant's.
    let list = s.get("/workflows", DX_READER).await;
    list.expect(200, None);
    let ids: Vec<(String, String)> = list.body["workflows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            (
                w["id"].as_str().unwrap().into(),
                w["scope"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(ids.contains(&("pay".into(), "tenant".into())), "{ids:?}");
    assert!(ids.contains(&("conformance-approval".into(), "instance".into())));
    assert_eq!(ids.iter().filter(|(id, _)| id == "pay").count(), 1);
    let up: Vec<Value> = s.get("/workflows", UP_OWNER).await.body["workflows"]
        .as_array()
        .unwrap()
        .clone();
    assert!(!up.iter().any(|w| w["id"] == "pay"), "{up:?}");
    // Discovery (unauthenticated) names instance-wide workflows only.
    let d = s.call(Method::GET, "/.well-known/openwop", None, None, &[]).await;
    let fixtures = d.body["fixtures"].as_array().unwrap();
    assert!(fixtures.contains(&json!("conformance-approval")));
    assert!(!fixtures.contains(&json!("pay")), "{fixtures:?}");

    // Instance-wide definitions are read-only to tenants.
    let before = s.get("/workflows/conformance-approval", DX_OWNER).await.body;
    let mut dropped_gate = before.clone();
    dropped_gate["nodes"] = json!([{"id": "gate", "typeId": "core.noop"}]);
    dropped_gate["edges"] = json!([]);
    let r = s
        .put("/workflows/conformance-approval", DX_ADMIN, &dropped_gate)
        .await;
    r.expect(403, Some("forbidden"));
    assert!(
        r.body["message"].as_str().unwrap().contains("instance-wide"),
        "{}",
        r.body
    );
    assert_eq!(
        s.get("/workflows/conformance-approval", UX_OWNER).await.body,
        before
    );
    // Without admin: 403 as before, nothing registered.
    s.put("/workflows/mine", DX_OWNER, &two_approver_gate("mine", 1))
        .await
        .expect(403, Some("forbidden"));
    s.get("/workflows/mine", DX_OWNER)
        .await
        .expect(404, Some("not_found"));
}

/// Point 2: tenant scoping is exact: `acme_x` is not a pattern for `acme-x`,
/// and case matters.
#[tokio::test]
async fn one_character_apart_tenants_see_nothing_of_each_other() {
    let (s, _dir) = start().await;
    let dash = create(&s, DX_OWNER, "conformance-approval").await;
    let under = create(&s, UX_OWNER, "conformance-approval").await;
    let upper = create(&s, UP_OWNER, "conformance-approval").await;
    for (key, mine, others) in [
        (UX_ANN, &under, [&dash, &upper]),
        (DX_ANN, &dash, [&under, &upper]),
        (UP_OWNER, &upper, [&dash, &under]),
    ] {
        let list = s.get("/interrupts?status=pending", key).await;
        list.expect(200, None);
        let runs: Vec<&str> = list.body["interrupts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["runId"].as_str().unwrap())
            .collect();
        assert_eq!(runs, vec![mine.as_str()], "{key}");
        for other in others {
            // Snapshot, interrupt, events, resolve and cancel of the other tenant's run.
            s.get(&format!("/runs/{}", seg(other)), key)
                .await
                .expect(403, Some("id_tenant_mismatch"));
            inspect(&s, key, other, "gate", "")
                .await
                .expect(403, Some("id_tenant_mismatch"));
            s.get(&format!("/runs/{}/events/poll?timeout=1", seg(other)), key)
                .await
                .expect(403, Some("id_tenant_mismatch"));
            s.resolve(other, "gate", key, json!({"action": "accept"}))
                .await
                .expect(403, Some("id_tenant_mismatch"));
        }
    }
    for run in [&dash, &under, &upper] {
        let owner = match run.split('/').next().unwrap() {
            DASH => DX_OWNER,
            UNDER => UX_OWNER,
            _ => UP_OWNER,
        };
        assert_undecided(&s, owner, run).await;
    }
    // The admin's outbox: mail for acme-x's approvers stays in acme-x.
    s.put("/workflows/pay", DX_ADMIN, &two_approver_gate("pay", 1))
        .await
        .expect(201, None);
    let mailed = create(&s, DX_OWNER, "pay").await;
    let theirs = s.get("/admin/outbox", DX_ADMIN).await;
    theirs.expect(200, None);
    assert!(
        theirs.body["items"]
            .as_array()
            .unwrap()
            .iter()
            .any(|i| i["runId"] == json!(mailed)),
        "acme-x's admin sees its mail: {}",
        theirs.body
    );
    let outbox = s.get("/admin/outbox", UX_ADMIN).await;
    outbox.expect(200, None);
    for item in outbox.body["items"].as_array().unwrap() {
        assert!(item["runId"].as_str().unwrap().starts_with("acme_x/"), "{item}");
    }

    // Console: the inbox and the dashboard of acme_x show nothing of acme-x.
    let ann = Browser::sign_in(&s, "ux-ann", PASSWORD).await;
    let (status, inbox) = ann.page("/").await;
    assert_eq!(status, 200);
    assert!(
        !inbox.contains(&seg(&dash)) && !inbox.contains(&dash),
        "inbox leaks acme-x"
    );
    assert!(!inbox.contains(&seg(&upper)) && !inbox.contains(&upper));
    let (status, page) = ann.page(&format!("/runs/{}/interrupts/gate", seg(&dash))).await;
    assert_eq!(status, 403, "another tenant's interrupt page");
    assert!(
        !page.contains("Conformance approval"),
        "the page shows nothing of it"
    );
    // A form post on the other tenant's interrupt decides nothing.
    let (status, _) = ann
        .post_form(
            &format!("/runs/{}/interrupts/gate", seg(&dash)),
            &[("action", "accept")],
        )
        .await;
    assert_eq!(status, 403);
    assert_undecided(&s, DX_OWNER, &dash).await;

    let admin = Browser::sign_in(&s, "ux-admin", PASSWORD).await;
    for path in ["/dashboard", "/dashboard/runs"] {
        let (status, html) = admin.page(path).await;
        assert_eq!(status, 200, "{path}");
        assert!(
            html.contains(&seg(&under)) || html.contains(&under),
            "{path} shows acme_x's run"
        );
        for other in [&dash, &upper] {
            assert!(
                !html.contains(&seg(other)) && !html.contains(other.as_str()),
                "{path} leaks {other}"
            );
        }
    }
    let (status, _) = admin.page(&format!("/dashboard/runs/{}", seg(&dash))).await;
    assert_eq!(status, 404, "another tenant's run does not exist for this admin");
}

/// Whether an `inbox` event arrives on `stream` within `ms` (keep-alives are comments).
async fn inbox_event_within(stream: &mut reqwest::Response, ms: u64) -> bool {
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_millis(ms);
    loop {
        match tokio::time::timeout_at(deadline, stream.chunk()).await {
            Err(_) => return false,
            Ok(Ok(Some(bytes))) if String::from_utf8_lossy(&bytes).contains("event: inbox") => return true,
            Ok(Ok(Some(_))) => continue,
            Ok(_) => return false,
        }
    }
}

/// The live inbox stream of `acme_x` stays quiet for `acme-x`'s (and
/// `ACME-X`'s) new requests and speaks for its own.
#[tokio::test]
async fn the_live_inbox_follows_only_its_own_tenant() {
    let (s, _dir) = start().await;
    for (admin, _) in [(DX_ADMIN, DASH), (UX_ADMIN, UNDER)] {
        s.put("/workflows/pay", admin, &two_approver_gate("pay", 1))
            .await
            .expect(201, None);
    }
    let ann = Browser::sign_in(&s, "ux-ann", PASSWORD).await;
    let mut stream = ann.stream().await;
    create(&s, DX_OWNER, "pay").await;
    create(&s, UP_OWNER, "conformance-approval").await;
    assert!(
        !inbox_event_within(&mut stream, 1500).await,
        "another tenant's request is no news for acme_x"
    );
    create(&s, UX_OWNER, "pay").await;
    assert!(inbox_event_within(&mut stream, 5000).await, "its own request is");
}

/// A live stream does not outlive its session: it ends after
/// `live_stream_renew_seconds` (telling the browser to reopen it soon), and
/// reopening it is checked like any request, so after sign-out it is 401.
#[tokio::test]
async fn a_signed_out_sessions_live_stream_ends() {
    let dir = TestDir::new();
    let config = config(&dir).replace(
        "timer_interval_ms = 50",
        "timer_interval_ms = 50\nlive_stream_renew_seconds = 1",
    );
    std::fs::write(dir.config_path(), config).expect("write config");
    let s = Server::start(&dir).await;
    let ann = Browser::sign_in(&s, "ux-ann", PASSWORD).await;
    let mut stream = ann.stream().await;
    let (status, _) = ann.post_form("/signout", &[]).await;
    assert_eq!(status, 303);
    // Read to the end (keep-alives and the renewal's `retry` come first).
    let mut seen = String::new();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while let Ok(Some(bytes)) = stream.chunk().await {
            seen.push_str(&String::from_utf8_lossy(&bytes));
        }
    })
    .await;
    assert!(ended.is_ok(), "the stream ended: {seen}");
    assert!(seen.contains("retry: 500"), "{seen}");
    assert_eq!(ann.try_stream().await.status().as_u16(), 401);
}

/// One person holds at most so many live streams at once; the next is 429.
#[tokio::test]
async fn a_person_holds_a_bounded_number_of_live_streams() {
    let (s, _dir) = start().await;
    let ann = Browser::sign_in(&s, "ux-ann", PASSWORD).await;
    let mut open = Vec::new();
    for _ in 0..16 {
        open.push(ann.stream().await);
    }
    let refused = ann.try_stream().await;
    assert_eq!(refused.status().as_u16(), 429);
    assert!(refused.headers().contains_key("retry-after"));
    // Someone else is not held back by ann's streams.
    let admin = Browser::sign_in(&s, "ux-admin", PASSWORD).await;
    admin.stream().await;
}

/// Point 3: only a caller who may decide gets a resolve-capable link.
#[tokio::test]
async fn links_are_resolve_capable_only_for_those_who_may_decide() {
    let (s, dir) = start().await;
    s.put("/workflows/pay", DX_ADMIN, &two_approver_gate("pay", 1))
        .await
        .expect(201, None);
    let run = create(&s, DX_OWNER, "pay").await;

    // runs:read only: an inspect link, whatever is asked.
    for query in ["", "?intent=resolve", "?intent=inspect"] {
        let r = inspect(&s, DX_READER, &run, "gate", query).await;
        r.expect(200, None);
        assert_eq!(r.body["intent"], "inspect", "{query}");
        let token = r.body["token"].as_str().unwrap().to_string();
        let t = s
            .call(Method::GET, &format!("/interrupts/{token}"), None, None, &[])
            .await;
        t.expect(200, None);
        assert_eq!(t.header("x-tollgate-intent"), Some("inspect"));
        s.call(
            Method::POST,
            &format!("/interrupts/{token}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await
        .expect(403, Some("forbidden"));
        // The token page form decides nothing either.
        let ann = Browser::sign_in(&s, "dx-ann", PASSWORD).await;
        let (status, _) = ann
            .post_form(&format!("/t/{token}"), &[("action", "accept")])
            .await;
        assert_eq!(status, 403, "an inspect link's form post");
    }
    // May respond but is not eligible (not in finance): an inspect link.
    let r = inspect(&s, DX_OWNER, &run, "gate", "").await;
    assert_eq!(r.body["intent"], "inspect");
    // Eligible: resolve, unless inspect is asked for.
    assert_eq!(
        inspect(&s, DX_ANN, &run, "gate", "").await.body["intent"],
        "resolve"
    );
    assert_eq!(
        inspect(&s, DX_ANN, &run, "gate", "?intent=inspect").await.body["intent"],
        "inspect"
    );
    inspect(&s, DX_ANN, &run, "gate", "?intent=decide")
        .await
        .expect(400, Some("validation_error"));
    assert_undecided(&s, DX_OWNER, &run).await;

    // The CLI echoes what the server granted.
    let env = [("TOLLGATE_URL", s.base.as_str()), ("TOLLGATE_API_KEY", DX_READER)];
    let (code, out, err) = tollgate_cli(&["token", "mint", &run, "gate", "--intent", "resolve"], &env);
    assert_eq!(code, 0, "{err}");
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(printed["intent"], "inspect", "{out}");
    let env = [("TOLLGATE_URL", s.base.as_str()), ("TOLLGATE_API_KEY", DX_ANN)];
    let (code, out, err) = tollgate_cli(&["token", "mint", &run, "gate", "--intent", "inspect"], &env);
    assert_eq!(code, 0, "{err}");
    let printed: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(printed["intent"], "inspect");
    let t = s
        .call(
            Method::GET,
            &format!("/interrupts/{}", printed["token"].as_str().unwrap()),
            None,
            None,
            &[],
        )
        .await;
    t.expect(200, None);
    assert_eq!(t.header("x-tollgate-intent"), Some("inspect"));

    // A resolve link minted offline for the read-only service (the operator's
    // tool) still cannot decide: its principal does not hold approvals:respond.
    let config = dir.config_path();
    let (code, out, err) = tollgate_cli(
        &[
            "token",
            "mint",
            &run,
            "gate",
            "--config",
            &config.to_string_lossy(),
            "--principal",
            "dx-reader",
        ],
        &[],
    );
    assert_eq!(code, 0, "{err}");
    let minted: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(minted["intent"], "resolve");
    let token = minted["token"].as_str().unwrap();
    let r = s
        .call(
            Method::POST,
            &format!("/interrupts/{token}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await;
    r.expect(403, Some("forbidden"));
    assert!(
        r.body["message"].as_str().unwrap().contains("approvals:respond"),
        "{}",
        r.body
    );
    assert_undecided(&s, DX_OWNER, &run).await;

    // An eligible person's link decides.
    let token = inspect(&s, DX_ANN, &run, "gate", "").await.body["token"]
        .as_str()
        .unwrap()
        .to_string();
    s.call(
        Method::POST,
        &format!("/interrupts/{token}"),
        None,
        Some(&json!({"resumeValue": {"action": "accept"}})),
        &[],
    )
    .await
    .expect(200, None);
    assert_eq!(snapshot(&s, DX_OWNER, &run).await["status"], "completed");
}

/// Point 3: a gate without approver refs is open only to holders of
/// approvals:respond; a link decides only the visit it was minted for.
#[tokio::test]
async fn open_gates_need_respond_and_links_bind_one_visit() {
    let (s, _dir) = start().await;
    let run = create(&s, DX_OWNER, "conformance-approval-reject-loopback").await;
    // The read-only key: no resolve (403), and its inspect link cannot decide.
    s.resolve(&run, "gate", DX_READER, json!({"action": "accept"}))
        .await
        .expect(403, Some("forbidden"));
    assert_eq!(
        inspect(&s, DX_READER, &run, "gate", "").await.body["intent"],
        "inspect"
    );
    // A respond holder gets a resolve link on visit 1 ...
    let first = inspect(&s, DX_OWNER, &run, "gate", "").await;
    assert_eq!(first.body["intent"], "resolve");
    let token = first.body["token"].as_str().unwrap().to_string();
    // ... the gate is rejected over the API and asked again (visit 2) ...
    s.resolve(&run, "gate", DX_OWNER, json!({"action": "reject"}))
        .await
        .expect(200, None);
    let second = inspect(&s, DX_OWNER, &run, "gate", "").await;
    assert_eq!(second.body["status"], "pending");
    assert_ne!(second.body["interruptId"], first.body["interruptId"]);
    // ... and the visit-1 link cannot decide visit 2.
    let r = s
        .call(
            Method::POST,
            &format!("/interrupts/{token}"),
            None,
            Some(&json!({"resumeValue": {"action": "accept"}})),
            &[],
        )
        .await;
    r.expect(409, Some("interrupt_already_resolved"));
    let after = inspect(&s, DX_OWNER, &run, "gate", "").await;
    assert_eq!(after.body["status"], "pending");
    assert!(after.body["votes"].as_array().unwrap().is_empty());
    // Another tenant's link on this run: the MAC is fine, the tenant is not.
    let token2 = second.body["token"].as_str().unwrap();
    let ux = inspect(&s, UX_ANN, &run, "gate", "").await;
    ux.expect(403, Some("id_tenant_mismatch"));
    assert!(ux.body.get("token").is_none());
    s.call(
        Method::POST,
        &format!("/interrupts/{token2}"),
        None,
        Some(&json!({"resumeValue": {"action": "accept"}})),
        &[],
    )
    .await
    .expect(200, None);
    assert_eq!(snapshot(&s, DX_OWNER, &run).await["status"], "completed");
}

/// Point 3: admin operations check the acting principal in the engine, and
/// stay in the admin's tenant.
#[tokio::test]
async fn admin_operations_check_the_actor_and_stay_in_its_tenant() {
    let (s, _dir) = start().await;
    let run = create(&s, DX_OWNER, "conformance-approval").await;
    // Non-admin keys: 403 on the admin surface.
    for key in [DX_OWNER, DX_ANN, DX_READER] {
        s.get("/admin/outbox", key).await.expect(403, Some("forbidden"));
        s.post("/admin/outbox/1/retry", key, &json!({}))
            .await
            .expect(403, Some("forbidden"));
    }
    // A non-admin person on the dashboard: refused.
    let ann = Browser::sign_in(&s, "dx-ann", PASSWORD).await;
    let (status, html) = ann.page("/dashboard/runs").await;
    assert_eq!(status, 403, "{html}");
    assert!(!html.contains(&seg(&run)));
    let (status, _) = ann
        .post_form("/dashboard/people", &[("id", "mallory"), ("name", "Mallory")])
        .await;
    assert_eq!(status, 403);
    // acme_x's admin cannot touch acme-x's people or keys.
    let admin = Browser::sign_in(&s, "ux-admin", PASSWORD).await;
    let (_, people) = admin.page("/dashboard/people").await;
    assert!(!people.contains("dx-ann"), "another tenant's directory");
    assert!(people.contains("ux-ann"));
    let (_, keys) = admin.page("/dashboard/keys").await;
    assert!(!keys.contains("dx-reader"), "another tenant's keys");
    // A cross-site post with the admin's cookie is refused whatever
    // `Authorization` the browser adds by itself, a bearer one included:
    // the session, not the header, would act.
    for authorization in [
        "Basic eDp5",
        "Negotiate abc",
        "Bearer not-a-key",
        "bearer ux-admin-key-0123456789",
    ] {
        let status = admin
            .post_cross_site(
                "/dashboard/people",
                &[("id", "mallory"), ("name", "Mallory")],
                authorization,
            )
            .await;
        assert_eq!(status, 403, "{authorization}");
    }
    let (_, people) = admin.page("/dashboard/people").await;
    assert!(!people.contains("mallory"), "nothing was saved");
}

/// A decision posted to an interrupt page from another page of the same
/// site, with the approver's cookie, is refused whatever the case of its
/// content type: the console decides for any form the header names, so the
/// cross-site check must judge the same requests (an upper-case
/// `Application/x-www-form-urlencoded` once reached the decision unchecked).
#[tokio::test]
async fn a_cross_site_decision_is_refused_whatever_the_content_types_case() {
    let (s, _dir) = start().await;
    let run = create(&s, DX_OWNER, "conformance-approval").await;
    let ann = Browser::sign_in(&s, "dx-ann", PASSWORD).await;
    let page = format!("/runs/{}/interrupts/gate", seg(&run));
    for content_type in [
        "application/x-www-form-urlencoded",
        "Application/x-www-form-urlencoded",
        "APPLICATION/X-WWW-FORM-URLENCODED; charset=UTF-8",
        "multipart/form-data; boundary=x",
        "Multipart/Form-Data; boundary=x",
    ] {
        let status = ann
            .post_cross_site_as(&page, &[("action", "accept")], content_type, None)
            .await;
        assert_eq!(status, 403, "{content_type}");
    }
    assert_eq!(
        snapshot(&s, DX_OWNER, &run).await["status"],
        "waiting-approval",
        "nothing was decided"
    );
}

/// Point 4: one refine on a two-approver gate does not pay; it fails the gate
/// with the feedback and only the failure edge follows.
#[tokio::test]
async fn a_refine_never_grants() {
    let (s, _dir) = start().await;
    s.put("/workflows/pay", DX_ADMIN, &two_approver_gate("pay", 2))
        .await
        .expect(201, None);
    let run = create(&s, DX_OWNER, "pay").await;
    let feedback = json!({"scope": "whole", "text": "attach the receipt"});
    s.resolve(
        &run,
        "gate",
        DX_ANN,
        json!({"action": "refine", "refineFeedback": feedback}),
    )
    .await
    .expect(200, None);
    let evs = events(&s, DX_OWNER, &run).await;
    let resolved = evs.iter().find(|e| e["type"] == "interrupt.resolved").unwrap();
    assert_eq!(resolved["payload"]["action"], "refine");
    assert_eq!(resolved["payload"]["decision"], "rejected");
    assert_eq!(resolved["payload"]["refineFeedback"], feedback);
    let failed = evs
        .iter()
        .find(|e| e["type"] == "node.failed" && e["nodeId"] == "gate")
        .expect("the gate fails");
    assert_eq!(failed["payload"]["error"]["code"], "approval_rejected");
    assert_eq!(failed["payload"]["error"]["retryable"], false);
    assert_eq!(failed["payload"]["error"]["details"]["refineFeedback"], feedback);
    assert!(
        !evs.iter()
            .any(|e| e["type"] == "node.started" && e["nodeId"] == "pay"),
        "payment never runs after a refine"
    );
    assert!(evs
        .iter()
        .any(|e| e["type"] == "node.completed" && e["nodeId"] == "notify"));
}

/// Point 2: tenant ids follow one grammar wherever they enter: the
/// configuration (the server refuses to start) and the CLI.
#[test]
fn tenant_ids_are_checked_where_they_enter() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("t.db");
    for bad in ["acme x", "a/b", "a~2Fb", ""] {
        let (code, _, err) = tollgate_cli(
            &[
                "user",
                "add",
                "--db",
                &db.to_string_lossy(),
                "--id",
                "zed",
                "--tenant",
                bad,
            ],
            &[],
        );
        assert_ne!(code, 0, "--tenant {bad:?}");
        assert!(err.contains("--tenant"), "{err}");
        let config = dir.path().join("bad.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nbind = \"127.0.0.1:0\"\n[database]\nurl = \"sqlite://{}\"\n[[principals]]\nid = \"zed\"\ntenant = {}\n",
                db.display(),
                serde_json::to_string(bad).unwrap()
            ),
        )
        .unwrap();
        let (code, _, err) = tollgate_cli(&["serve", "--config", &config.to_string_lossy()], &[]);
        assert_ne!(code, 0, "tenant {bad:?} in the configuration");
        assert!(err.contains("principals[0].tenant"), "{err}");
    }
    // Case and punctuation are part of the id: these are three tenants.
    for good in ["acme-x", "acme_x", "ACME-X"] {
        let (code, out, err) = tollgate_cli(
            &[
                "user",
                "add",
                "--db",
                &db.to_string_lossy(),
                "--id",
                &format!("u-{good}"),
                "--tenant",
                good,
            ],
            &[],
        );
        assert_eq!(code, 0, "{err}");
        assert!(out.contains(good));
    }
}
