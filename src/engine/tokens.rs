//! Interrupt tokens: signing keys in use, links, verification, decisions by token.

use super::*;

impl Engine {
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
        run_id: &RunId,
        node_id: &str,
        recipient: &Principal,
        intent: Intent,
    ) -> Result<(String, Millis)> {
        let interrupt = self
            .inner
            .store
            .latest_interrupt(run_id, node_id)
            .await?
            .filter(|i| i.status == InterruptStatus::Pending)
            .ok_or_else(|| {
                EngineError::NotFound(format!("no pending interrupt on \"{node_id}\" in run {run_id}"))
            })?;
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
        let interrupt = self
            .inner
            .store
            .interrupt(interrupt_id, true)
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
        run_id: &RunId,
        node_id: &str,
        requested: Option<Intent>,
    ) -> Result<Option<(String, Millis, Intent)>> {
        let view = self.inspect_interrupt(run_id, node_id, actor).await?;
        if view.status != InterruptStatus::Pending || !self.can_mint_tokens() {
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

    pub(super) fn sign_for(
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
            r: interrupt.run_id.to_string(),
            n: interrupt.node_id.to_string(),
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
    pub(super) async fn check_token(&self, token: &str) -> Result<(Claims, InterruptRow)> {
        let claims = self.verify_token(token)?;
        let store = &self.inner.store;
        let interrupt = store
            .interrupt(&claims.i, false)
            .await?
            .filter(|i| i.run_id.as_str() == claims.r && i.node_id.as_str() == claims.n)
            .ok_or_else(|| EngineError::NotFound("no such interrupt".into()))?;
        if store.token_revoked(&claims.j).await? {
            return Err(EngineError::AlreadyResolved("this link was revoked".into()));
        }
        let run = store
            .run(&claims.r)
            .await?
            .ok_or_else(|| EngineError::NotFound("no such run".into()))?;
        if interrupt.status != InterruptStatus::Pending || run.is_terminal() {
            return Err(EngineError::AlreadyResolved(format!(
                "this interrupt is no longer open ({})",
                if interrupt.status == InterruptStatus::Pending {
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
        // The claims passed their MAC: the run id is the one the link was minted for.
        self.resolve_visit(
            &RunId::trusted(claims.r.clone()),
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
        match self.inner.store.is_person(principal_id).await? {
            None => return Ok(false),
            Some(true) => return Ok(true),
            Some(false) => {}
        }
        let keys = self.inner.store.live_key_scopes(principal_id).await?;
        Ok(keys.iter().any(|scopes| {
            scopes
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
            .write(move |conn| crate::store::directory::revoke_token(conn, &claims.j, now))
            .await
    }
}
