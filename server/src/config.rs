//! Configuration: a TOML file, overridden by `TOLLGATE__SECTION__KEY`
//! environment variables (`TOLLGATE__SERVER__BIND`, `TOLLGATE__DATABASE__URL`,
//! …). The double underscore after `TOLLGATE` keeps the namespace apart from
//! other `TOLLGATE_*` variables (the CLI's `TOLLGATE_URL`, `TOLLGATE_API_KEY`).

use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// A demonstration: allows the secrets published in this repository
    /// (`demo/tollgate.toml`, the docs' examples). Never in production.
    #[serde(default)]
    pub demo: bool,
    #[serde(default)]
    pub server: ServerConfig,
    #[serde(default)]
    pub database: DatabaseConfig,
    #[serde(default)]
    pub workflows: WorkflowsConfig,
    #[serde(default)]
    pub principals: Vec<PrincipalConfig>,
    #[serde(default)]
    pub api_keys: Vec<ApiKeyConfig>,
    #[serde(default)]
    pub token_keys: Vec<TokenKeyConfig>,
    /// Outgoing mail; without it messages go to the dev outbox.
    #[serde(default)]
    pub smtp: Option<SmtpConfig>,
    #[serde(default)]
    pub notifications: NotificationsConfig,
    /// Run callbacks (`createRun.callbackUrl`); delivered only when `secret` is set.
    #[serde(default)]
    pub callbacks: CallbacksConfig,
    /// Optional interrupt kinds this instance offers (and discovery advertises).
    #[serde(default)]
    pub interrupts: InterruptsConfig,
    /// Console sign-in throttling and password hashing concurrency.
    #[serde(default)]
    pub sign_in: tollgate::sign_in::SignInLimits,
    /// Runs to start when the database has none (demo data).
    #[serde(default)]
    pub demo_runs: Vec<DemoRunConfig>,
    /// Lines printed at start (demo only), e.g. the demo people's sign-in
    /// passwords. Sign-in checks `password_hash`, never these.
    #[serde(default)]
    pub demo_notes: Vec<String>,
    /// Environment variables that were not read, with why (logged as
    /// warnings at start; never configuration).
    #[serde(skip)]
    pub env_warnings: Vec<String>,
}

/// Prefix of configuration variables: `TOLLGATE__<SECTION>__<KEY>`.
pub const ENV_PREFIX: &str = "TOLLGATE__";

/// The largest writer page cache a config may ask for (1 TiB).
const MAX_CACHE_MIB: u32 = 1 << 20;

fn env_provider() -> Env {
    Env::prefixed(ENV_PREFIX).split("__")
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SmtpConfig {
    pub host: String,
    #[serde(default = "default_smtp_port")]
    pub port: u16,
    #[serde(default)]
    pub tls: SmtpTls,
    pub user: Option<String>,
    pub password: Option<String>,
    /// Sender, e.g. `Tollgate <tollgate@example.com>`.
    pub from: String,
}

fn default_smtp_port() -> u16 {
    587
}

#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum SmtpTls {
    /// Plain SMTP (a local relay).
    None,
    /// STARTTLS upgrade (usually port 587).
    #[default]
    Starttls,
    /// TLS from the first byte (usually port 465).
    Tls,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotificationsConfig {
    /// Send a reminder to those who have not voted this long before a deadline.
    pub reminder_before_minutes: Option<u64>,
    /// How often the outbox is checked, in milliseconds.
    pub poll_interval_ms: u64,
    /// How long a mailed link works, in hours (capped at the interrupt's
    /// deadline); an expired link's page offers a fresh one.
    pub link_ttl_hours: u64,
}

impl Default for NotificationsConfig {
    fn default() -> Self {
        NotificationsConfig {
            reminder_before_minutes: None,
            poll_interval_ms: 1000,
            link_ttl_hours: 24,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CallbacksConfig {
    /// HMAC-SHA256 key of the `OpenWOP-Signature` header (at least 32
    /// characters). Without it this host does not deliver callbacks and
    /// refuses `callbackUrl`.
    pub secret: Option<String>,
    /// TEST SWITCH: also allow `http`, `localhost`, loopback and private
    /// (RFC 1918, ULA) targets. Never in production.
    pub allow_loopback: bool,
    /// Per-attempt timeout (connect, send, answer), in milliseconds.
    pub timeout_ms: u64,
    /// How often due callbacks are looked for, in milliseconds.
    pub poll_interval_ms: u64,
}

impl Default for CallbacksConfig {
    fn default() -> Self {
        CallbacksConfig {
            secret: None,
            allow_loopback: false,
            timeout_ms: 10_000,
            poll_interval_ms: 500,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DemoRunConfig {
    pub workflow: String,
    /// Who starts the run (its owner).
    pub principal: String,
    pub inputs: Option<serde_json::Value>,
    /// The person the run is for (`createRun.requestedBy`).
    pub requested_by: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    pub bind: SocketAddr,
    /// The address people and clients use to reach this server (links, eventsUrl);
    /// `http://<bound address>` when unset.
    pub public_url: Option<String>,
    /// Tenant of principals that do not name one.
    pub tenant: String,
    /// Where the built console assets are (`target/site` when unset and found).
    pub site_root: Option<PathBuf>,
    /// How often deadlines and delays are checked, in milliseconds.
    pub timer_interval_ms: u64,
    /// Lifetime of interrupt links (capped at the interrupt's deadline).
    pub token_ttl_minutes: u64,
    /// The live inbox stream ends after this long and the browser reopens it,
    /// its session checked again (`live::inbox_stream`).
    pub live_stream_renew_seconds: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            bind: "127.0.0.1:3000".parse().expect("valid"),
            public_url: None,
            tenant: "default".into(),
            site_root: None,
            timer_interval_ms: 200,
            token_ttl_minutes: 30,
            live_stream_renew_seconds: 300,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatabaseConfig {
    pub url: String,
    pub durability: tollgate::Durability,
    /// SQLite: the writer's page cache in MiB (grows as pages are read).
    #[serde(default = "default_cache_mib")]
    pub cache_mib: u32,
}

fn default_cache_mib() -> u32 {
    tollgate::store::DEFAULT_CACHE_MIB
}

impl Default for DatabaseConfig {
    fn default() -> Self {
        DatabaseConfig {
            url: "sqlite://tollgate.db".into(),
            durability: tollgate::Durability::Full,
            cache_mib: default_cache_mib(),
        }
    }
}

/// `[interrupts]`: the optional OpenWOP families. A definition that uses a
/// kind the instance does not offer is refused at registration
/// (`422 capability_required`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InterruptsConfig {
    /// `conversationPrimitive`: the `conversation.*` kinds (on by default).
    #[serde(default = "yes")]
    pub conversation: bool,
    /// `oauth.credentialInterrupt`: the `credential` kind (off by default;
    /// turn it on when the connect URLs your workflows name exist).
    #[serde(default)]
    pub credential: bool,
}

fn yes() -> bool {
    true
}

impl Default for InterruptsConfig {
    fn default() -> Self {
        let caps = tollgate::definition::Capabilities::default();
        InterruptsConfig {
            conversation: caps.conversation,
            credential: caps.credential,
        }
    }
}

impl InterruptsConfig {
    pub fn capabilities(&self) -> tollgate::definition::Capabilities {
        tollgate::definition::Capabilities {
            conversation: self.conversation,
            credential: self.credential,
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WorkflowsConfig {
    #[serde(default)]
    pub dirs: Vec<PathBuf>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PrincipalConfig {
    pub id: String,
    pub name: Option<String>,
    pub email: Option<String>,
    #[serde(default)]
    pub groups: Vec<String>,
    #[serde(default)]
    pub roles: Vec<String>,
    pub tenant: Option<String>,
    /// May release a gate alone where the gate sets `overrideBypassesQuorum`.
    #[serde(default)]
    pub r#override: bool,
    /// argon2 PHC string for console sign-in.
    pub password_hash: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyConfig {
    pub key: String,
    pub principal: String,
    pub scopes: Vec<String>,
    pub label: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TokenKeyConfig {
    pub kid: String,
    pub secret: String,
    /// A retired key verifies the links it signed until they expire, and signs no new ones.
    #[serde(default)]
    pub retired: bool,
}

/// The `TOLLGATE__…` keys that name configuration (figment's dotted form,
/// e.g. `server.bind`), and a warning for every variable that is not read: an
/// unknown `TOLLGATE__` key, or an old-style `TOLLGATE_SECTION__KEY`. A known
/// key with a bad value is kept, so extraction reports it as an error.
fn known_env_keys(base: &Figment) -> (Vec<String>, Vec<String>) {
    let mut known = Vec::new();
    let mut warnings = Vec::new();
    for (key, _) in env_provider().iter() {
        let probe = base.clone().merge(env_provider().only(&[key.as_str()]));
        let unknown = probe.extract::<Config>().err().is_some_and(|e| {
            e.into_iter()
                .any(|e| matches!(e.kind, figment::error::Kind::UnknownField(..)))
        });
        let var = format!(
            "{ENV_PREFIX}{}",
            key.as_str().replace('.', "__").to_ascii_uppercase()
        );
        if unknown {
            warnings.push(format!(
                "environment variable {var} names no configuration key ({key}); ignored"
            ));
        } else {
            known.push(key.to_string());
        }
    }
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name.starts_with("TOLLGATE_") && !name.starts_with(ENV_PREFIX) && name.contains("__") {
            warnings.push(format!(
                "environment variable {name} is not read: configuration variables are \
                 {ENV_PREFIX}<SECTION>__<KEY> (two underscores after TOLLGATE)"
            ));
        }
    }
    (known, warnings)
}

impl Config {
    /// Defaults, then the file (if any), then the environment.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Config> {
        let mut fig = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.exists() {
                anyhow::bail!("config file {} does not exist", path.display());
            }
            fig = fig.merge(Toml::file(path));
        }
        // The file alone first: an unknown key in it is an error naming the key.
        fig.extract::<Config>()
            .map_err(|e| anyhow::anyhow!("configuration: {e}"))?;
        let (known, env_warnings) = known_env_keys(&fig);
        let known: Vec<&str> = known.iter().map(String::as_str).collect();
        let mut config: Config = fig
            .merge(env_provider().only(&known))
            .extract()
            .map_err(|e| anyhow::anyhow!("configuration: {e}"))?;
        config.env_warnings = env_warnings;
        // Relative workflow dirs are relative to the config file.
        if let Some(base) = file.and_then(Path::parent) {
            for d in &mut config.workflows.dirs {
                if d.is_relative() {
                    *d = base.join(&*d);
                }
            }
        }
        config.check()?;
        crate::published::check_config(&config)?;
        Ok(config)
    }

    /// Logs the environment variables that were not read (after tracing is up).
    pub fn log_env_warnings(&self) {
        for w in &self.env_warnings {
            tracing::warn!("{w}");
        }
    }

    fn check(&self) -> anyhow::Result<()> {
        for p in &self.principals {
            if p.id.is_empty() || p.id.contains('/') || p.id.chars().any(char::is_whitespace) {
                anyhow::bail!(
                    "principals: id {:?} must be non-empty, without '/' or spaces",
                    p.id
                );
            }
        }
        if self.notifications.link_ttl_hours == 0 {
            anyhow::bail!("notifications.link_ttl_hours: at least 1 (hours a mailed link works)");
        }
        if self.server.live_stream_renew_seconds == 0 {
            anyhow::bail!("server.live_stream_renew_seconds: at least 1");
        }
        if self.server.token_ttl_minutes == 0 {
            anyhow::bail!("server.token_ttl_minutes: at least 1");
        }
        if !(1..=MAX_CACHE_MIB).contains(&self.database.cache_mib) {
            anyhow::bail!(
                "database.cache_mib: from 1 to {MAX_CACHE_MIB} (MiB of the SQLite writer's page cache)"
            );
        }
        // Durations become millisecond timestamps: bounded as a workflow's waits are.
        for (name, value, ms_per_unit) in [
            ("server.token_ttl_minutes", self.server.token_ttl_minutes, 60_000),
            (
                "notifications.link_ttl_hours",
                self.notifications.link_ttl_hours,
                3_600_000,
            ),
            (
                "notifications.reminder_before_minutes",
                self.notifications.reminder_before_minutes.unwrap_or(0),
                60_000,
            ),
            ("callbacks.timeout_ms", self.callbacks.timeout_ms, 1),
            (
                "server.live_stream_renew_seconds",
                self.server.live_stream_renew_seconds,
                1_000,
            ),
        ] {
            let most = tollgate::definition::MAX_WAIT_MS / ms_per_unit;
            if value > most {
                anyhow::bail!("{name}: at most {most} (ten years)");
            }
        }
        for (i, k) in self.api_keys.iter().enumerate() {
            if k.key.len() < 16 {
                anyhow::bail!("api_keys[{i}].key: at least 16 characters");
            }
            if !self.principals.iter().any(|p| p.id == k.principal) {
                anyhow::bail!("api_keys[{i}].principal: unknown principal {:?}", k.principal);
            }
            tollgate::auth::parse_scopes(&k.scopes)
                .map_err(|e| anyhow::anyhow!("api_keys[{i}].scopes: {e}"))?;
        }
        for (i, r) in self.demo_runs.iter().enumerate() {
            if !self.principals.iter().any(|p| p.id == r.principal) {
                anyhow::bail!("demo_runs[{i}].principal: unknown principal {:?}", r.principal);
            }
            if let Some(person) = &r.requested_by {
                if !self.principals.iter().any(|p| p.id == *person) {
                    anyhow::bail!("demo_runs[{i}].requested_by: unknown principal {person:?}");
                }
            }
        }
        for (i, k) in self.token_keys.iter().enumerate() {
            tollgate::engine::token_keys::check_kid("kid", &k.kid)
                .map_err(|e| anyhow::anyhow!("token_keys[{i}].{e}"))?;
            if k.secret.len() < tollgate::engine::token_keys::MIN_SECRET_LEN {
                anyhow::bail!(
                    "token_keys[{i}].secret: at least {} characters",
                    tollgate::engine::token_keys::MIN_SECRET_LEN
                );
            }
        }
        if self.callbacks.secret.as_ref().is_some_and(|s| s.len() < 32) {
            anyhow::bail!("callbacks.secret: at least 32 characters");
        }
        self.sign_in.check().map_err(|e| anyhow::anyhow!("sign_in.{e}"))?;
        if self.callbacks.timeout_ms == 0 {
            anyhow::bail!("callbacks.timeout_ms: must be positive");
        }
        tollgate::ids::check_tenant_id("server.tenant", &self.server.tenant)?;
        for (i, p) in self.principals.iter().enumerate() {
            if let Some(t) = &p.tenant {
                tollgate::ids::check_tenant_id(&format!("principals[{i}].tenant"), t)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference block of `docs/configuration.md` with its commented
    /// keys (`# key = value`) uncommented; prose comments stay comments.
    fn documented_reference() -> String {
        let doc = include_str!("../../docs/configuration.md");
        let block = doc
            .split("```toml\n")
            .nth(1)
            .and_then(|rest| rest.split("```").next())
            .expect("docs/configuration.md has a ```toml block");
        block
            .lines()
            .map(|line| {
                let commented = line.trim_start().strip_prefix("# ");
                match commented {
                    Some(rest)
                        if rest.split_once(" = ").is_some_and(|(k, _)| {
                            !k.is_empty() && k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        }) =>
                    {
                        rest.to_string()
                    }
                    _ => line.to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn the_documented_reference_names_only_keys_the_server_reads_with_their_defaults() {
        let text = documented_reference();
        let documented: Config = Figment::from(Serialized::defaults(Config::default()))
            .merge(Toml::string(&text))
            .extract()
            .unwrap_or_else(|e| panic!("docs/configuration.md names a key the server does not read: {e}"));
        let documented = serde_json::to_value(&documented).unwrap();
        let defaults = serde_json::to_value(Config::default()).unwrap();
        // The values the reference shows as defaults (the rest are examples,
        // as the page says).
        for path in [
            "/server/bind",
            "/server/tenant",
            "/server/timer_interval_ms",
            "/server/token_ttl_minutes",
            "/server/live_stream_renew_seconds",
            "/database/url",
            "/database/durability",
            "/database/cache_mib",
            "/interrupts/conversation",
            "/interrupts/credential",
            "/sign_in",
            "/notifications/poll_interval_ms",
            "/notifications/link_ttl_hours",
            "/callbacks/timeout_ms",
            "/callbacks/poll_interval_ms",
        ] {
            assert_eq!(
                documented.pointer(path),
                defaults.pointer(path),
                "docs/configuration.md shows another default for {path}"
            );
        }
    }

    #[test]
    fn durations_past_ten_years_are_refused_by_name() {
        Config::default().check().unwrap();
        type Set = fn(&mut Config, u64);
        let cases: [(&str, Set); 5] = [
            ("server.token_ttl_minutes", |c, v| c.server.token_ttl_minutes = v),
            ("notifications.link_ttl_hours", |c, v| {
                c.notifications.link_ttl_hours = v
            }),
            ("notifications.reminder_before_minutes", |c, v| {
                c.notifications.reminder_before_minutes = Some(v)
            }),
            ("callbacks.timeout_ms", |c, v| c.callbacks.timeout_ms = v),
            ("server.live_stream_renew_seconds", |c, v| {
                c.server.live_stream_renew_seconds = v
            }),
        ];
        for (name, set) in cases {
            let mut config = Config::default();
            set(&mut config, u64::MAX);
            let refused = config.check().unwrap_err().to_string();
            assert!(refused.starts_with(&format!("{name}: at most ")), "{refused}");
            let mut config = Config::default();
            set(&mut config, 1);
            config.check().unwrap();
        }
        // A stream renewed every zero seconds would reopen without end.
        let mut config = Config::default();
        config.server.live_stream_renew_seconds = 0;
        let refused = config.check().unwrap_err().to_string();
        assert!(
            refused.starts_with("server.live_stream_renew_seconds: at least 1"),
            "{refused}"
        );
    }

    #[test]
    fn the_writer_cache_is_bounded_by_name() {
        assert_eq!(
            Config::default().database.cache_mib,
            tollgate::store::DEFAULT_CACHE_MIB
        );
        for (mib, ok) in [
            (0, false),
            (1, true),
            (MAX_CACHE_MIB, true),
            (MAX_CACHE_MIB + 1, false),
        ] {
            let mut config = Config::default();
            config.database.cache_mib = mib;
            match config.check() {
                Ok(()) => assert!(ok, "{mib} MiB was accepted"),
                Err(e) => {
                    assert!(!ok, "{mib} MiB: {e}");
                    assert!(e.to_string().starts_with("database.cache_mib: "), "{e}");
                }
            }
        }
    }
}
