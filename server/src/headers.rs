//! Security headers on every response.
//!
//! Console pages set their own Content-Security-Policy (with the page's Leptos
//! nonce, see `tollgate_app::security`); any other HTML response gets the same
//! policy without a nonce. Dynamic responses are never cached: token pages,
//! interrupt pages and pages that show a secret must not outlive the visit.

use axum::http::header::{self, HeaderMap, HeaderValue};

/// What the layer needs to know about the deployment.
#[derive(Clone, Copy, Debug)]
pub struct SecurityHeaders {
    /// `public_url` is https: send HSTS.
    pub https: bool,
}

/// Sets the headers on a response (`crate::middleware::respond`); `is_asset`
/// from the request's path ([`is_static_asset`]).
pub fn apply(headers: &mut HeaderMap, options: SecurityHeaders, is_asset: bool) {
    let html = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("text/html"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    if html && !headers.contains_key(header::CONTENT_SECURITY_POLICY) {
        let policy = tollgate_app::security::content_security_policy(None);
        if let Ok(value) = HeaderValue::from_str(&policy) {
            headers.insert(header::CONTENT_SECURITY_POLICY, value);
        }
    }
    if !is_asset {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    if options.https {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static("max-age=63072000; includeSubDomains"),
        );
    }
}

/// The built console assets (wasm, JS, CSS) and public files may be cached.
pub fn is_static_asset(path: &str) -> bool {
    path.starts_with("/pkg/") || path == "/favicon.ico"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_for(content_type: &str, https: bool, is_asset: bool) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(content_type).unwrap());
        apply(&mut h, SecurityHeaders { https }, is_asset);
        h
    }

    #[test]
    fn html_gets_the_policy_and_no_store() {
        let h = headers_for("text/html; charset=utf-8", false, false);
        assert!(h[header::CONTENT_SECURITY_POLICY]
            .to_str()
            .unwrap()
            .contains("frame-ancestors 'none'"));
        assert_eq!(h[header::X_FRAME_OPTIONS], "DENY");
        assert_eq!(h[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        assert_eq!(h[header::REFERRER_POLICY], "no-referrer");
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        assert!(!h.contains_key(header::STRICT_TRANSPORT_SECURITY));
    }

    #[test]
    fn a_page_policy_is_kept() {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static("x"));
        apply(&mut h, SecurityHeaders { https: true }, false);
        assert_eq!(h[header::CONTENT_SECURITY_POLICY], "x");
        assert!(h.contains_key(header::STRICT_TRANSPORT_SECURITY));
    }

    #[test]
    fn assets_may_be_cached_and_json_has_no_policy() {
        let h = headers_for("application/wasm", false, true);
        assert!(!h.contains_key(header::CACHE_CONTROL));
        let h = headers_for("application/json", false, false);
        assert!(!h.contains_key(header::CONTENT_SECURITY_POLICY));
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
    }

    #[test]
    fn static_paths() {
        assert!(is_static_asset("/pkg/tollgate_bg.wasm"));
        assert!(!is_static_asset("/t/ow2.hs256.x"));
        assert!(!is_static_asset("/pkgx"));
    }
}
