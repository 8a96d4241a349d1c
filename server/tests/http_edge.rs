//! Browser hardening headers and the refusal of published demo secrets,
//! against the real binary.

mod common;

use common::{Server, TestDir};
use std::process::{Command, Stdio};

/// The nonce a page's Content-Security-Policy admits.
fn policy_nonce(policy: &str) -> Option<String> {
    let start = policy.find("'nonce-")? + "'nonce-".len();
    let end = policy[start..].find('\'')? + start;
    Some(policy[start..end].to_string())
}

async fn page(server: &Server, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let res = server
        .client
        .get(server.url(path))
        .header("accept", "text/html")
        .send()
        .await
        .expect("request");
    let status = res.status().as_u16();
    let headers = res.headers().clone();
    (status, headers, res.text().await.expect("body"))
}

fn header<'a>(h: &'a reqwest::header::HeaderMap, name: &str) -> &'a str {
    h.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
}

#[tokio::test]
async fn every_html_response_forbids_framing_sniffing_referrers_and_caching() {
    let (server, _dir) = Server::start_fresh().await;
    // The sign-in page, a token page whose link is bad (401), and a page that does not exist.
    for path in ["/signin", "/t/ow2.hs256.nope.nope.nope", "/no-such-page"] {
        let (status, h, body) = page(&server, path).await;
        assert!(
            header(&h, "content-type").starts_with("text/html"),
            "{path}: {status}"
        );
        let policy = header(&h, "content-security-policy");
        assert!(policy.contains("frame-ancestors 'none'"), "{path}: {policy}");
        assert!(!policy.contains("unsafe-inline"), "{path}: {policy}");
        assert_eq!(header(&h, "x-frame-options"), "DENY", "{path}");
        assert_eq!(header(&h, "x-content-type-options"), "nosniff", "{path}");
        assert_eq!(header(&h, "referrer-policy"), "no-referrer", "{path}");
        assert_eq!(header(&h, "cache-control"), "no-store", "{path}");
        assert!(
            header(&h, "strict-transport-security").is_empty(),
            "http: no HSTS"
        );
        // Every inline script carries the nonce the policy admits, and nothing else does.
        let nonce = policy_nonce(policy).unwrap_or_else(|| panic!("{path}: a page nonce in {policy}"));
        let tags: Vec<&str> = body
            .split("<script")
            .skip(1)
            .map(|rest| &rest[..rest.find('>').unwrap_or(rest.len())])
            .collect();
        assert!(!tags.is_empty(), "{path}: hydration scripts");
        for tag in tags {
            assert!(
                tag.contains(&format!("nonce=\"{nonce}\"")),
                "{path}: <script{tag}> lacks the page nonce"
            );
        }
        assert!(!body.contains(" style=\""), "{path}: no inline style attributes");
    }
    // Two pages get two nonces.
    let (_, a, _) = page(&server, "/signin").await;
    let (_, b, _) = page(&server, "/signin").await;
    assert_ne!(
        policy_nonce(header(&a, "content-security-policy")),
        policy_nonce(header(&b, "content-security-policy"))
    );
    // API answers are not cached and not sniffed either.
    let r = server.get("/healthz", "").await;
    assert_eq!(r.header("cache-control"), Some("no-store"));
    assert_eq!(r.header("x-content-type-options"), Some("nosniff"));
}

#[tokio::test]
async fn https_deployments_send_hsts() {
    let dir = TestDir::new();
    let path = dir.config_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let text = text.replace(
        "public_url = \"http://tollgate.test\"",
        "public_url = \"https://tollgate.test\"",
    );
    std::fs::write(&path, text).unwrap();
    let server = Server::start(&dir).await;
    let (_, h, _) = page(&server, "/signin").await;
    assert!(header(&h, "strict-transport-security").starts_with("max-age="));
}

/// Runs `tollgate serve` on `config` expecting it to refuse to start.
fn refused_start(dir: &TestDir) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_tollgate"))
        .arg("serve")
        .arg("--config")
        .arg(dir.config_path())
        .current_dir(dir.dir.path())
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .output()
        .expect("run tollgate");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "the server must refuse to start: {stdout}");
    assert!(!stdout.contains("listening on"), "{stdout}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

const DEMO_KEY_BLOCK: &str = r#"
[[api_keys]]
key = "demo-admin-key-change-me"
principal = "root"
scopes = ["admin"]
"#;

#[tokio::test]
async fn published_demo_secrets_run_only_a_demo() {
    let dir = TestDir::new();
    let path = dir.config_path();
    let base = std::fs::read_to_string(&path).unwrap();

    // The demo's admin key in a configuration that is not a demo: refused, naming the field.
    std::fs::write(&path, format!("{base}{DEMO_KEY_BLOCK}")).unwrap();
    let err = refused_start(&dir);
    assert!(err.contains("api_keys[") && err.contains("published"), "{err}");

    // The demo's token secret too.
    std::fs::write(
        &path,
        format!(
            "{base}\n[[token_keys]]\nkid = \"k9\"\nsecret = \"demo-token-secret-change-me-0123456789abcdef\"\n"
        ),
    )
    .unwrap();
    let err = refused_start(&dir);
    assert!(err.contains("token_keys[") && err.contains("published"), "{err}");

    // Saying it is a demo allows them; the key works.
    std::fs::write(&path, format!("demo = true\n{base}{DEMO_KEY_BLOCK}")).unwrap();
    let server = Server::start(&dir).await;
    server
        .get("/workflows", "demo-admin-key-change-me")
        .await
        .expect(200, None);
    drop(server);

    // Back to a production configuration without the key: the database still
    // holds it, so the server still refuses.
    std::fs::write(&path, &base).unwrap();
    let err = refused_start(&dir);
    assert!(err.contains("database holds an API key published"), "{err}");
}

/// Pages say `Referrer-Policy: no-referrer`, so browsers post the console's
/// own forms with `Origin: null`; `Sec-Fetch-Site` is what tells a same-origin
/// post from a cross-site one.
#[tokio::test]
async fn console_posts_are_judged_by_sec_fetch_site_first() {
    let (server, _dir) = Server::start_fresh().await;
    let post = |site: Option<&'static str>, origin: &str| {
        let mut req = server
            .client
            .post(server.url("/signin"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", origin)
            .body("user=nobody&password=wrong-password&next=%2F");
        if let Some(site) = site {
            req = req.header("sec-fetch-site", site);
        }
        async move { req.send().await.expect("post").status().as_u16() }
    };
    // A same-origin browser post under no-referrer: not refused as cross-site.
    assert_ne!(post(Some("same-origin"), "null").await, 403);
    // A cross-site page cannot pass by naming this server's origin.
    assert_eq!(post(Some("cross-site"), &server.base).await, 403);
    assert_eq!(post(Some("same-site"), &server.base).await, 403);
    // Without Sec-Fetch-Site (older browsers, tools) the Origin decides.
    assert_eq!(post(None, "null").await, 403);
    assert_eq!(post(None, "http://evil.example").await, 403);
    assert_ne!(post(None, &server.base).await, 403);
}

/// "Approve / Reject selected" is a console post like the others: refused
/// cross-site before anything else, sent to sign in when same-origin.
#[tokio::test]
async fn bulk_decisions_refuse_cross_site_posts() {
    let (server, _dir) = Server::start_fresh().await;
    // Redirects are answers here, not followed.
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let post = |site: Option<&'static str>, origin: &str| {
        let mut req = client
            .post(server.url("/inbox/decide"))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("origin", origin)
            .body("action=accept&pick=x%2Fgate");
        if let Some(site) = site {
            req = req.header("sec-fetch-site", site);
        }
        async move { req.send().await.expect("post").status().as_u16() }
    };
    assert_eq!(post(Some("cross-site"), &server.base).await, 403);
    assert_eq!(post(None, "http://evil.example").await, 403);
    // Same-origin without a session: to the sign-in page, not refused.
    assert_eq!(post(Some("same-origin"), "null").await, 303);
    // Credentials a browser sends by itself (for a proxy) do not make a post
    // an API call: a cross-site sign-in post carrying them is still refused.
    let status = client
        .post(server.url("/signin"))
        .header("content-type", "application/x-www-form-urlencoded")
        .header("origin", "http://evil.example")
        .header("sec-fetch-site", "cross-site")
        .header("authorization", "Basic eDp5")
        .body("user=nobody&password=wrong-password&next=%2F")
        .send()
        .await
        .expect("post")
        .status()
        .as_u16();
    assert_eq!(status, 403);
}

/// A console server function called directly answers an engine refusal with
/// its status, not server functions' blanket 500.
#[tokio::test]
async fn console_server_functions_answer_refusals_with_their_status() {
    use leptos::server_fn::ServerFn;
    let (server, _dir) = Server::start_fresh().await;
    let call = |path: &'static str, args: &'static str| {
        let req = server
            .client
            .post(server.url(path))
            .header("content-type", "application/x-www-form-urlencoded")
            .header("sec-fetch-site", "same-origin")
            .body(args);
        async move {
            let r = req.send().await.expect("post");
            (r.status().as_u16(), r.text().await.unwrap())
        }
    };
    for (path, args) in [
        (tollgate_app::api::LoadInbox::PATH, "query[page]=1"),
        (tollgate_app::delegations::LoadDelegations::PATH, ""),
        (tollgate_app::admin::api::LoadAdminOverview::PATH, ""),
    ] {
        let (status, body) = call(path, args).await;
        assert_eq!(status, 403, "{path}: {body}");
        assert!(body.contains("please sign in"), "{path}: {body}");
    }
    // Arguments that do not decode are the caller's error too: 400.
    for args in ["query[page]=-1", "query[page]=x", ""] {
        let (status, body) = call(tollgate_app::api::LoadInbox::PATH, args).await;
        assert_eq!(status, 400, "{args:?}: {body}");
        assert!(body.starts_with("Args|"), "{args:?}: {body}");
    }
}

/// The status line of a request sent as written (an HTTP client would
/// resolve `.` and `..` segments before sending, as browsers do).
async fn raw_status(server: &Server, method: &str, path: &str, headers: &str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = server.base.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&addr).await.expect("connect");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\n{headers}Content-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    let answer = String::from_utf8_lossy(&answer);
    answer
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line: {answer}"))
}

/// What no route serves: a path with dot segments is no page (it used to be
/// drawn by the console's fallback without the engine, a 500), and an API
/// client gets the JSON error envelope rather than the console's HTML.
#[tokio::test]
async fn unrouted_paths_answer_404_never_a_page_or_a_crash() {
    let (server, _dir) = Server::start_fresh().await;
    for (method, path) in [
        ("GET", "/./"),
        ("GET", "/x/../"),
        ("GET", "/%2e/dashboard"),
        ("POST", "/x/../dashboard/keys"),
        ("GET", "/runs/../dashboard/keys"),
    ] {
        let status = raw_status(&server, method, path, "Accept: text/html\r\n").await;
        assert_eq!(status, 404, "{method} {path}");
    }
    let res = server
        .client
        .get(server.url("/v1/runs"))
        .header("authorization", "Bearer not-a-key")
        .send()
        .await
        .expect("request");
    assert_eq!(res.status().as_u16(), 404);
    assert_eq!(res.headers()["openwop-version"], "2.0");
    let body: serde_json::Value = res.json().await.expect("a JSON body");
    assert_eq!(body["error"], "not_found", "{body}");
    assert!(
        body["message"].as_str().unwrap_or("").contains("/v1/runs"),
        "{body}"
    );
    // A browser still gets the console's own page.
    let (status, _, html) = page(&server, "/no-such-page").await;
    assert_eq!(status, 404);
    assert!(html.contains("<html"), "{html}");
    assert!(!server.output().contains("panicked"), "no handler panicked");
}
