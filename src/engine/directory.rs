//! The directory and API keys: principals, key grants (cached, rechecked),
//! authentication of bearer keys.

use super::*;

impl Engine {
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

    pub(super) async fn load_principal(&self, id: &str) -> Result<Option<Principal>> {
        let row: Option<(String, String, Option<String>, String, String, i64)> = sqlx::query_as(
            &self
                .inner
                .store
                .q("SELECT tenant, name, email, groups, roles, is_override FROM principals WHERE id = ?"),
        )
        .bind(id)
        .fetch_optional(&self.inner.store.read)
        .await?;
        row.map(|(tenant, name, email, groups, roles, o)| {
            crate::directory::principal_from_columns(
                id.to_string(),
                tenant,
                name,
                email,
                &groups,
                &roles,
                o != 0,
            )
        })
        .transpose()
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
    pub(super) async fn load_grant(&self, hash: &str) -> Result<Option<Grant>> {
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
}
