//! How an interrupt is put to a person, kind by kind: what it asks
//! ([`KindDetails`]), the form its answer is drawn from ([`AnswerForm`]) and
//! the thread of a conversation ([`Thread`]). The engine builds them from an
//! interrupt's payload and contract (`tollgate::present`); the console only
//! draws them.

use crate::kind::InterruptKind;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What an interrupt asks, read from its payload's `data`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub enum KindDetails {
    /// Drawn from the request and its `requestSchema`.
    Approval,
    /// Each question, answered by its id.
    Clarification { questions: Vec<Question> },
    /// What the run waits for: the event type and each correlation member.
    ExternalEvent {
        event_type: String,
        correlation: Vec<(String, Value)>,
    },
    /// An agent's decision below its confidence threshold.
    LowConfidence {
        agent_id: String,
        threshold: Option<f64>,
        observed: Option<f64>,
        /// The agent's proposed decision, if it made one.
        decision: Option<Value>,
    },
    /// An account to connect through the host's page; no credential travels here.
    Credential {
        provider: String,
        scopes: Vec<String>,
        /// `missing`, `expired` or `insufficient_scope`.
        reason: Option<String>,
        /// The host's connect page: an `https://` URL only, else `None`.
        connect_url: Option<String>,
    },
    /// A kind not yet specified: its `customKind`; the request is drawn best-effort.
    Custom { custom_kind: String },
    /// A `conversation.*` turn; the thread is read separately ([`Thread`]).
    Conversation {
        conversation_id: String,
        title: Option<String>,
        /// The turn's prompt (an exchange) or the opening prompt (a start).
        prompt: Option<String>,
        /// Why a close closes it.
        reason: Option<String>,
    },
}

/// One question of a clarification.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Question {
    pub id: String,
    pub question: String,
    /// The answer's JSON Schema, if the question gives one.
    pub schema: Option<Value>,
}

/// The form a person answers with.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct AnswerForm {
    /// The fields, as a JSON Schema (without the member the buttons set).
    pub schema: Value,
    /// When set, the form is submitted with one button per option, and the
    /// pressed button's value becomes that member of the answer.
    pub choice: Option<Choice>,
}

/// Buttons that set one member of the answer (`action`, `outcome`).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Choice {
    pub member: String,
    pub options: Vec<String>,
}

/// A conversation as a thread: each prompt and answer in order.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Thread {
    pub conversation_id: String,
    pub title: Option<String>,
    pub entries: Vec<ThreadEntry>,
    /// Set once the conversation closed: why, if said.
    pub closed: Option<Option<String>>,
}

/// One `conversation.*` interrupt of a thread and its answer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ThreadEntry {
    pub node_id: String,
    pub kind: InterruptKind,
    /// When it was asked (RFC 3339).
    pub asked_at: String,
    /// An exchange's turn number, from 0.
    pub turn_index: Option<u64>,
    /// What was put to the person: a start's opening prompt, a turn's prompt.
    pub prompt: Option<String>,
    /// The answer: a turn's outcome, or a start's or close's resume value
    /// when it says anything.
    pub answer: Option<Value>,
    /// The schema the answer was given against (drawn read-only).
    pub answer_schema: Value,
    pub answered_at: Option<String>,
    /// Decided without an answer (a deadline passed, the run was cancelled).
    pub ended_without_answer: bool,
    /// The interrupt the page is about.
    pub current: bool,
}
