//! The delegations page's form posts (`/me/delegations`): any signed-in
//! person hands over their own decisions or ends a delegation they are part
//! of. Each calls the engine, leaves a one-time message in the session and
//! redirects back (post/redirect/get), so the page works without JavaScript.

use crate::form_post::{ok, SignedInPost};
use crate::state::AppState;
use axum::extract::State;
use axum::response::Response;
use tollgate::engine::delegations::NewDelegation;

const PAGE: &str = "/me/delegations";

/// A day picked in the form (`YYYY-MM-DD`, UTC) as the instant it starts,
/// `days_after` days later; anything else is passed on for the engine to refuse by name.
fn day_start(text: &str, days_after: i64) -> Option<String> {
    let text = text.trim();
    if text.is_empty() {
        return None;
    }
    let day = text
        .parse::<jiff::civil::Date>()
        .ok()
        .and_then(|d| d.checked_add(jiff::Span::new().days(days_after)).ok())
        .and_then(|d| d.to_zoned(jiff::tz::TimeZone::UTC).ok());
    Some(match day {
        Some(z) => z.timestamp().to_string(),
        None => text.to_string(),
    })
}

/// `POST /me/delegations`: the signed-in person's decisions to `delegate`
/// from the start of `starts` (or now) until the end of `ends` (UTC days).
pub async fn create(State(state): State<AppState>, post: SignedInPost) -> Response {
    let new = NewDelegation {
        delegator: None,
        delegate: post.field("delegate").to_string(),
        starts_at: day_start(post.field("starts"), 0),
        ends_at: day_start(post.field("ends"), 1),
        reason: Some(post.field("reason").to_string()),
    };
    let outcome = state.engine.delegate(&post.actor(), new).await.map(|d| {
        ok(format!(
            "{} decides in your place until {}.",
            d.delegate_name,
            d.ends_at.unwrap_or_default()
        ))
    });
    post.finish(PAGE, outcome).await
}

/// `POST /me/delegations/revoke`: ends the delegation `id` now.
pub async fn revoke(State(state): State<AppState>, post: SignedInPost) -> Response {
    let id = post.field("id").to_string();
    let outcome = state
        .engine
        .revoke_delegation(&post.actor(), &id)
        .await
        .map(|d| ok(format!("The delegation to {} has ended.", d.delegate_name)));
    post.finish(PAGE, outcome).await
}

pub fn routes() -> axum::Router<AppState> {
    use axum::routing::post;
    axum::Router::new()
        .route(PAGE, post(create))
        .route("/me/delegations/revoke", post(revoke))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_picked_day_is_its_start_in_utc_and_the_end_day_is_inclusive() {
        assert_eq!(
            day_start("2026-12-08", 0).as_deref(),
            Some("2026-12-08T00:00:00Z")
        );
        assert_eq!(
            day_start("2026-12-31", 1).as_deref(),
            Some("2027-01-01T00:00:00Z")
        );
        assert_eq!(day_start(" ", 1), None);
        assert_eq!(day_start("next week", 1).as_deref(), Some("next week"));
    }
}
