//! Console render timings over HTTP: fills a server with `--pending` approvals
//! one person may decide, plus one approval whose resume schema has 50
//! fields (`benches/data/resume-50.json`), signs in as that person and times
//! server-side rendering of the inbox (`/`, first page of 50; a deep page) and
//! of the 50-field interrupt page, one request at a time.
//!
//! scripts/console-perf.sh starts a release server for it; by hand:
//! cargo run --release -p tollgate-server --example console_perf -- \
//!     --url http://127.0.0.1:3000 --key ADMIN_KEY --user ada --password PASS --pending 10000

use serde_json::{json, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    url: String,
    key: String,
    user: String,
    password: String,
    group: String,
    pending: usize,
    requests: usize,
}

fn parse_args() -> Args {
    let mut a = Args {
        url: "http://127.0.0.1:3000".into(),
        key: String::new(),
        user: String::new(),
        password: String::new(),
        group: "finance".into(),
        pending: 10_000,
        requests: 100,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => a.url = val(),
            "--key" => a.key = val(),
            "--user" => a.user = val(),
            "--password" => a.password = val(),
            "--group" => a.group = val(),
            "--pending" => a.pending = val().parse().expect("--pending N"),
            "--requests" => a.requests = val().parse().expect("--requests N"),
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(
        !a.key.is_empty() && !a.user.is_empty(),
        "--key, --user and --password are required"
    );
    a
}

fn gate(id: &str, group: &str, resume_schema: Option<Value>) -> Value {
    let mut config = json!({
        "title": format!("Approve {id}"),
        "actions": ["accept", "reject"],
        "approverGroupRefs": [group],
        "timeoutMs": 86_400_000_i64,
    });
    if let Some(s) = resume_schema {
        config["resumeSchema"] = s;
    }
    json!({"id": id, "name": id, "version": "1.0",
           "nodes": [{"id": "gate", "typeId": "core.approvalGate", "name": "Gate", "config": config}],
           "edges": []})
}

fn percentile(sorted: &[Duration], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize].as_secs_f64() * 1e3
}

/// Times `n` sequential GETs of `path` as the signed-in person.
async fn time_page(c: &reqwest::Client, url: &str, cookie: &str, path: &str, n: usize, check: impl Fn(&str)) {
    let mut lat = Vec::with_capacity(n);
    let mut bytes = 0;
    for i in 0..n {
        let t = Instant::now();
        let res = c
            .get(format!("{url}{path}"))
            .header("cookie", cookie)
            .header("accept", "text/html")
            .send()
            .await
            .expect("GET");
        assert_eq!(res.status(), 200, "GET {path}");
        let body = res.text().await.expect("body");
        lat.push(t.elapsed());
        if i == 0 {
            check(&body);
            bytes = body.len();
        }
    }
    lat.sort();
    println!(
        "{path:<48} n={n:<4} {:>6} KiB   p50 {:>7.2} ms   p90 {:>7.2} ms   p99 {:>7.2} ms",
        bytes / 1024,
        percentile(&lat, 0.50),
        percentile(&lat, 0.90),
        percentile(&lat, 0.99),
    );
}

#[tokio::main]
async fn main() {
    let a = parse_args();
    let c = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let auth = format!("Bearer {}", a.key);
    let schema: Value = serde_json::from_str(include_str!("../../benches/data/resume-50.json")).unwrap();
    for def in [
        gate("perf-inbox", &a.group, None),
        gate("perf-form", &a.group, Some(schema)),
    ] {
        let id = def["id"].as_str().unwrap().to_string();
        let res = c
            .put(format!("{}/workflows/{id}", a.url))
            .header("authorization", &auth)
            .json(&def)
            .send()
            .await
            .expect("PUT workflow");
        assert!(
            res.status().is_success(),
            "PUT {id}: {}",
            res.text().await.unwrap_or_default()
        );
    }
    let create = {
        let (c, url, auth) = (c.clone(), a.url.clone(), auth.clone());
        move |workflow: &'static str| {
            let (c, url, auth) = (c.clone(), url.clone(), auth.clone());
            async move {
                let res = c
                    .post(format!("{url}/runs"))
                    .header("authorization", auth)
                    .json(&json!({ "workflowId": workflow }))
                    .send()
                    .await
                    .expect("create run");
                assert_eq!(res.status(), 201, "create run");
                let body: Value = res.json().await.unwrap();
                body["runId"].as_str().unwrap().replace('/', "~2F")
            }
        }
    };
    let t = Instant::now();
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..8 {
        let (next, create, total) = (next.clone(), create.clone(), a.pending);
        workers.push(tokio::spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                create("perf-inbox").await;
            }
        }));
    }
    for w in workers {
        w.await.unwrap();
    }
    let form_run = create("perf-form").await;
    println!(
        "setup: {} pending approvals in {:.1?}",
        a.pending + 1,
        t.elapsed()
    );

    let res = c
        .post(format!("{}/signin", a.url))
        .header("origin", &a.url)
        .form(&[
            ("user", a.user.as_str()),
            ("password", a.password.as_str()),
            ("next", "/"),
        ])
        .send()
        .await
        .expect("sign in");
    assert_eq!(res.status(), 303, "sign in");
    let cookie = res
        .headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with("tollgate_session="))
        .and_then(|v| v.split(';').next())
        .expect("session cookie")
        .to_string();

    let expect_rows = |body: &str| {
        let rows = body.matches("data-node=\"gate\"").count();
        assert_eq!(rows, 50, "a full page of rows");
    };
    let n = a.requests;
    time_page(&c, &a.url, &cookie, "/", n, expect_rows).await;
    time_page(&c, &a.url, &cookie, "/?sort=oldest&page=100", n, expect_rows).await;
    time_page(&c, &a.url, &cookie, "/?sort=deadline", n, expect_rows).await;
    let form_page = format!("/runs/{form_run}/interrupts/gate");
    time_page(&c, &a.url, &cookie, &form_page, n, |body| {
        assert!(body.contains("id=\"decide-form\""), "the form is drawn");
        assert!(body.matches("<input").count() >= 40, "50 fields drawn");
    })
    .await;
}
