//! Delivers the engine's `callback` outbox rows: POSTs each body to the run's
//! `callbackUrl`, signed with `OpenWOP-Signature`. The body is the stored
//! one plus, on an interrupt's callback, a link for the run's owner that the
//! engine mints at each attempt (`Engine::callback_body_at_delivery`); the
//! signature covers the body as sent.
//!
//! Every attempt re-checks the URL with the engine's egress guard, resolves
//! the host itself, checks EVERY resolved address, and connects only to the
//! checked addresses (pinned in the client, no proxy). Redirects are never
//! followed: a 3xx is a failed attempt. Failures retry with the outbox
//! backoff; a refusal by the guard gives the message up at once.

use crate::config::Config;
use futures_util::future::BoxFuture;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tollgate::egress::{self, EgressPolicy};
use tollgate::engine::outbox::OutboxItem;
use tollgate::Engine;
use url::Host;

/// Host name → addresses. Injectable so the delivery-time re-check is testable.
pub trait Resolve: Send + Sync {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>>;
}

/// The system resolver (`getaddrinfo` through tokio).
pub struct SystemResolver;

impl Resolve for SystemResolver {
    fn lookup<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

/// What one attempt came to.
#[derive(Debug, PartialEq)]
pub enum Attempt {
    /// 2xx.
    Delivered(u16),
    /// Answered with another status (3xx included: never followed).
    Failed(Option<u16>, String),
    /// The egress guard refused the URL or a resolved address: not sent.
    Refused(String),
}

pub struct Deliverer {
    pub secret: String,
    pub policy: EgressPolicy,
    pub timeout: Duration,
    pub resolver: Arc<dyn Resolve>,
}

impl Deliverer {
    /// Posts `body` to `url` once, with every egress check.
    pub async fn attempt(&self, url: &str, body: &str, delivery_id: &str, now_secs: i64) -> Attempt {
        let url = match egress::check_url(url, self.policy) {
            Ok(u) => u,
            Err(why) => return Attempt::Refused(format!("callbackUrl refused at delivery: {why}")),
        };
        let port = url.port_or_known_default().unwrap_or(443);
        let mut builder = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .timeout(self.timeout)
            .connect_timeout(self.timeout)
            .user_agent(concat!("tollgate/", env!("CARGO_PKG_VERSION")));
        match url.host() {
            Some(Host::Domain(name)) => {
                let addrs = match self.resolver.lookup(name, port).await {
                    Ok(a) if !a.is_empty() => a,
                    Ok(_) => return Attempt::Failed(None, format!("{name} resolves to no address")),
                    Err(e) => return Attempt::Failed(None, format!("resolving {name}: {e}")),
                };
                for a in &addrs {
                    if let Err(why) = egress::check_ip(a.ip(), self.policy) {
                        return Attempt::Refused(format!(
                            "callbackUrl refused at delivery: {name} resolves to {}: {why}",
                            a.ip()
                        ));
                    }
                }
                // Connect only to the addresses just checked.
                builder = builder.resolve_to_addrs(name, &addrs);
            }
            Some(Host::Ipv4(ip)) => debug_assert!(egress::check_ip(IpAddr::V4(ip), self.policy).is_ok()),
            Some(Host::Ipv6(ip)) => debug_assert!(egress::check_ip(IpAddr::V6(ip), self.policy).is_ok()),
            None => return Attempt::Refused("callbackUrl has no host".into()),
        }
        let client = match builder.build() {
            Ok(c) => c,
            Err(e) => return Attempt::Failed(None, format!("HTTP client: {e}")),
        };
        let signature = tollgate::callback::sign(&self.secret, now_secs, body.as_bytes());
        let sent = client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(tollgate::callback::SIGNATURE_HEADER, signature)
            .header("OpenWOP-Delivery", delivery_id)
            .body(body.to_string())
            .send()
            .await;
        match sent {
            Ok(res) if res.status().is_success() => Attempt::Delivered(res.status().as_u16()),
            Ok(res) if res.status().is_redirection() => {
                let to = res
                    .headers()
                    .get(reqwest::header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("?")
                    .to_string();
                Attempt::Failed(
                    Some(res.status().as_u16()),
                    format!(
                        "answered {} (redirect to {to}); redirects are not followed",
                        res.status()
                    ),
                )
            }
            Ok(res) => Attempt::Failed(Some(res.status().as_u16()), format!("answered {}", res.status())),
            Err(e) => Attempt::Failed(None, format!("request failed: {e}")),
        }
    }

    /// Delivers one outbox row and records the outcome.
    pub async fn deliver(&self, engine: &Engine, item: &OutboxItem) {
        // The stored body plus, for an interrupt, a link for the run's owner
        // minted now (never stored); the signature covers exactly this.
        let body = match engine.callback_body_at_delivery(item).await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(id = item.id, error = %e, "callback body not ready; will retry");
                if let Err(e) = engine.callback_failed(item.id, None, e.to_string(), true).await {
                    tracing::error!(error = %e, "recording callback delivery state failed");
                }
                return;
            }
        };
        let delivery_id = format!("{}#{}", item.run_id, item.id);
        let outcome = self
            .attempt(&item.address, &body, &delivery_id, engine.now() / 1000)
            .await;
        let via = if item.address.starts_with("http://") {
            "http"
        } else {
            "https"
        };
        let recorded = match outcome {
            Attempt::Delivered(status) => {
                engine
                    .callback_delivered(
                        item.id,
                        via,
                        status,
                        format!("POST {} answered {status}", item.address),
                    )
                    .await
            }
            Attempt::Failed(status, error) => {
                tracing::warn!(id = item.id, url = %item.address, %error, "callback delivery failed; will retry");
                engine.callback_failed(item.id, status, error, true).await
            }
            Attempt::Refused(error) => {
                tracing::warn!(id = item.id, url = %item.address, %error, "callback refused by the egress guard");
                engine.callback_failed(item.id, None, error, false).await
            }
        };
        if let Err(e) = recorded {
            tracing::error!(error = %e, "recording callback delivery state failed");
        }
    }
}

/// The delivery policy from the configuration (`None`: callbacks are off).
pub fn policy(config: &Config) -> Option<EgressPolicy> {
    config.callbacks.secret.as_ref().map(|_| EgressPolicy {
        allow_loopback: config.callbacks.allow_loopback,
    })
}

/// Delivers due callbacks until the process stops.
pub async fn run(engine: Engine, config: Arc<Config>) {
    let (Some(secret), Some(policy)) = (config.callbacks.secret.clone(), policy(&config)) else {
        return;
    };
    let deliverer = Deliverer {
        secret,
        policy,
        timeout: Duration::from_millis(config.callbacks.timeout_ms),
        resolver: Arc::new(SystemResolver),
    };
    // Claimed a few at a time, so that at the timeout each is delivered
    // before the claim's lease runs out.
    let batch = (tollgate::engine::outbox::OUTBOX_LEASE_MS / (config.callbacks.timeout_ms.max(1) as i64 * 2))
        .clamp(1, 20);
    loop {
        match engine
            .outbox_due_of(tollgate::wire::OutboxKind::Callback, batch)
            .await
        {
            Ok(items) => {
                let full = items.len() as i64 == batch;
                for item in items {
                    deliverer.deliver(&engine, &item).await;
                }
                if full {
                    continue;
                }
            }
            Err(e) => tracing::error!(error = %e, "reading the outbox failed"),
        }
        tokio::time::sleep(Duration::from_millis(config.callbacks.poll_interval_ms.max(20))).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// A resolver that answers from a table.
    struct Table(HashMap<String, Vec<IpAddr>>);

    impl Resolve for Table {
        fn lookup<'a>(&'a self, host: &'a str, port: u16) -> BoxFuture<'a, std::io::Result<Vec<SocketAddr>>> {
            Box::pin(async move {
                Ok(self
                    .0
                    .get(host)
                    .map(|ips| ips.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
                    .unwrap_or_default())
            })
        }
    }

    fn deliverer(allow_loopback: bool, table: &[(&str, &[&str])]) -> Deliverer {
        Deliverer {
            secret: "0123456789abcdef0123456789abcdef".into(),
            policy: EgressPolicy { allow_loopback },
            timeout: Duration::from_secs(5),
            resolver: Arc::new(Table(
                table
                    .iter()
                    .map(|(h, ips)| (h.to_string(), ips.iter().map(|i| i.parse().unwrap()).collect()))
                    .collect(),
            )),
        }
    }

    /// A local receiver counting the requests it gets.
    async fn receiver() -> (u16, Arc<std::sync::atomic::AtomicUsize>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hits = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let h = hits.clone();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                h.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n")
                    .await;
            }
        });
        (port, hits)
    }

    /// The guard runs again at delivery on what the name resolves to NOW: a
    /// public-looking name that resolves to loopback is refused before any
    /// connection (DNS rebinding), even though it passed at create.
    #[tokio::test]
    async fn a_name_resolving_to_loopback_is_refused_at_delivery() {
        let (port, hits) = receiver().await;
        let url = format!("https://callback.example.com:{port}/hook");
        assert!(
            egress::check_url(&url, EgressPolicy::default()).is_ok(),
            "passes at create"
        );
        let d = deliverer(false, &[("callback.example.com", &["127.0.0.1"])]);
        match d.attempt(&url, "{}", "x", 0).await {
            Attempt::Refused(why) => {
                assert!(why.contains("resolves to 127.0.0.1"), "{why}");
                assert!(why.contains("loopback"), "{why}");
            }
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert_eq!(
            hits.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "nothing was sent"
        );
    }

    /// One bad address among several refuses the delivery.
    #[tokio::test]
    async fn every_resolved_address_is_checked() {
        let d = deliverer(false, &[("mixed.example.com", &["93.184.215.14", "10.0.0.7"])]);
        match d.attempt("https://mixed.example.com/hook", "{}", "x", 0).await {
            Attempt::Refused(why) => assert!(why.contains("10.0.0.7"), "{why}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
        let d = deliverer(
            false,
            &[("v6.example.com", &["2606:4700::1", "::ffff:169.254.169.254"])],
        );
        match d.attempt("https://v6.example.com/hook", "{}", "x", 0).await {
            Attempt::Refused(why) => assert!(why.contains("metadata"), "{why}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }

    /// The connection goes to the checked (pinned) address: with
    /// `allow_loopback`, a name resolved by our resolver to 127.0.0.1 reaches
    /// the local receiver although the name itself resolves nowhere.
    #[tokio::test]
    async fn the_connection_goes_to_the_checked_address() {
        let (port, hits) = receiver().await;
        let d = deliverer(true, &[("pinned.invalid-tld-for-tests.example", &["127.0.0.1"])]);
        let got = d
            .attempt(
                &format!("http://pinned.invalid-tld-for-tests.example:{port}/hook"),
                "{}",
                "x",
                0,
            )
            .await;
        assert_eq!(got, Attempt::Delivered(204));
        assert_eq!(hits.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_url_is_judged_again_at_delivery() {
        let d = deliverer(false, &[]);
        match d.attempt("http://127.0.0.1:9/hook", "{}", "x", 0).await {
            Attempt::Refused(why) => assert!(why.contains("https"), "{why}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
    }
}
