//! Commands that talk to a running server over the REST API.

use super::{
    json_arg, print_json, read_file, DelegationCommand, IntentArg, InterruptCommand, Remote, RunCommand,
};
use anyhow::{anyhow, bail, Context};
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::time::Duration;
use tollgate::ids::encode_path_id;

/// A REST client bound to one server and key.
struct Client {
    http: reqwest::Client,
    base: String,
    key: Option<String>,
}

/// A non-2xx answer, printed in words on stderr.
struct Failure {
    status: StatusCode,
    body: Value,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let code = self.body["error"].as_str().unwrap_or("");
        let message = match &self.body {
            Value::String(s) => s.as_str(),
            b => b["message"].as_str().unwrap_or(""),
        };
        write!(f, "{}", self.status.as_u16())?;
        if !code.is_empty() {
            write!(f, " {code}")?;
        }
        if !message.is_empty() {
            write!(f, ": {message}")?;
        }
        let details = &self.body["details"];
        if let Some(field) = details["field"].as_str() {
            write!(f, "\n  field: {field}")?;
        }
        for e in details["errors"].as_array().into_iter().flatten() {
            let field = e["field"]
                .as_str()
                .or_else(|| e["pointer"].as_str())
                .unwrap_or("");
            let message = e["message"].as_str().unwrap_or("");
            write!(f, "\n  {field}: {message}")?;
        }
        Ok(())
    }
}

impl Client {
    fn new(remote: &Remote) -> anyhow::Result<Client> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(120))
            .user_agent(concat!("tollgate-cli/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Client {
            http,
            base: remote.url.trim_end_matches('/').to_string(),
            key: remote.key.clone().filter(|k| !k.is_empty()),
        })
    }

    /// Sends a request; the JSON body of a 2xx answer, or the failure.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
    ) -> anyhow::Result<Value> {
        let Some(key) = &self.key else {
            bail!("no API key: pass --key or set TOLLGATE_API_KEY");
        };
        let url = format!("{}{}", self.base, path);
        let mut req = self.http.request(method.clone(), &url).bearer_auth(key);
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let res = req
            .send()
            .await
            .with_context(|| format!("{method} {url}: cannot reach the server"))?;
        let status = res.status();
        let text = res.text().await.unwrap_or_default();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if status.is_success() {
            Ok(body)
        } else {
            Err(anyhow!("{}", Failure { status, body }))
        }
    }

    async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(Method::GET, path, None, &[]).await
    }
}

/// One path segment for a run id given as `tenant/opaque` or already in the
/// path form `tenant~2Fopaque` (→ `tenant~2Fopaque`).
fn run_seg(run_id: &str) -> String {
    let id = tollgate::ids::decode_path_id(run_id, "run")
        .ok()
        .filter(|id| tollgate::ids::is_tenant_bound(id))
        .unwrap_or_else(|| run_id.to_string());
    encode_path_id(&id)
}

/// Percent-encodes one path segment or query value.
fn seg(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b':' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn query(pairs: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = pairs
        .iter()
        .filter_map(|(k, v)| v.as_ref().map(|v| format!("{k}={}", seg(v))))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

fn idem_header(key: Option<String>) -> Vec<(&'static str, String)> {
    key.map(|k| vec![("Idempotency-Key", k)]).unwrap_or_default()
}

pub(super) async fn run(remote: Remote, command: RunCommand) -> anyhow::Result<i32> {
    let client = Client::new(&remote)?;
    match command {
        RunCommand::Start {
            workflow_id,
            inputs,
            idempotency_key,
        } => {
            let mut body = json!({ "workflowId": workflow_id });
            if let Some(i) = inputs {
                body["inputs"] = json_arg("--inputs", &i)?;
            }
            let r = client
                .call(Method::POST, "/runs", Some(&body), &idem_header(idempotency_key))
                .await?;
            print_json(&r);
        }
        RunCommand::Inspect { run_id, node } => {
            let path = match node {
                Some(n) => format!("/runs/{}/interrupts/{}", run_seg(&run_id), seg(&n)),
                None => format!("/runs/{}", run_seg(&run_id)),
            };
            print_json(&client.get(&path).await?);
        }
        RunCommand::Resume {
            run_id,
            node_id,
            value,
            idempotency_key,
        } => {
            let resume_value = json_arg("--value", &value)?;
            let r = client
                .call(
                    Method::POST,
                    &format!("/runs/{}/interrupts/{}", run_seg(&run_id), seg(&node_id)),
                    Some(&json!({ "resumeValue": resume_value })),
                    &idem_header(idempotency_key),
                )
                .await?;
            print_json(&r);
        }
        RunCommand::Cancel { run_id, reason } => {
            let mut body = json!({});
            if let Some(r) = reason {
                body["reason"] = json!(r);
            }
            let r = client
                .call(
                    Method::POST,
                    &format!("/runs/{}/cancel", run_seg(&run_id)),
                    Some(&body),
                    &[],
                )
                .await?;
            print_json(&r);
        }
        RunCommand::Events {
            run_id,
            follow,
            after,
        } => events(&client, &run_id, follow, after).await?,
    }
    Ok(0)
}

async fn events(client: &Client, run_id: &str, follow: bool, mut after: i64) -> anyhow::Result<()> {
    if !follow {
        // What is there now: the JSON variant of the event stream.
        let r = client
            .call(
                Method::GET,
                &format!(
                    "/runs/{}/events{}",
                    run_seg(run_id),
                    query(&[("afterSequence", Some(after.to_string()))])
                ),
                None,
                &[("Accept", "application/json".to_string())],
            )
            .await?;
        for e in r["events"].as_array().into_iter().flatten() {
            super::print_line(&e.to_string());
        }
        return Ok(());
    }
    let base = format!("/runs/{}/events/poll", run_seg(run_id));
    loop {
        let r = client
            .get(&format!(
                "{base}{}",
                query(&[
                    ("afterSequence", Some(after.to_string())),
                    ("timeout", Some("30".to_string())),
                ])
            ))
            .await?;
        let list = r["events"].as_array().cloned().unwrap_or_default();
        for e in &list {
            super::print_line(&e.to_string());
            if let Some(s) = e["sequence"].as_i64() {
                after = after.max(s);
            }
        }
        // The run ended and its log is drained.
        if r["isTerminal"].as_bool().unwrap_or(false) && list.is_empty() {
            return Ok(());
        }
    }
}

pub(super) async fn interrupt(remote: Remote, command: InterruptCommand) -> anyhow::Result<i32> {
    let client = Client::new(&remote)?;
    match command {
        InterruptCommand::List {
            status,
            workflow,
            kind,
            limit,
        } => {
            let q = query(&[
                ("status", status),
                ("workflowId", workflow),
                ("kind", kind),
                ("limit", limit.map(|l| l.to_string())),
            ]);
            print_json(&client.get(&format!("/interrupts{q}")).await?);
        }
        InterruptCommand::Reassign {
            run_id,
            node_id,
            from,
            to,
            reason,
        } => {
            let path = format!("/runs/{}/interrupts/{}/reassign", run_seg(&run_id), seg(&node_id));
            let body = json!({"from": from, "to": to, "reason": reason});
            print_json(&client.call(Method::POST, &path, Some(&body), &[]).await?);
        }
    }
    Ok(0)
}

pub(super) async fn delegation(remote: Remote, command: DelegationCommand) -> anyhow::Result<i32> {
    let client = Client::new(&remote)?;
    let answer = match command {
        DelegationCommand::List { all } => {
            let q = if all { "?all=true" } else { "" };
            client.get(&format!("/delegations{q}")).await?
        }
        DelegationCommand::Add {
            delegate,
            until,
            from,
            delegator,
            reason,
        } => {
            let body = json!({
                "delegate": delegate,
                "endsAt": until,
                "startsAt": from,
                "delegator": delegator,
                "reason": reason,
            });
            client
                .call(Method::POST, "/delegations", Some(&body), &[])
                .await?
        }
        DelegationCommand::Revoke { id } => {
            let path = format!("/delegations/{}/revoke", seg(&id));
            client.call(Method::POST, &path, Some(&json!({})), &[]).await?
        }
    };
    print_json(&answer);
    Ok(0)
}

pub(super) async fn put_workflow(remote: Remote, file: PathBuf) -> anyhow::Result<i32> {
    let text = read_file(&file)?;
    let def: Value = serde_json::from_str(&text).map_err(|e| anyhow!("{}: not JSON: {e}", file.display()))?;
    let id = def["id"]
        .as_str()
        .ok_or_else(|| anyhow!("{}: the definition has no string `id`", file.display()))?
        .to_string();
    let client = Client::new(&remote)?;
    let r = client
        .call(Method::PUT, &format!("/workflows/{}", seg(&id)), Some(&def), &[])
        .await?;
    print_json(&r);
    Ok(0)
}

pub(super) async fn mint_token(
    remote: Remote,
    run_id: String,
    node_id: String,
    intent: IntentArg,
) -> anyhow::Result<i32> {
    let client = Client::new(&remote)?;
    let intent = match intent {
        IntentArg::Resolve => "resolve",
        IntentArg::Inspect => "inspect",
    };
    let r = client
        .get(&format!(
            "/runs/{}/interrupts/{}?intent={intent}",
            run_seg(&run_id),
            seg(&node_id)
        ))
        .await?;
    let Some(token) = r["token"].as_str() else {
        let status = r["status"].as_str().unwrap_or("unknown");
        bail!(
            "the server returned no token for this interrupt (status {status}): it mints links only \
             while the interrupt is pending and a [[token_keys]] signing key is active; \
             use --config FILE --principal ID to mint offline"
        );
    };
    // Echo what the server granted, never what was asked: a caller who may
    // not decide gets an inspect link even when asking for resolve.
    let Some(granted) = r["intent"].as_str() else {
        bail!("the server did not say what the link may do (no `intent` in its answer); not printing it");
    };
    if granted != intent {
        eprintln!(
            "note: asked for a {intent} link; the server granted {granted} (this key may not decide this interrupt)"
        );
    }
    print_json(&json!({
        "token": token,
        "expiresAt": r["expiresAt"],
        "intent": granted,
        "url": format!("{}/t/{token}", remote.url.trim_end_matches('/')),
    }));
    Ok(0)
}
