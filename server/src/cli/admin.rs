//! Offline commands: they open the database through the engine (`--db`,
//! `--config`) or need no database at all.

use super::{print_json, read_file, IntentArg, KeyCommand, Remote, TokenKeyCommand, UserCommand};
use anyhow::{anyhow, bail};
use serde_json::json;
use std::path::{Path, PathBuf};
use tollgate::engine::EngineOptions;
use tollgate::{Engine, Principal};

/// `workflow validate FILE`: the registration checks, without a server.
pub(super) fn validate_workflow(file: &Path) -> anyhow::Result<i32> {
    let text = read_file(file)?;
    let raw: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| anyhow!("{}: not JSON: {e}", file.display()))?;
    match Engine::validate_workflow(raw) {
        Ok(wf) => {
            super::print_line(&json!({"valid": true, "id": wf.id, "nodes": wf.nodes.len()}).to_string());
            Ok(0)
        }
        Err(e) => {
            super::print_line(
                &json!({"valid": false, "error": e.to_string(), "details": e.details()}).to_string(),
            );
            eprintln!("{}: invalid: {e}", file.display());
            Ok(1)
        }
    }
}

/// Opens the engine on the database `--db` names: a SQLite file (created
/// and migrated if missing) or a `sqlite:`/`postgres:` URL.
async fn open_db(db: &Path) -> anyhow::Result<Engine> {
    let given = db.to_string_lossy();
    let url = if ["sqlite:", "postgres://", "postgresql://"]
        .iter()
        .any(|p| given.starts_with(p))
    {
        given.into_owned()
    } else {
        format!("sqlite://{}", db.display())
    };
    Engine::open(EngineOptions::new(url.clone()))
        .await
        .map_err(|e| anyhow!("cannot open {url}: {e}"))
}

/// The first line of stdin, without its line end; refused when empty.
fn stdin_line(flag: &str) -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let text = line.trim_end_matches(['\r', '\n']);
    if text.is_empty() {
        bail!("{flag}: nothing on stdin");
    }
    Ok(text.to_string())
}

/// A new password from stdin, checked as the console checks it, hashed.
fn new_password_hash(flag: &str) -> anyhow::Result<String> {
    let password = stdin_line(flag)?;
    tollgate::passwords::check_new(&password).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?;
    Ok(tollgate::passwords::hash(&password)?)
}

pub(super) async fn user(command: UserCommand) -> anyhow::Result<i32> {
    let (db, id, name, email, tenant, groups, roles, is_override, password_stdin) = match command {
        UserCommand::Add {
            db,
            id,
            name,
            email,
            tenant,
            groups,
            roles,
            is_override,
            password_stdin,
        } => (
            db,
            id,
            name,
            email,
            tenant,
            groups,
            roles,
            is_override,
            password_stdin,
        ),
        UserCommand::Password {
            db,
            id,
            stdin,
            remove,
        } => {
            let phc = if stdin && !remove {
                Some(new_password_hash("--stdin")?)
            } else {
                None
            };
            let engine = open_db(&db).await?;
            engine.set_password_hash(&id, phc.as_deref()).await?;
            print_json(&json!({ "id": id, "password": phc.is_some() }));
            eprintln!("Open console sessions of {id} end (on a running server within seconds).");
            return Ok(0);
        }
        UserCommand::Remove { db, id } => {
            open_db(&db).await?.remove_principal(&id).await?;
            print_json(&json!({ "id": id, "removed": true }));
            eprintln!(
                "{id}'s console sessions end and API keys are revoked (on a running server within seconds)."
            );
            return Ok(0);
        }
    };
    if id.is_empty() || id.contains('/') || id.chars().any(char::is_whitespace) {
        bail!("--id {id:?}: must be non-empty, without '/' or spaces");
    }
    tollgate::ids::check_tenant_id("--tenant", &tenant)?;
    // Read the password before touching the database.
    let phc = if password_stdin {
        Some(new_password_hash("--password-stdin")?)
    } else {
        None
    };
    let engine = open_db(&db).await?;
    let principal = Principal {
        name: name.unwrap_or_else(|| id.clone()),
        id,
        tenant,
        email,
        groups,
        roles,
        is_override,
    };
    engine.upsert_principal(principal.clone()).await?;
    if let Some(phc) = &phc {
        engine.set_password_hash(&principal.id, Some(phc)).await?;
    }
    print_json(&json!({
        "id": principal.id,
        "tenant": principal.tenant,
        "name": principal.name,
        "email": principal.email,
        "groups": principal.groups,
        "roles": principal.roles,
        "override": principal.is_override,
        "password": phc.is_some(),
    }));
    Ok(0)
}

pub(super) async fn key(command: KeyCommand) -> anyhow::Result<i32> {
    match command {
        KeyCommand::Create {
            db,
            principal,
            scopes,
            label,
        } => {
            let parsed = tollgate::auth::parse_scopes(&scopes).map_err(|e| anyhow!("--scope: {e}"))?;
            let engine = open_db(&db).await?;
            if engine.principal(&principal).await?.is_none() {
                bail!("--principal: unknown principal {principal:?} (add it with `tollgate user add`)");
            }
            let key = tollgate::auth::generate_key();
            engine
                .put_api_key(&key, &principal, &parsed, label.clone())
                .await?;
            print_json(&json!({
                "key": key,
                "id": &tollgate::auth::hash_key(&key)[..12],
                "principal": principal,
                "scopes": parsed.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                "label": label,
            }));
            eprintln!("The key is shown only this once; only its SHA-256 digest is stored.");
            Ok(0)
        }
        KeyCommand::List { db, tenant } => {
            let engine = open_db(&db).await?;
            let tenants = match tenant {
                Some(t) => {
                    tollgate::ids::check_tenant_id("--tenant", &t)?;
                    vec![t]
                }
                None => engine.tenants().await?,
            };
            let mut keys = Vec::new();
            for t in tenants {
                keys.extend(engine.operator_api_keys(&t).await?);
            }
            print_json(&json!({ "keys": keys }));
            Ok(0)
        }
        KeyCommand::Revoke { db, id, key_stdin } => {
            let id = match (id, key_stdin) {
                (Some(id), _) => id,
                (None, true) => {
                    let mut line = String::new();
                    std::io::stdin().read_line(&mut line)?;
                    let key = line.trim();
                    if key.is_empty() {
                        bail!("--key-stdin: no key on stdin");
                    }
                    tollgate::auth::hash_key(key)
                }
                (None, false) => bail!("give --id or --key-stdin"),
            };
            let engine = open_db(&db).await?;
            let row = engine.operator_revoke_api_key(&id).await?;
            print_json(&json!(row));
            Ok(0)
        }
    }
}

/// `token-key add|activate|retire|revoke|list --db FILE`.
pub(super) async fn token_key(command: TokenKeyCommand) -> anyhow::Result<i32> {
    let row = match command {
        TokenKeyCommand::Add { db, kid, activate } => {
            tollgate::engine::token_keys::check_kid("kid", &kid).map_err(|e| anyhow!("--{e}"))?;
            let row = open_db(&db).await?.add_token_key(&kid, activate).await?;
            eprintln!(
                "The key's secret was generated and stored in the database; it is never shown. \
                 A running server picks the key up within 5 seconds."
            );
            row
        }
        TokenKeyCommand::Activate { db, kid } => open_db(&db).await?.activate_token_key(&kid).await?,
        TokenKeyCommand::Retire { db, kid } => open_db(&db).await?.retire_token_key(&kid).await?,
        TokenKeyCommand::Revoke { db, kid } => open_db(&db).await?.revoke_token_key(&kid).await?,
        TokenKeyCommand::List { db } => {
            let keys = open_db(&db).await?.token_keys().await?;
            print_json(&json!({ "keys": keys }));
            return Ok(0);
        }
    };
    print_json(&json!(row));
    Ok(0)
}

/// The configuration's `[[token_keys]]` as the engine takes them.
pub(crate) fn configured_token_keys(
    config: &crate::config::Config,
) -> Vec<tollgate::engine::token_keys::ConfiguredTokenKey> {
    config
        .token_keys
        .iter()
        .map(|k| tollgate::engine::token_keys::ConfiguredTokenKey {
            kid: k.kid.clone(),
            secret: k.secret.clone(),
            retired: k.retired,
        })
        .collect()
}

/// `token mint --config FILE --principal ID`: mints through the engine with
/// the server configuration's database and signing keys.
pub(super) async fn mint_token(
    remote: Remote,
    config: PathBuf,
    principal: String,
    run_id: String,
    node_id: String,
    intent: IntentArg,
) -> anyhow::Result<i32> {
    let config = crate::config::Config::load(Some(&config))?;
    let engine = Engine::open(EngineOptions {
        database_url: config.database.url.clone(),
        durability: config.database.durability,
        cache_mib: config.database.cache_mib,
        clock: std::sync::Arc::new(tollgate::SystemClock),
        capabilities: config.interrupts.capabilities(),
    })
    .await
    .map_err(|e| anyhow!("cannot open {}: {e}", config.database.url))?;
    engine
        .sync_token_keys(
            configured_token_keys(&config),
            Some(config.server.token_ttl_minutes as i64 * 60_000),
        )
        .await?;
    if !engine.can_mint_tokens() {
        bail!("the configuration has no active [[token_keys]] entry: links cannot be signed");
    }
    let recipient = engine
        .principal(&principal)
        .await?
        .ok_or_else(|| anyhow!("--principal: unknown principal {principal:?}"))?;
    let run_id = tollgate::RunId::parse(tollgate::ids::decode_path_id(&run_id, "--run")?)
        .map_err(|e| anyhow!("--run: {e}"))?;
    let (token, expires) = engine
        .mint_token(
            &run_id,
            &node_id,
            &recipient,
            match intent {
                IntentArg::Resolve => tollgate::token::Intent::Resolve,
                IntentArg::Inspect => tollgate::token::Intent::Inspect,
            },
        )
        .await?;
    let base = config
        .server
        .public_url
        .clone()
        .unwrap_or_else(|| remote.url.clone());
    print_json(&json!({
        "token": token,
        "expiresAt": tollgate::clock::rfc3339(expires),
        "intent": match intent { IntentArg::Resolve => "resolve", IntentArg::Inspect => "inspect" },
        "url": format!("{}/t/{token}", base.trim_end_matches('/')),
    }));
    Ok(0)
}
