//! Workflow definitions: registration (instance-wide and per tenant), the
//! compiled cache by content digest, and which definition a tenant sees.

use super::*;

/// The id prefix of the OpenWOP conformance fixtures (`conformance-approval`,
/// `conformance-noop`, … — the files of `workflows/conformance`).
const CONFORMANCE_PREFIX: &str = "conformance-";

impl Engine {
    pub(super) async fn load_registered(&self) -> Result<()> {
        let _serial = self.inner.reloading.lock().await;
        let rows = self.inner.store.registered().await?;
        self.cache_registered(rows);
        Ok(())
    }

    /// Compiles (once per digest) and caches stored current definitions.
    fn cache_registered(&self, rows: Vec<crate::store::registry::Registered>) {
        for (tenant, id, digest, text) in rows {
            // Reloaded on every peer's registration: compile only versions not yet seen.
            let known = self.inner.compiled.read().expect("lock").get(&digest).cloned();
            let compiled = match known {
                Some(wf) => Ok(wf),
                None => serde_json::from_str(&text)
                    .map_err(EngineError::from)
                    .and_then(|raw| definition::compile_with(raw, &self.inner.capabilities))
                    .map(Arc::new),
            };
            match compiled {
                Ok(wf) => self.cache_workflow(tenant, id, digest, wf),
                Err(e) => {
                    tracing::warn!(workflow = %id, tenant = %tenant, error = %e, "stored workflow no longer validates; not listed")
                }
            }
        }
    }

    /// Validates and registers (or replaces) an instance-wide workflow
    /// definition: the instance operator's act (`[workflows] dirs`, tests,
    /// tools on the database). Tenants register theirs with [`Engine::put_tenant_workflow`].
    pub async fn register_workflow(&self, raw: Value) -> Result<WorkflowInfo> {
        let wf = self.compile_off_runtime(raw).await?;
        self.store_workflow(INSTANCE, wf).await
    }

    /// `PUT /workflows/{id}` by a tenant admin: registers or replaces the
    /// definition in the actor's tenant; `true` when it was new. An
    /// instance-wide definition with that id is read-only to tenants (403).
    pub async fn put_tenant_workflow(&self, actor: &Actor, raw: Value) -> Result<(WorkflowInfo, bool)> {
        actor.require(Scope::Admin)?;
        let wf = self.compile_off_runtime(raw).await?;
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

    /// Compiles a definition on the blocking pool: its schemas and their
    /// patterns (each determinized to bound what checking it costs,
    /// `crate::patterns`) can take a while for a large one, and no request
    /// thread should wait behind it.
    async fn compile_off_runtime(&self, raw: Value) -> Result<Workflow> {
        let caps = self.inner.capabilities;
        tokio::task::spawn_blocking(move || definition::compile_new(raw, &caps))
            .await
            .map_err(|e| EngineError::Internal(format!("compiling the definition: {e}")))?
    }

    pub(super) async fn store_workflow(&self, tenant: &str, wf: Workflow) -> Result<WorkflowInfo> {
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
        // The commit and the cache update in one order with reloads and other registrations.
        let _serial = self.inner.reloading.lock().await;
        self.inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                crate::store::registry::register(conn, &t, &id, &d, &text, &version, &name, now)
            })
            .await?;
        self.cache_workflow(tenant.to_string(), info.id.clone(), digest, Arc::new(wf));
        Ok(info)
    }

    /// Makes `digest` the current definition of (`tenant`, `id`).
    fn cache_workflow(&self, tenant: String, id: String, digest: String, wf: SharedWorkflow) {
        self.inner
            .compiled
            .write()
            .expect("lock")
            .insert(digest.clone(), wf);
        self.inner
            .current
            .write()
            .expect("lock")
            .insert((tenant, id), digest);
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
    pub(super) fn current_of(&self, tenant: &str, id: &str) -> Option<(String, SharedWorkflow)> {
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
    pub(super) fn visible_workflow(
        &self,
        tenant: &str,
        id: &str,
    ) -> Option<(String, SharedWorkflow, &'static str)> {
        if let Some((d, wf)) = self.current_of(INSTANCE, id) {
            return Some((d, wf, SCOPE_INSTANCE));
        }
        self.current_of(tenant, id).map(|(d, wf)| (d, wf, SCOPE_TENANT))
    }

    /// [`Engine::visible_workflow`], reading the database on a miss: a
    /// definition registered through another instance a moment ago is found
    /// before that instance's notice arrives.
    pub(super) async fn visible_workflow_now(
        &self,
        tenant: &str,
        id: &str,
    ) -> Result<Option<(String, SharedWorkflow, &'static str)>> {
        if let Some(found) = self.visible_workflow(tenant, id) {
            return Ok(Some(found));
        }
        let rows = self.inner.store.registered_as([INSTANCE, tenant], id).await?;
        if rows.is_empty() {
            return Ok(None);
        }
        self.cache_registered(rows);
        Ok(self.visible_workflow(tenant, id))
    }

    /// The compiled definition a run was started with (cached; read on the writer when not).
    pub(super) fn workflow_version(&self, conn: &WriteConn, digest: &str) -> Result<SharedWorkflow> {
        if let Some(wf) = self.inner.compiled.read().expect("lock").get(digest) {
            return Ok(wf.clone());
        }
        let text = crate::store::registry::version(conn, digest)?
            .ok_or_else(|| EngineError::Internal(format!("workflow version {digest} is not stored")))?;
        // A run goes on under the definition it started with, whatever the instance offers now.
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
    pub async fn workflow_for(&self, actor: &Actor, id: &str) -> Result<Value> {
        actor.require(Scope::RunsRead)?;
        self.visible_workflow_now(actor.tenant(), id)
            .await?
            .map(|(_, wf, _)| wf.raw.clone())
            .ok_or_else(|| EngineError::NotFound(format!("no workflow \"{id}\"")))
    }

    /// Ids registered in any of `tenants`, sorted, each once.
    fn ids_in(&self, tenants: &[&str]) -> Vec<String> {
        let mut ids: Vec<String> = self
            .inner
            .current
            .read()
            .expect("lock")
            .keys()
            .filter(|(t, _)| tenants.contains(&t.as_str()))
            .map(|(_, id)| id.clone())
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Instance-wide workflow ids (never a tenant's).
    pub fn workflow_ids(&self) -> Vec<String> {
        self.ids_in(&[INSTANCE])
    }

    /// Whether a workflow id names an OpenWOP conformance fixture
    /// (`conformance-…`, the ids of `workflows/conformance`): the one
    /// definition of "fixture". Discovery lists such ids only when they are
    /// instance-wide.
    pub fn is_conformance_fixture(id: &str) -> bool {
        id.len() > CONFORMANCE_PREFIX.len() && id.starts_with(CONFORMANCE_PREFIX)
    }

    /// Discovery's `fixtures[]`: the instance-wide workflows that are
    /// OpenWOP conformance fixtures ([`Engine::is_conformance_fixture`]), sorted.
    /// The instance's other workflows (a deployment's own, such as the
    /// demo's) are not fixtures and are not advertised.
    pub fn conformance_fixtures(&self) -> Vec<String> {
        self.ids_in(&[INSTANCE])
            .into_iter()
            .filter(|id| Engine::is_conformance_fixture(id))
            .collect()
    }

    /// The workflows `actor`'s tenant may run: the instance's and its own, by id.
    pub fn workflows_for(&self, actor: &Actor) -> Result<Vec<WorkflowInfo>> {
        actor.require(Scope::RunsRead)?;
        let tenant = actor.tenant();
        Ok(self
            .ids_in(&[INSTANCE, tenant])
            .into_iter()
            .filter_map(|id| self.visible_workflow(tenant, &id))
            .map(|(_, wf, scope)| workflow_info(&wf, if scope == SCOPE_INSTANCE { INSTANCE } else { tenant }))
            .collect())
    }

    /// Validates a definition without registering it (the CLI's `workflow validate`).
    pub fn validate_workflow(raw: Value) -> Result<Workflow> {
        definition::compile_new(raw, &definition::Capabilities::ALL)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_in(dir: &str) -> Vec<String> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
        let mut ids: Vec<String> = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .map(|p| {
                let raw: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
                raw["id"].as_str().unwrap().to_string()
            })
            .collect();
        ids.sort();
        ids
    }

    #[test]
    fn the_conformance_fixtures_are_the_files_of_workflows_conformance() {
        let fixtures = ids_in("workflows/conformance");
        assert!(fixtures.len() >= 7, "{fixtures:?}");
        for id in &fixtures {
            assert!(Engine::is_conformance_fixture(id), "{id}");
        }
        // A deployment's own workflows (the demo's) are not fixtures.
        let demo = ids_in("demo/workflows");
        assert!(!demo.is_empty());
        for id in &demo {
            assert!(!Engine::is_conformance_fixture(id), "{id}");
        }
        for id in [
            "conformance-",
            "conformance",
            "my-conformance-approval",
            "Conformance-approval",
            "",
        ] {
            assert!(!Engine::is_conformance_fixture(id), "{id:?}");
        }
    }
}
