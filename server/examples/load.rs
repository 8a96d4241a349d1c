//! HTTP load generator: creates N runs suspended at an approval gate, then
//! resolves them with C concurrent clients, and prints throughput and latency.
//!
//! cargo run --release -p tollgate-server --example load -- \
//!     --url http://127.0.0.1:3000 --key KEY --runs 4000 --concurrency 16
//!
//! `--url` may list several instances, comma-separated: requests go to them
//! in turn (a round-robin load balancer). `--server-pids 12,34` (Linux) adds
//! the CPU those processes spent per request in each phase, and the load
//! client's own, so a reader can see the client was not the bottleneck.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Args {
    urls: Vec<String>,
    key: String,
    runs: usize,
    concurrency: usize,
    workflow: String,
    server_pids: Vec<u32>,
}

fn parse_args() -> Args {
    let mut a = Args {
        urls: vec!["http://127.0.0.1:3000".into()],
        key: String::new(),
        runs: 2000,
        concurrency: 16,
        workflow: "conformance-approval".into(),
        server_pids: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--url" => a.urls = val().split(',').map(str::to_string).collect(),
            "--key" => a.key = val(),
            "--runs" => a.runs = val().parse().expect("--runs N"),
            "--concurrency" => a.concurrency = val().parse().expect("--concurrency C"),
            "--workflow" => a.workflow = val(),
            "--server-pids" => {
                a.server_pids = val()
                    .split(',')
                    .map(|p| p.parse().expect("--server-pids PID,PID"))
                    .collect()
            }
            other => panic!("unknown flag {other}"),
        }
    }
    assert!(!a.key.is_empty(), "--key API_KEY is required");
    a
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i]
}

/// Runs `total` jobs over `concurrency` workers; returns wall time and per-request latencies.
async fn phase<F, Fut>(total: usize, concurrency: usize, job: F) -> (Duration, Vec<Duration>)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    let job = Arc::new(job);
    let next = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let mut workers = Vec::new();
    for _ in 0..concurrency {
        let (job, next) = (job.clone(), next.clone());
        workers.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= total {
                    break;
                }
                let t = Instant::now();
                job(i).await;
                lat.push(t.elapsed());
            }
            lat
        }));
    }
    let mut all = Vec::with_capacity(total);
    for w in workers {
        all.extend(w.await.expect("worker"));
    }
    all.sort();
    (start.elapsed(), all)
}

/// CPU time (user + system) a process has used so far, from `/proc/PID/stat`.
fn cpu_time(pid: &str) -> Option<Duration> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may hold spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    // USER_HZ is 100 on every Linux architecture Tollgate targets.
    Some(Duration::from_millis(ticks * 10))
}

/// CPU used by the servers and by this client, to subtract across a phase.
fn cpu_sample(pids: &[u32]) -> Option<(Duration, Duration)> {
    let mut servers = Duration::ZERO;
    for pid in pids {
        servers += cpu_time(&pid.to_string())?;
    }
    Some((servers, cpu_time("self")?))
}

fn report(
    name: &str,
    n: usize,
    wall: Duration,
    lat: &[Duration],
    cpu: Option<((Duration, Duration), (Duration, Duration))>,
) {
    let per = |d: Duration| d.as_secs_f64() * 1e3 / n as f64;
    let cpu = match cpu {
        Some(((s0, c0), (s1, c1))) => format!(
            "   server CPU {:.3} ms/req   client CPU {:.3} ms/req",
            per(s1.saturating_sub(s0)),
            per(c1.saturating_sub(c0))
        ),
        None => String::new(),
    };
    println!(
        "{name:<8} n={n:<6} {:>8.0}/s   p50 {:>7.2} ms   p99 {:>7.2} ms{cpu}",
        n as f64 / wall.as_secs_f64(),
        percentile(lat, 0.50).as_secs_f64() * 1e3,
        percentile(lat, 0.99).as_secs_f64() * 1e3,
    );
}

#[tokio::main]
async fn main() {
    let args = parse_args();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(args.concurrency * 2)
        .build()
        .unwrap();
    let auth = format!("Bearer {}", args.key);
    let run_ids = Arc::new(std::sync::Mutex::new(vec![String::new(); args.runs]));

    let (c, a, u, w, ids) = (
        client.clone(),
        auth.clone(),
        args.urls.clone(),
        args.workflow.clone(),
        run_ids.clone(),
    );
    let pids = args.server_pids.clone();
    let sample = move || (!pids.is_empty()).then(|| cpu_sample(&pids)).flatten();
    let before = sample();
    let (wall, lat) = phase(args.runs, args.concurrency, move |i| {
        let (c, a, u, w, ids) = (
            c.clone(),
            a.clone(),
            u[i % u.len()].clone(),
            w.clone(),
            ids.clone(),
        );
        async move {
            let res = c
                .post(format!("{u}/runs"))
                .header("authorization", a)
                .json(&serde_json::json!({ "workflowId": w }))
                .send()
                .await
                .expect("create run");
            assert_eq!(res.status(), 201, "create run");
            let body: serde_json::Value = res.json().await.expect("json");
            ids.lock().unwrap()[i] = body["runId"].as_str().unwrap().replace('/', "~2F");
        }
    })
    .await;
    report("create", args.runs, wall, &lat, before.zip(sample()));

    let (c, a, u) = (client.clone(), auth.clone(), args.urls.clone());
    let before = sample();
    let (wall, lat) = phase(args.runs, args.concurrency, move |i| {
        // The other instance than the one that created the run.
        let (c, a, u) = (c.clone(), a.clone(), u[(i + 1) % u.len()].clone());
        let id = run_ids.lock().unwrap()[i].clone();
        async move {
            let res = c
                .post(format!("{u}/runs/{id}/interrupts/gate"))
                .header("authorization", a)
                .json(&serde_json::json!({ "resumeValue": { "action": "accept" } }))
                .send()
                .await
                .expect("resolve");
            assert_eq!(res.status(), 200, "resolve");
        }
    })
    .await;
    report("resolve", args.runs, wall, &lat, before.zip(sample()));
}
