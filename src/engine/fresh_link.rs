//! "Send me a fresh link": the page of an expired mailed link asks for a
//! new one. It goes to the link's own recipient, at the address the
//! directory has for them, about the same interrupt — never to an address
//! the caller names — and at most once per [`FRESH_LINK_EVERY_MS`].

use super::*;
use crate::store::changes::Change;
use tollgate_wire::MailReason;

/// How often one recipient may have a fresh link mailed for one interrupt.
pub const FRESH_LINK_EVERY_MS: Millis = 5 * 60_000;

impl Engine {
    /// Queues a mail with a new link for `token`'s recipient. The token must
    /// be one this instance signed (401 otherwise) — expired is fine, that is
    /// the point — for an interrupt still open (404, 409; a revoked link is
    /// 409). 403 when the recipient no longer exists or has no address; 429
    /// (`rate_limited`, with when to retry) within [`FRESH_LINK_EVERY_MS`] of
    /// the last one. The link itself is minted at delivery, like every mail's.
    pub async fn send_fresh_link(&self, token: &str) -> Result<()> {
        let claims = self.inner.tokens.read().expect("lock").verify(token, i64::MIN)?;
        let (claims, interrupt) = self.check_claims(claims).await?;
        let recipient = self
            .principal(&claims.p)
            .await?
            .filter(|p| p.tenant == ids::tenant_of(&interrupt.run_id))
            .ok_or_else(|| {
                EngineError::Forbidden("the person this link was made for no longer exists".into())
            })?;
        let address = recipient.email.clone().filter(|e| !e.is_empty()).ok_or_else(|| {
            EngineError::Forbidden("the person this link was made for has no email address".into())
        })?;
        let now = self.now();
        self.inner
            .store
            .write(move |conn| {
                let last = crate::store::outbox::last_mail_at(
                    conn,
                    &interrupt.interrupt_id,
                    &recipient.id,
                    MailReason::FreshLink,
                )?;
                if let Some(at) = last.filter(|at| now - at < FRESH_LINK_EVERY_MS) {
                    let wait = (at + FRESH_LINK_EVERY_MS - now + 999) / 1000;
                    return Err(EngineError::TooManyAttempts {
                        message: format!("a fresh link was sent a moment ago; ask again in {wait} seconds"),
                        retry_after_secs: wait as u64,
                    });
                }
                crate::store::changes::apply(
                    conn,
                    vec![Change::Email {
                        reason: MailReason::FreshLink,
                        run_id: interrupt.run_id.clone(),
                        node_id: interrupt.node_id.clone(),
                        interrupt_id: interrupt.interrupt_id.clone(),
                        recipient: recipient.id.clone(),
                        address: Some(address),
                        at: now,
                    }],
                )
            })
            .await
    }
}
