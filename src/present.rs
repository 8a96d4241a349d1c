//! How an interrupt is put to a person, kind by kind (the console draws what
//! this returns and adds nothing of its own):
//!
//! - [`details`]: what it asks, read from its payload's `data`;
//! - [`summary`]: the one line the inbox shows under the title;
//! - [`answer_form`]: the form the answer is drawn from — the resume schema,
//!   adapted per kind (a clarification's questions by id, an external event's
//!   correlation members pre-filled, an approval's actions each with their
//!   own fields: see `approval_form`) and the member its buttons set (an
//!   approval's `action`; `outcome` of a low-confidence or credential
//!   interrupt);
//! - [`resume_from_form`]: the resume value a submitted form makes;
//! - [`thread`]: a conversation's prompts and answers, from a run's log.
//!
//! The engine still validates every answer in full when it is resolved.

mod approval_form;

use crate::events::RunEvent;
use serde_json::{json, Map, Value};
use tollgate_wire::present::{AnswerForm, Choice, KindDetails, Question, Thread, ThreadEntry};
use tollgate_wire::{ApprovalAction, EventType, InterruptKind};

/// The longest summary, in characters.
const SUMMARY_CHARS: usize = 160;

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_string)
}

/// A value as a person reads it: a string as itself, anything else as JSON.
fn shown(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn percent(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

/// What an interrupt of `kind` asks, from its `payload` (`{kind, key, data, …}`).
/// A `connectUrl` that is not `https://` is left out.
pub fn details(kind: InterruptKind, payload: &Value) -> KindDetails {
    let data = &payload["data"];
    match kind {
        InterruptKind::Approval => KindDetails::Approval,
        InterruptKind::Clarification => KindDetails::Clarification {
            questions: data["questions"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|q| Question {
                    id: text(&q["id"]).unwrap_or_default(),
                    question: text(&q["question"]).unwrap_or_default(),
                    schema: q.get("schema").cloned(),
                })
                .collect(),
        },
        InterruptKind::ExternalEvent => KindDetails::ExternalEvent {
            event_type: text(&data["eventType"]).unwrap_or_default(),
            correlation: data["correlation"]
                .as_object()
                .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                .unwrap_or_default(),
        },
        InterruptKind::LowConfidence => KindDetails::LowConfidence {
            agent_id: text(&data["agentId"]).unwrap_or_default(),
            threshold: data["threshold"].as_f64(),
            observed: data["observed"].as_f64(),
            decision: data.get("decision").filter(|d| !d.is_null()).cloned(),
        },
        InterruptKind::Credential => KindDetails::Credential {
            provider: text(&data["provider"]).unwrap_or_default(),
            scopes: data["scopes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(text)
                .collect(),
            reason: text(&data["reason"]),
            connect_url: text(&data["connectUrl"]).filter(|u| is_https_url(u)),
        },
        InterruptKind::Custom => KindDetails::Custom {
            custom_kind: text(&data["customKind"]).unwrap_or_default(),
        },
        InterruptKind::ConversationStart
        | InterruptKind::ConversationExchange
        | InterruptKind::ConversationClose => KindDetails::Conversation {
            conversation_id: text(&data["conversationId"]).unwrap_or_default(),
            title: text(&data["title"]),
            prompt: text(&data["prompt"]).or_else(|| text(&data["initialPrompt"])),
            reason: text(&data["reason"]),
        },
    }
}

/// An absolute `https://` URL with a host and nothing a browser would read
/// otherwise (no whitespace, control characters, quotes or backslashes).
pub fn is_https_url(u: &str) -> bool {
    let Some(rest) = u.strip_prefix("https://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    !host.is_empty()
        && !host.contains('@')
        && u.chars()
            .all(|c| c.is_ascii_graphic() && !matches!(c, '"' | '\'' | '<' | '>' | '\\' | '`'))
}

/// The one line the inbox shows under an interrupt's title: the questions,
/// the awaited event, the agent and its confidence, the provider, a
/// conversation's prompt, a custom kind; an approval's description. `None`
/// when there is nothing the title does not already say.
pub fn summary(kind: InterruptKind, payload: &Value, title: &str) -> Option<String> {
    let data = &payload["data"];
    let line = match details(kind, payload) {
        KindDetails::Approval => text(&data["description"])?,
        KindDetails::Clarification { questions } => {
            let n = questions.len();
            let asked: Vec<&str> = questions.iter().map(|q| q.question.as_str()).collect();
            if n == 1 {
                asked[0].to_string()
            } else {
                format!("{n} questions: {}", asked.join(" · "))
            }
        }
        KindDetails::ExternalEvent {
            event_type,
            correlation,
        } => {
            let by: Vec<String> = correlation
                .iter()
                .map(|(k, v)| format!("{k} {}", shown(v)))
                .collect();
            if by.is_empty() {
                format!("Waiting for {event_type}")
            } else {
                format!("Waiting for {event_type} ({})", by.join(", "))
            }
        }
        KindDetails::LowConfidence {
            agent_id,
            threshold,
            observed,
            decision,
        } => {
            let mut s = agent_id;
            if let Some(d) = decision {
                s.push_str(&format!(" proposes {}", shown(&d)));
            }
            if let Some(o) = observed {
                s.push_str(&format!(" at {} confidence", percent(o)));
            }
            if let Some(t) = threshold {
                s.push_str(&format!(" (threshold {})", percent(t)));
            }
            s
        }
        KindDetails::Credential {
            provider,
            scopes,
            reason,
            ..
        } => {
            let mut s = format!("Connect {provider}");
            if !scopes.is_empty() {
                s.push_str(&format!(" ({})", scopes.join(", ")));
            }
            if let Some(r) = reason {
                s.push_str(&format!(": {}", r.replace('_', " ")));
            }
            s
        }
        KindDetails::Custom { custom_kind } => custom_kind,
        KindDetails::Conversation {
            conversation_id,
            prompt,
            reason,
            ..
        } => match kind {
            InterruptKind::ConversationClose => match reason {
                Some(r) => format!("Close the conversation {conversation_id} ({r})"),
                None => format!("Close the conversation {conversation_id}"),
            },
            _ => prompt.unwrap_or_else(|| format!("Conversation {conversation_id}")),
        },
    };
    // Made as the title is made (one line, no bidi controls, cut at the
    // same length), so a title taken from this text is not said twice.
    let line = crate::text::headline(&line);
    if line.is_empty() || line == title {
        return None;
    }
    Some(if line.chars().count() > SUMMARY_CHARS {
        let cut: String = line.chars().take(SUMMARY_CHARS - 1).collect();
        format!("{}…", cut.trim_end())
    } else {
        line
    })
}

/// Removes `member` from an object schema's `properties` and `required`.
fn without_member(schema: &Value, member: &str) -> Value {
    let mut s = schema.clone();
    if let Some(p) = s.get_mut("properties").and_then(Value::as_object_mut) {
        p.remove(member);
    }
    if let Some(r) = s.get_mut("required").and_then(Value::as_array_mut) {
        r.retain(|x| x != member);
    }
    s
}

fn require(schema: &mut Value, member: &str) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let required = obj.entry("required").or_insert_with(|| json!([]));
    if let Some(r) = required.as_array_mut() {
        if !r.iter().any(|x| x == member) {
            r.push(json!(member));
        }
    }
}

fn properties(schema: &mut Value) -> &mut Map<String, Value> {
    if !schema.is_object() {
        *schema = json!({"type": "object"});
    }
    let obj = schema.as_object_mut().expect("an object");
    let props = obj.entry("properties").or_insert_with(|| json!({}));
    if !props.is_object() {
        *props = json!({});
    }
    props.as_object_mut().expect("an object")
}

/// An approval's actions: the `action` enum of its resume schema, else its
/// data's `actions`, else accept and reject.
pub fn approval_actions(payload: &Value, resume_schema: &Value) -> Vec<ApprovalAction> {
    let actions = |list: &Value| -> Vec<ApprovalAction> {
        list.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().and_then(ApprovalAction::parse))
                    .collect()
            })
            .unwrap_or_default()
    };
    let from_schema = actions(&resume_schema["properties"]["action"]["enum"]);
    if !from_schema.is_empty() {
        return from_schema;
    }
    let from_data = actions(&payload["data"]["actions"]);
    if !from_data.is_empty() {
        return from_data;
    }
    vec![ApprovalAction::Accept, ApprovalAction::Reject]
}

/// The answer to each question, keyed by its id under `answers`, drawn from
/// the question's `schema` (a text field without one) with the question as
/// its label. A question schema the console cannot draw is a JSON field.
fn clarification_schema(resume_schema: &Value, questions: &[Question]) -> Value {
    let mut answers = Map::new();
    for q in questions {
        let mut schema = q.schema.clone().unwrap_or_else(|| json!({"type": "string"}));
        let probe = json!({"type": "object", "properties": {"q": schema}});
        if tollgate_wire::schema_subset::check(&probe).is_err() {
            schema = json!({});
        }
        if let Some(obj) = schema.as_object_mut() {
            obj.insert("title".into(), json!(q.question));
        }
        answers.insert(q.id.clone(), schema);
    }
    let ids: Vec<&str> = questions.iter().map(|q| q.id.as_str()).collect();
    let mut schema = resume_schema.clone();
    properties(&mut schema).insert(
        "answers".into(),
        json!({"type": "object", "title": "Questions", "required": ids, "properties": answers}),
    );
    require(&mut schema, "answers");
    schema
}

/// The resume schema with each correlation member pre-filled (`default`),
/// and added, required, where the schema does not name it.
fn external_event_schema(resume_schema: &Value, correlation: &[(String, Value)]) -> Value {
    let mut schema = resume_schema.clone();
    for (k, v) in correlation {
        let props = properties(&mut schema);
        match props.get_mut(k).and_then(Value::as_object_mut) {
            Some(p) => {
                p.insert("default".into(), v.clone());
            }
            None => {
                let field = match v {
                    Value::String(_) => json!({"type": "string", "default": v}),
                    Value::Number(_) => json!({"type": "number", "default": v}),
                    Value::Bool(_) => json!({"type": "boolean", "default": v}),
                    _ => json!({"default": v}),
                };
                props.insert(k.clone(), field);
            }
        }
        require(&mut schema, k);
    }
    schema
}

const LOW_CONFIDENCE_OUTCOMES: [&str; 2] = ["confirmed", "replaced"];
const CREDENTIAL_OUTCOMES: [&str; 2] = ["authorized", "declined"];

/// The form an interrupt of `kind` is answered with (see the module docs).
/// `request` and `request_schema`: the data the run sent and its schema (an
/// approval's *Edit and approve* edits them).
pub fn answer_form(
    kind: InterruptKind,
    payload: &Value,
    resume_schema: &Value,
    request: &Value,
    request_schema: &Value,
) -> AnswerForm {
    let choice = |member: &str, options: Vec<String>| {
        Some(Choice {
            member: member.to_string(),
            options,
        })
    };
    let fixed = |o: &[&str]| o.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    match details(kind, payload) {
        KindDetails::Approval => {
            let actions = approval_actions(payload, resume_schema);
            AnswerForm {
                schema: approval_form::approval_schema(resume_schema, &actions, request, request_schema),
                choice: choice("action", actions.iter().map(|a| a.as_str().to_string()).collect()),
            }
        }
        KindDetails::Clarification { questions } => AnswerForm {
            schema: clarification_schema(resume_schema, &questions),
            choice: None,
        },
        KindDetails::ExternalEvent { correlation, .. } => AnswerForm {
            schema: external_event_schema(resume_schema, &correlation),
            choice: None,
        },
        KindDetails::LowConfidence { .. } => AnswerForm {
            schema: without_member(resume_schema, "outcome"),
            choice: choice("outcome", fixed(&LOW_CONFIDENCE_OUTCOMES)),
        },
        KindDetails::Credential { .. } => AnswerForm {
            schema: without_member(resume_schema, "outcome"),
            choice: choice("outcome", fixed(&CREDENTIAL_OUTCOMES)),
        },
        KindDetails::Custom { .. } | KindDetails::Conversation { .. } => AnswerForm {
            schema: resume_schema.clone(),
            choice: None,
        },
    }
}

/// The resume value of a submitted form: the fields' `value` with the
/// pressed button's choice set. Confirming an agent's decision sends no
/// replacement (`{outcome: "confirmed"}` and a comment, if any); an
/// approval sends only the fields of the action pressed.
pub fn resume_from_form(
    kind: InterruptKind,
    form: &AnswerForm,
    value: Value,
    pressed: Option<&str>,
) -> Value {
    let mut value = match value {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    if kind == InterruptKind::Approval {
        return Value::Object(approval_form::approval_resume(value, pressed));
    }
    if let Some(c) = &form.choice {
        value.insert(c.member.clone(), json!(pressed.unwrap_or_default()));
    }
    if kind == InterruptKind::LowConfidence && pressed == Some("confirmed") {
        value.remove("decision");
    }
    Value::Object(value)
}

/// The thread of conversation `conversation_id` in a run's `events`: each
/// `conversation.*` interrupt requested for it, in order, with its prompt
/// and its answer (a turn's from `conversation.exchanged`, a start's or
/// close's from `interrupt.resolved` when it says anything). `current_key`
/// marks the interrupt a page is about.
pub fn thread(conversation_id: &str, events: &[RunEvent], current_key: &str) -> Thread {
    let mut t = Thread {
        conversation_id: conversation_id.to_string(),
        title: None,
        entries: Vec::new(),
        closed: None,
    };
    let ours = |p: &Value| p["conversationId"].as_str() == Some(conversation_id);
    for e in events {
        let p = &e.payload;
        match e.event_type {
            EventType::InterruptRequested => {
                let Some(kind) = p["kind"].as_str().and_then(InterruptKind::parse) else {
                    continue;
                };
                let data = &p["data"];
                if !kind.is_conversation() || !ours(data) {
                    continue;
                }
                if kind == InterruptKind::ConversationStart && t.title.is_none() {
                    t.title = text(&data["title"]);
                }
                t.entries.push(ThreadEntry {
                    node_id: e.node_id.clone().unwrap_or_default(),
                    kind,
                    asked_at: e.timestamp.clone(),
                    turn_index: data["turnIndex"].as_u64(),
                    prompt: match kind {
                        InterruptKind::ConversationStart => text(&data["initialPrompt"]),
                        InterruptKind::ConversationExchange => text(&data["prompt"]),
                        _ => None,
                    },
                    answer: None,
                    answer_schema: p["resumeSchema"].clone(),
                    answered_at: None,
                    ended_without_answer: false,
                    current: p["key"].as_str() == Some(current_key),
                });
            }
            EventType::ConversationExchanged if ours(p) => {
                let turn = p["turnIndex"].as_u64();
                if let Some(entry) = t
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|x| x.kind == InterruptKind::ConversationExchange && x.turn_index == turn)
                {
                    entry.answer = p.get("outcome").filter(|o| !o.is_null()).cloned();
                    entry.answered_at = Some(e.timestamp.clone());
                }
            }
            EventType::InterruptResolved => {
                let node = p["nodeId"].as_str().or(e.node_id.as_deref());
                let Some(entry) = t
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|x| Some(x.node_id.as_str()) == node && x.answered_at.is_none())
                else {
                    continue;
                };
                entry.answered_at = Some(e.timestamp.clone());
                if p.get("reason").is_some() {
                    entry.ended_without_answer = true;
                } else if entry.kind != InterruptKind::ConversationExchange {
                    entry.answer = p
                        .get("resumeValue")
                        .filter(|v| v.as_object().is_some_and(|m| !m.is_empty()))
                        .cloned();
                }
            }
            EventType::ConversationClosed if ours(p) => {
                t.closed = Some(text(&p["reason"]));
            }
            _ => {}
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn payload(kind: InterruptKind, data: Value) -> Value {
        json!({"kind": kind.as_str(), "key": "k", "data": data})
    }

    #[test]
    fn each_kind_says_what_it_asks() {
        let p = payload(
            InterruptKind::Credential,
            json!({"provider": "crm", "scopes": ["contacts.read"], "reason": "expired", "connectUrl": "https://x.example/c"}),
        );
        assert_eq!(
            details(InterruptKind::Credential, &p),
            KindDetails::Credential {
                provider: "crm".into(),
                scopes: vec!["contacts.read".into()],
                reason: Some("expired".into()),
                connect_url: Some("https://x.example/c".into()),
            }
        );
        assert_eq!(
            summary(InterruptKind::Credential, &p, "t").as_deref(),
            Some("Connect crm (contacts.read): expired")
        );
        let p = payload(
            InterruptKind::LowConfidence,
            json!({"agentId": "router", "threshold": 0.8, "observed": 0.29, "decision": "billing"}),
        );
        assert_eq!(
            summary(InterruptKind::LowConfidence, &p, "t").as_deref(),
            Some("router proposes billing at 29% confidence (threshold 80%)")
        );
        let p = payload(
            InterruptKind::ExternalEvent,
            json!({"eventType": "payment.captured", "correlation": {"orderId": "o-1"}}),
        );
        assert_eq!(
            summary(InterruptKind::ExternalEvent, &p, "t").as_deref(),
            Some("Waiting for payment.captured (orderId o-1)")
        );
        // Nothing beyond the title: no summary.
        let p = payload(
            InterruptKind::ConversationExchange,
            json!({"conversationId": "c", "prompt": "Which size?"}),
        );
        assert_eq!(
            summary(InterruptKind::ConversationExchange, &p, "Which size?"),
            None
        );
        // A long prompt the title was made from is not said twice.
        let prompt = format!("Which \u{202E}size\n{}?", "very ".repeat(80));
        let p = payload(
            InterruptKind::ConversationExchange,
            json!({"conversationId": "c", "prompt": prompt}),
        );
        assert_eq!(
            summary(
                InterruptKind::ConversationExchange,
                &p,
                &crate::text::headline(&prompt)
            ),
            None
        );
        let long = "x".repeat(400);
        let p = payload(InterruptKind::Custom, json!({"customKind": long}));
        let s = summary(InterruptKind::Custom, &p, "t").unwrap();
        assert_eq!(s.chars().count(), SUMMARY_CHARS);
        assert!(s.ends_with('…'));
    }

    #[test]
    fn only_https_connect_urls_are_offered() {
        for bad in [
            "http://x.example/c",
            "javascript:alert(1)",
            "https://",
            "https:///path",
            "https://a b.example/",
            "https://x.example/\"onmouseover=",
            "https://user@evil.example/",
            " https://x.example/",
        ] {
            assert!(!is_https_url(bad), "{bad}");
        }
        assert!(is_https_url("https://x.example/connect/crm?state=1#a"));
        let p = payload(
            InterruptKind::Credential,
            json!({"provider": "crm", "scopes": [], "reason": "missing", "connectUrl": "javascript:alert(1)"}),
        );
        assert!(matches!(
            details(InterruptKind::Credential, &p),
            KindDetails::Credential {
                connect_url: None,
                ..
            }
        ));
    }

    #[test]
    fn a_clarification_is_answered_by_question_id_with_each_questions_schema() {
        let p = payload(
            InterruptKind::Clarification,
            json!({"questions": [
                {"id": "region", "question": "Which region?", "schema": {"type": "string", "enum": ["eu", "us"]}},
                {"id": "window", "question": "When?"},
                {"id": "odd", "question": "Odd?", "schema": {"type": "string", "anyOf": [{"minLength": 1}]}}
            ]}),
        );
        let form = answer_form(
            InterruptKind::Clarification,
            &p,
            &crate::contract::object_schema(),
            &json!({}),
            &json!({}),
        );
        assert_eq!(form.choice, None);
        let answers = &form.schema["properties"]["answers"];
        assert_eq!(answers["required"], json!(["region", "window", "odd"]));
        assert_eq!(
            answers["properties"]["region"],
            json!({"type": "string", "enum": ["eu", "us"], "title": "Which region?"})
        );
        assert_eq!(
            answers["properties"]["window"],
            json!({"type": "string", "title": "When?"})
        );
        // Not drawable: a JSON field, still labelled with the question.
        assert_eq!(answers["properties"]["odd"], json!({"title": "Odd?"}));
        assert_eq!(form.schema["required"], json!(["answers"]));
        tollgate_wire::schema_subset::field_tree(&form.schema).unwrap();
    }

    #[test]
    fn an_external_event_form_is_prefilled_with_its_correlation() {
        let p = payload(
            InterruptKind::ExternalEvent,
            json!({"eventType": "paid", "correlation": {"orderId": "o-1", "shop": 7}}),
        );
        let declared = json!({"type": "object", "required": ["orderId"], "properties": {"orderId": {"type": "string"}, "amount": {"type": "number"}}});
        let form = answer_form(
            InterruptKind::ExternalEvent,
            &p,
            &declared,
            &json!({}),
            &json!({}),
        );
        assert_eq!(form.schema["properties"]["orderId"]["default"], "o-1");
        assert_eq!(
            form.schema["properties"]["shop"],
            json!({"type": "number", "default": 7})
        );
        assert_eq!(form.schema["required"], json!(["orderId", "shop"]));
    }

    #[test]
    fn buttons_set_the_action_or_outcome_and_confirming_sends_no_replacement() {
        let p = payload(
            InterruptKind::LowConfidence,
            json!({"agentId": "a", "threshold": 0.8, "observed": 0.2, "decision": "billing"}),
        );
        let resume = json!({"type": "object", "required": ["outcome"], "properties": {
            "outcome": {"enum": ["confirmed", "replaced"]}, "decision": {"type": "string"}, "comment": {"type": "string"}}});
        let form = answer_form(InterruptKind::LowConfidence, &p, &resume, &json!({}), &json!({}));
        assert_eq!(form.schema["required"], json!([]));
        assert!(form.schema["properties"].get("outcome").is_none());
        let c = form.choice.clone().unwrap();
        assert_eq!((c.member.as_str(), c.options.len()), ("outcome", 2));
        let typed = json!({"decision": "sales", "comment": "ok"});
        assert_eq!(
            resume_from_form(
                InterruptKind::LowConfidence,
                &form,
                typed.clone(),
                Some("confirmed")
            ),
            json!({"outcome": "confirmed", "comment": "ok"})
        );
        assert_eq!(
            resume_from_form(InterruptKind::LowConfidence, &form, typed, Some("replaced")),
            json!({"outcome": "replaced", "decision": "sales", "comment": "ok"})
        );
        let p = payload(
            InterruptKind::Credential,
            json!({"provider": "crm", "scopes": [], "reason": "missing", "connectUrl": "https://x.example/"}),
        );
        let closed = crate::definition::credential_resume_schema();
        let form = answer_form(InterruptKind::Credential, &p, &closed, &json!({}), &json!({}));
        assert_eq!(
            resume_from_form(InterruptKind::Credential, &form, json!({}), Some("declined")),
            json!({"outcome": "declined"})
        );
        let p = payload(
            InterruptKind::Approval,
            json!({"title": "t", "actions": ["accept", "refine"]}),
        );
        let form = answer_form(
            InterruptKind::Approval,
            &p,
            &crate::definition::approval_resume_schema(&[ApprovalAction::Accept, ApprovalAction::Refine]),
            &json!({}),
            &json!({}),
        );
        assert_eq!(form.choice.unwrap().options, vec!["accept", "refine"]);
        assert!(form.schema["properties"].get("action").is_none());
    }

    fn event(seq: i64, event_type: EventType, node: &str, payload: Value) -> RunEvent {
        RunEvent {
            event_id: format!("e{seq}"),
            run_id: "t/r".into(),
            event_type,
            payload,
            timestamp: format!("2027-01-01T00:00:{seq:02}.000Z"),
            sequence: seq,
            schema_version: 1,
            node_id: Some(node.into()),
        }
    }

    #[test]
    fn a_thread_lists_each_prompt_and_answer_in_order() {
        let schema = json!({"type": "object", "properties": {"size": {"type": "string"}}});
        let events = vec![
            event(
                1,
                EventType::InterruptRequested,
                "open",
                json!({"kind": "conversation.start", "key": "r:open:0",
                "data": {"conversationId": "c1", "title": "About boots", "initialPrompt": "Hello"}, "resumeSchema": {}}),
            ),
            event(
                2,
                EventType::ConversationOpened,
                "open",
                json!({"conversationId": "c1"}),
            ),
            event(
                3,
                EventType::InterruptResolved,
                "open",
                json!({"nodeId": "open", "resumeValue": {}}),
            ),
            event(
                4,
                EventType::InterruptRequested,
                "turn",
                json!({"kind": "conversation.exchange", "key": "r:turn:0",
                "data": {"conversationId": "c1", "prompt": "Which size?", "turnIndex": 0}, "resumeSchema": schema}),
            ),
            // Another conversation's turn is not ours.
            event(
                5,
                EventType::InterruptRequested,
                "other",
                json!({"kind": "conversation.exchange", "key": "r:other:0",
                "data": {"conversationId": "c2", "prompt": "Elsewhere?", "turnIndex": 0}, "resumeSchema": {}}),
            ),
            event(
                6,
                EventType::InterruptResolved,
                "turn",
                json!({"nodeId": "turn", "resumeValue": {"size": "M"}}),
            ),
            event(
                7,
                EventType::ConversationExchanged,
                "turn",
                json!({"conversationId": "c1", "turnIndex": 0, "outcome": {"size": "M"}}),
            ),
            event(
                8,
                EventType::InterruptRequested,
                "close",
                json!({"kind": "conversation.close", "key": "r:close:0",
                "data": {"conversationId": "c1", "reason": "goal-reached"}, "resumeSchema": {}}),
            ),
        ];
        let t = thread("c1", &events, "r:close:0");
        assert_eq!(t.title.as_deref(), Some("About boots"));
        assert_eq!(t.closed, None);
        let got: Vec<(&str, Option<&str>, Option<Value>, bool)> = t
            .entries
            .iter()
            .map(|e| {
                (
                    e.node_id.as_str(),
                    e.prompt.as_deref(),
                    e.answer.clone(),
                    e.current,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("open", Some("Hello"), None, false),
                ("turn", Some("Which size?"), Some(json!({"size": "M"})), false),
                ("close", None, None, true),
            ]
        );
        assert_eq!(t.entries[1].turn_index, Some(0));
        assert_eq!(t.entries[1].answer_schema, schema);
        assert!(t.entries[0].answered_at.is_some() && t.entries[2].answered_at.is_none());
    }
}
