//! An approval's answer as a form: every action it allows gets fields of its
//! own, so nobody types JSON.
//!
//! - *Request changes* (`refine`) draws the spec's `refineFeedback` (scope
//!   whole / section / items, the section's path, item ids, tags, text);
//! - *Edit and approve* (`edit-accept`) draws the artifact with its
//!   `requestSchema` (or a schema read off the data itself), pre-filled with
//!   the data the run sent;
//! - *Ask a question* (`ask`) draws a question box, sent as `feedback`.
//!
//! Each group is sent only with its own button ([`approval_resume`]); the
//! engine validates the result against the node's `resumeSchema` as it
//! validates any other answer.

use serde_json::{json, Map, Value};
use tollgate_wire::ApprovalAction;

/// The form member the question box is drawn as; it is sent as `feedback`.
/// (The comment is `feedback` too, and one form cannot draw a name twice.)
pub const QUESTION: &str = "question";

/// Members of the resume value the engine fills in itself: not drawn.
const RECORDED: [&str; 2] = ["decidedBy", "decidedAt"];

/// The fields of an approval's form: the resume schema without `action`
/// (the buttons set it) and without what the engine records, with
/// `refineFeedback`, `editedArtifactData` and the question drawn as fields
/// when their action is allowed.
pub fn approval_schema(
    resume_schema: &Value,
    actions: &[ApprovalAction],
    artifact: &Value,
    artifact_schema: &Value,
) -> Value {
    let mut schema = super::without_member(resume_schema, "action");
    for member in RECORDED {
        schema = super::without_member(&schema, member);
    }
    let declared = |schema: &Value, member: &str| schema["properties"][member].clone();
    let props = super::properties(&mut schema);
    if let Some(comment) = props.get_mut("feedback").and_then(Value::as_object_mut) {
        comment.entry("title").or_insert_with(|| json!("Comment"));
    }
    props.remove("refineFeedback");
    props.remove("editedArtifactData");
    if actions.contains(&ApprovalAction::Refine) {
        let own = declared(resume_schema, "refineFeedback");
        props.insert("refineFeedback".into(), refine_fields(&own));
    }
    if actions.contains(&ApprovalAction::EditAccept) {
        props.insert(
            "editedArtifactData".into(),
            artifact_fields(artifact, artifact_schema),
        );
    }
    if actions.contains(&ApprovalAction::Ask) {
        props.insert(
            QUESTION.into(),
            json!({
                "type": "string",
                "title": "Your question",
                "description": "Sent with “Ask a question”; the request stays open for an answer.",
            }),
        );
    }
    schema
}

/// A workflow's own drawable `refineFeedback` is kept; the built-in one
/// (`{"type": "object"}`) becomes the spec's fields.
fn refine_fields(declared: &Value) -> Value {
    if declared["properties"].as_object().is_some_and(|p| !p.is_empty()) && drawable(declared) {
        return declared.clone();
    }
    json!({
        "type": "object",
        "title": "Request changes",
        "description": "Sent with “Request changes”.",
        "properties": {
            "scope": {
                "title": "What should change",
                "oneOf": [
                    {"const": "whole", "title": "The whole request"},
                    {"const": "section", "title": "One section"},
                    {"const": "items", "title": "Some items"}
                ],
                "default": "whole"
            },
            "sectionPath": {
                "type": "string",
                "title": "Section",
                "description": "The section to change (for “One section”), e.g. terms.payment."
            },
            "itemIds": {
                "type": "array",
                "title": "Items",
                "description": "The ids of the items to change (for “Some items”).",
                "items": {"type": "string", "title": "Item id"}
            },
            "tags": {
                "type": "array",
                "title": "Tags",
                "items": {"type": "string", "title": "Tag"}
            },
            "text": {"type": "string", "title": "What to change"}
        }
    })
}

/// The artifact as fields, pre-filled with its data: the request schema when
/// it draws the data, else a schema read off the data, else one JSON field.
fn artifact_fields(artifact: &Value, artifact_schema: &Value) -> Value {
    let mut schema = if artifact_schema["properties"]
        .as_object()
        .is_some_and(|p| !p.is_empty())
        && drawable(artifact_schema)
    {
        artifact_schema.clone()
    } else {
        let inferred = schema_of(artifact);
        if drawable(&inferred) {
            inferred
        } else {
            json!({})
        }
    };
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("title".into(), json!("Edit and approve"));
        obj.insert(
            "description".into(),
            json!("The data as it was sent; change it and press “Edit and approve”."),
        );
        if artifact.is_object() {
            obj.insert("default".into(), artifact.clone());
        }
    }
    schema
}

/// A schema that draws `value` (an object of scalars, nested objects and
/// arrays of one scalar type); `{}` (a JSON field) for anything else.
fn schema_of(value: &Value) -> Value {
    match value {
        Value::String(_) => json!({"type": "string"}),
        Value::Bool(_) => json!({"type": "boolean"}),
        Value::Number(n) if n.is_i64() || n.is_u64() => json!({"type": "integer"}),
        Value::Number(_) => json!({"type": "number"}),
        Value::Object(m) if !m.is_empty() => {
            let props: Map<String, Value> = m.iter().map(|(k, v)| (k.clone(), schema_of(v))).collect();
            json!({"type": "object", "properties": props})
        }
        Value::Array(items) => {
            let first = items
                .first()
                .map(schema_of)
                .unwrap_or_else(|| json!({"type": "string"}));
            let same = items.iter().all(|i| schema_of(i) == first);
            if same && first.get("type").is_some_and(|t| t != "object") {
                json!({"type": "array", "items": first})
            } else {
                json!({})
            }
        }
        _ => json!({}),
    }
}

/// Whether the console can draw `schema` as one field of a form.
fn drawable(schema: &Value) -> bool {
    tollgate_wire::schema_subset::check(&json!({"type": "object", "properties": {"x": schema}})).is_ok()
}

/// The resume value of an approval form: the pressed action, and only the
/// fields that belong to it (the question becomes `feedback` for `ask`).
/// The question box is only ever sent with `ask`.
pub fn approval_resume(mut value: Map<String, Value>, pressed: Option<&str>) -> Map<String, Value> {
    let action = pressed.and_then(ApprovalAction::parse);
    if action != Some(ApprovalAction::Refine) {
        value.remove("refineFeedback");
    }
    if action != Some(ApprovalAction::EditAccept) {
        value.remove("editedArtifactData");
    }
    // Asking sends the question; without one, the comment is the question.
    if let (Some(q), Some(ApprovalAction::Ask)) = (value.remove(QUESTION), action) {
        value.insert("feedback".into(), q);
    }
    if let Some(fb) = value.get_mut("refineFeedback").and_then(Value::as_object_mut) {
        // Blank section or lists are left out rather than sent empty.
        fb.retain(|_, v| !matches!(v, Value::Array(a) if a.is_empty()));
    }
    value.insert("action".into(), json!(pressed.unwrap_or_default()));
    value
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::definition::approval_resume_schema;
    use ApprovalAction::*;

    fn all() -> Vec<ApprovalAction> {
        vec![Accept, Reject, Refine, EditAccept, Ask]
    }

    #[test]
    fn every_action_gets_fields_and_nothing_is_json() {
        let resume = approval_resume_schema(&all());
        let artifact = json!({"vendor": "Acme", "amount": 1200, "urgent": false, "tags": ["a"]});
        let schema = approval_schema(&resume, &all(), &artifact, &json!({}));
        let props = schema["properties"].as_object().unwrap();
        let mut names: Vec<&str> = props.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(
            names,
            ["editedArtifactData", "feedback", "question", "refineFeedback"]
        );
        let refine = &props["refineFeedback"]["properties"];
        assert_eq!(refine["scope"]["oneOf"].as_array().unwrap().len(), 3);
        assert_eq!(refine["itemIds"]["type"], "array");
        let edited = &props["editedArtifactData"];
        assert_eq!(edited["properties"]["amount"]["type"], "integer");
        assert_eq!(edited["default"], artifact);
        let tree = tollgate_wire::schema_subset::field_tree(&schema).unwrap();
        let json_fields = format!("{tree:?}").matches("Json").count();
        assert_eq!(json_fields, 0, "{tree:?}");
    }

    #[test]
    fn the_request_schema_draws_the_artifact_when_it_can() {
        let resume = approval_resume_schema(&[Accept, EditAccept]);
        let request_schema = json!({"type": "object", "properties": {
            "amount": {"type": "number", "title": "Amount (EUR)", "minimum": 0}}});
        let schema = approval_schema(
            &resume,
            &[Accept, EditAccept],
            &json!({"amount": 5}),
            &request_schema,
        );
        let edited = &schema["properties"]["editedArtifactData"];
        assert_eq!(edited["properties"]["amount"]["title"], "Amount (EUR)");
        assert!(schema["properties"].get("refineFeedback").is_none());
        assert!(schema["properties"].get(QUESTION).is_none());
    }

    #[test]
    fn only_the_pressed_actions_fields_are_sent() {
        let typed = |v: Value| v.as_object().unwrap().clone();
        let form = typed(json!({
            "feedback": "ok",
            "refineFeedback": {"scope": "items", "itemIds": ["i1"], "tags": []},
            "editedArtifactData": {"amount": 3},
            "question": "why?"
        }));
        assert_eq!(
            Value::Object(approval_resume(form.clone(), Some("accept"))),
            json!({"action": "accept", "feedback": "ok"})
        );
        assert_eq!(
            Value::Object(approval_resume(form.clone(), Some("refine"))),
            json!({"action": "refine", "feedback": "ok", "refineFeedback": {"scope": "items", "itemIds": ["i1"]}})
        );
        assert_eq!(
            Value::Object(approval_resume(form.clone(), Some("edit-accept"))),
            json!({"action": "edit-accept", "feedback": "ok", "editedArtifactData": {"amount": 3}})
        );
        assert_eq!(
            Value::Object(approval_resume(form, Some("ask"))),
            json!({"action": "ask", "feedback": "why?"})
        );
    }
}
