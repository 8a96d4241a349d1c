//! Console sign-in and the sessions it opens: throttled attempts, password
//! hashing on a bounded number of blocking threads, and the password
//! generation a session is checked against on each request.

use super::Engine;
use crate::clock::Millis;
use crate::directory::Principal;
use crate::error::{EngineError, Result};
use crate::passwords;
use crate::sign_in::{retry_after_secs, SignInLimits, Throttle};
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::Semaphore;

/// How long a session's view of its principal (password generation,
/// directory entry) is trusted before it is read again, so that a change
/// made by the CLI or another process ends or changes sessions within this time.
pub const DIRECTORY_RECHECK_MS: Millis = 5_000;

/// Sign-in state kept by the engine.
pub(crate) struct State {
    throttle: RwLock<Arc<Throttle>>,
    hashing: RwLock<(Arc<Semaphore>, Duration)>,
    /// principal id → (password generation when a password is set, when read).
    pub(super) credentials: RwLock<HashMap<String, (Option<i64>, Millis)>>,
}

impl Default for State {
    fn default() -> Self {
        let limits = SignInLimits::default();
        State {
            throttle: RwLock::new(Arc::new(Throttle::new(&limits))),
            hashing: RwLock::new(hashing(&limits)),
            credentials: RwLock::new(HashMap::new()),
        }
    }
}

fn hashing(limits: &SignInLimits) -> (Arc<Semaphore>, Duration) {
    (
        Arc::new(Semaphore::new(limits.hash_slots())),
        Duration::from_millis(limits.hash_wait_ms),
    )
}

/// A successful sign-in: who, and the password generation the session is bound to.
#[derive(Debug, Clone)]
pub struct SignedIn {
    pub principal: Principal,
    pub generation: i64,
}

impl Engine {
    /// Replaces the sign-in limits (the throttle starts afresh).
    pub fn set_sign_in_limits(&self, limits: &SignInLimits) {
        let s = &self.inner.sign_in;
        *s.throttle.write().expect("lock") = Arc::new(Throttle::new(limits));
        *s.hashing.write().expect("lock") = hashing(limits);
    }

    /// Runs `f` (an argon2 hash or check) on the blocking pool, at most as
    /// many at once as the limits allow; waits for a slot up to the
    /// configured time, then answers `503`.
    async fn bounded_hash<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> Result<T> {
        let (slots, wait) = self.inner.sign_in.hashing.read().expect("lock").clone();
        let permit = tokio::time::timeout(wait, slots.acquire_owned())
            .await
            .map_err(|_| EngineError::Busy {
                message: "too many sign-ins at once; try again in a moment".into(),
                retry_after_secs: 1,
            })?
            .map_err(|e| EngineError::Internal(format!("hashing slots: {e}")))?;
        let out = tokio::task::spawn_blocking(move || {
            let out = f();
            drop(permit);
            out
        })
        .await
        .map_err(|e| EngineError::Internal(format!("password hash: {e}")))?;
        Ok(out)
    }

    /// Hashes a new password (argon2id) with bounded concurrency.
    pub async fn hash_password(&self, password: &str) -> Result<String> {
        let password = password.to_string();
        self.bounded_hash(move || passwords::hash(&password)).await?
    }

    /// Sets (or with `None` clears) a principal's console password hash, an
    /// argon2 PHC string (see [`crate::passwords::hash`]). A change of hash
    /// moves the password generation on, which ends the principal's open
    /// console sessions; storing the same hash again (a restart) does not.
    pub async fn set_password_hash(&self, principal_id: &str, phc: Option<&str>) -> Result<()> {
        self.set_password_hash_in(None, principal_id, phc).await
    }

    /// [`Engine::set_password_hash`], written only if the principal is of
    /// `tenant` when one is given: the write itself checks, so a person
    /// removed and re-created in another tenant meanwhile is not touched.
    pub(crate) async fn set_password_hash_in(
        &self,
        tenant: Option<&str>,
        principal_id: &str,
        phc: Option<&str>,
    ) -> Result<()> {
        if let Some(phc) = phc {
            passwords::check_phc(phc)?;
        }
        let tenant = tenant.map(str::to_string);
        let (id, phc) = (principal_id.to_string(), phc.map(str::to_string));
        let notice = self.peer_message(super::peers::Change::Principal(id.clone()));
        let written = self
            .inner
            .store
            .write(move |conn| {
                super::peers::notify_in(conn, &notice)?;
                match crate::store::directory::set_password(conn, &id, tenant.as_deref(), phc.as_deref())? {
                    0 if tenant.is_some() => {
                        Err(EngineError::NotFound(format!("principal \"{id}\" not found")))
                    }
                    0 => Err(EngineError::validation(
                        "principal",
                        format!("unknown principal \"{id}\""),
                    )),
                    _ => Ok(()),
                }
            })
            .await;
        self.forget_credentials(principal_id);
        written
    }

    /// A principal's stored password hash, if they have one.
    pub async fn password_hash(&self, principal_id: &str) -> Result<Option<String>> {
        Ok(self
            .inner
            .store
            .credentials(principal_id)
            .await?
            .and_then(|(phc, _)| phc))
    }

    /// Removes a principal from the directory: their console sessions end,
    /// their API keys are deleted and the delegations they gave or were
    /// given revoked (a later holder of the id inherits none of them).
    /// Votes they cast stay in the audit.
    pub async fn remove_principal(&self, principal_id: &str) -> Result<()> {
        let (id, now) = (principal_id.to_string(), self.now());
        let this = self.clone();
        let hashes = self
            .inner
            .store
            .write(move |conn| {
                use super::peers::{notify_in, Change};
                // Peers hear of the principal and each of its keys with the commit.
                notify_in(conn, &this.peer_message(Change::Principal(id.clone())))?;
                let hashes = crate::store::directory::key_hashes(conn, &id)?;
                for h in &hashes {
                    notify_in(conn, &this.peer_message(Change::ApiKey(h.clone())))?;
                }
                if !crate::store::directory::remove_principal(conn, &id, now)? {
                    return Err(EngineError::NotFound(format!("no principal \"{id}\"")));
                }
                Ok(hashes)
            })
            .await?;
        for h in &hashes {
            self.forget_api_key(h);
        }
        self.forget_principal(principal_id);
        self.forget_credentials(principal_id);
        Ok(())
    }

    pub(crate) fn forget_credentials(&self, principal_id: &str) {
        self.inner
            .sign_in
            .credentials
            .write()
            .expect("lock")
            .remove(principal_id);
    }

    /// A console sign-in. Throttled per account and per client address
    /// (`429` with the wait); the password check runs with bounded
    /// concurrency (`503` when no slot frees up in time). Unknown names cost
    /// as much as wrong passwords. `None`: the name and password do not match.
    pub async fn sign_in(
        &self,
        account: &str,
        password: &str,
        address: Option<IpAddr>,
    ) -> Result<Option<SignedIn>> {
        let throttle = self.inner.sign_in.throttle.read().expect("lock").clone();
        throttle.attempt(account, address).map_err(|wait| {
            let secs = retry_after_secs(wait);
            EngineError::TooManyAttempts {
                message: format!("too many sign-in attempts; try again in {secs} s"),
                retry_after_secs: secs,
            }
        })?;
        let row = self.inner.store.credentials(account).await?;
        let (phc, generation) = match row {
            Some((Some(phc), g)) => (Some(phc), g),
            _ => (None, 0),
        };
        let known = phc.is_some();
        let password = password.to_string();
        // The decoy (hashed once, on first use) is made on the blocking pool too.
        let ok = self
            .bounded_hash(move || match phc {
                Some(phc) => passwords::verify(&phc, &password),
                None => passwords::verify(passwords::decoy(), &password),
            })
            .await?;
        if !(ok && known) {
            return Ok(None);
        }
        throttle.succeeded(account);
        Ok(self.principal(account).await?.map(|principal| SignedIn {
            principal,
            generation,
        }))
    }

    /// Checks a console sign-in without a client address (see [`Engine::sign_in`]).
    pub async fn verify_password(&self, principal_id: &str, password: &str) -> Result<Option<Principal>> {
        Ok(self
            .sign_in(principal_id, password, None)
            .await?
            .map(|s| s.principal))
    }

    /// The principal of a console session signed in under `generation`, or
    /// `None` when the session has ended: the principal was removed, lost
    /// their password, or their password changed since. Read again from the
    /// database every [`DIRECTORY_RECHECK_MS`].
    pub async fn session_principal(&self, principal_id: &str, generation: i64) -> Result<Option<Principal>> {
        let now = self.now();
        let cached = self
            .inner
            .sign_in
            .credentials
            .read()
            .expect("lock")
            .get(principal_id)
            .copied();
        let current = match cached {
            Some((g, at)) if now - at < DIRECTORY_RECHECK_MS => g,
            _ => {
                let g = self.inner.store.password_generation(principal_id).await?;
                self.inner
                    .sign_in
                    .credentials
                    .write()
                    .expect("lock")
                    .insert(principal_id.to_string(), (g, now));
                g
            }
        };
        if current != Some(generation) {
            return Ok(None);
        }
        self.principal(principal_id).await
    }
}
