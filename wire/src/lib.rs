//! Tollgate's wire types, shared by the engine, the REST API and the console.
//!
//! This crate compiles to wasm (it depends on serde only), so the browser
//! build uses the same types as the engine instead of mirroring them:
//! statuses, kinds, approval actions and event types as enums ([`status`],
//! [`kind`], [`event`]), run, tenant and node ids as newtypes ([`ids`]), the
//! JSON-Schema subset the console can draw ([`schema_subset`]), how each
//! kind is put to a person ([`present`]), and the dashboard's data
//! ([`admin`], [`directory`]), and how a moment is said to people ([`when`]).

#[macro_use]
mod text_enum;

pub mod admin;
pub mod delegation;
pub mod directory;
pub mod event;
pub mod ids;
pub mod inbox;
pub mod kind;
pub mod present;
pub mod schema_subset;
pub mod status;
pub mod when;

pub use directory::{Lane, Principal, Subject};
pub use event::EventType;
pub use ids::{NodeId, RunId, TenantId};
pub use kind::{ApprovalAction, InterruptKind};
pub use status::{
    DeadlineState, InterruptStatus, MailReason, NodeStatus, OutboxKind, OutboxStatus, RunStatus,
};
pub use text_enum::UnknownValue;
