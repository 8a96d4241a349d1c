//! The façade every adapter calls (REST handlers, server functions, CLI,
//! workers). Each mutating operation is one atomic command on the store
//! (`crate::store`). The façade is split by concern: `registry`
//! (definitions), `directory` (principals and API keys), `runs`, `timers`,
//! `tokens`, `views` (reads), `idempotency`, and the admin, inbox, outbox,
//! sign-in, token-key and peer modules.

use crate::auth::{self, Grant, Scope};
use crate::clock::{rfc3339, Clock, Millis, SystemClock};
use crate::definition::{self, SharedWorkflow, Workflow};
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use crate::events::{RunEvent, EVENT_LOG_SCHEMA_VERSION};
use crate::ids;
use crate::runtime::{
    decide, latest_interrupt_for_update, load_run_for_update, pending_interrupt_for_update,
    timeout_resolution, Decision, Exec, InterruptRow, NewRun, RunRow,
};
use crate::store::{Durability, Store, WriteConn};
use crate::token::{Claims, Intent, KeyRing, SigningKey};
use crate::FastMap;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;
use tollgate_wire::{ApprovalAction, InterruptKind, InterruptStatus, NodeId, RunId, RunStatus};

pub mod admin;
pub mod delegations;
mod directory;
pub mod fresh_link;
mod idempotency;
pub mod inbox;
pub mod mail;
pub mod outbox;
mod peers;
mod registry;
mod runs;
pub mod sign_in;
mod timers;
pub mod token_keys;
mod tokens;
mod views;

pub use idempotency::Idem;
pub(crate) use runs::snapshot_of;
pub use runs::MAX_RECURSION_LIMIT;
pub use tokens::{CallbackLink, MailLink};

pub struct EngineOptions {
    pub database_url: String,
    pub durability: Durability,
    /// SQLite: the writer's page cache in MiB (`store::DEFAULT_CACHE_MIB`).
    pub cache_mib: u32,
    pub clock: Arc<dyn Clock>,
    /// Optional protocol families this instance offers (registration and discovery).
    pub capabilities: definition::Capabilities,
}

impl EngineOptions {
    pub fn new(database_url: impl Into<String>) -> Self {
        EngineOptions {
            database_url: database_url.into(),
            durability: Durability::Full,
            cache_mib: crate::store::DEFAULT_CACHE_MIB,
            clock: Arc::new(SystemClock),
            capabilities: definition::Capabilities::default(),
        }
    }
}

/// How long an API key's grant is trusted from the cache before it is read again.
pub const API_KEY_RECHECK_MS: Millis = 10_000;

/// How long a stream waiting on a store other instances share goes without
/// reading again when no notice arrives (see [`Engine::shares_store`]).
pub const PEER_RECHECK: std::time::Duration = std::time::Duration::from_secs(5);

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    clock: Arc<dyn Clock>,
    capabilities: definition::Capabilities,
    /// Compiled definitions by content digest.
    compiled: RwLock<FastMap<String, SharedWorkflow>>,
    /// Current digest of each (tenant, workflow id); tenant `""` is the instance.
    current: RwLock<FastMap<(String, String), String>>,
    /// API key digest → grant, with when it was last read from the database.
    keys: RwLock<FastMap<String, (Grant, Millis)>>,
    /// Run ids whose log grew; for SSE and long polls.
    notices: broadcast::Sender<String>,
    /// How many notices were sent so far, by tenant (see [`Engine::change_count`]).
    changes: std::sync::Mutex<FastMap<String, u64>>,
    tokens: RwLock<KeyRing>,
    token_ttl_ms: RwLock<Millis>,
    /// Lifetime of a mailed link (capped at the interrupt's deadline): a
    /// person reads mail later than a client calls an API.
    mail_link_ttl_ms: RwLock<Millis>,
    /// Held across a reload's read and store: two reloads (the timer and a
    /// peer's notice) never interleave, so an older read cannot overwrite a
    /// newer one (a revoked key verifying again, an old workflow version).
    reloading: tokio::sync::Mutex<()>,
    /// Directory entries read so far, with when; read again after
    /// [`sign_in::DIRECTORY_RECHECK_MS`] so that changes by the CLI or
    /// another process take effect within seconds.
    principals: RwLock<FastMap<String, (Principal, Millis)>>,
    /// Sign-in throttle, hashing slots and session checks.
    sign_in: sign_in::State,
    /// Callback delivery: `None` refuses `callbackUrl`; `Some` accepts URLs the egress guard passes.
    callbacks: RwLock<Option<crate::egress::EgressPolicy>>,
    /// The other instances on the same PostgreSQL database (none on SQLite).
    peers: Option<peers::Peers>,
}

/// The result of an idempotent operation; `replayed` when it was served from the record.
#[derive(Debug)]
pub struct Outcome<T> {
    pub result: Result<T>,
    pub replayed: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct RunCreated {
    pub run_id: RunId,
    pub status: RunStatus,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub run_id: RunId,
    pub node_id: NodeId,
    pub status: RunStatus,
}

#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateRun {
    pub workflow_id: String,
    #[serde(default)]
    pub inputs: Option<Value>,
    #[serde(default)]
    pub residency: Option<Value>,
    #[serde(default)]
    pub tenant_id: Option<String>,
    #[serde(default)]
    pub scope_id: Option<Value>,
    #[serde(default)]
    pub callback_url: Option<String>,
    #[serde(default)]
    pub mode: Option<Value>,
    #[serde(default)]
    pub eval_suite_ref: Option<Value>,
    #[serde(default)]
    pub agent_id: Option<Value>,
    #[serde(default)]
    pub configurable: Option<Value>,
    #[serde(default)]
    pub tags: Option<Value>,
    #[serde(default)]
    pub metadata: Option<Value>,
    /// The person of the tenant the run is for, when the caller (holding
    /// `runs:on-behalf`) creates it on their behalf.
    #[serde(default)]
    pub requested_by: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowInfo {
    pub id: String,
    pub name: String,
    pub version: String,
    /// `instance` (from `[workflows] dirs`, read-only to tenants) or `tenant` (the caller's own).
    pub scope: String,
}

/// A vote as the audit shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VoteView {
    /// The seat: whose vote it counts as.
    pub principal: String,
    /// The delegate who cast it in `principal`'s place, if someone else did.
    pub cast_by: Option<String>,
    pub action: ApprovalAction,
    pub eligible_via: String,
    pub decided_at: String,
    pub counted: bool,
    pub resume_value: Value,
}

/// A pending (or past) interrupt with its contract, votes and deadline.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InterruptView {
    pub interrupt_id: String,
    pub run_id: RunId,
    pub node_id: NodeId,
    pub workflow_id: String,
    pub key: String,
    pub kind: InterruptKind,
    pub status: InterruptStatus,
    pub title: String,
    pub payload: Value,
    pub request_schema: Value,
    pub resume_schema: Value,
    pub outcomes: Vec<String>,
    pub typed: bool,
    pub request: Value,
    pub created_at: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolved_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resolution: Option<Value>,
    pub votes: Vec<VoteView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quorum: Option<Value>,
    /// Decided only by a signed-in principal, never by a link (the gate's
    /// `profile`); for the console's and the mail's wording, not on the wire.
    #[serde(skip)]
    pub requires_sign_in: bool,
}

/// Filter for interrupt listings.
#[derive(Debug, Clone, Default)]
pub struct InterruptFilter {
    pub status: Option<InterruptStatus>,
    pub workflow_id: Option<String>,
    pub kind: Option<InterruptKind>,
    pub limit: i64,
}

/// The owner of instance-wide workflow definitions (no tenant id is empty).
const INSTANCE: &str = "";
const SCOPE_INSTANCE: &str = "instance";
const SCOPE_TENANT: &str = "tenant";

fn workflow_info(wf: &Workflow, owner: &str) -> WorkflowInfo {
    WorkflowInfo {
        id: wf.id.clone(),
        name: wf.name.clone(),
        version: wf.version.clone(),
        scope: if owner == INSTANCE {
            SCOPE_INSTANCE
        } else {
            SCOPE_TENANT
        }
        .to_string(),
    }
}

fn workflow_digest(raw: &Value) -> String {
    hex::encode(Sha256::digest(raw.to_string().as_bytes()))
}

impl Engine {
    pub async fn open(options: EngineOptions) -> Result<Engine> {
        let store = Store::open_with(&options.database_url, options.durability, options.cache_mib).await?;
        let grouped = store.write(crate::store::inbox::backfill).await?;
        if grouped > 0 {
            tracing::info!(
                interrupts = grouped,
                "inbox counts rebuilt for pending interrupts stored before them"
            );
        }
        let (peers, listener) = match store.dialect() {
            crate::store::Dialect::Postgres => {
                let (peers, listener) =
                    peers::Peers::start(&options.database_url, store.read.clone()).await?;
                (Some(peers), Some(listener))
            }
            crate::store::Dialect::Sqlite => (None, None),
        };
        let (notices, _) = broadcast::channel(4096);
        let engine = Engine {
            inner: Arc::new(Inner {
                store,
                clock: options.clock,
                capabilities: options.capabilities,
                compiled: RwLock::new(FastMap::default()),
                current: RwLock::new(FastMap::default()),
                keys: RwLock::new(FastMap::default()),
                notices,
                changes: Default::default(),
                tokens: RwLock::new(KeyRing::default()),
                token_ttl_ms: RwLock::new(crate::token::DEFAULT_TTL_MS),
                mail_link_ttl_ms: RwLock::new(crate::token::DEFAULT_MAIL_LINK_TTL_MS),
                reloading: tokio::sync::Mutex::new(()),
                principals: RwLock::new(FastMap::default()),
                sign_in: sign_in::State::default(),
                callbacks: RwLock::new(None),
                peers,
            }),
        };
        if let (Some(listener), Some(p)) = (listener, &engine.inner.peers) {
            peers::spawn_listener(&engine.inner, p.instance.clone(), listener);
        }
        engine.load_registered().await?;
        engine.reload_token_keys().await?;
        Ok(engine)
    }

    /// Whether other instances commit to this store (PostgreSQL with peers):
    /// their notices come after their commits, and one that dies between
    /// the two never sends its own, so a waiting stream also reads again
    /// now and then ([`PEER_RECHECK`]).
    pub fn shares_store(&self) -> bool {
        self.inner.peers.is_some()
    }

    /// The optional protocol families this instance offers.
    pub fn capabilities(&self) -> definition::Capabilities {
        self.inner.capabilities
    }

    pub fn now(&self) -> Millis {
        self.inner.clock.now_ms()
    }

    /// Wakes this instance's streams on a run and tells the other instances.
    fn notify(&self, run_id: &str) {
        self.notify_local(run_id);
        self.publish(peers::Change::Run(run_id.to_string()));
    }

    fn notify_local(&self, run_id: &str) {
        {
            let mut changes = self.inner.changes.lock().expect("lock");
            let tenant = ids::tenant_of(run_id);
            match changes.get_mut(tenant) {
                Some(n) => *n += 1,
                None => {
                    changes.insert(tenant.to_string(), 1);
                }
            }
        }
        let _ = self.inner.notices.send(run_id.to_string());
    }

    /// How many committed changes of `tenant`'s runs were broadcast since the
    /// engine opened. Read it before a query; if it has grown since, the
    /// result may be stale (the live inbox uses it to catch changes made
    /// before it subscribed). Counted by tenant: the number shows nothing of
    /// how busy other tenants are.
    pub fn change_count(&self, tenant: &str) -> u64 {
        self.inner
            .changes
            .lock()
            .expect("lock")
            .get(tenant)
            .copied()
            .unwrap_or(0)
    }

    /// Run ids whose event log grew, as they commit.
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.inner.notices.subscribe()
    }
}
