//! The Content-Security-Policy of every HTML response.
//!
//! One policy for the console, the dashboard and the token pages: scripts only
//! from this origin (plus Leptos' inline hydration scripts, admitted by the
//! per-response nonce), WebAssembly compilation for the hydrated console, no
//! inline styles, no framing, forms posting only back to this origin.

/// The policy text; `nonce` is the page's Leptos nonce when there is one.
pub fn content_security_policy(nonce: Option<&str>) -> String {
    let scripts = match nonce {
        Some(nonce) => format!("'self' 'nonce-{nonce}' 'wasm-unsafe-eval'"),
        None => "'self' 'wasm-unsafe-eval'".to_string(),
    };
    format!(
        "default-src 'self'; script-src {scripts}; style-src 'self'; img-src 'self' data:; \
         connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'; \
         object-src 'none'"
    )
}

/// Sets the page's policy, with its nonce, on the response being rendered.
#[cfg(feature = "ssr")]
pub fn set_page_policy() {
    use leptos::prelude::use_context;
    let (Some(nonce), Some(response)) = (
        leptos::nonce::use_nonce(),
        use_context::<leptos_axum::ResponseOptions>(),
    ) else {
        return;
    };
    if let Ok(value) = http::HeaderValue::from_str(&content_security_policy(Some(&nonce))) {
        response.insert_header(http::header::CONTENT_SECURITY_POLICY, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forbids_framing_and_foreign_scripts() {
        let p = content_security_policy(None);
        assert!(p.contains("frame-ancestors 'none'"));
        assert!(p.contains("script-src 'self' 'wasm-unsafe-eval';"));
        assert!(!p.contains("unsafe-inline"));
        let p = content_security_policy(Some("abc"));
        assert!(p.contains("script-src 'self' 'nonce-abc' 'wasm-unsafe-eval';"));
    }
}
