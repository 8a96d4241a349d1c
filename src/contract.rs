//! Self-describing interrupt contracts: `requestSchema`, `resumeSchema`,
//! `outcomes`, `typed`. Schemas are checked when a workflow is registered,
//! compiled once, and the same compiled validator checks request payloads
//! (before a run suspends) and resume values (before anything changes).

use crate::error::{EngineError, Result};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::sync::Arc;

/// The contract as stored with a pending interrupt and shown to clients.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Contract {
    pub request_schema: Value,
    pub resume_schema: Value,
    pub outcomes: Vec<String>,
    pub typed: bool,
    /// The node declared its `outcomes`: a resume must name one of them in
    /// `outcome` (approval gates name theirs in `action`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub outcomes_declared: bool,
}

/// The permissive schema of an untyped (legacy) interrupt: any object.
pub fn object_schema() -> Value {
    json!({"type": "object", "additionalProperties": true})
}

/// A contract with its schemas compiled.
#[derive(Clone)]
pub struct CompiledContract {
    /// Read through [`CompiledContract::contract`]: its text is made once.
    contract: Contract,
    request: Arc<jsonschema::Validator>,
    resume: Arc<jsonschema::Validator>,
    /// The contract and its `resumeSchema` as JSON text, written once: every
    /// interrupt the node raises stores them (the writer thread used to
    /// serialise them again for each one).
    text: Arc<str>,
    resume_schema_text: Box<serde_json::value::RawValue>,
}

impl std::fmt::Debug for CompiledContract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledContract")
            .field("contract", &self.contract)
            .finish()
    }
}

impl CompiledContract {
    /// Compiles a contract; `what` prefixes error messages (e.g. `node "gate"`).
    pub fn compile(contract: Contract, what: &str) -> Result<Self, String> {
        let request = compile_object_schema(&contract.request_schema)
            .map_err(|e| format!("{what}: requestSchema: {e}"))?;
        let resume = compile_object_schema(&contract.resume_schema)
            .map_err(|e| format!("{what}: resumeSchema: {e}"))?;
        let text = serde_json::to_string(&contract).map_err(|e| format!("{what}: {e}"))?;
        let resume_schema_text = serde_json::value::to_raw_value(&contract.resume_schema)
            .map_err(|e| format!("{what}: resumeSchema: {e}"))?;
        Ok(CompiledContract {
            contract,
            request: Arc::new(request),
            resume: Arc::new(resume),
            text: text.into(),
            resume_schema_text,
        })
    }

    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// The contract as the JSON text an interrupt's row stores.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The `resumeSchema` as JSON text, for an interrupt's payload.
    pub fn resume_schema_text(&self) -> &serde_json::value::RawValue {
        &self.resume_schema_text
    }

    pub fn validate_request(&self, payload: &Value) -> Result<()> {
        validate_with(&self.request, payload, "request")
    }

    pub fn validate_resume(&self, value: &Value) -> Result<()> {
        validate_with(&self.resume, value, "resumeValue")
    }

    /// An `edit-accept`'s edited data, checked against the `requestSchema`
    /// the console drew it from, when the gate declared one (the open
    /// default admits any object and says nothing about the artifact).
    pub fn validate_edited(&self, edited: &Value) -> Result<()> {
        if self.contract.request_schema == object_schema() {
            return Ok(());
        }
        validate_with(&self.request, edited, "resumeValue.editedArtifactData")
    }
}

impl Contract {
    /// The outcome a resume value names: its `outcome` member (a string);
    /// else, when the node offers a single outcome (`submitted`,
    /// `received`), that one. A node that declared its `outcomes` accepts
    /// only those.
    pub fn outcome_of(&self, resume_value: &Value) -> Result<Option<String>> {
        match resume_value.get("outcome") {
            Some(Value::String(o)) if self.outcomes.contains(o) || !self.outcomes_declared => {
                Ok(Some(o.clone()))
            }
            Some(_) if self.outcomes_declared => Err(EngineError::Validation {
                message: format!("resumeValue.outcome must be one of {}", self.outcomes.join(", ")),
                field: Some("resumeValue.outcome".into()),
                details: Some(json!({ "outcomes": self.outcomes })),
            }),
            None if self.outcomes_declared => Err(EngineError::Validation {
                message: format!(
                    "resumeValue.outcome is required: one of {}",
                    self.outcomes.join(", ")
                ),
                field: Some("resumeValue.outcome".into()),
                details: Some(json!({ "outcomes": self.outcomes })),
            }),
            _ => Ok((self.outcomes.len() == 1).then(|| self.outcomes[0].clone())),
        }
    }
}

/// The compiled form of a stored contract (the JSON text kept with a pending
/// interrupt), compiled once per process and shared.
pub fn cached(contract_json: &str) -> Result<Arc<CompiledContract>> {
    static CACHE: std::sync::LazyLock<std::sync::RwLock<crate::FastMap<String, Arc<CompiledContract>>>> =
        std::sync::LazyLock::new(Default::default);
    if let Some(c) = CACHE.read().expect("lock").get(contract_json) {
        return Ok(c.clone());
    }
    let contract: Contract = serde_json::from_str(contract_json)?;
    let compiled = Arc::new(CompiledContract::compile(contract, "interrupt").map_err(EngineError::Internal)?);
    let mut cache = CACHE.write().expect("lock");
    if cache.len() > 10_000 {
        cache.clear();
    }
    cache.insert(contract_json.to_string(), compiled.clone());
    Ok(compiled)
}

/// A clarification question's schema compiled as [`build_validator`] does,
/// once per distinct schema: every answer is checked on the writer.
pub fn cached_validator(schema: &Value) -> Result<Arc<jsonschema::Validator>> {
    static CACHE: std::sync::LazyLock<std::sync::RwLock<crate::FastMap<String, Arc<jsonschema::Validator>>>> =
        std::sync::LazyLock::new(Default::default);
    let key = crate::store::json_text(schema);
    if let Some(v) = CACHE.read().expect("lock").get(&key) {
        return Ok(v.clone());
    }
    let compiled = Arc::new(
        build_validator(schema).map_err(|e| EngineError::Internal(format!("question schema: {e}")))?,
    );
    let mut cache = CACHE.write().expect("lock");
    if cache.len() > 10_000 {
        cache.clear();
    }
    cache.insert(key, compiled.clone());
    Ok(compiled)
}

/// Checks that `schema` is a valid JSON Schema describing an object, and compiles it.
pub fn compile_object_schema(schema: &Value) -> Result<jsonschema::Validator, String> {
    if !schema.is_object() {
        return Err("must be a JSON Schema object".into());
    }
    if let Err(e) = jsonschema::meta::validate(schema) {
        let at = e.instance_path().to_string();
        return Err(if at.is_empty() {
            format!("invalid JSON Schema: {e}")
        } else {
            format!("invalid JSON Schema at {at}: {e}")
        });
    }
    let describes_object = match schema.get("type") {
        Some(Value::String(t)) => t == "object",
        _ => false,
    };
    if !describes_object {
        return Err("must describe a JSON object (\"type\": \"object\")".into());
    }
    build_validator(schema)
}

/// Compiles a schema from a definition the way every such schema is checked:
/// formats (date, email, uri, …) enforced, since the console draws them and
/// the server enforces them; and `pattern` run by the `regex` engine, whose
/// matching time is linear in the text, so no pattern can hold up the writer
/// that validates every tenant's commands (a backtracking engine let one
/// definition's patterns take seconds per request). Patterns that need
/// backtracking (backreferences, lookaround) do not compile: the definition
/// is refused where it is registered.
pub fn build_validator(schema: &Value) -> std::result::Result<jsonschema::Validator, String> {
    jsonschema::options()
        .should_validate_formats(true)
        .with_pattern_options(jsonschema::PatternOptions::regex())
        .build(schema)
        .map_err(|e| format!("invalid JSON Schema: {e}"))
}

/// One failed constraint, located in the instance.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FieldError {
    /// JSON pointer into the validated value (`/amount`, `/items/0/name`).
    pub pointer: String,
    /// The same location as a dotted field name with the root prefix (`resumeValue.amount`).
    pub field: String,
    pub message: String,
}

/// Validates `instance`; errors name the field (`<root>.a.b`) and list every failure.
pub fn validate_with(validator: &jsonschema::Validator, instance: &Value, root: &str) -> Result<()> {
    let mut errors: Vec<FieldError> = validator
        .iter_errors(instance)
        .map(|e| {
            let mut pointer = e.instance_path().to_string();
            if let jsonschema::error::ValidationErrorKind::Required { property } = e.kind() {
                if let Some(p) = property.as_str() {
                    pointer = format!("{pointer}/{}", p.replace('~', "~0").replace('/', "~1"));
                }
            }
            FieldError {
                field: pointer_to_field(root, &pointer),
                pointer,
                message: e.to_string(),
            }
        })
        .collect();
    if errors.is_empty() {
        return Ok(());
    }
    errors.dedup_by(|a, b| a.pointer == b.pointer && a.message == b.message);
    let first = errors[0].clone();
    Err(EngineError::Validation {
        message: format!("{}: {}", first.field, first.message),
        field: Some(first.field),
        details: Some(json!({ "errors": errors })),
    })
}

pub fn pointer_to_field(root: &str, pointer: &str) -> String {
    let mut out = root.to_string();
    for seg in pointer.split('/').skip(1) {
        let seg = seg.replace("~1", "/").replace("~0", "~");
        if seg.chars().all(|c| c.is_ascii_digit()) && !seg.is_empty() {
            out.push_str(&format!("[{seg}]"));
        } else {
            out.push('.');
            out.push_str(&seg);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(req: Value, resume: Value) -> Contract {
        Contract {
            request_schema: req,
            resume_schema: resume,
            outcomes: vec!["submitted".into()],
            typed: true,
            outcomes_declared: false,
        }
    }

    #[test]
    fn refuses_invalid_and_non_object_schemas() {
        let bad = CompiledContract::compile(
            contract(
                object_schema(),
                json!({"type": "object", "properties": {"a": {"type": "nope"}}}),
            ),
            "node \"gate\"",
        )
        .unwrap_err();
        assert!(
            bad.starts_with("node \"gate\": resumeSchema: invalid JSON Schema"),
            "{bad}"
        );
        let not_object =
            CompiledContract::compile(contract(json!({"type": "string"}), object_schema()), "n").unwrap_err();
        assert!(
            not_object.contains("requestSchema: must describe a JSON object"),
            "{not_object}"
        );
        assert!(CompiledContract::compile(contract(json!(true), object_schema()), "n").is_err());
    }

    /// Patterns run on a linear-time engine: what needs backtracking is
    /// refused when the schema is compiled, nested repetition still matches.
    #[test]
    fn patterns_that_need_backtracking_are_refused_and_others_match() {
        let with = |pattern: &str| json!({"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}});
        for backtracking in [r"^(a|a)*\1c$", r"^(?=a)a$", r"^(?!x).*$"] {
            let err = compile_object_schema(&with(backtracking)).unwrap_err();
            assert!(err.starts_with("invalid JSON Schema"), "{backtracking}: {err}");
        }
        let v = compile_object_schema(&with(r"^(a+)+$")).unwrap();
        assert!(v.is_valid(&json!({"code": "aaaa"})));
        let long = format!("{}!", "a".repeat(40));
        assert!(!v.is_valid(&json!({"code": long})));
        validate_with(&v, &json!({"code": long}), "resumeValue").unwrap_err();
    }

    #[test]
    fn resume_errors_name_the_field() {
        let c = CompiledContract::compile(
            contract(
                object_schema(),
                json!({"type": "object", "required": ["amount"], "properties": {
                    "amount": {"type": "number", "minimum": 0},
                    "items": {"type": "array", "items": {"type": "object", "properties": {"qty": {"type": "integer"}}}}
                }}),
            ),
            "n",
        )
        .unwrap();
        let err = c.validate_resume(&json!({})).unwrap_err();
        match err {
            EngineError::Validation { field, .. } => assert_eq!(field.as_deref(), Some("resumeValue.amount")),
            other => panic!("{other:?}"),
        }
        let err = c
            .validate_resume(&json!({"amount": 1, "items": [{"qty": "x"}]}))
            .unwrap_err();
        match err {
            EngineError::Validation { field, details, .. } => {
                assert_eq!(field.as_deref(), Some("resumeValue.items[0].qty"));
                assert_eq!(details.unwrap()["errors"][0]["pointer"], "/items/0/qty");
            }
            other => panic!("{other:?}"),
        }
        assert!(c.validate_resume(&json!({"amount": 3})).is_ok());
    }

    #[test]
    fn declared_outcomes_are_the_only_ones_accepted() {
        let mut c = contract(object_schema(), object_schema());
        assert_eq!(c.outcome_of(&json!({})).unwrap().as_deref(), Some("submitted"));
        assert_eq!(
            c.outcome_of(&json!({"outcome": "other"})).unwrap().as_deref(),
            Some("other")
        );
        c.outcomes = vec!["approved".into(), "needs-work".into()];
        c.outcomes_declared = true;
        assert_eq!(
            c.outcome_of(&json!({"outcome": "needs-work"}))
                .unwrap()
                .as_deref(),
            Some("needs-work")
        );
        for bad in [json!({}), json!({"outcome": "maybe"}), json!({"outcome": 3})] {
            match c.outcome_of(&bad).unwrap_err() {
                EngineError::Validation { field, .. } => {
                    assert_eq!(field.as_deref(), Some("resumeValue.outcome"))
                }
                other => panic!("{other:?}"),
            }
        }
    }
}
