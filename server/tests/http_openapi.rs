//! `GET /openapi.json` and `GET /metrics` against the real binary: the
//! document is OpenAPI 3.1, structurally valid, and lists exactly the routes
//! the router is built from; the metrics text counts requests and resolves.

mod common;

use common::*;
use reqwest::Method;
use serde_json::{json, Value};
use std::collections::{BTreeSet, HashSet};

// The router's route table (`server/src/api/route_table.rs`): the same lines
// the router is built from, read here as `(method, path)`.
macro_rules! list_routes {
    ($($method:ident $path:literal => $handler:path,)*) => {
        vec![$((stringify!($method), $path),)*]
    };
}
include!("../src/api/route_table.rs");

fn routed() -> BTreeSet<(String, String)> {
    let routes: Vec<(&str, &str)> = api_route_table!(list_routes);
    routes
        .into_iter()
        .map(|(m, p)| (m.to_lowercase(), p.to_string()))
        .collect()
}

const METHODS: &[&str] = &[
    "get", "put", "post", "delete", "patch", "head", "options", "trace",
];

/// Every operation of the document as `(method, path, operation)`.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths is an object") {
        for (method, op) in item.as_object().expect("a path item is an object") {
            if METHODS.contains(&method.as_str()) {
                ops.push((method.clone(), path.clone(), op.clone()));
            }
        }
    }
    ops
}

/// Resolves a local JSON pointer (`#/components/schemas/X`).
fn resolve<'a>(doc: &'a Value, reference: &str) -> Option<&'a Value> {
    let pointer = reference.strip_prefix('#')?;
    doc.pointer(pointer)
}

/// Collects every `$ref` in `v` with where it was found.
fn refs(v: &Value, at: &str, out: &mut Vec<(String, String)>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if k == "$ref" {
                    if let Some(r) = x.as_str() {
                        out.push((at.to_string(), r.to_string()));
                    }
                } else {
                    refs(x, &format!("{at}/{k}"), out);
                }
            }
        }
        Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                refs(x, &format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

/// The structural checks of an OpenAPI 3.1 document that matter here; returns
/// every problem found.
fn problems(doc: &Value) -> Vec<String> {
    let mut p = Vec::new();
    let version = doc["openapi"].as_str().unwrap_or("");
    if !version.starts_with("3.1.") {
        p.push(format!("openapi is {version:?}, not 3.1.x"));
    }
    for member in ["title", "version"] {
        if !doc["info"][member].is_string() {
            p.push(format!("info.{member} missing"));
        }
    }
    let schemes = doc["components"]["securitySchemes"].as_object();
    let mut op_ids = HashSet::new();
    for (method, path, op) in operations(doc) {
        let at = format!("{} {path}", method.to_uppercase());
        if !path.starts_with('/') {
            p.push(format!("{at}: path does not start with /"));
        }
        match op["operationId"].as_str() {
            Some(id) if op_ids.insert(id.to_string()) => {}
            Some(id) => p.push(format!("{at}: duplicate operationId {id}")),
            None => p.push(format!("{at}: no operationId")),
        }
        let responses = op["responses"].as_object();
        match responses {
            Some(r) if !r.is_empty() => {
                for (status, resp) in r {
                    let valid = status == "default"
                        || (status.len() == 3 && status.chars().all(|c| c.is_ascii_digit() || c == 'X'));
                    if !valid {
                        p.push(format!("{at}: response key {status}"));
                    }
                    let resp = match resp.get("$ref").and_then(Value::as_str) {
                        Some(r) => resolve(doc, r).cloned().unwrap_or(Value::Null),
                        None => resp.clone(),
                    };
                    if !resp["description"].is_string() {
                        p.push(format!("{at} {status}: response without description"));
                    }
                }
            }
            _ => p.push(format!("{at}: no responses")),
        }
        // Path parameters: every template variable is declared, required, in path.
        let params: Vec<&Value> = op["parameters"]
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default();
        for param in &params {
            let name = param["name"].as_str().unwrap_or("");
            let location = param["in"].as_str().unwrap_or("");
            if !["path", "query", "header", "cookie"].contains(&location) {
                p.push(format!("{at}: parameter {name} has in = {location:?}"));
            }
            if location == "path" && param["required"] != true {
                p.push(format!("{at}: path parameter {name} is not required"));
            }
            if location == "path" && !path.contains(&format!("{{{name}}}")) {
                p.push(format!("{at}: path parameter {name} is not in the path"));
            }
        }
        for var in path.split('{').skip(1).filter_map(|s| s.split('}').next()) {
            let declared = params.iter().any(|q| q["in"] == "path" && q["name"] == var);
            if !declared {
                p.push(format!("{at}: template variable {var} is not declared"));
            }
        }
        if let Some(body) = op.get("requestBody") {
            if !body["content"].is_object() {
                p.push(format!("{at}: requestBody without content"));
            }
        }
        if let Some(security) = op["security"].as_array() {
            for requirement in security {
                for name in requirement.as_object().map(|o| o.keys()).into_iter().flatten() {
                    if !schemes.is_some_and(|s| s.contains_key(name)) {
                        p.push(format!("{at}: unknown security scheme {name}"));
                    }
                }
            }
        }
    }
    let mut all = Vec::new();
    refs(doc, "", &mut all);
    for (at, r) in all {
        if resolve(doc, &r).is_none() {
            p.push(format!("{at}: $ref {r} does not resolve"));
        }
    }
    p
}

/// A concrete path for a route template.
fn concrete(path: &str) -> String {
    path.replace("{runId}", &format!("{TENANT}~2Fno-such-run"))
        .replace("{nodeId}", "gate")
        .replace("{workflowId}", "no-such-workflow")
        .replace("{token}", "ow2.hs256.k1.bad.bad")
}

#[tokio::test]
async fn openapi_document_is_3_1_valid_and_lists_every_route_the_router_serves() {
    let (s, _dir) = Server::start_fresh().await;
    let r = s.call(Method::GET, "/openapi.json", None, None, &[]).await;
    r.expect(200, None);
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("application/json")),
        "{:?}",
        r.header("content-type")
    );
    let doc = &r.body;
    assert!(doc.is_object(), "the document parses as JSON: {doc}");

    let found = problems(doc);
    assert!(
        found.is_empty(),
        "the document has problems:\n{}",
        found.join("\n")
    );

    // Exactly the routes of the router, no more and no fewer.
    let documented: BTreeSet<(String, String)> =
        operations(doc).into_iter().map(|(m, p, _)| (m, p)).collect();
    let routed = routed();
    let undocumented: Vec<_> = routed.difference(&documented).collect();
    let unrouted: Vec<_> = documented.difference(&routed).collect();
    assert!(
        undocumented.is_empty(),
        "routes without OpenAPI docs: {undocumented:?}"
    );
    assert!(
        unrouted.is_empty(),
        "documented operations the router does not serve: {unrouted:?}"
    );
    for expected in [
        ("get", "/openapi.json"),
        ("get", "/metrics"),
        ("get", "/healthz"),
        ("get", "/.well-known/openwop"),
        ("post", "/runs/{runId}/interrupts/{nodeId}"),
        ("post", "/interrupts/{token}"),
    ] {
        assert!(
            documented.contains(&(expected.0.to_string(), expected.1.to_string())),
            "{expected:?}"
        );
    }

    // The bearer scheme and its scopes.
    let bearer = &doc["components"]["securitySchemes"]["bearer"];
    assert_eq!(bearer["type"], "http");
    assert_eq!(bearer["scheme"], "bearer");
    let envelope = &doc["components"]["schemas"]["ErrorEnvelope"];
    let required: Vec<&str> = envelope["required"]
        .as_array()
        .expect("required")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(required, ["error", "message"]);
    assert!(envelope["properties"]["details"].is_object());
    assert_eq!(
        envelope["properties"]["error"]["$ref"],
        "#/components/schemas/ErrorCode"
    );
    let codes = doc["components"]["schemas"]["ErrorCode"]["enum"].to_string();
    for code in [
        "validation_error",
        "idempotency_key_invalid",
        "unauthenticated",
        "interrupt_token_invalid",
        "forbidden",
        "id_tenant_mismatch",
        "not_found",
        "method_not_allowed",
        "protocol_version_unsupported",
        "interrupt_already_resolved",
        "run_terminal",
        "idempotency_key_mismatch",
        "interrupt_expired",
    ] {
        assert!(
            codes.contains(&format!("\"{code}\"")),
            "error code {code} in {codes}"
        );
    }

    // Every operation lists its errors.
    for (method, path, op) in operations(doc) {
        let at = format!("{} {path}", method.to_uppercase());
        let responses = op["responses"].as_object().unwrap();
        let has = |status: &str| responses.contains_key(status);
        assert!(has("405") && has("406"), "{at}: 405 and 406 documented");
        let scopes = op["security"]
            .as_array()
            .and_then(|a| a.iter().find_map(|req| req.get("bearer")))
            .and_then(Value::as_array);
        if let Some(scopes) = scopes {
            assert_eq!(scopes.len(), 1, "{at}: one scope");
            let r401 = &responses["401"];
            assert!(
                r401["headers"].get("WWW-Authenticate").is_some(),
                "{at}: 401 carries WWW-Authenticate"
            );
            assert!(has("403") && has("500"), "{at}: 403 and 500 documented");
        }
        // Looking up a run, an interrupt or a workflow can miss (registering cannot).
        let lookup = path.contains("{runId}") || path.contains("{token}") || path.contains("{workflowId}");
        if lookup && method != "put" {
            assert!(has("404"), "{at}: 404 documented");
        }
        if path.contains("{token}") {
            assert!(has("401") && has("410") && has("409"), "{at}: token errors");
        }
        if method == "post" || method == "put" {
            assert!(
                op.get("requestBody").is_some() || path == "/runs",
                "{at}: request body"
            );
            assert!(has("400"), "{at}: 400 documented");
        }
        for (status, resp) in responses {
            if status.starts_with('4') && status != "404" || status == "500" {
                let schema = resp["content"]["application/json"]["schema"]["$ref"].as_str();
                assert_eq!(
                    schema,
                    Some("#/components/schemas/ErrorEnvelope"),
                    "{at} {status}: the closed envelope"
                );
            }
        }
    }
    let resolve = &doc["paths"]["/runs/{runId}/interrupts/{nodeId}"]["post"];
    assert_eq!(resolve["security"][0]["bearer"], json!(["approvals:respond"]));
    for status in ["400", "401", "403", "404", "409"] {
        assert!(resolve["responses"].get(status).is_some(), "resolve {status}");
    }
    assert_eq!(
        doc["paths"]["/workflows/{workflowId}"]["put"]["security"][0]["bearer"],
        json!(["admin"])
    );

    // A malformed query answers the envelope too, naming the parameter.
    let r = s.get("/interrupts?bogus=1", ADMIN).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "bogus");
    let r = s
        .get(&format!("/runs/{}/events/poll?timeout=x", seg("acme/r")), ADMIN)
        .await;
    r.expect(400, Some("validation_error"));

    // The router really serves each documented operation (a JSON answer, not
    // the console's fallback), and no other method on the same paths.
    for (method, path) in &routed {
        let m = Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
        let body = (m == Method::POST || m == Method::PUT).then(|| json!({}));
        let r = s
            .call(m.clone(), &concrete(path), Some(ADMIN), body.as_ref(), &[])
            .await;
        assert_ne!(r.status, 405, "{method} {path}: {}", r.body);
        assert!(
            !r.header("content-type").unwrap_or("").starts_with("text/html"),
            "{method} {path} fell through to the console: {}",
            r.status
        );
        assert_eq!(r.header("openwop-version"), Some("2.0"), "{method} {path}");
        let r = s
            .call(Method::DELETE, &concrete(path), Some(ADMIN), None, &[])
            .await;
        r.expect(405, Some("method_not_allowed"));
    }
}

/// The value of the first sample line of `name` whose labels include every
/// `labels` pair.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .find(|l| labels.iter().all(|(k, v)| l.contains(&format!("{k}=\"{v}\""))))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

async fn metrics_text(s: &Server) -> String {
    let r = s.call(Method::GET, "/metrics", None, None, &[]).await;
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(
        r.header("content-type")
            .is_some_and(|c| c.starts_with("text/plain")),
        "{:?}",
        r.header("content-type")
    );
    r.body.as_str().expect("metrics text").to_string()
}

#[tokio::test]
async fn metrics_count_requests_resolves_latency_and_pending_interrupts() {
    let (s, _dir) = Server::start_fresh().await;
    let text = metrics_text(&s).await;
    assert_eq!(
        sample(&text, "tollgate_pending_interrupts", &[]),
        Some(0.0),
        "{text}"
    );
    assert_eq!(sample(&text, "tollgate_outbox_backlog", &[]), Some(0.0), "{text}");

    // A decided resolve, a vote that does not decide, and a refused one.
    let run = s.create("conformance-approval").await;
    s.register(gate_workflow("q2", json!({"requiredApprovals": 2})))
        .await;
    let q = s.create("q2").await;
    let text = metrics_text(&s).await;
    assert_eq!(
        sample(&text, "tollgate_pending_interrupts", &[]),
        Some(2.0),
        "{text}"
    );

    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(200, None);
    s.resolve(&q, "gate", ANN, json!({"action": "accept"}))
        .await
        .expect(200, None);
    s.resolve(&run, "gate", OWNER, json!({"action": "accept"}))
        .await
        .expect(409, Some("interrupt_already_resolved"));

    let text = metrics_text(&s).await;
    let resolves = |outcome: &str, code: &str| {
        sample(
            &text,
            "tollgate_resolves_total",
            &[("via", "api"), ("outcome", outcome), ("code", code)],
        )
    };
    assert_eq!(resolves("decided", "none"), Some(1.0), "{text}");
    assert_eq!(resolves("vote_recorded", "none"), Some(1.0), "{text}");
    assert_eq!(
        resolves("error", "interrupt_already_resolved"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        sample(
            &text,
            "tollgate_resolve_duration_seconds_count",
            &[("via", "api")]
        ),
        Some(3.0),
        "{text}"
    );
    assert!(
        text.contains("tollgate_resolve_duration_seconds_bucket{via=\"api\",le=\"0.005\"}"),
        "a histogram with buckets: {text}"
    );
    // The quorum gate still waits; the decided run's interrupt is gone.
    assert_eq!(
        sample(&text, "tollgate_pending_interrupts", &[]),
        Some(1.0),
        "{text}"
    );

    // Requests by method, matched route template and status.
    let requests = |method: &str, route: &str, status: &str| {
        sample(
            &text,
            "tollgate_http_requests_total",
            &[("method", method), ("route", route), ("status", status)],
        )
    };
    assert_eq!(requests("POST", "/runs", "201"), Some(2.0), "{text}");
    assert_eq!(
        requests("POST", "/runs/{runId}/interrupts/{nodeId}", "200"),
        Some(2.0),
        "{text}"
    );
    assert_eq!(
        requests("POST", "/runs/{runId}/interrupts/{nodeId}", "409"),
        Some(1.0),
        "{text}"
    );
    assert_eq!(
        requests("PUT", "/workflows/{workflowId}", "201"),
        Some(1.0),
        "{text}"
    );
    assert!(
        requests("GET", "/metrics", "200").is_some_and(|n| n >= 2.0),
        "{text}"
    );
    assert!(
        !text.contains(&format!("route=\"/runs/{}", seg(&run))),
        "routes are templates, not concrete paths: {text}"
    );
    assert!(
        text.contains("# TYPE tollgate_http_requests_total counter"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE tollgate_pending_interrupts gauge"),
        "{text}"
    );
    assert!(
        text.contains("# TYPE tollgate_resolve_duration_seconds histogram"),
        "{text}"
    );
}

/// Answers `(status, code)` for one request.
async fn answer(
    s: &Server,
    method: &str,
    path: &str,
    key: Option<&str>,
    headers: &[(&str, &str)],
) -> (u16, String, Value) {
    let m = Method::from_bytes(method.as_bytes()).expect("method");
    let body = (method == "POST" || method == "PUT").then(|| json!({}));
    let r = s.call(m, path, key, body.as_ref(), headers).await;
    (r.status, r.code().to_string(), r.body)
}

/// One order of checks on every route: route/method (405), credential (401),
/// protocol version (406), unknown query parameters (400 naming it).
#[tokio::test]
async fn every_route_checks_method_then_credential_then_version_then_query() {
    let (s, _dir) = Server::start_fresh().await;
    let doc = s.call(Method::GET, "/openapi.json", None, None, &[]).await.body;
    let bad_version = [("openwop-version", "3")];
    for (method, path, op) in operations(&doc) {
        let m = method.to_uppercase();
        let p = concrete(&path);
        let bearer = op["security"].as_array().is_some_and(|a| !a.is_empty());
        let token = path.contains("{token}");

        // A method the route does not serve: 405 before anything else.
        let (st, code, _) = answer(&s, "TRACE", &p, None, &bad_version).await;
        assert_eq!((st, code.as_str()), (405, "method_not_allowed"), "TRACE {path}");

        // No credential and a bad version: the credential is checked first.
        let (st, code, _) = answer(&s, &m, &p, None, &bad_version).await;
        if bearer {
            assert_eq!((st, code.as_str()), (401, "unauthenticated"), "{m} {path}");
        } else if token {
            assert_eq!(
                (st, code.as_str()),
                (401, "interrupt_token_invalid"),
                "{m} {path}"
            );
        } else {
            assert_eq!(
                (st, code.as_str()),
                (406, "protocol_version_unsupported"),
                "{m} {path}"
            );
        }

        // A good credential (for bearer routes) and a bad version: 406, before the query.
        let key = bearer.then_some(ADMIN);
        if !token {
            let q = format!("{p}?bogusParam=1");
            let (st, code, _) = answer(&s, &m, &q, key, &bad_version).await;
            assert_eq!(
                (st, code.as_str()),
                (406, "protocol_version_unsupported"),
                "{m} {path}"
            );
            for v in ["", "2.x", "20", " 3"] {
                let (st, _, _) = answer(&s, &m, &p, key, &[("openwop-version", v)]).await;
                assert_eq!(st, 406, "{m} {path} with OpenWOP-Version {v:?}");
            }
            // Then an unknown query parameter: 400 naming it, on every route.
            let (st, code, body) = answer(&s, &m, &q, key, &[("openwop-version", "2.0")]).await;
            assert_eq!(
                (st, code.as_str()),
                (400, "validation_error"),
                "{m} {path}: {body}"
            );
            assert_eq!(body["details"]["field"], "bogusParam", "{m} {path}");
        }
    }
}

#[tokio::test]
async fn the_token_is_checked_before_the_body_and_ids_before_lookups() {
    let (s, _dir) = Server::start_fresh().await;
    // A malformed body with a bad token: the token answers.
    let r = s
        .call(
            Method::POST,
            "/interrupts/ow2.hs256.k1.bad.bad",
            None,
            Some(&json!({"resumeValue": 7, "extra": true})),
            &[],
        )
        .await;
    r.expect(401, Some("interrupt_token_invalid"));

    // Multi-byte and malformed run ids on all six run routes: 400 naming runId, never a dropped connection.
    for seg in [
        "%C3%A9%C3%A9",
        "%C3%A9~2F%C3%A9",
        "acme~zz0123456789abcdef",
        "~",
        "%E6%97%A5~",
    ] {
        for (m, tail) in [
            ("GET", ""),
            ("POST", "/cancel"),
            ("GET", "/events"),
            ("GET", "/events/poll"),
            ("GET", "/interrupts/gate"),
            ("POST", "/interrupts/gate"),
        ] {
            let path = format!("/runs/{seg}{tail}");
            let body = match (m, tail) {
                ("POST", "/cancel") => Some(json!({})),
                ("POST", _) => Some(json!({"resumeValue": {"action": "approve"}})),
                _ => None,
            };
            let r = s
                .call(
                    Method::from_bytes(m.as_bytes()).unwrap(),
                    &path,
                    Some(ADMIN),
                    body.as_ref(),
                    &[],
                )
                .await;
            r.expect(400, Some("validation_error"));
            assert_eq!(r.body["details"]["field"], "runId", "{m} {path}");
        }
    }
    // A bad node id or workflow id is input too.
    let run = s.create("conformance-approval").await;
    let r = s
        .get(&format!("/runs/{}/interrupts/a%20b", seg(&run)), ADMIN)
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "nodeId");
    let r = s.get("/workflows/a%20b", ADMIN).await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "workflowId");

    // Last-Event-ID must be a sequence; unknown query parameters are refused on the stream too.
    for bad in ["abc", "-2", "1.5"] {
        let r = s
            .call(
                Method::GET,
                &format!("/runs/{}/events", seg(&run)),
                Some(ADMIN),
                None,
                &[("last-event-id", bad), ("accept", "application/json")],
            )
            .await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], "Last-Event-ID", "{bad}");
    }
    let r = s
        .call(
            Method::GET,
            &format!("/runs/{}/events?bufferMs=5&nope=1", seg(&run)),
            Some(ADMIN),
            None,
            &[("accept", "application/json")],
        )
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "nope");
    // A bad afterSequence is refused even beside a good Last-Event-ID (which
    // would otherwise win over it).
    let r = s
        .call(
            Method::GET,
            &format!("/runs/{}/events?afterSequence=-2", seg(&run)),
            Some(ADMIN),
            None,
            &[("last-event-id", "1"), ("accept", "application/json")],
        )
        .await;
    r.expect(400, Some("validation_error"));
    assert_eq!(r.body["details"]["field"], "afterSequence");
    // A good Last-Event-ID resumes after it.
    let r = s
        .call(
            Method::GET,
            &format!("/runs/{}/events", seg(&run)),
            Some(ADMIN),
            None,
            &[("last-event-id", "1"), ("accept", "application/json")],
        )
        .await;
    r.expect(200, None);
    let events = r.body["events"].as_array().expect("events").clone();
    assert!(!events.is_empty());
    assert!(events.iter().all(|e| e["sequence"].as_i64().unwrap() > 1));

    // Enumerated query parameters of the interrupt list are checked.
    for (q, field) in [
        ("status=bogus", "status"),
        ("kind=bogus", "kind"),
        ("limit=0", "limit"),
        ("limit=501", "limit"),
    ] {
        let r = s.get(&format!("/interrupts?{q}"), ADMIN).await;
        r.expect(400, Some("validation_error"));
        assert_eq!(r.body["details"]["field"], field, "{q}");
    }
    s.get("/interrupts?status=pending&kind=approval&limit=500", ADMIN)
        .await
        .expect(200, None);
}

/// The document states what the server enforces.
#[tokio::test]
async fn the_document_states_the_enforced_grammars_enums_and_bounds() {
    let (s, _dir) = Server::start_fresh().await;
    let doc = s.call(Method::GET, "/openapi.json", None, None, &[]).await.body;
    let deref = |v: &Value| -> Value {
        match v["$ref"].as_str() {
            Some(r) => resolve(&doc, r).cloned().unwrap_or(Value::Null),
            None => v.clone(),
        }
    };
    let param = |op: &Value, name: &str| -> Value {
        let p = op["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name).cloned())
            .unwrap_or_else(|| panic!("parameter {name}"));
        deref(&p["schema"])
    };
    let enum_of = |v: &Value| -> Vec<String> {
        // `Option<Enum>` is `oneOf: [null, $ref]` in utoipa 5.
        let v = if let Some(one) = v["oneOf"].as_array() {
            one.iter()
                .map(&deref)
                .find(|x| x["enum"].is_array())
                .unwrap_or(Value::Null)
        } else {
            deref(v)
        };
        v["enum"]
            .as_array()
            .unwrap_or_else(|| panic!("an enum: {v}"))
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect()
    };
    for (method, path, op) in operations(&doc) {
        let v = param(&op, "OpenWOP-Version");
        assert_eq!(v["pattern"], r"^2(\.[0-9]{1,9}){0,2}$", "{method} {path}");
        for status in ["400", "405", "406", "500"] {
            assert!(
                op["responses"][status].is_object(),
                "{method} {path} documents {status}"
            );
        }
        if op["security"].as_array().is_some_and(|a| !a.is_empty()) {
            assert!(
                op["responses"]["401"].is_object(),
                "{method} {path} documents 401"
            );
        }
        if ["post", "put"].contains(&method.as_str())
            && op["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "Idempotency-Key")
        {
            assert_eq!(
                param(&op, "Idempotency-Key")["pattern"],
                "^[A-Za-z0-9._~-]{22,128}$",
                "{path}"
            );
        }
    }
    let outbox = &doc["paths"]["/admin/outbox"]["get"];
    assert_eq!(enum_of(&param(outbox, "kind")), ["email", "callback"]);
    assert_eq!(
        enum_of(&param(outbox, "status")),
        ["pending", "sent", "failed", "dropped"]
    );
    let limit = param(outbox, "limit");
    assert_eq!(
        (limit["minimum"].as_f64(), limit["maximum"].as_f64()),
        (Some(1.0), Some(1000.0))
    );
    let stream = &doc["paths"]["/runs/{runId}/events"]["get"];
    assert_eq!(enum_of(&param(stream, "streamMode")), ["updates", "debug"]);
    let sse = deref(&stream["responses"]["200"]["content"]["text/event-stream"]["schema"]);
    assert_eq!(
        sse["properties"]["data"]["contentMediaType"], "application/json",
        "{sse}"
    );
    // Parameters are never null on the wire.
    for (method, path, op) in operations(&doc) {
        for p in op["parameters"].as_array().unwrap() {
            let text = p["schema"].to_string();
            assert!(
                !text.contains("\"null\""),
                "{method} {path} {}: {text}",
                p["name"]
            );
        }
    }
    let resolve_body = deref(
        &doc["paths"]["/runs/{runId}/interrupts/{nodeId}"]["post"]["requestBody"]["content"]
            ["application/json"]["schema"],
    );
    assert_eq!(
        deref(&resolve_body["properties"]["resumeValue"])["type"],
        "object"
    );
    let create =
        deref(&doc["paths"]["/runs"]["post"]["requestBody"]["content"]["application/json"]["schema"]);
    let tags = &create["properties"]["tags"];
    assert!(
        tags.to_string().contains("\"array\"") && tags.to_string().contains("\"string\""),
        "{tags}"
    );
    let wf = deref(
        &doc["paths"]["/workflows/{workflowId}"]["put"]["requestBody"]["content"]["application/json"]
            ["schema"],
    );
    assert_eq!(wf["properties"]["nodes"]["minItems"], 1);
    let node = deref(&wf["properties"]["nodes"]["items"]);
    assert!(
        node["required"].as_array().unwrap().contains(&json!("id")),
        "{node}"
    );
}
