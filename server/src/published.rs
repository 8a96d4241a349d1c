//! Secrets published in this repository may run only a demo.
//!
//! `demo/tollgate.toml` (and the examples in `docs/`) are public: anyone can
//! use their API keys, sign links with their token secret, forge callbacks
//! with their callback secret and sign in with their passwords. A server whose
//! configuration or database holds one of them refuses to start unless its
//! configuration says `demo = true`.

use crate::config::Config;
use figment::providers::{Format, Serialized, Toml};
use figment::Figment;
use std::sync::LazyLock;
use tollgate::Engine;

/// The demo configuration, as shipped.
const DEMO_CONFIG: &str = include_str!("../../demo/tollgate.toml");

/// Placeholder secrets shown in the documentation's examples.
const DOC_EXAMPLES: &[&str] = &[
    "a-long-random-secret",
    "at least 32 characters of random secret",
    "…at least 32 random characters…",
];

/// Everything secret in the published files.
struct Published {
    /// API keys, token secrets, the callback secret, SMTP password, examples.
    secrets: Vec<String>,
    /// The demo people's argon2 PHC strings (a published hash is a published password).
    password_hashes: Vec<(String, String)>,
}

static PUBLISHED: LazyLock<Published> = LazyLock::new(|| {
    let demo: Config = Figment::from(Serialized::defaults(Config::default()))
        .merge(Toml::string(DEMO_CONFIG))
        .extract()
        .expect("demo/tollgate.toml is a valid configuration");
    let mut secrets: Vec<String> = DOC_EXAMPLES.iter().map(|s| s.to_string()).collect();
    secrets.extend(demo.api_keys.iter().map(|k| k.key.clone()));
    secrets.extend(demo.token_keys.iter().map(|k| k.secret.clone()));
    secrets.extend(demo.callbacks.secret.clone());
    secrets.extend(demo.smtp.as_ref().and_then(|s| s.password.clone()));
    let password_hashes = demo
        .principals
        .iter()
        .filter_map(|p| Some((p.id.clone(), p.password_hash.clone()?)))
        .collect();
    Published {
        secrets,
        password_hashes,
    }
});

fn is_published(secret: &str) -> bool {
    PUBLISHED.secrets.iter().any(|s| s == secret)
}

fn refusal(field: &str) -> anyhow::Error {
    anyhow::anyhow!(
        "{field}: this secret is published in Tollgate's repository (demo/tollgate.toml or docs/); \
         generate your own, or set `demo = true` to run a demo"
    )
}

/// Refuses a configuration that uses a published secret, unless it is a demo.
pub fn check_config(config: &Config) -> anyhow::Result<()> {
    if config.demo {
        return Ok(());
    }
    for (i, k) in config.api_keys.iter().enumerate() {
        if is_published(&k.key) {
            return Err(refusal(&format!("api_keys[{i}].key")));
        }
    }
    for (i, k) in config.token_keys.iter().enumerate() {
        if is_published(&k.secret) {
            return Err(refusal(&format!("token_keys[{i}].secret")));
        }
    }
    if config.callbacks.secret.as_deref().is_some_and(is_published) {
        return Err(refusal("callbacks.secret"));
    }
    if let Some(password) = config.smtp.as_ref().and_then(|s| s.password.as_deref()) {
        if is_published(password) {
            return Err(refusal("smtp.password"));
        }
    }
    for p in &config.principals {
        if let Some(phc) = &p.password_hash {
            if PUBLISHED.password_hashes.iter().any(|(_, h)| h == phc) {
                return Err(refusal(&format!("principals {}: password_hash", p.id)));
            }
        }
    }
    Ok(())
}

/// Refuses a database that still holds a published API key or demo password,
/// for example one that a demo configuration filled before.
pub async fn check_database(engine: &Engine, config: &Config) -> anyhow::Result<()> {
    if config.demo {
        return Ok(());
    }
    for key in &PUBLISHED.secrets {
        if key.len() >= 16 && engine.authenticate(key).await?.is_some() {
            anyhow::bail!(
                "the database holds an API key published in demo/tollgate.toml; revoke it \
                 (`tollgate key revoke --db …`) or set `demo = true` to run a demo"
            );
        }
    }
    for (id, phc) in &PUBLISHED.password_hashes {
        if engine.password_hash(id).await?.as_deref() == Some(phc.as_str()) {
            anyhow::bail!(
                "principal {id:?} still has the demo password published in demo/tollgate.toml; \
                 set a new one (`tollgate user add --password-stdin`) or set `demo = true` to run a demo"
            );
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Config {
        Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(DEMO_CONFIG))
            .extract()
            .unwrap()
    }

    #[test]
    fn the_demo_runs_as_a_demo() {
        let config = demo();
        assert!(config.demo, "demo/tollgate.toml must say demo = true");
        check_config(&config).unwrap();
    }

    #[test]
    fn each_published_secret_is_refused_outside_a_demo() {
        let mut config = demo();
        config.demo = false;
        let err = check_config(&config).unwrap_err().to_string();
        assert!(err.starts_with("api_keys[0].key:"), "{err}");

        config.api_keys.clear();
        let err = check_config(&config).unwrap_err().to_string();
        assert!(err.starts_with("token_keys[0].secret:"), "{err}");

        config.token_keys.clear();
        let err = check_config(&config).unwrap_err().to_string();
        assert!(err.starts_with("callbacks.secret:"), "{err}");

        config.callbacks.secret = Some("at least 32 characters of random secret".into());
        assert!(
            check_config(&config).is_err(),
            "a documented example is published too"
        );

        config.callbacks.secret = Some("a-fresh-secret-nobody-has-seen-before-42".into());
        let err = check_config(&config).unwrap_err().to_string();
        assert!(err.starts_with("principals ada: password_hash:"), "{err}");

        for p in &mut config.principals {
            p.password_hash = None;
        }
        check_config(&config).unwrap();
    }
}
