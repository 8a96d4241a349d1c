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
        let ttl = self.longest_link_ms();
        *self.inner.tokens.write().expect("lock") = KeyRing::new(keys).with_max_ttl(ttl);
    }

    /// Sets how long a mailed link lives (capped at the interrupt's
    /// deadline); the key ring accepts lifetimes up to the longer of this
    /// and the API link lifetime.
    pub fn set_mail_link_ttl(&self, ttl_ms: Millis) {
        *self.inner.mail_link_ttl_ms.write().expect("lock") = ttl_ms.max(1);
        let longest = self.longest_link_ms();
        let mut ring = self.inner.tokens.write().expect("lock");
        *ring = std::mem::take(&mut *ring).with_max_ttl(longest);
    }

    fn api_link_ms(&self) -> Millis {
        *self.inner.token_ttl_ms.read().expect("lock")
    }

    /// The longest lifetime a link this instance signs may have.
    pub(super) fn longest_link_ms(&self) -> Millis {
        let api = *self.inner.token_ttl_ms.read().expect("lock");
        api.max(*self.inner.mail_link_ttl_ms.read().expect("lock"))
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
        self.sign_as_asked(&interrupt, recipient, intent)
    }

    /// Mints a token on exactly `interrupt_id` while it is pending (a mail
    /// for one visit never links to a later one).
    pub async fn mint_token_for(
        &self,
        interrupt_id: &str,
        recipient: &Principal,
        intent: Intent,
    ) -> Result<(String, Millis)> {
        let interrupt = self.pending_interrupt(interrupt_id).await?;
        self.sign_as_asked(&interrupt, recipient, intent)
    }

    /// An API link that does exactly what was asked, or `SignInRequired`
    /// for a decision link on a gate no link may decide.
    fn sign_as_asked(
        &self,
        interrupt: &InterruptRow,
        recipient: &Principal,
        intent: Intent,
    ) -> Result<(String, Millis)> {
        if Self::link_intent(interrupt, intent) != intent {
            return Err(sign_in_required(": only an inspect link can be minted for it"));
        }
        let (token, expires, _) = self.sign_for(interrupt, recipient, intent, self.api_link_ms())?;
        Ok((token, expires))
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
        let signed = match self.pending_interrupt(&view.interrupt_id).await {
            Ok(interrupt) => self.sign_for(&interrupt, &actor.principal, intent, self.api_link_ms()),
            Err(e) => Err(e),
        };
        match signed {
            Ok(link) => Ok(Some(link)),
            // Resolved between the read and the mint.
            Err(EngineError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The link an email carries for `recipient` on exactly `interrupt_id`
    /// (the mailer calls this at delivery, so no usable link is stored):
    /// resolve-capable when the recipient, as the directory has them now,
    /// holds `approvals:respond` and may decide this interrupt by its stored
    /// rules (refs, self-approval), by the same rule as every other surface;
    /// anyone else (a person told only because `audience` names them, the
    /// run's owner and the person it is for, always) gets an inspect link. `NotFound`
    /// when the interrupt is no longer pending; `Forbidden` when the
    /// recipient is not of the run's tenant (no link at all).
    pub async fn mail_link_for(&self, interrupt_id: &str, recipient: &Principal) -> Result<MailLink> {
        let interrupt = self.pending_interrupt(interrupt_id).await?;
        let requesters = self.requesters_of(&interrupt.run_id).await?;
        let intent = if requesters.contains(&recipient.id) {
            // Never a decision link to the person whose request it is (their
            // own vote is refused where the gate forbids self-approval, and
            // is no approval by someone else where it allows it).
            self.check_link_tenant(&interrupt, recipient)?;
            Intent::Inspect
        } else {
            self.intent_for(&interrupt, recipient, &requesters).await?
        };
        let mail_ttl = *self.inner.mail_link_ttl_ms.read().expect("lock");
        let (token, expires, signed) = self.sign_for(&interrupt, recipient, intent, mail_ttl)?;
        Ok(MailLink {
            token,
            expires_at: expires,
            intent: signed,
            sign_in_to_decide: signed != intent,
        })
    }

    /// The link a run callback about `interrupt_id` carries for its
    /// recipient, the run's owner (the principal that created the run), so
    /// a receiver can act through `/interrupts/{token}` without an API key.
    /// Minted at delivery (never stored), capped like every link; its intent
    /// by the same rule as [`Engine::mail_link_for`]. `None` when the
    /// interrupt is no longer pending, no key can sign, or the owner is no
    /// longer a principal of the run's tenant.
    pub async fn callback_link_for(&self, interrupt_id: &str) -> Result<Option<CallbackLink>> {
        if !self.can_mint_tokens() {
            return Ok(None);
        }
        let Some(interrupt) = self.inner.store.interrupt(interrupt_id, true).await? else {
            return Ok(None);
        };
        let Some(run) = self.inner.store.run(&interrupt.run_id).await? else {
            return Ok(None);
        };
        let Some(owner) = self.principal(&run.owner_subject_id()).await? else {
            return Ok(None);
        };
        let intent = match self.intent_for(&interrupt, &owner, &run.requesters()).await {
            Ok(i) => i,
            Err(EngineError::Forbidden(_)) => return Ok(None),
            Err(e) => return Err(e),
        };
        let (token, expires, intent) = self.sign_for(&interrupt, &owner, intent, self.api_link_ms())?;
        Ok(Some(CallbackLink {
            token,
            expires_at: expires,
            intent,
            recipient: owner.id,
        }))
    }

    /// What a link for `recipient` on the pending `interrupt` may do: the
    /// one rule of mail and callback links. `Forbidden` for a recipient of
    /// another tenant (exact tenant ids), who gets no link at all.
    async fn intent_for(
        &self,
        interrupt: &InterruptRow,
        recipient: &Principal,
        requesters: &[String],
    ) -> Result<Intent> {
        self.check_link_tenant(interrupt, recipient)?;
        // Membership and standing as they are now (decision time).
        let principal = self
            .principal(&recipient.id)
            .await?
            .unwrap_or_else(|| recipient.clone());
        let holds = self.holds_respond(&principal.id).await?;
        let may_decide = super::inbox::eligible_by(
            interrupt.kind,
            interrupt.rules.as_ref(),
            requesters,
            &principal,
            holds,
        );
        Ok(if may_decide.is_ok() {
            Intent::Resolve
        } else {
            Intent::Inspect
        })
    }

    /// No link at all for a recipient of another tenant (exact tenant ids).
    fn check_link_tenant(&self, interrupt: &InterruptRow, recipient: &Principal) -> Result<()> {
        if recipient.tenant != ids::tenant_of(&interrupt.run_id) {
            return Err(EngineError::Forbidden(format!(
                "{} is not of the run's tenant",
                recipient.id
            )));
        }
        Ok(())
    }

    /// Signs a link, with what it may do: on a gate only a signed-in
    /// principal decides, an inspect link whatever was asked
    /// ([`Engine::link_intent`]).
    pub(super) fn sign_for(
        &self,
        interrupt: &InterruptRow,
        recipient: &Principal,
        intent: Intent,
        ttl: Millis,
    ) -> Result<(String, Millis, Intent)> {
        let intent = Self::link_intent(interrupt, intent);
        let now = self.now();
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
        Ok((token, expires, intent))
    }

    /// What a link asked to do `intent` on `interrupt` may do: never decide
    /// a gate only a signed-in principal decides.
    pub(super) fn link_intent(interrupt: &InterruptRow, intent: Intent) -> Intent {
        if requires_sign_in(interrupt) {
            Intent::Inspect
        } else {
            intent
        }
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
        self.check_claims(claims).await
    }

    /// The ladder after the credential: 404 (unknown interrupt), 409
    /// (resolved, run ended, or this link revoked).
    pub(super) async fn check_claims(&self, claims: Claims) -> Result<(Claims, InterruptRow)> {
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
        let (claims, interrupt) = self.check_token(token).await?;
        if requires_sign_in(&interrupt) {
            return Err(sign_in_required("; sign in to the console or use an API key"));
        }
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
            None => Ok(false),
            Some(true) => Ok(true),
            Some(false) => Ok(respond_held(
                false,
                &self.inner.store.live_key_scopes(principal_id).await?,
            )),
        }
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

/// The link a mail carries (see [`Engine::mail_link_for`]).
#[derive(Debug, Clone, PartialEq)]
pub struct MailLink {
    pub token: String,
    pub expires_at: Millis,
    pub intent: Intent,
    /// The recipient may decide, but only signed in: the gate refuses links
    /// (profile openwop-interrupt-auth-required), so this one only shows it.
    pub sign_in_to_decide: bool,
}

/// A link minted for a callback's recipient (see [`Engine::callback_link_for`]).
#[derive(Debug, Clone, PartialEq)]
pub struct CallbackLink {
    pub token: String,
    pub expires_at: Millis,
    pub intent: Intent,
    /// The principal the link acts as: the run's owner.
    pub recipient: String,
}

/// [`Engine::holds_respond`] on loaded rows: a person holds
/// `approvals:respond`; anyone else through a live key (`live_keys`, the
/// scopes of each) that grants it or `admin`.
pub(crate) fn respond_held(is_person: bool, live_keys: &[Vec<Scope>]) -> bool {
    is_person
        || live_keys.iter().any(|scopes| {
            scopes
                .iter()
                .any(|s| matches!(s, Scope::ApprovalsRespond | Scope::Admin))
        })
}

/// Whether only a signed-in principal may decide `interrupt` (its gate's
/// `profile`, copied onto the interrupt with its rules).
pub(crate) fn requires_sign_in(interrupt: &InterruptRow) -> bool {
    interrupt.rules.as_ref().is_some_and(|r| r.requires_sign_in)
}

/// The refusal of a link on a gate only a signed-in principal decides,
/// ending with `what_instead`.
fn sign_in_required(what_instead: &str) -> EngineError {
    EngineError::SignInRequired(format!(
        "this gate is decided only by a signed-in approver (profile openwop-interrupt-auth-required){what_instead}"
    ))
}
