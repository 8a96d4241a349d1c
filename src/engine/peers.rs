//! Instances on one PostgreSQL database tell each other what changed, so that
//! caches and live streams follow a change made through any of them.
//!
//! After a command commits, the instance that ran it publishes a short
//! message with `pg_notify` on one channel; every other instance listens
//! (`LISTEN`) and drops the cached entry, reloads, or wakes its streams.
//! Messages are hints sent after the commit: a missed one (the listener's
//! connection dropped) only costs freshness, so on reconnecting an instance
//! drops every cache it holds. On SQLite there is one instance and nothing
//! to tell.

use super::{Engine, Inner};
use crate::error::Result;
use crate::store::WriteConn;
use sqlx::postgres::PgListener;
use sqlx::AnyPool;
use std::sync::{Arc, Weak};
use std::time::Duration;
use tokio::sync::mpsc;

/// The channel every instance listens on.
const CHANNEL: &str = "tollgate_changes";

/// A committed change other instances must see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Change {
    /// A run's event log grew (wakes SSE streams, long polls and live inboxes).
    Run(String),
    /// A directory entry or its password changed or was removed.
    Principal(String),
    /// An API key (by digest) was created, changed or revoked.
    ApiKey(String),
    /// A workflow definition was registered or replaced.
    Workflows,
    /// A token signing key was added, activated, retired or revoked.
    TokenKeys,
}

impl Change {
    /// One line: an id's backslashes and line breaks are escaped, since a
    /// notification carries several messages, a line each.
    fn encode(&self) -> String {
        match self {
            Change::Run(id) => format!("run {}", escape(id)),
            Change::Principal(id) => format!("principal {}", escape(id)),
            Change::ApiKey(hash) => format!("key {hash}"),
            Change::Workflows => "workflows".into(),
            Change::TokenKeys => "token-keys".into(),
        }
    }

    fn decode(text: &str) -> Option<Change> {
        let (kind, arg) = text.split_once(' ').unwrap_or((text, ""));
        let arg = unescape(arg)?;
        Some(match (kind, arg.as_str()) {
            ("run", id) if !id.is_empty() => Change::Run(id.into()),
            ("principal", id) if !id.is_empty() => Change::Principal(id.into()),
            ("key", hash) if !hash.is_empty() => Change::ApiKey(hash.into()),
            ("workflows", "") => Change::Workflows,
            ("token-keys", "") => Change::TokenKeys,
            _ => return None,
        })
    }
}

fn escape(id: &str) -> String {
    id.replace('\\', "\\\\").replace('\n', "\\n")
}

fn unescape(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        out.push(match c {
            '\\' => match chars.next()? {
                'n' => '\n',
                '\\' => '\\',
                _ => return None,
            },
            c => c,
        });
    }
    Some(out)
}

/// This instance's side of the feed.
pub(crate) struct Peers {
    /// Prefix of this instance's messages, so it skips its own.
    pub(super) instance: String,
    outgoing: mpsc::UnboundedSender<String>,
}

impl Peers {
    /// Starts the publisher and the listener of an engine on PostgreSQL.
    pub(crate) async fn start(url: &str, pool: AnyPool) -> Result<(Peers, PgListener)> {
        let instance = crate::ids::new_opaque();
        let (outgoing, incoming) = mpsc::unbounded_channel();
        tokio::spawn(publish(pool, incoming));
        let mut listener = PgListener::connect(url).await?;
        listener.listen(CHANNEL).await?;
        Ok((Peers { instance, outgoing }, listener))
    }

    pub(crate) fn send(&self, change: &Change) {
        let _ = self
            .outgoing
            .send(format!("{} {}", self.instance, change.encode()));
    }
}

/// Bytes of messages one notification carries (PostgreSQL's payload limit is 8,000).
const NOTIFY_BYTES: usize = 7_000;

/// Sends queued messages in order, those queued meanwhile together in one
/// `pg_notify` (a line each): under load, one notification per batch of
/// commits rather than one per commit.
async fn publish(pool: AnyPool, mut incoming: mpsc::UnboundedReceiver<String>) {
    while let Some(mut payload) = incoming.recv().await {
        while payload.len() < NOTIFY_BYTES {
            match incoming.try_recv() {
                Ok(message) => {
                    payload.push('\n');
                    payload.push_str(&message);
                }
                Err(_) => break,
            }
        }
        if let Err(e) = crate::store::notices::notify(&pool, CHANNEL, &payload).await {
            tracing::warn!(error = %e, "telling other instances of a change failed");
        }
    }
}

/// Applies other instances' messages until the engine is dropped.
pub(crate) async fn listen(engine: Weak<Inner>, instance: String, mut listener: PgListener) {
    let own = format!("{instance} ");
    loop {
        let message = tokio::time::timeout(Duration::from_secs(1), listener.try_recv()).await;
        let Some(inner) = engine.upgrade() else {
            return;
        };
        let engine = Engine { inner };
        match message {
            Err(_) => continue, // no message this second; check the engine is alive
            Ok(Ok(Some(n))) => {
                for message in n.payload().split('\n') {
                    if message.starts_with(&own) {
                        continue;
                    }
                    let text = message.split_once(' ').map_or("", |(_, rest)| rest);
                    match Change::decode(text) {
                        Some(change) => engine.apply_peer_change(change).await,
                        None => tracing::warn!(%message, "unknown change message"),
                    }
                }
            }
            Ok(Ok(None)) => {
                // The connection dropped (it reconnects on the next call):
                // messages may have been missed.
                tracing::warn!("change feed reconnecting; dropping caches");
                engine.drop_caches().await;
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "change feed failed; retrying");
                engine.drop_caches().await;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
        }
    }
}

/// Sends `message` (from [`Engine::peer_message`]) inside a write command:
/// PostgreSQL delivers it when, and only if, the command commits.
pub(crate) fn notify_in(conn: &WriteConn, message: &Option<String>) -> Result<()> {
    if let Some(m) = message {
        crate::store::notices::notify_in(conn, CHANNEL, m)?;
    }
    Ok(())
}

impl Engine {
    /// Tells other instances (if any) of a committed change, after the fact.
    /// For run notices: frequent, and only hints.
    pub(crate) fn publish(&self, change: Change) {
        if let Some(peers) = &self.inner.peers {
            peers.send(&change);
        }
    }

    /// The message for a change that must reach every instance even if this
    /// one dies right after the commit; send it with [`notify_in`] in the
    /// command that makes the change (directory, keys, definitions).
    pub(crate) fn peer_message(&self, change: Change) -> Option<String> {
        self.inner
            .peers
            .as_ref()
            .map(|p| format!("{} {}", p.instance, change.encode()))
    }

    async fn apply_peer_change(&self, change: Change) {
        match change {
            Change::Run(run_id) => self.notify_local(&run_id),
            Change::Principal(id) => {
                self.forget_principal(&id);
                self.forget_credentials(&id);
            }
            Change::ApiKey(hash) => self.forget_api_key(&hash),
            Change::Workflows => {
                if let Err(e) = self.load_registered().await {
                    tracing::warn!(error = %e, "reloading workflows failed");
                }
            }
            Change::TokenKeys => {
                if let Err(e) = self.reload_token_keys().await {
                    tracing::warn!(error = %e, "reloading token keys failed");
                }
            }
        }
    }

    /// Forgets everything cached from the database (after missed messages).
    async fn drop_caches(&self) {
        self.inner.principals.write().expect("lock").clear();
        self.inner.keys.write().expect("lock").clear();
        self.inner.sign_in.credentials.write().expect("lock").clear();
        let _ = self.load_registered().await;
        let _ = self.reload_token_keys().await;
    }
}

/// Keeps the listener's engine handle weak: the task ends with the engine.
pub(crate) fn spawn_listener(engine: &Arc<Inner>, instance: String, listener: PgListener) {
    tokio::spawn(listen(Arc::downgrade(engine), instance, listener));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changes_round_trip_and_junk_is_refused() {
        for c in [
            Change::Run("acme/r1".into()),
            Change::Principal("ann".into()),
            Change::Principal("a\nrun x\\n".into()),
            Change::ApiKey("ab12".into()),
            Change::Workflows,
            Change::TokenKeys,
        ] {
            assert_eq!(Change::decode(&c.encode()), Some(c));
        }
        let c = Change::Principal("a\nrun x".into());
        assert_eq!(c.encode().split('\n').count(), 1, "one line: {c:?}");
        for junk in ["", "run", "run ", "nope x", "workflows x", "principal a\\x"] {
            assert_eq!(Change::decode(junk), None, "{junk:?}");
        }
    }
}
