//! Tollgate engine: durable interrupts, approvals, contracts and the event log.
//!
//! Every domain rule lives here. The server, the console and the CLI call
//! [`Engine`] and only adapt its inputs and outputs.

pub mod approval;
pub mod auth;
pub mod binding;
pub mod callback;
pub mod clock;
pub mod contract;
pub mod definition;
pub mod delegation;
pub mod directory;
pub mod egress;
pub mod engine;
pub mod error;
pub mod events;
pub mod expr;
pub mod ids;
pub mod interrupt;
pub mod notify;
pub mod passwords;
pub mod patterns;
pub mod present;
pub mod projection;
pub mod routing;
mod runtime;
pub mod secrets;
pub mod sign_in;
pub mod store;
pub mod text;
pub mod token;

pub use tollgate_wire as wire;
pub use tollgate_wire::{
    ApprovalAction, EventType, InterruptKind, InterruptStatus, NodeId, NodeStatus, RunId, RunStatus, TenantId,
};

/// A hash map for the engine's own keys (node ids, statement addresses,
/// digests, ids from the directory): foldhash rather than SipHash, seeded
/// per process. Not for keys a request sends unchecked.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;

pub use clock::{Clock, ManualClock, SystemClock};
pub use directory::{Actor, Lane, Principal, Subject};
pub use engine::{
    CreateRun, Engine, EngineOptions, Idem, InterruptFilter, InterruptView, Outcome, Resolved, RunCreated,
};
pub use error::EngineError;
pub use events::RunEvent;
pub use store::Durability;
