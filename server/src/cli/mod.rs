//! The operator command line: subcommands of the `tollgate` binary that talk
//! to a running server over the REST API (`run`, `interrupt`, `workflow put`,
//! `token mint`), work offline on the SQLite file through the engine
//! (`user`, `key`, `token-key`, `token mint --config`), or need neither
//! (`schema`, `workflow validate`).
//!
//! Data goes to stdout as JSON; errors go to stderr in words; any failure
//! exits non-zero (1; 2 for usage errors, as clap does).

pub(crate) mod admin;
mod remote;
mod schemas;

use clap::{Args, Subcommand, ValueEnum};
use serde_json::Value;
use std::path::PathBuf;

/// The operator subcommands, flattened into the binary's command list.
#[derive(Subcommand)]
pub enum Command {
    /// Start, inspect, resume, cancel and follow runs on a running server.
    Run(RunArgs),
    /// List interrupts on a running server; reassign a seat on one.
    Interrupt(InterruptArgs),
    /// Hand your decisions to someone else for a while, list and end delegations.
    Delegation(DelegationArgs),
    /// Print the JSON Schema of a shape Tollgate accepts or emits.
    Schema {
        /// Which shape.
        name: SchemaName,
    },
    /// Validate workflow definitions offline, or register them on a server.
    Workflow(WorkflowArgs),
    /// Interrupt links (signed tokens).
    Token(TokenArgs),
    /// Directory entries, written offline to the database file.
    User(UserArgs),
    /// API keys, written offline to the database file.
    Key(KeyArgs),
    /// Interrupt link signing keys (the instance operator's), offline on the database file.
    TokenKey(TokenKeyArgs),
}

/// How to reach a running server.
#[derive(Args, Clone, Debug)]
pub struct Remote {
    /// Base URL of the server.
    #[arg(
        long,
        env = "TOLLGATE_URL",
        default_value = "http://127.0.0.1:3000",
        global = true
    )]
    pub url: String,
    /// API key (sent as `Authorization: Bearer`).
    #[arg(long, env = "TOLLGATE_API_KEY", hide_env_values = true, global = true)]
    pub key: Option<String>,
}

#[derive(Args)]
pub struct RunArgs {
    #[command(flatten)]
    remote: Remote,
    #[command(subcommand)]
    command: RunCommand,
}

#[derive(Subcommand)]
enum RunCommand {
    /// Start a run of a registered workflow (POST /runs); prints `{runId, status, eventsUrl, statusUrl}`.
    Start {
        /// The workflow id.
        workflow_id: String,
        /// The run's inputs: a JSON object, `@file` or `@-` (stdin).
        #[arg(long)]
        inputs: Option<String>,
        /// Idempotency-Key: a retry with the same key and body returns the first answer.
        /// 22–128 characters of `A-Z a-z 0-9 . _ ~ -`.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Print a run's snapshot (GET /runs/{runId}), or with `--node` the interrupt
    /// at that node: payload, contract (request and resume schema, outcomes),
    /// votes, quorum and deadline.
    Inspect {
        /// The run id (`tenant/opaque` or `tenant~2Fopaque`).
        run_id: String,
        /// Show the interrupt at this node instead of the snapshot.
        #[arg(long)]
        node: Option<String>,
    },
    /// Resolve (or vote on) the interrupt at a node (POST /runs/{runId}/interrupts/{nodeId}).
    #[command(long_about = "Resolve (or vote on) the pending interrupt at a node: \
POST /runs/{runId}/interrupts/{nodeId} with {\"resumeValue\": VALUE}.\n\n\
The payload is validated against the interrupt's resume schema before anything changes \
(the schema is member `resumeSchema` of `tollgate run inspect RUN --node NODE`): a value that does not fit is refused with \
400 validation_error, nothing is recorded, and the offending field and message are printed on stderr \
(every failure when there are several). Eligibility (approver lists, groups, roles, no self-approval) \
and quorum are checked by the server as well: 403 when the key's principal may not decide, \
409 when the interrupt is already resolved.\n\n\
On success prints {runId, nodeId, status}; a vote that does not decide the gate yet leaves the status unchanged.")]
    Resume {
        /// The run id (`tenant/opaque` or `tenant~2Fopaque`).
        run_id: String,
        /// The interrupt's node id.
        node_id: String,
        /// The resume value: JSON, `@file` or `@-` (stdin); e.g. '{"action":"accept"}'.
        /// Validated against the interrupt's resume schema before anything changes.
        #[arg(long)]
        value: String,
        /// Idempotency-Key for a safe retry.
        #[arg(long)]
        idempotency_key: Option<String>,
    },
    /// Cancel a run (POST /runs/{runId}/cancel); prints `{runId, status}`.
    Cancel {
        /// The run id.
        run_id: String,
        /// Why; recorded in the `run.cancelled` event.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Print a run's events, one JSON event per line.
    Events {
        /// The run id.
        run_id: String,
        /// Keep long-polling (GET /runs/{runId}/events/poll) until the run ends.
        #[arg(long, short)]
        follow: bool,
        /// Only events after this sequence number.
        #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
        after: i64,
    },
}

#[derive(Args)]
pub struct InterruptArgs {
    #[command(flatten)]
    remote: Remote,
    #[command(subcommand)]
    command: InterruptCommand,
}

#[derive(Subcommand)]
enum InterruptCommand {
    /// Interrupts of the key's tenant, newest first (GET /interrupts); prints `{interrupts: [...]}`.
    List {
        /// pending, resolved or cancelled.
        #[arg(long)]
        status: Option<String>,
        /// Only interrupts of this workflow.
        #[arg(long)]
        workflow: Option<String>,
        /// Only interrupts of this kind (approval, clarification, external-event, …).
        #[arg(long)]
        kind: Option<String>,
        /// At most this many.
        #[arg(long)]
        limit: Option<i64>,
    },
    /// Move one person's seat on a pending approval to another person
    /// (POST /runs/{runId}/interrupts/{nodeId}/reassign; needs `admin`).
    /// The new person may then vote in the old one's place on that
    /// interrupt only, and is mailed a link; prints the delegation.
    Reassign {
        /// The run id (`tenant/opaque` or `tenant~2Fopaque`).
        run_id: String,
        /// The interrupt's node id.
        node_id: String,
        /// Whose seat (a person the gate admits).
        #[arg(long)]
        from: String,
        /// Who takes it.
        #[arg(long)]
        to: String,
        /// Why (kept with the delegation).
        #[arg(long)]
        reason: Option<String>,
    },
}

#[derive(Args)]
pub struct DelegationArgs {
    #[command(flatten)]
    remote: Remote,
    #[command(subcommand)]
    command: DelegationCommand,
}

#[derive(Subcommand)]
enum DelegationCommand {
    /// Delegations the key's principal gave or was given (GET /delegations); `--all`: the tenant's (admin).
    List {
        #[arg(long)]
        all: bool,
    },
    /// Hand decisions to DELEGATE until --until (POST /delegations). The
    /// delegate votes in your seat: one vote per seat and per person, never
    /// on their own requests or yours.
    Add {
        /// Who takes the decisions (a person of your tenant).
        delegate: String,
        /// When it ends, RFC 3339 (e.g. 2026-12-24T00:00:00Z); at most 366 days from now.
        #[arg(long)]
        until: String,
        /// When it starts, RFC 3339 (default now).
        #[arg(long)]
        from: Option<String>,
        /// Whose decisions (default the key's principal; anyone else needs `admin`).
        #[arg(long = "for")]
        delegator: Option<String>,
        #[arg(long)]
        reason: Option<String>,
    },
    /// End a delegation now (POST /delegations/{id}/revoke).
    Revoke {
        /// The delegation id.
        id: String,
    },
}

/// The shapes `tollgate schema` can print.
#[derive(Clone, Copy, Debug, ValueEnum)]
#[value(rename_all = "verbatim")]
pub enum SchemaName {
    /// A node of type core.interrupt / core.approvalGate / core.clarificationGate.
    InterruptNode,
    /// A workflow definition as registered (PUT /workflows/{id}).
    Workflow,
    /// The payload of a suspended interrupt (`interrupt.requested`).
    InterruptPayload,
    /// GET /runs/{runId}.
    RunSnapshot,
    /// The body of POST /runs/{runId}/interrupts/{nodeId}.
    ResumeValue,
    /// One run event.
    Event,
    /// The error envelope of every 4xx/5xx answer.
    ErrorEnvelope,
}

#[derive(Args)]
pub struct WorkflowArgs {
    #[command(subcommand)]
    command: WorkflowCommand,
}

#[derive(Subcommand)]
enum WorkflowCommand {
    /// Check a workflow definition with the same rules as registration (offline);
    /// prints `{valid, id, nodes}` or `{valid: false, error, details}` and exits 1.
    Validate {
        /// The workflow JSON file (`-` for stdin).
        file: PathBuf,
    },
    /// Register or replace a workflow on the server (PUT /workflows/{id}; admin scope).
    Put {
        #[command(flatten)]
        remote: Remote,
        /// The workflow JSON file (`-` for stdin); its `id` names the workflow.
        file: PathBuf,
    },
}

#[derive(Args)]
pub struct TokenArgs {
    #[command(subcommand)]
    command: TokenCommand,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum IntentArg {
    Resolve,
    Inspect,
}

#[derive(Subcommand)]
enum TokenCommand {
    /// Mint an interrupt link for a pending interrupt; prints `{token, expiresAt, url}`.
    #[command(
        long_about = "Mint an interrupt link for a pending interrupt; prints {token, expiresAt, url} \
where url is <url>/t/<token>.\n\n\
Online (default): asks the server (GET /runs/{runId}/interrupts/{nodeId}) for a token \
minted for the calling key's principal; the server needs an active [[token_keys]] entry.\n\n\
Offline (--config FILE --principal ID): reads the server's configuration (database and \
signing keys) and mints for that principal directly through the engine."
    )]
    Mint {
        #[command(flatten)]
        remote: Remote,
        /// The run id.
        run_id: String,
        /// The interrupt's node id.
        node_id: String,
        /// `resolve` (inspect and decide) or `inspect` (look only).
        #[arg(long, value_enum, default_value = "resolve")]
        intent: IntentArg,
        /// Mint offline with this server configuration file (its database and token keys).
        #[arg(long, requires = "principal")]
        config: Option<PathBuf>,
        /// With --config: the recipient principal.
        #[arg(long, requires = "config")]
        principal: Option<String>,
    },
}

#[derive(Args)]
pub struct UserArgs {
    #[command(subcommand)]
    command: UserCommand,
}

#[derive(Subcommand)]
enum UserCommand {
    /// Create or replace a principal in the database file (offline); prints the principal.
    Add {
        /// The database: a SQLite file (created if missing) or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Principal id (no '/' or spaces).
        #[arg(long)]
        id: String,
        /// Display name (defaults to the id).
        #[arg(long)]
        name: Option<String>,
        #[arg(long)]
        email: Option<String>,
        /// Tenant (the server's `server.tenant` is `default` unless configured).
        #[arg(long, default_value = "default")]
        tenant: String,
        /// A group (repeatable); matched by approverGroupRefs.
        #[arg(long = "group")]
        groups: Vec<String>,
        /// A role (repeatable); matched by approverRoleRefs.
        #[arg(long = "role")]
        roles: Vec<String>,
        /// May release a gate alone where the gate sets overrideBypassesQuorum.
        #[arg(long = "override")]
        is_override: bool,
        /// Read a console password from stdin (first line) and store its argon2 hash.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set (from stdin) or remove a principal's console password (offline).
    /// Their open console sessions end: on a running server within seconds.
    Password {
        /// The database: a SQLite file or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Principal id.
        #[arg(long)]
        id: String,
        /// Read the new password from stdin (first line).
        #[arg(long, required_unless_present = "remove", conflicts_with = "remove")]
        stdin: bool,
        /// Remove the password: the principal can no longer sign in.
        #[arg(long)]
        remove: bool,
    },
    /// Remove a principal from the directory (offline): their console
    /// sessions end and their API keys are revoked; their past votes stay.
    Remove {
        /// The database: a SQLite file or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Principal id.
        #[arg(long)]
        id: String,
    },
}

#[derive(Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    command: KeyCommand,
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Generate an API key for a principal and store its digest in the database
    /// file (offline); prints `{key, id, principal, scopes, label}` — the key is shown
    /// only this once.
    Create {
        /// The database: a SQLite file or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// The principal the key acts as (must exist; see `tollgate user add`).
        #[arg(long)]
        principal: String,
        /// A scope (repeatable): runs:create, runs:read, runs:cancel, approvals:respond, runs:on-behalf, admin.
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// A label to recognise the key by.
        #[arg(long)]
        label: Option<String>,
    },
    /// List the API keys in the database file (offline): `{keys: [{id, principal,
    /// scopes, label, createdAt, revokedAt}]}`. `id` is the start of the key's
    /// SHA-256 digest; the keys themselves are never stored.
    List {
        /// The database: a SQLite file or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// Only this tenant's keys.
        #[arg(long)]
        tenant: Option<String>,
    },
    /// Revoke an API key (offline). A running server refuses the key within
    /// 10 seconds; the dashboard's revoke takes effect at once.
    Revoke {
        /// The database: a SQLite file or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// The key's id as `key list` or `key create` print it (at least 8 hex characters).
        #[arg(long, required_unless_present = "key", conflicts_with = "key")]
        id: Option<String>,
        /// The key itself, read from stdin (so it stays out of shell history).
        #[arg(long = "key-stdin", id = "key")]
        key_stdin: bool,
    },
}

#[derive(Args)]
pub struct TokenKeyArgs {
    #[command(subcommand)]
    command: TokenKeyCommand,
}

#[derive(Subcommand)]
enum TokenKeyCommand {
    /// Add a signing key with a secret generated by Tollgate (stored in the
    /// database, never shown); prints `{kid, state, source, ...}`. A running
    /// server picks it up within 5 seconds.
    Add {
        /// The database: a SQLite file or a `postgres://` URL.
        #[arg(long)]
        db: PathBuf,
        /// The key id carried in each token (1–64 of `A-Z a-z 0-9 _ ~ -`).
        #[arg(long)]
        kid: String,
        /// Sign new links with it from now on (else it stays `new` until `activate`).
        #[arg(long)]
        activate: bool,
    },
    /// Make a key the one that signs new links; the previous one keeps verifying.
    Activate {
        #[arg(long)]
        db: PathBuf,
        kid: String,
    },
    /// Retire a key: it verifies the links it issued before now until they
    /// expire, and never signs again. One-way.
    Retire {
        #[arg(long)]
        db: PathBuf,
        kid: String,
    },
    /// Revoke a key: nothing it signed verifies any more (401). One-way.
    Revoke {
        #[arg(long)]
        db: PathBuf,
        kid: String,
    },
    /// List the keys with their state and source (never their secrets): `{keys: [...]}`.
    List {
        #[arg(long)]
        db: PathBuf,
    },
}

/// Runs one operator command; returns the process exit code.
pub fn run(command: Command) -> i32 {
    match execute(command) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            1
        }
    }
}

fn execute(command: Command) -> anyhow::Result<i32> {
    match command {
        Command::Schema { name } => {
            print_text(schemas::text(name));
            Ok(0)
        }
        Command::Workflow(WorkflowArgs {
            command: WorkflowCommand::Validate { file },
        }) => admin::validate_workflow(&file),
        Command::Workflow(WorkflowArgs {
            command: WorkflowCommand::Put { remote, file },
        }) => block_on(remote::put_workflow(remote, file)),
        Command::Run(args) => block_on(remote::run(args.remote, args.command)),
        Command::Interrupt(args) => block_on(remote::interrupt(args.remote, args.command)),
        Command::Delegation(args) => block_on(remote::delegation(args.remote, args.command)),
        Command::Token(TokenArgs {
            command:
                TokenCommand::Mint {
                    remote,
                    run_id,
                    node_id,
                    intent,
                    config: Some(config),
                    principal: Some(principal),
                },
        }) => block_on(admin::mint_token(
            remote, config, principal, run_id, node_id, intent,
        )),
        Command::Token(TokenArgs {
            command:
                TokenCommand::Mint {
                    remote,
                    run_id,
                    node_id,
                    intent,
                    ..
                },
        }) => block_on(remote::mint_token(remote, run_id, node_id, intent)),
        Command::User(UserArgs { command }) => block_on(admin::user(command)),
        Command::Key(KeyArgs { command }) => block_on(admin::key(command)),
        Command::TokenKey(TokenKeyArgs { command }) => block_on(admin::token_key(command)),
    }
}

fn block_on<F: std::future::Future<Output = anyhow::Result<i32>>>(f: F) -> anyhow::Result<i32> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(f)
}

/// A JSON argument: inline JSON, `@file`, or `@-` for stdin.
fn json_arg(what: &str, text: &str) -> anyhow::Result<Value> {
    let (source, body) = if text == "@-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        ("stdin".to_string(), s)
    } else if let Some(path) = text.strip_prefix('@') {
        let s =
            std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("{what}: cannot read {path}: {e}"))?;
        (path.to_string(), s)
    } else {
        ("the argument".to_string(), text.to_string())
    };
    serde_json::from_str(&body).map_err(|e| anyhow::anyhow!("{what}: {source} is not JSON: {e}"))
}

/// Reads a file, or stdin for `-`.
fn read_file(path: &std::path::Path) -> anyhow::Result<String> {
    if path.as_os_str() == "-" {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)?;
        return Ok(s);
    }
    std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))
}

fn print_json(v: &Value) {
    print_line(&serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string()));
}

/// Writes one line of output (see [`print_text`]).
fn print_line(text: &str) {
    print_text(&format!("{text}\n"));
}

/// Writes output. A reader that stopped reading (`| head`) ends the
/// command quietly, as it does any Unix tool; `print!` would panic.
fn print_text(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing the output: {e}");
        std::process::exit(1);
    }
}
