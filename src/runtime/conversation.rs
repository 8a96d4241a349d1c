//! Conversation interrupts: one open conversation per id, its turns, and its
//! end with the run.

use super::Exec;
use crate::error::{EngineError, Result};
use crate::interrupt::InterruptKind;
use crate::store::changes::Change;
use crate::store::conversations::{self, ConversationChange, OpenConversation};
use crate::store::rows::InterruptRow;
use serde_json::{json, Value};
use tollgate_wire::EventType;

/// Why a conversation interrupt cannot be raised.
pub(super) enum ConversationRefusal {
    /// The node fails (the run goes on or fails by its edges).
    Fail { member: String, message: String },
    /// The whole command is refused (a create whose conversation id is taken).
    Refuse(EngineError),
}

impl<'a> Exec<'a> {
    /// The conversation `id` as this command left it (open with its run and turns, or not).
    fn conversation(&mut self, id: &str) -> Result<Option<OpenConversation>> {
        if let Some(known) = self.conversations.get(id) {
            return Ok(known.clone());
        }
        let stored = conversations::open(self.conn, self.run.tenant.as_str(), id)?;
        self.conversations.insert(id.to_string(), stored.clone());
        Ok(stored)
    }

    /// The conversation rules of a conversation kind being raised: a start
    /// opens an id unique in the tenant; an exchange or a close needs the
    /// run's open conversation (an exchange is numbered by its turn).
    /// Returns the `conversation.opened` payload for a start.
    pub(super) fn conversation_turn(
        &mut self,
        kind: InterruptKind,
        data: &mut Value,
    ) -> std::result::Result<Option<Value>, ConversationRefusal> {
        if !kind.is_conversation() {
            return Ok(None);
        }
        // A missing or non-string id is named by the payload check that follows.
        let Some(id) = data["conversationId"].as_str().map(str::to_string) else {
            return Ok(None);
        };
        let open = self.conversation(&id).map_err(ConversationRefusal::Refuse)?;
        let member = "data.conversationId".to_string();
        if kind == InterruptKind::ConversationStart {
            if open.is_some() {
                let message = format!(
                    "conversation \"{id}\" is already open in this tenant; a conversationId is unique while its conversation is open"
                );
                return Err(if self.starting {
                    ConversationRefusal::Refuse(EngineError::Conflict(message))
                } else {
                    ConversationRefusal::Fail { member, message }
                });
            }
            let tenant = self.run.tenant.as_str().to_string();
            self.changes.push(Change::Conversation(ConversationChange::Open {
                tenant,
                id: id.clone(),
                run_id: self.run.run_id.clone(),
                at: self.now,
            }));
            self.conversations.insert(
                id.clone(),
                Some(OpenConversation {
                    run_id: self.run.run_id.clone(),
                    turns: 0,
                }),
            );
            return Ok(Some(json!({ "conversationId": id })));
        }
        match open {
            Some(c) if c.run_id == self.run.run_id => {
                if kind == InterruptKind::ConversationExchange && data.get("turnIndex").is_none() {
                    data["turnIndex"] = json!(c.turns);
                }
                Ok(None)
            }
            _ => Err(ConversationRefusal::Fail {
                member,
                message: format!("no open conversation \"{id}\" in this run (a conversation.start opens it)"),
            }),
        }
    }

    /// A conversation turn was answered, or its close acknowledged.
    pub(super) fn conversation_answered(
        &mut self,
        interrupt: &InterruptRow,
        resume_value: Option<&Value>,
    ) -> Result<()> {
        if !matches!(
            interrupt.kind,
            InterruptKind::ConversationExchange | InterruptKind::ConversationClose
        ) {
            // Only these move a conversation on (the payload is not read for the others).
            return Ok(());
        }
        let payload = interrupt.payload()?;
        let data = &payload["data"];
        let (Some(id), node_id) = (data["conversationId"].as_str(), interrupt.node_id.as_str()) else {
            return Ok(());
        };
        let tenant = self.run.tenant.as_str().to_string();
        match interrupt.kind {
            InterruptKind::ConversationExchange => {
                let turn = data["turnIndex"].as_i64().unwrap_or(0);
                self.emit(
                    EventType::ConversationExchanged,
                    Some(node_id),
                    json!({ "conversationId": id, "turnIndex": turn, "outcome": resume_value }),
                )?;
                self.changes.push(Change::Conversation(ConversationChange::Turn {
                    tenant,
                    id: id.to_string(),
                }));
                if let Some(Some(c)) = self.conversations.get_mut(id) {
                    c.turns += 1;
                }
            }
            InterruptKind::ConversationClose => {
                let turns = self.conversation(id)?.map_or(0, |c| c.turns);
                let mut closed = json!({ "conversationId": id, "turnCount": turns });
                if let Some(reason) = data["reason"].as_str() {
                    closed["reason"] = json!(reason);
                }
                self.emit(EventType::ConversationClosed, Some(node_id), closed)?;
                self.changes.push(Change::Conversation(ConversationChange::Close {
                    tenant,
                    id: id.to_string(),
                }));
                self.conversations.insert(id.to_string(), None);
            }
            _ => {}
        }
        Ok(())
    }

    /// The run ends: its open conversations end with it (`conversation.closed`
    /// before the run's terminal event).
    pub(super) fn close_conversations(&mut self, reason: &str) -> Result<()> {
        if !self.wf.nodes.iter().any(|n| {
            n.behaviour
                .interrupt()
                .is_some_and(|spec| spec.kind == InterruptKind::ConversationStart)
        }) {
            return Ok(());
        }
        let mut ids = conversations::of_run(self.conn, &self.run.run_id)?;
        for (id, state) in &self.conversations {
            let ours = state.as_ref().is_some_and(|c| c.run_id == self.run.run_id);
            if ours && !ids.contains(id) {
                ids.push(id.clone());
            } else if state.is_none() {
                ids.retain(|i| i != id);
            }
        }
        for id in &ids {
            self.emit(
                EventType::ConversationClosed,
                None,
                json!({ "conversationId": id, "reason": reason }),
            )?;
        }
        if !ids.is_empty() {
            self.changes
                .push(Change::Conversation(ConversationChange::CloseRun {
                    run_id: self.run.run_id.clone(),
                }));
        }
        Ok(())
    }
}
