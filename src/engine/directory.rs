//! The directory and API keys: principals, key grants (cached, rechecked),
//! authentication of bearer keys.

use super::*;
use crate::store::directory::IdOwner;

impl Engine {
    /// Creates or replaces a principal, in whichever tenant it names (the
    /// operator's directory: configuration and CLI).
    pub async fn upsert_principal(&self, p: Principal) -> Result<()> {
        self.save_principal_as(p, IdOwner::AnyTenant).await
    }

    /// Creates or replaces a principal of its own tenant (a tenant admin's
    /// dashboard): an id another tenant holds is refused (409), checked in
    /// the write itself.
    pub(super) async fn upsert_tenant_principal(&self, p: Principal) -> Result<()> {
        self.save_principal_as(p, IdOwner::SameTenant).await
    }

    async fn save_principal_as(&self, p: Principal, owner: IdOwner) -> Result<()> {
        // Every directory write comes through here: configuration, CLI, dashboard.
        ids::check_tenant_id("tenant", &p.tenant)?;
        super::admin::check_memberships(&p)?;
        crate::text::refuse_control_str(&p.name, "name")?;
        if let Some(email) = &p.email {
            crate::text::refuse_control_str(email, "email")?;
        }
        self.inner.principals.write().expect("lock").remove(&p.id);
        let id = p.id.clone();
        let notice = self.peer_message(peers::Change::Principal(id.clone()));
        let result = self
            .inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                crate::store::directory::upsert_principal(conn, &p, owner)
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
        self.inner.store.principal(id).await
    }

    /// The persons of `tenant` (a console password or an email address;
    /// service principals are not persons), by id.
    pub(crate) async fn persons_of(&self, tenant: &str) -> Result<Vec<Principal>> {
        let mut people: Vec<Principal> = self
            .inner
            .store
            .tenant_people(tenant)
            .await?
            .into_iter()
            .filter(|(_, is_person)| *is_person)
            .map(|(p, _)| p)
            .collect();
        people.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(people)
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
        let (h, p, now, scopes) = (hash.clone(), principal.to_string(), self.now(), scopes.to_vec());
        let notice = self.peer_message(peers::Change::ApiKey(hash.clone()));
        self.inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                crate::store::directory::put_api_key(conn, &h, &p, &scopes, label.as_deref(), now)
            })
            .await?;
        self.forget_api_key(&hash);
        Ok(())
    }

    /// Stores a new key for a principal of `tenant` (a tenant admin's act);
    /// the write itself checks the tenant (404 when the principal is not of it).
    pub(crate) async fn insert_tenant_api_key(
        &self,
        tenant: &str,
        key: &str,
        principal: &str,
        scopes: &[Scope],
        label: Option<String>,
    ) -> Result<()> {
        let hash = auth::hash_key(key);
        let (t, h, p, now, scopes) = (
            tenant.to_string(),
            hash.clone(),
            principal.to_string(),
            self.now(),
            scopes.to_vec(),
        );
        let notice = self.peer_message(peers::Change::ApiKey(hash.clone()));
        self.inner
            .store
            .write(move |conn| {
                peers::notify_in(conn, &notice)?;
                match crate::store::directory::insert_tenant_api_key(
                    conn,
                    &t,
                    &h,
                    &p,
                    &scopes,
                    label.as_deref(),
                    now,
                )? {
                    0 => Err(EngineError::NotFound(format!("principal \"{p}\" not found"))),
                    _ => Ok(()),
                }
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
        self.inner.store.grant(hash).await
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
