//! The façade every adapter calls (REST handlers, server functions, CLI,
//! workers). Each mutating operation is one command on the single writer.

use crate::args;
use crate::auth::{self, Grant, Scope};
use crate::clock::{rfc3339, Clock, Millis, SystemClock};
use crate::definition::{self, SharedWorkflow, Workflow};
use crate::directory::{Actor, Principal};
use crate::error::{EngineError, Result};
use crate::events::{EventRow, RunEvent, EVENT_LOG_SCHEMA_VERSION};
use crate::ids;
use crate::runtime::{
    self, decide, latest_interrupt, latest_interrupt_for_update, load_run, load_run_for_update,
    pending_interrupt_for_update, timeout_resolution, Decision, Exec, InterruptRow, NewRun, RunRow,
    INTERRUPT_COLUMNS,
};
use crate::store::{Durability, Store, WriteConn};
use crate::token::{Claims, Intent, KeyRing, SigningKey};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use tokio::sync::broadcast;

pub mod admin;
pub mod inbox;
pub mod outbox;
mod peers;
pub mod sign_in;
pub mod token_keys;

pub struct EngineOptions {
    pub database_url: String,
    pub durability: Durability,
    pub clock: Arc<dyn Clock>,
}

impl EngineOptions {
    pub fn new(database_url: impl Into<String>) -> Self {
        EngineOptions {
            database_url: database_url.into(),
            durability: Durability::Full,
            clock: Arc::new(SystemClock),
        }
    }
}

/// How long an API key's grant is trusted from the cache before it is read again.
pub const API_KEY_RECHECK_MS: Millis = 10_000;

#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    clock: Arc<dyn Clock>,
    /// Compiled definitions by content digest.
    compiled: RwLock<HashMap<String, SharedWorkflow>>,
    /// Current digest of each (tenant, workflow id); tenant `""` is the instance.
    current: RwLock<HashMap<(String, String), String>>,
    /// API key digest → grant, with when it was last read from the database.
    keys: RwLock<HashMap<String, (Grant, Millis)>>,
    /// Run ids whose log grew; for SSE and long polls.
    notices: broadcast::Sender<String>,
    /// How many notices were sent so far (see [`Engine::change_count`]).
    changes: std::sync::atomic::AtomicU64,
    tokens: RwLock<KeyRing>,
    token_ttl_ms: RwLock<Millis>,
    /// Directory entries read so far, with when; read again after
    /// [`sign_in::DIRECTORY_RECHECK_MS`] so that changes by the CLI or
    /// another process take effect within seconds.
    principals: RwLock<HashMap<String, (Principal, Millis)>>,
    /// Sign-in throttle, hashing slots and session checks.
    sign_in: sign_in::State,
    /// Callback delivery: `None` refuses `callbackUrl`; `Some` accepts URLs the egress guard passes.
    callbacks: RwLock<Option<crate::egress::EgressPolicy>>,
    /// The other instances on the same PostgreSQL database (none on SQLite).
    peers: Option<peers::Peers>,
}

/// An Idempotency-Key bound to one operation and request body.
#[derive(Debug, Clone)]
pub struct Idem {
    key: String,
    operation: String,
    digest: String,
}

impl Idem {
    /// Checks the key's grammar and fingerprints the request.
    pub fn new(key: &str, operation: &str, body: &Value) -> Result<Idem> {
        if !ids::is_idempotency_key(key) {
            return Err(EngineError::IdempotencyKeyInvalid(
                "Idempotency-Key must match ^[A-Za-z0-9._~-]{22,128}$".into(),
            ));
        }
        let digest = hex::encode(Sha256::digest(format!("{operation}\n{body}").as_bytes()));
        Ok(Idem {
            key: key.to_string(),
            operation: operation.to_string(),
            digest,
        })
    }
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
    pub run_id: String,
    pub status: String,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Resolved {
    pub run_id: String,
    pub node_id: String,
    pub status: String,
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

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Overview {
    pub workflows: i64,
    pub runs: i64,
    pub pending_interrupts: i64,
}

/// A vote as the audit shows it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct VoteView {
    pub principal: String,
    pub action: String,
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
    pub run_id: String,
    pub node_id: String,
    pub workflow_id: String,
    pub key: String,
    pub kind: String,
    pub status: String,
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
}

/// Filter for interrupt listings.
#[derive(Debug, Clone, Default)]
pub struct InterruptFilter {
    pub status: Option<String>,
    pub workflow_id: Option<String>,
    pub kind: Option<String>,
    pub limit: i64,
}

fn json_or_null(s: Option<&str>) -> Value {
    s.and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null)
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
        let store = Store::open(&options.database_url, options.durability).await?;
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
                compiled: RwLock::new(HashMap::new()),
                current: RwLock::new(HashMap::new()),
                keys: RwLock::new(HashMap::new()),
                notices,
                changes: std::sync::atomic::AtomicU64::new(0),
                tokens: RwLock::new(KeyRing::default()),
                token_ttl_ms: RwLock::new(crate::token::DEFAULT_TTL_MS),
                principals: RwLock::new(HashMap::new()),
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

    pub fn now(&self) -> Millis {
        self.inner.clock.now_ms()
    }

    /// Wakes this instance's streams on a run and tells the other instances.
    fn notify(&self, run_id: &str) {
        self.notify_local(run_id);
        self.publish(peers::Change::Run(run_id.to_string()));
    }

    fn notify_local(&self, run_id: &str) {
        self.inner
            .changes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let _ = self.inner.notices.send(run_id.to_string());
    }

    /// How many committed changes were broadcast since the engine opened.
    /// Read it before a query; if it has grown since, the result may be stale
    /// (the live inbox uses it to catch changes made before it subscribed).
    pub fn change_count(&self) -> u64 {
        self.inner.changes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Run ids whose event log grew, as they commit.
    pub fn subscribe(&self) -> broadcast::Receiver<String> {
        self.inner.notices.subscribe()
    }

    // ----- definitions -------------------------------------------------------

    async fn load_registered(&self) -> Result<()> {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(&self.inner.store.q("SELECT w.tenant, w.id, w.digest, v.definition FROM workflows w JOIN workflow_versions v ON v.digest = w.digest"))
        .fetch_all(&self.inner.store.read)
        .await?;
        for (tenant, id, digest, text) in rows {
            let raw: Value = serde_json::from_str(&text)?;
            match definition::compile(raw) {
                Ok(wf) => {
                    self.inner
                        .compiled
                        .write()
                        .expect("lock")
                        .insert(digest.clone(), Arc::new(wf));
                    self.inner
                        .current
                        .write()
                        .expect("lock")
                        .insert((tenant, id), digest);
                }
                Err(e) => {
                    tracing::warn!(workflow = %id, tenant = %tenant, error = %e, "stored workflow no longer validates; not listed")
                }
            }
        }
        Ok(())
    }

    /// Validates and registers (or replaces) an instance-wide workflow
    /// definition: the instance operator's act (`[workflows] dirs`, tests,
    /// tools on the database). Tenants register theirs with [`Engine::put_tenant_workflow`].
    pub async fn register_workflow(&self, raw: Value) -> Result<WorkflowInfo> {
        let wf = definition::compile(raw)?;
        self.store_workflow(INSTANCE, wf).await
    }

    /// `PUT /workflows/{id}` by a tenant admin: registers or replaces the
    /// definition in the actor's tenant; `true` when it was new. An
    /// instance-wide definition with that id is read-only to tenants (403).
    pub async fn put_tenant_workflow(&self, actor: &Actor, raw: Value) -> Result<(WorkflowInfo, bool)> {
        actor.require(Scope::Admin)?;
        let wf = definition::compile(raw)?;
        if self.current_of(INSTANCE, &wf.id).is_some() {
            return Err(EngineError::Forbidden(format!(
                "workflow \"{}\" is instance-wide (loaded by the instance operator from [workflows] dirs) and read-only to tenants; register yours under another id",
                wf.id
            )));
        }
        let existed = self.current_of(actor.tenant(), &wf.id).is_some();
        let info = self.store_workflow(actor.tenant(), wf).await?;
        Ok((info, !existed))
    }

    async fn store_workflow(&self, tenant: &str, wf: Workflow) -> Result<WorkflowInfo> {
        let digest = workflow_digest(&wf.raw);
        let info = workflow_info(&wf, tenant);
        let now = self.now();
        let (t, id, d, text, version, name) = (
            tenant.to_string(),
            wf.id.clone(),
            digest.clone(),
            wf.raw.to_string(),
            wf.version.clone(),
            wf.name.clone(),
        );
        let notice = self.peer_message(peers::Change::Workflows);
        self.inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                conn.execute(
                    "INSERT INTO workflow_versions (digest, workflow_id, definition, registered_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                    args![d, id, text, now],
                )?;
                conn.execute(
                    "INSERT INTO workflows (tenant, id, digest, version, name, registered_at) VALUES (?, ?, ?, ?, ?, ?) \
                     ON CONFLICT (tenant, id) DO UPDATE SET digest = excluded.digest, version = excluded.version, name = excluded.name, registered_at = excluded.registered_at",
                    args![t, id, d, version, name, now],
                )?;
                Ok(())
            })
            .await?;
        self.inner
            .compiled
            .write()
            .expect("lock")
            .insert(digest.clone(), Arc::new(wf));
        self.inner
            .current
            .write()
            .expect("lock")
            .insert((tenant.to_string(), info.id.clone()), digest);
        Ok(info)
    }

    /// Loads every `*.json` in `dir` as instance-wide definitions; returns each file with its outcome.
    pub async fn load_workflow_dir(
        &self,
        dir: &std::path::Path,
    ) -> Vec<(std::path::PathBuf, Result<WorkflowInfo>)> {
        let mut out = Vec::new();
        let Ok(entries) = std::fs::read_dir(dir) else {
            out.push((
                dir.to_path_buf(),
                Err(EngineError::NotFound(format!(
                    "cannot read directory {}",
                    dir.display()
                ))),
            ));
            return out;
        };
        let mut paths: Vec<_> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect();
        paths.sort();
        for path in paths {
            let result = match std::fs::read_to_string(&path) {
                Ok(text) => match serde_json::from_str::<Value>(&text) {
                    Ok(raw) => self.register_workflow(raw).await,
                    Err(e) => Err(EngineError::invalid(format!("not JSON: {e}"))),
                },
                Err(e) => Err(EngineError::NotFound(format!("cannot read: {e}"))),
            };
            out.push((path, result));
        }
        out
    }

    /// The definition registered under exactly (`tenant`, `id`).
    fn current_of(&self, tenant: &str, id: &str) -> Option<(String, SharedWorkflow)> {
        let digest = self
            .inner
            .current
            .read()
            .expect("lock")
            .get(&(tenant.to_string(), id.to_string()))?
            .clone();
        let wf = self.inner.compiled.read().expect("lock").get(&digest)?.clone();
        Some((digest, wf))
    }

    /// The definition `tenant` runs under `id`: the instance's (read-only to
    /// tenants, so a tenant never shadows it), else the tenant's own; never
    /// another tenant's.
    fn visible_workflow(&self, tenant: &str, id: &str) -> Option<(String, SharedWorkflow, &'static str)> {
        if let Some((d, wf)) = self.current_of(INSTANCE, id) {
            return Some((d, wf, SCOPE_INSTANCE));
        }
        self.current_of(tenant, id).map(|(d, wf)| (d, wf, SCOPE_TENANT))
    }

    /// The compiled definition a run was started with (cached; read on the writer when not).
    fn workflow_version(&self, conn: &WriteConn, digest: &str) -> Result<SharedWorkflow> {
        if let Some(wf) = self.inner.compiled.read().expect("lock").get(digest) {
            return Ok(wf.clone());
        }
        let text: String = conn
            .query_scalar(
                "SELECT definition FROM workflow_versions WHERE digest = ?",
                args![digest],
            )?
            .ok_or_else(|| EngineError::Internal(format!("workflow version {digest} is not stored")))?;
        let wf = Arc::new(definition::compile(serde_json::from_str(&text)?)?);
        self.inner
            .compiled
            .write()
            .expect("lock")
            .insert(digest.to_string(), wf.clone());
        Ok(wf)
    }

    /// An instance-wide definition, as registered (operator tools and tests).
    pub fn workflow(&self, id: &str) -> Option<Value> {
        self.current_of(INSTANCE, id).map(|(_, wf)| wf.raw.clone())
    }

    /// The definition `actor`'s tenant sees under `id` (its own or the instance's).
    pub fn workflow_for(&self, actor: &Actor, id: &str) -> Result<Value> {
        actor.require(Scope::RunsRead)?;
        self.visible_workflow(actor.tenant(), id)
            .map(|(_, wf, _)| wf.raw.clone())
            .ok_or_else(|| EngineError::NotFound(format!("no workflow \"{id}\"")))
    }

    /// Instance-wide workflow ids (discovery's `fixtures`: never a tenant's).
    pub fn workflow_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self
            .inner
            .current
            .read()
            .expect("lock")
            .keys()
            .filter(|(t, _)| t == INSTANCE)
            .map(|(_, id)| id.clone())
            .collect();
        ids.sort();
        ids
    }

    /// The workflows `actor`'s tenant may run: the instance's and its own, by id.
    pub fn workflows_for(&self, actor: &Actor) -> Result<Vec<WorkflowInfo>> {
        actor.require(Scope::RunsRead)?;
        let tenant = actor.tenant();
        let mut ids: Vec<String> = self
            .inner
            .current
            .read()
            .expect("lock")
            .keys()
            .filter(|(t, _)| t == INSTANCE || t == tenant)
            .map(|(_, id)| id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        Ok(ids
            .into_iter()
            .filter_map(|id| self.visible_workflow(tenant, &id))
            .map(|(_, wf, scope)| workflow_info(&wf, if scope == SCOPE_INSTANCE { INSTANCE } else { tenant }))
            .collect())
    }

    /// Validates a definition without registering it (the CLI's `workflow validate`).
    pub fn validate_workflow(raw: Value) -> Result<Workflow> {
        definition::compile(raw)
    }

    // ----- directory and keys -------------------------------------------------

    pub async fn upsert_principal(&self, p: Principal) -> Result<()> {
        // Every directory write comes through here: configuration, CLI, dashboard.
        ids::check_tenant_id("tenant", &p.tenant)?;
        self.inner.principals.write().expect("lock").remove(&p.id);
        let id = p.id.clone();
        let notice = self.peer_message(peers::Change::Principal(id.clone()));
        let result = self.inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                conn.execute(
                    "INSERT INTO principals (id, tenant, name, email, groups, roles, is_override) VALUES (?, ?, ?, ?, ?, ?, ?) \
                     ON CONFLICT (id) DO UPDATE SET tenant = excluded.tenant, name = excluded.name, email = excluded.email, groups = excluded.groups, roles = excluded.roles, is_override = excluded.is_override",
                    args![
                        p.id,
                        p.tenant,
                        p.name,
                        p.email,
                        serde_json::to_string(&p.groups)?,
                        serde_json::to_string(&p.roles)?,
                        p.is_override as i64
                    ],
                )?;
                Ok(())
            })
            .await;
        // Drop anything cached while the write was in flight.
        self.inner.principals.write().expect("lock").remove(&id);
        result
    }

    /// A directory entry; cached for [`sign_in::DIRECTORY_RECHECK_MS`]
    /// (this engine's own writes drop the entry at once).
    pub async fn principal(&self, id: &str) -> Result<Option<Principal>> {
        let now = self.now();
        if let Some((p, at)) = self.inner.principals.read().expect("lock").get(id) {
            if now - at < sign_in::DIRECTORY_RECHECK_MS {
                return Ok(Some(p.clone()));
            }
        }
        let found = self.load_principal(id).await?;
        let mut cache = self.inner.principals.write().expect("lock");
        match &found {
            Some(p) => {
                cache.insert(id.to_string(), (p.clone(), now));
            }
            None => {
                cache.remove(id);
            }
        }
        Ok(found)
    }

    /// Drops a cached directory entry; the next read goes to the database.
    pub(crate) fn forget_principal(&self, id: &str) {
        self.inner.principals.write().expect("lock").remove(id);
    }

    async fn load_principal(&self, id: &str) -> Result<Option<Principal>> {
        let row: Option<(String, String, Option<String>, String, String, i64)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT tenant, name, email, groups, roles, is_override FROM principals WHERE id = ?"),
        )
        .bind(id)
        .fetch_optional(&self.inner.store.read)
        .await?;
        Ok(row.map(|(tenant, name, email, groups, roles, o)| Principal {
            id: id.to_string(),
            tenant,
            name,
            email,
            groups: serde_json::from_str(&groups).unwrap_or_default(),
            roles: serde_json::from_str(&roles).unwrap_or_default(),
            is_override: o != 0,
        }))
    }

    /// Stores an API key (hashed) for a principal; the plain key is never stored.
    /// Storing a revoked key again does not revive it.
    pub async fn put_api_key(
        &self,
        key: &str,
        principal: &str,
        scopes: &[Scope],
        label: Option<String>,
    ) -> Result<()> {
        if self.principal(principal).await?.is_none() {
            return Err(EngineError::validation(
                "principal",
                format!("unknown principal \"{principal}\""),
            ));
        }
        let hash = auth::hash_key(key);
        let scope_text = scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ");
        let (h, p, now) = (hash.clone(), principal.to_string(), self.now());
        let notice = self.peer_message(peers::Change::ApiKey(hash.clone()));
        self.inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                conn.execute(
                    "INSERT INTO api_keys (key_hash, principal, scopes, label, created_at, revoked_at) VALUES (?, ?, ?, ?, ?, NULL) \
                     ON CONFLICT (key_hash) DO UPDATE SET principal = excluded.principal, scopes = excluded.scopes, label = excluded.label",
                    args![h, p, scope_text, label, now],
                )?;
                Ok(())
            })
            .await?;
        self.forget_api_key(&hash);
        Ok(())
    }

    /// Drops a key from the cache; the next use reads the database again.
    pub(crate) fn forget_api_key(&self, hash: &str) {
        self.inner.keys.write().expect("lock").remove(hash);
    }

    /// The grant of a live key, read from the database (`None` if unknown or revoked).
    async fn load_grant(&self, hash: &str) -> Result<Option<Grant>> {
        let row: Option<(String, String)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT principal, scopes FROM api_keys WHERE key_hash = ? AND revoked_at IS NULL"),
        )
        .bind(hash)
        .fetch_optional(&self.inner.store.read)
        .await?;
        Ok(row.map(|(principal_id, scopes)| Grant {
            principal_id,
            scopes: auth::parse_scopes(&[scopes]).unwrap_or_default(),
        }))
    }

    /// Authenticates a bearer API key. Grants are cached for
    /// [`API_KEY_RECHECK_MS`]: a key created or revoked elsewhere (the CLI,
    /// another instance) takes effect here within that time.
    pub async fn authenticate(&self, key: &str) -> Result<Option<(Actor, Grant)>> {
        let hash = auth::hash_key(key);
        let now = self.now();
        let cached = self.inner.keys.read().expect("lock").get(&hash).cloned();
        let grant = match cached {
            Some((grant, checked)) if now - checked < API_KEY_RECHECK_MS => grant,
            _ => match self.load_grant(&hash).await? {
                Some(grant) => {
                    self.inner
                        .keys
                        .write()
                        .expect("lock")
                        .insert(hash, (grant.clone(), now));
                    grant
                }
                None => {
                    self.forget_api_key(&hash);
                    return Ok(None);
                }
            },
        };
        let Some(principal) = self.principal(&grant.principal_id).await? else {
            return Ok(None);
        };
        Ok(Some((Actor::api_key(principal, grant.scopes.clone()), grant)))
    }

    // ----- runs ------------------------------------------------------------------

    /// Starts a run of a registered workflow.
    pub async fn create_run(
        &self,
        req: CreateRun,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<RunCreated>> {
        actor.require(Scope::RunsCreate)?;
        let tenant = actor.tenant().to_string();
        if let Some(t) = &req.tenant_id {
            if *t != tenant {
                return Err(EngineError::TenantMismatch);
            }
        }
        let callback_url = match &req.callback_url {
            None => None,
            Some(url) => Some(self.check_callback_url(url)?),
        };
        let inputs = match req.inputs {
            None | Some(Value::Null) => json!({}),
            Some(v @ Value::Object(_)) => v,
            Some(_) => return Err(EngineError::validation("inputs", "inputs must be an object")),
        };
        if let Some(c) = &req.configurable {
            check_configurable(c)?;
        }
        if let Some(t) = &req.tags {
            if !t.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                return Err(EngineError::validation(
                    "tags",
                    "tags must be an array of strings",
                ));
            }
        }
        if let Some(m) = &req.metadata {
            if !m.is_object() {
                return Err(EngineError::validation("metadata", "metadata must be an object"));
            }
        }
        let (digest, wf, _) = self
            .visible_workflow(&tenant, &req.workflow_id)
            .ok_or_else(|| EngineError::NotFound(format!("no workflow \"{}\"", req.workflow_id)))?;
        let owner = json!({ "tenant": tenant, "subject": actor.subject() });
        let now = self.now();
        let run_id = ids::new_tenant_bound(&tenant);
        let new = NewRun {
            run_id: run_id.clone(),
            workflow_digest: digest,
            inputs,
            owner,
            configurable: req.configurable,
            tags: req.tags,
            metadata: req.metadata,
            callback_url,
        };
        let outcome = self
            .inner
            .store
            .write(move |conn| {
                run_idempotent(conn, &tenant, idem, |conn| {
                    let run = Exec::start(conn, &wf, new, now)?.finish()?;
                    Ok(RunCreated {
                        run_id: run.run_id,
                        status: run.status,
                    })
                })
            })
            .await?;
        if !outcome.replayed {
            self.notify(&run_id);
        }
        Ok(outcome)
    }

    async fn read_run(&self, run_id: &str, actor: &Actor) -> Result<RunRow> {
        actor.require(Scope::RunsRead)?;
        if ids::tenant_of(run_id) != actor.tenant() {
            return Err(EngineError::TenantMismatch);
        }
        let mut conn = self.inner.store.read.acquire().await?;
        load_run(&mut conn, run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("no run {run_id}")))
    }

    /// RunSnapshot v2.
    pub async fn snapshot(&self, run_id: &str, actor: &Actor) -> Result<Value> {
        let run = self.read_run(run_id, actor).await?;
        Ok(snapshot_of(&run))
    }

    /// Cancels a live run; its interrupts can no longer be resolved.
    pub async fn cancel_run(
        &self,
        run_id: &str,
        reason: Option<String>,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<RunCreated>> {
        actor.require(Scope::RunsCancel)?;
        if ids::tenant_of(run_id) != actor.tenant() {
            return Err(EngineError::TenantMismatch);
        }
        let this = self.clone();
        let (rid, tenant, by) = (
            run_id.to_string(),
            actor.tenant().to_string(),
            actor.principal.id.clone(),
        );
        let now = self.now();
        let outcome = self
            .inner
            .store
            .write(move |conn| {
                run_idempotent(conn, &tenant, idem, |conn| {
                    let run = load_run_for_update(conn, &rid)?
                        .ok_or_else(|| EngineError::NotFound(format!("no run {rid}")))?;
                    if run.is_terminal() {
                        return Err(EngineError::RunTerminal(run.status));
                    }
                    let wf = this.workflow_version(conn, &run.workflow_digest)?;
                    let mut exec = Exec::load(conn, &wf, run, now)?;
                    exec.cancel(reason, Some(by))?;
                    let run = exec.finish()?;
                    Ok(RunCreated {
                        run_id: run.run_id,
                        status: run.status,
                    })
                })
            })
            .await?;
        self.notify(run_id);
        Ok(outcome)
    }

    /// Resolves (or votes on) the pending interrupt of `node_id` in a run.
    pub async fn resolve(
        &self,
        run_id: &str,
        node_id: &str,
        resume_value: Value,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<Resolved>> {
        self.resolve_visit(run_id, node_id, None, resume_value, actor, idem)
            .await
    }

    /// [`Engine::resolve`], and with `interrupt_id` only that interrupt (a
    /// link's visit): a later visit pending at the node is refused (409),
    /// checked inside the same writer command as the resolve.
    async fn resolve_visit(
        &self,
        run_id: &str,
        node_id: &str,
        interrupt_id: Option<String>,
        resume_value: Value,
        actor: &Actor,
        idem: Option<Idem>,
    ) -> Result<Outcome<Resolved>> {
        actor.require(Scope::ApprovalsRespond)?;
        if ids::tenant_of(run_id) != actor.tenant() {
            return Err(EngineError::TenantMismatch);
        }
        let this = self.clone();
        let (rid, nid, tenant, actor) = (
            run_id.to_string(),
            node_id.to_string(),
            actor.tenant().to_string(),
            actor.clone(),
        );
        // Membership as it is now: the directory cache is kept current by every directory write.
        let principal = self
            .principal(&actor.principal.id)
            .await?
            .unwrap_or_else(|| actor.principal.clone());
        let now = self.now();
        let outcome = self
            .inner
            .store
            .write(move |conn| {
                run_idempotent(conn, &tenant, idem, |conn| {
                    this.apply_resolve(
                        conn,
                        &rid,
                        &nid,
                        interrupt_id.as_deref(),
                        resume_value,
                        &actor,
                        &principal,
                        now,
                    )
                })
            })
            .await?;
        if outcome.result.is_ok() && !outcome.replayed {
            self.notify(run_id);
        }
        Ok(outcome)
    }

    #[allow(clippy::too_many_arguments)] // one command's inputs, passed once
    fn apply_resolve(
        &self,
        conn: &WriteConn,
        run_id: &str,
        node_id: &str,
        interrupt_id: Option<&str>,
        resume_value: Value,
        actor: &Actor,
        principal: &Principal,
        now: Millis,
    ) -> Result<Resolved> {
        let run = load_run_for_update(conn, run_id)?
            .ok_or_else(|| EngineError::NotFound(format!("no run {run_id}")))?;
        let interrupt = latest_interrupt_for_update(conn, run_id, node_id)?.ok_or_else(|| {
            EngineError::NotFound(format!("no interrupt on node \"{node_id}\" in run {run_id}"))
        })?;
        if interrupt_id.is_some_and(|id| id != interrupt.interrupt_id) {
            // The node was asked again (a loop): this link's visit is closed.
            return Err(EngineError::AlreadyResolved(format!(
                "this link was for an earlier visit of \"{node_id}\", which is closed"
            )));
        }
        if interrupt.status != "pending" || run.is_terminal() {
            return Err(EngineError::AlreadyResolved(format!(
                "the interrupt on \"{node_id}\" is {} (run {})",
                if interrupt.status == "pending" {
                    "closed"
                } else {
                    interrupt.status.as_str()
                },
                run.status
            )));
        }
        match decide(&run, &interrupt, &resume_value, actor, principal, now)? {
            Decision::Recorded(writes) => {
                writes.execute(conn)?;
                Ok(Resolved {
                    run_id: run.run_id,
                    node_id: node_id.to_string(),
                    status: run.status,
                })
            }
            Decision::Resolve {
                resolved,
                resume_value,
                failure,
                writes,
            } => {
                let wf = self.workflow_version(conn, &run.workflow_digest)?;
                let mut exec = Exec::load(conn, &wf, run, now)?;
                exec.prepend_writes(writes);
                exec.resolve(&interrupt, resolved, Some(resume_value), failure)?;
                let run = exec.finish()?;
                Ok(Resolved {
                    run_id: run.run_id,
                    node_id: node_id.to_string(),
                    status: run.status,
                })
            }
        }
    }

    /// Fires every passed deadline and due delay; returns how many fired.
    /// A deadline missed while the server was down fires on the first call.
    pub async fn fire_due(&self) -> Result<usize> {
        let now = self.now();
        let due_interrupts: Vec<(String, String, String)> = sqlx::query_as(&self.inner.store.q("SELECT interrupt_id, run_id, node_id FROM interrupts WHERE status = 'pending' AND deadline_at IS NOT NULL AND deadline_at <= ? ORDER BY deadline_at LIMIT 200"))
        .bind(now)
        .fetch_all(&self.inner.store.read)
        .await?;
        let due_delays: Vec<(String, String)> = sqlx::query_as(&self.inner.store.q("SELECT run_id, node_id FROM node_states WHERE due_at IS NOT NULL AND due_at <= ? AND status = 'waiting' ORDER BY due_at LIMIT 200"))
        .bind(now)
        .fetch_all(&self.inner.store.read)
        .await?;
        let mut fired = 0;
        let mut tasks = Vec::new();
        for (interrupt_id, run_id, _node) in due_interrupts {
            let this = self.clone();
            tasks.push(tokio::spawn(async move {
                let rid = run_id.clone();
                let t = this.clone();
                let r = this
                    .inner
                    .store
                    .write(move |conn| t.apply_timeout(conn, &interrupt_id, now))
                    .await;
                (rid, r)
            }));
        }
        for (run_id, node_id) in due_delays {
            let this = self.clone();
            tasks.push(tokio::spawn(async move {
                let rid = run_id.clone();
                let t = this.clone();
                let r = this
                    .inner
                    .store
                    .write(move |conn| t.apply_delay(conn, &run_id, &node_id, now))
                    .await;
                (rid, r)
            }));
        }
        for t in tasks {
            match t.await {
                Ok((run_id, Ok(true))) => {
                    fired += 1;
                    self.notify(&run_id);
                }
                Ok((_, Ok(false))) => {}
                Ok((run_id, Err(e))) => tracing::error!(run = %run_id, error = %e, "timer failed"),
                Err(e) => tracing::error!(error = %e, "timer task panicked"),
            }
        }
        Ok(fired)
    }

    fn apply_timeout(&self, conn: &WriteConn, interrupt_id: &str, now: Millis) -> Result<bool> {
        let Some(interrupt) = pending_interrupt_for_update(conn, interrupt_id)? else {
            return Ok(false);
        };
        if interrupt.deadline_at.is_none_or(|d| d > now) {
            return Ok(false);
        }
        let Some(run) = load_run_for_update(conn, &interrupt.run_id)? else {
            return Ok(false);
        };
        // Read again under the run's lock: another instance may have fired
        // or resolved it between the first read and the lock.
        let Some(interrupt) = pending_interrupt_for_update(conn, interrupt_id)? else {
            return Ok(false);
        };
        if run.is_terminal() {
            return Ok(false);
        }
        let wf = self.workflow_version(conn, &run.workflow_digest)?;
        let (resolved, failure) = timeout_resolution(&interrupt);
        let tenant = run.tenant.clone();
        let mut exec = Exec::load(conn, &wf, run, now)?;
        exec.resolve(&interrupt, resolved, None, Some(failure))?;
        exec.finish()?;
        // `onTimeout: escalate` notifies the gate's people; it never extends or grants.
        let rules = interrupt.approval_rules();
        if rules
            .as_ref()
            .is_some_and(|r| r.on_timeout == crate::approval::OnTimeout::Escalate)
        {
            let audience = interrupt.payload_json()["data"].get("audience").cloned();
            let directory = crate::runtime::load_directory(conn, &tenant)?;
            for p in crate::notify::recipients(rules.as_ref(), audience.as_ref(), &directory) {
                conn.execute("INSERT INTO outbox (kind, reason, run_id, node_id, interrupt_id, recipient, address, status, next_attempt_at, created_at) VALUES ('email', 'escalation', ?, ?, ?, ?, ?, 'pending', ?, ?)", args![
                    interrupt.run_id,
                    interrupt.node_id,
                    interrupt.interrupt_id,
                    p.id,
                    p.email,
                    now,
                    now
                ])?;
            }
        }
        Ok(true)
    }

    fn apply_delay(&self, conn: &WriteConn, run_id: &str, node_id: &str, now: Millis) -> Result<bool> {
        let Some(run) = load_run_for_update(conn, run_id)? else {
            return Ok(false);
        };
        if run.is_terminal() {
            return Ok(false);
        }
        let wf = self.workflow_version(conn, &run.workflow_digest)?;
        let mut exec = Exec::load(conn, &wf, run, now)?;
        if !exec.finish_delay(node_id)? {
            return Ok(false);
        }
        exec.finish()?;
        Ok(true)
    }

    // ----- callbacks ---------------------------------------------------------------------

    /// Turns callback delivery on (with the egress policy that judges URLs and
    /// addresses) or off (`None`: `callbackUrl` is refused).
    pub fn set_callback_policy(&self, policy: Option<crate::egress::EgressPolicy>) {
        *self.inner.callbacks.write().expect("lock") = policy;
    }

    /// The callback egress policy, when this host delivers callbacks.
    pub fn callback_policy(&self) -> Option<crate::egress::EgressPolicy> {
        *self.inner.callbacks.read().expect("lock")
    }

    /// Judges a `callbackUrl` at create: refused (400, `field: callbackUrl`)
    /// when delivery is off or the egress guard refuses it; else normalized.
    pub fn check_callback_url(&self, url: &str) -> Result<String> {
        let refuse = |why: String| EngineError::Validation {
            message: format!("callbackUrl is refused: {why}"),
            field: Some("callbackUrl".into()),
            details: None,
        };
        let policy = self.callback_policy().ok_or_else(|| {
            refuse("this host does not deliver callbacks (no [callbacks] secret configured)".into())
        })?;
        crate::egress::check_url(url, policy)
            .map(|u| u.to_string())
            .map_err(refuse)
    }

    // ----- interrupt tokens ------------------------------------------------------------

    /// Replaces the token signing keys in memory only (tests; the server
    /// loads them from the database, see `sync_token_keys`). The last key
    /// not retired signs.
    pub fn set_token_keys(&self, keys: Vec<SigningKey>, ttl_ms: Option<Millis>) {
        if let Some(ttl) = ttl_ms.filter(|t| *t > 0) {
            *self.inner.token_ttl_ms.write().expect("lock") = ttl;
        }
        let ttl = *self.inner.token_ttl_ms.read().expect("lock");
        *self.inner.tokens.write().expect("lock") = KeyRing::new(keys).with_max_ttl(ttl);
    }

    pub fn can_mint_tokens(&self) -> bool {
        self.inner.tokens.read().expect("lock").signing_key().is_some()
    }

    /// Mints a token for `recipient` on the pending interrupt at `node_id`
    /// (the instance operator's tool: the CLI on the database). It expires
    /// after the configured lifetime, and never after the interrupt's deadline.
    pub async fn mint_token(
        &self,
        run_id: &str,
        node_id: &str,
        recipient: &Principal,
        intent: Intent,
    ) -> Result<(String, Millis)> {
        let mut conn = self.inner.store.read.acquire().await?;
        let interrupt = latest_interrupt(&mut conn, run_id, node_id)
            .await?
            .filter(|i| i.status == "pending")
            .ok_or_else(|| {
                EngineError::NotFound(format!("no pending interrupt on \"{node_id}\" in run {run_id}"))
            })?;
        drop(conn);
        self.sign_for(&interrupt, recipient, intent)
    }

    /// Mints a token on exactly `interrupt_id` while it is pending (a mail
    /// for one visit never links to a later one).
    pub async fn mint_token_for(
        &self,
        interrupt_id: &str,
        recipient: &Principal,
        intent: Intent,
    ) -> Result<(String, Millis)> {
        let interrupt = sqlx::query_as::<_, InterruptRow>(&self.inner.store.q(&format!(
            "SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ? AND status = 'pending'"
        )))
        .bind(interrupt_id)
        .fetch_optional(&self.inner.store.read)
        .await?
        .ok_or_else(|| EngineError::NotFound(format!("no pending interrupt {interrupt_id}")))?;
        self.sign_for(&interrupt, recipient, intent)
    }

    /// A link for `actor` on the pending interrupt at `node_id`, as
    /// `GET /runs/{runId}/interrupts/{nodeId}` hands it out: resolve-capable
    /// only when the actor holds `approvals:respond` and may decide this
    /// interrupt, else (and whenever `requested` is inspect) an inspect link.
    /// `None` when the interrupt is not pending or no key can sign.
    pub async fn link_for(
        &self,
        actor: &Actor,
        run_id: &str,
        node_id: &str,
        requested: Option<Intent>,
    ) -> Result<Option<(String, Millis, Intent)>> {
        let view = self.inspect_interrupt(run_id, node_id, actor).await?;
        if view.status != "pending" || !self.can_mint_tokens() {
            return Ok(None);
        }
        let may_decide = self.may_decide(run_id, node_id, actor).await?.is_ok();
        let intent = match requested {
            Some(Intent::Inspect) => Intent::Inspect,
            _ if may_decide => Intent::Resolve,
            _ => Intent::Inspect,
        };
        match self
            .mint_token_for(&view.interrupt_id, &actor.principal, intent)
            .await
        {
            Ok((token, expires)) => Ok(Some((token, expires, intent))),
            // Resolved between the read and the mint.
            Err(EngineError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn sign_for(
        &self,
        interrupt: &InterruptRow,
        recipient: &Principal,
        intent: Intent,
    ) -> Result<(String, Millis)> {
        let now = self.now();
        let ttl = *self.inner.token_ttl_ms.read().expect("lock");
        let expires = interrupt.deadline_at.map_or(now + ttl, |d| d.min(now + ttl));
        let claims = Claims {
            i: interrupt.interrupt_id.clone(),
            r: interrupt.run_id.clone(),
            n: interrupt.node_id.clone(),
            p: recipient.id.clone(),
            t: intent,
            a: now,
            e: expires,
            j: ids::new_opaque(),
        };
        let token = self.inner.tokens.read().expect("lock").sign(&claims)?;
        Ok((token, expires))
    }

    /// The credential part of the ladder, without reading the database:
    /// 401 (grammar, alg, kid, MAC), 410 (expired). The REST edge runs it
    /// before anything else about a token request is looked at.
    pub fn verify_token(&self, token: &str) -> Result<Claims> {
        self.inner.tokens.read().expect("lock").verify(token, self.now())
    }

    /// The verification ladder: 401 (grammar, alg, kid, MAC), 410 (expired),
    /// 404 (unknown interrupt), 409 (resolved, run ended, or revoked).
    async fn check_token(&self, token: &str) -> Result<(Claims, InterruptRow)> {
        let claims = self.verify_token(token)?;
        let mut conn = self.inner.store.read.acquire().await?;
        let interrupt = sqlx::query_as::<_, InterruptRow>(&self.inner.store.q(&format!(
            "SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE interrupt_id = ?"
        )))
        .bind(&claims.i)
        .fetch_optional(&mut *conn)
        .await?
        .filter(|i| i.run_id == claims.r && i.node_id == claims.n)
        .ok_or_else(|| EngineError::NotFound("no such interrupt".into()))?;
        let revoked: Option<i64> =
            sqlx::query_scalar(&self.inner.store.q("SELECT 1 FROM revoked_tokens WHERE jti = ?"))
                .bind(&claims.j)
                .fetch_optional(&mut *conn)
                .await?;
        if revoked.is_some() {
            return Err(EngineError::AlreadyResolved("this link was revoked".into()));
        }
        let run = load_run(&mut conn, &claims.r)
            .await?
            .ok_or_else(|| EngineError::NotFound("no such run".into()))?;
        if interrupt.status != "pending" || run.is_terminal() {
            return Err(EngineError::AlreadyResolved(format!(
                "this interrupt is no longer open ({})",
                if interrupt.status == "pending" {
                    run.status.as_str()
                } else {
                    interrupt.status.as_str()
                }
            )));
        }
        Ok((claims, interrupt))
    }

    /// `GET /interrupts/{token}`: the interrupt a token points at.
    pub async fn inspect_by_token(&self, token: &str) -> Result<(InterruptView, Claims)> {
        let (claims, interrupt) = self.check_token(token).await?;
        Ok((self.interrupt_view(interrupt).await?, claims))
    }

    /// `POST /interrupts/{token}`: resolves as the token's recipient, with the
    /// same eligibility and quorum rules as the API.
    pub async fn resolve_by_token(
        &self,
        token: &str,
        resume_value: Value,
        idem: Option<Idem>,
    ) -> Result<Outcome<Resolved>> {
        let (claims, _) = self.check_token(token).await?;
        if claims.t == Intent::Inspect {
            return Err(EngineError::Forbidden(
                "this link may only inspect the interrupt".into(),
            ));
        }
        let actor = self.token_actor(&claims).await?;
        if !actor.allows(Scope::ApprovalsRespond) {
            return Err(EngineError::Forbidden(format!(
                "the link's recipient {} no longer holds approvals:respond",
                actor.principal.id
            )));
        }
        // Eligibility and quorum are checked at decision time in the writer,
        // against the very interrupt the link was minted for.
        self.resolve_visit(
            &claims.r,
            &claims.n,
            Some(claims.i.clone()),
            resume_value,
            &actor,
            idem,
        )
        .await
    }

    /// The actor a link acts as: its recipient as the directory has them now,
    /// responding only while they still hold `approvals:respond`.
    pub async fn token_actor(&self, claims: &Claims) -> Result<Actor> {
        let principal = self
            .principal(&claims.p)
            .await?
            .ok_or_else(|| EngineError::Forbidden("the link's recipient no longer exists".into()))?;
        let may_respond = self.holds_respond(&principal.id).await?;
        Ok(Actor::token(principal, may_respond))
    }

    /// Whether a principal holds `approvals:respond` on its own, whatever
    /// lane it comes by: a person (a console password or an email address:
    /// they sign in, or receive links) does; any other principal (a service)
    /// only while it has a live API key with `approvals:respond` or `admin`.
    pub async fn holds_respond(&self, principal_id: &str) -> Result<bool> {
        let person: Option<i64> = sqlx::query_scalar(&self.inner.store.q(
            "SELECT CASE WHEN password_hash IS NOT NULL OR COALESCE(email, '') <> '' THEN 1 ELSE 0 END FROM principals WHERE id = ?",
        ))
        .bind(principal_id)
        .fetch_optional(&self.inner.store.read)
        .await?;
        match person {
            None => return Ok(false),
            Some(0) => {}
            Some(_) => return Ok(true),
        }
        let keys: Vec<String> = sqlx::query_scalar(
            &self
                .inner
                .store
                .q("SELECT scopes FROM api_keys WHERE principal = ? AND revoked_at IS NULL"),
        )
        .bind(principal_id)
        .fetch_all(&self.inner.store.read)
        .await?;
        Ok(keys.into_iter().any(|scopes| {
            auth::parse_scopes(&[scopes])
                .unwrap_or_default()
                .iter()
                .any(|s| matches!(s, Scope::ApprovalsRespond | Scope::Admin))
        }))
    }

    /// Revokes one token (by its id); later use answers 409.
    pub async fn revoke_token(&self, token: &str) -> Result<()> {
        let claims = self.inner.tokens.read().expect("lock").verify(token, i64::MIN)?;
        let now = self.now();
        self.inner
            .store
            .write(move |conn| {
                conn.execute(
                    "INSERT INTO revoked_tokens (jti, revoked_at) VALUES (?, ?) ON CONFLICT DO NOTHING",
                    args![claims.j, now],
                )?;
                Ok(())
            })
            .await
    }

    // ----- reads -------------------------------------------------------------------

    /// Events with `sequence > after`, oldest first.
    /// Also returns the run's snapshot as of the read.
    pub async fn events_after(
        &self,
        run_id: &str,
        actor: &Actor,
        after: i64,
        limit: i64,
    ) -> Result<(Vec<RunEvent>, Value)> {
        let run = self.read_run(run_id, actor).await?;
        let events = self.read_events(run_id, after, limit).await?;
        Ok((events, snapshot_of(&run)))
    }

    async fn read_events(&self, run_id: &str, after: i64, limit: i64) -> Result<Vec<RunEvent>> {
        let rows = sqlx::query_as::<_, EventRow>(&self.inner.store.q("SELECT run_id, sequence, event_id, type, node_id, payload, timestamp FROM events WHERE run_id = ? AND sequence > ? ORDER BY sequence LIMIT ?"))
        .bind(run_id)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.inner.store.read)
        .await?;
        Ok(rows.into_iter().map(EventRow::into_event).collect())
    }

    /// Long poll: waits up to `timeout` for events after `after`.
    pub async fn poll_events(
        &self,
        run_id: &str,
        actor: &Actor,
        after: i64,
        timeout: std::time::Duration,
    ) -> Result<(Vec<RunEvent>, Value)> {
        let mut notices = self.subscribe();
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let (events, snapshot) = self.events_after(run_id, actor, after, 1000).await?;
            if !events.is_empty() || snapshot["status"].as_str().is_some_and(is_terminal_status) {
                return Ok((events, snapshot));
            }
            loop {
                match tokio::time::timeout_at(deadline, notices.recv()).await {
                    Err(_) => return Ok((vec![], snapshot)),
                    Ok(Ok(id)) if id == run_id => break,
                    Ok(Ok(_)) => continue,
                    Ok(Err(broadcast::error::RecvError::Lagged(_))) => break,
                    Ok(Err(broadcast::error::RecvError::Closed)) => return Ok((vec![], snapshot)),
                }
            }
        }
    }

    /// The latest interrupt raised at `node_id` in a run, with its contract and votes.
    pub async fn inspect_interrupt(
        &self,
        run_id: &str,
        node_id: &str,
        actor: &Actor,
    ) -> Result<InterruptView> {
        self.read_run(run_id, actor).await?;
        let mut conn = self.inner.store.read.acquire().await?;
        let row = latest_interrupt(&mut conn, run_id, node_id)
            .await?
            .ok_or_else(|| {
                EngineError::NotFound(format!("no interrupt on node \"{node_id}\" in run {run_id}"))
            })?;
        drop(conn);
        self.interrupt_view(row).await
    }

    async fn interrupt_view(&self, row: InterruptRow) -> Result<InterruptView> {
        let votes: Vec<(String, String, String, Millis, i64, String)> = sqlx::query_as(&self.inner.store.q("SELECT principal, action, eligible_via, decided_at, superseded, resume_value FROM votes WHERE interrupt_id = ? ORDER BY seq"))
        .bind(&row.interrupt_id)
        .fetch_all(&self.inner.store.read)
        .await?;
        let votes: Vec<VoteView> = votes
            .into_iter()
            .map(|(principal, action, eligible_via, at, superseded, rv)| VoteView {
                counted: superseded == 0 && action != "ask",
                principal,
                action,
                eligible_via,
                decided_at: rfc3339(at),
                resume_value: serde_json::from_str(&rv).unwrap_or(Value::Null),
            })
            .collect();
        let payload = row.payload_json();
        let quorum = row.approval_rules().map(|r| {
            // Counted as the tally counts: approvals of the same data; rejects and refines.
            let original = payload["data"].get("artifactData");
            let ballots: Vec<crate::approval::Ballot> = votes
                .iter()
                .filter(|v| v.counted)
                .map(|v| crate::approval::Ballot {
                    principal: v.principal.clone(),
                    action: v.action.clone(),
                    is_override: false,
                    approves: crate::approval::approved_data(&v.action, &v.resume_value, original),
                })
                .collect();
            let accepts = crate::approval::agreeing_approvals(&ballots);
            let rejects = ballots.iter().filter(|b| b.rejects()).count();
            json!({
                "requiredApprovals": r.required_approvals,
                "rejectionPolicy": r.rejection_policy,
                "accepts": accepts,
                "rejects": rejects,
                "approversList": r.approvers_list,
                "approverGroupRefs": r.approver_group_refs,
                "approverRoleRefs": r.approver_role_refs,
                "preventSelfApproval": r.prevent_self_approval,
            })
        });
        let contract = row
            .contract_json()
            .ok_or_else(|| EngineError::Internal("contract unreadable".into()))?;
        Ok(InterruptView {
            payload,
            request: json_or_null(row.request.as_deref()),
            resolution: row
                .resolution
                .as_deref()
                .and_then(|s| serde_json::from_str(s).ok()),
            interrupt_id: row.interrupt_id,
            run_id: row.run_id,
            node_id: row.node_id,
            workflow_id: row.workflow_id,
            key: row.key,
            kind: row.kind,
            status: row.status,
            title: row.title,
            request_schema: contract.request_schema,
            resume_schema: contract.resume_schema,
            outcomes: contract.outcomes,
            typed: contract.typed,
            created_at: rfc3339(row.created_at),
            deadline: row.deadline_at.map(rfc3339),
            resolved_at: row.resolved_at.map(rfc3339),
            votes,
            quorum,
        })
    }

    /// Interrupts in the actor's tenant, newest first.
    pub async fn list_interrupts(
        &self,
        actor: &Actor,
        filter: &InterruptFilter,
    ) -> Result<Vec<InterruptView>> {
        actor.require(Scope::RunsRead)?;
        let limit = if filter.limit <= 0 {
            50
        } else {
            filter.limit.min(500)
        };
        let tenant = ids::TenantRange::of(actor.tenant());
        let rows = sqlx::query_as::<_, InterruptRow>(&self.inner.store.q(&format!(
            "SELECT {INTERRUPT_COLUMNS} FROM interrupts WHERE {} \
             AND (? IS NULL OR status = ?) AND (? IS NULL OR workflow_id = ?) AND (? IS NULL OR kind = ?) \
             ORDER BY created_at DESC LIMIT ?",
            ids::TenantRange::sql("run_id")
        )))
        .bind(&tenant.from)
        .bind(&tenant.to)
        .bind(&filter.status)
        .bind(&filter.status)
        .bind(&filter.workflow_id)
        .bind(&filter.workflow_id)
        .bind(&filter.kind)
        .bind(&filter.kind)
        .bind(limit)
        .fetch_all(&self.inner.store.read)
        .await?;
        let mut out = Vec::with_capacity(rows.len());
        for r in rows {
            out.push(self.interrupt_view(r).await?);
        }
        Ok(out)
    }

    /// Whether the database answers (the health check: cheap at any size).
    pub async fn ping(&self) -> Result<()> {
        let one: i64 = sqlx::query_scalar("SELECT 1").fetch_one(&self.inner.store.read).await?;
        if one == 1 {
            Ok(())
        } else {
            Err(EngineError::Storage("the database answered SELECT 1 wrongly".into()))
        }
    }

    pub async fn overview(&self) -> Result<Overview> {
        let (runs, pending): (i64, i64) = sqlx::query_as(&self.inner.store.q(
            "SELECT (SELECT COUNT(*) FROM runs), (SELECT COUNT(*) FROM interrupts WHERE status = 'pending')",
        ))
        .fetch_one(&self.inner.store.read)
        .await?;
        Ok(Overview {
            workflows: self.inner.current.read().expect("lock").len() as i64,
            runs,
            pending_interrupts: pending,
        })
    }

    /// Rebuilds a run's projection from its event log alone and compares it
    /// with the stored projection; returns the differences (empty when equal).
    pub async fn verify_projection(&self, run_id: &str) -> Result<Vec<String>> {
        let events = self.read_events(run_id, -1, i64::MAX).await?;
        let folded = crate::projection::fold(&events);
        let mut conn = self.inner.store.read.acquire().await?;
        let run = load_run(&mut conn, run_id)
            .await?
            .ok_or_else(|| EngineError::NotFound(run_id.into()))?;
        let nodes: Vec<(String, String, i64)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT node_id, status, visits FROM node_states WHERE run_id = ? ORDER BY node_id"),
        )
        .bind(run_id)
        .fetch_all(&mut *conn)
        .await?;
        let interrupts: Vec<(String, String)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT interrupt_id, status FROM interrupts WHERE run_id = ? ORDER BY interrupt_id"),
        )
        .bind(run_id)
        .fetch_all(&mut *conn)
        .await?;
        Ok(folded.diff(&run, &nodes, &interrupts))
    }
}

/// Runs `op` under an optional Idempotency-Key: a stored outcome for the same
/// key and body is replayed; the same key with another body is refused.
fn run_idempotent<T, F>(conn: &WriteConn, tenant: &str, idem: Option<Idem>, op: F) -> Result<Outcome<T>>
where
    T: Serialize + DeserializeOwned,
    F: FnOnce(&WriteConn) -> Result<T>,
{
    let Some(idem) = idem else {
        // Without a key an error simply rolls the command back (the writer's savepoint).
        return op(conn).map(|v| Outcome {
            result: Ok(v),
            replayed: false,
        });
    };
    if conn.dialect() == crate::store::Dialect::Postgres {
        // Two instances given the same key at once: the second waits here for
        // the first to commit, then replays its record.
        conn.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(? || '/' || ? || '/' || ?, 0))",
            args![tenant, idem.operation, idem.key],
        )?;
    }
    let stored: Option<(String, String)> = conn.query_opt(
        "SELECT digest, outcome FROM idempotency WHERE tenant = ? AND operation = ? AND key = ?",
        args![tenant, idem.operation, idem.key],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )?;
    if let Some((digest, outcome)) = stored {
        if digest != idem.digest {
            return Ok(Outcome {
                result: Err(EngineError::IdempotencyMismatch),
                replayed: false,
            });
        }
        let result: std::result::Result<T, EngineError> = serde_json::from_str(&outcome)?;
        return Ok(Outcome {
            result,
            replayed: true,
        });
    }
    conn.execute_batch("SAVEPOINT op")?;
    let result = op(conn);
    if result.is_err() {
        conn.execute_batch("ROLLBACK TO op")?;
    }
    conn.execute_batch("RELEASE op")?;
    let keep = match &result {
        Ok(_) => true,
        Err(e) => e.is_replayable(),
    };
    if keep {
        let stored: std::result::Result<&T, &EngineError> = result.as_ref();
        conn.execute(
            "INSERT INTO idempotency (tenant, operation, key, digest, outcome, created_at) VALUES (?, ?, ?, ?, ?, ?)",
            args![
                tenant,
                idem.operation,
                idem.key,
                idem.digest,
                serde_json::to_string(&stored)?,
                crate::clock::SystemClock.now_ms()
            ],
        )?;
    }
    Ok(Outcome {
        result,
        replayed: false,
    })
}

/// The largest `configurable.run.recursionLimit` (visits per node) accepted.
pub const MAX_RECURSION_LIMIT: u64 = 10_000;

fn check_configurable(c: &Value) -> Result<()> {
    let obj = c
        .as_object()
        .ok_or_else(|| EngineError::validation("configurable", "configurable must be an object"))?;
    if obj.get("version") != Some(&json!(1)) {
        return Err(EngineError::validation(
            "configurable.version",
            "configurable.version must be 1",
        ));
    }
    if let Some(extra) = obj.keys().find(|k| !["version", "run"].contains(&k.as_str())) {
        return Err(EngineError::validation(
            format!("configurable.{extra}"),
            "unknown member",
        ));
    }
    if let Some(run) = obj.get("run") {
        let run = run
            .as_object()
            .ok_or_else(|| EngineError::validation("configurable.run", "must be an object"))?;
        if let Some(l) = run.get("recursionLimit") {
            if l.as_u64().is_none_or(|n| !(1..=MAX_RECURSION_LIMIT).contains(&n)) {
                return Err(EngineError::validation(
                    "configurable.run.recursionLimit",
                    format!("recursionLimit must be an integer from 1 to {MAX_RECURSION_LIMIT}"),
                ));
            }
        }
        if let Some(t) = run.get("escalationThreshold") {
            if !t.as_f64().is_some_and(|x| (0.0..=1.0).contains(&x)) {
                return Err(EngineError::validation(
                    "configurable.run.escalationThreshold",
                    "escalationThreshold must be a number between 0 and 1",
                ));
            }
        }
    }
    Ok(())
}

/// RunSnapshot v2 from the runs projection.
pub(crate) fn snapshot_of(run: &RunRow) -> Value {
    let mut s = json!({
        "runId": run.run_id,
        "workflowId": run.workflow_id,
        "status": run.status,
        "owner": json_or_null(Some(&run.owner)),
        "eventLogSchemaVersion": EVENT_LOG_SCHEMA_VERSION,
        "startedAt": rfc3339(run.created_at),
        "inputs": json_or_null(Some(&run.inputs)),
    });
    if let Some(n) = &run.current_node_id {
        s["currentNodeId"] = json!(n);
    }
    if let Some(e) = &run.error {
        s["error"] = json_or_null(Some(e));
    }
    if let Some(t) = run.completed_at {
        s["completedAt"] = json!(rfc3339(t));
    }
    for (k, v) in [
        ("configurable", &run.configurable),
        ("tags", &run.tags),
        ("metadata", &run.metadata),
    ] {
        if let Some(v) = v {
            s[k] = json_or_null(Some(v));
        }
    }
    s
}

pub use runtime::is_terminal_status;
