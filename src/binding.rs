//! Bindings: where a node's `inputs` and an interrupt's `data` members take
//! their values from. One grammar for both (documented in `docs/workflows.md`):
//!
//! - `{"type": "variable", "variableName": "invoice"}`: the run's input of that
//!   name, else the workflow variable's default;
//! - `{"type": "static", "value": …}`: a fixed value;
//! - `{"type": "nodeOutput", "nodeId": "review", "path": "resumeValue.comment"}`:
//!   an upstream node's output (`path` optional, dotted);
//! - `{"type": "template", "template": "Invoice {{ inputs.invoice }}"}`: text
//!   (see [`crate::expr`]) over `inputs`, `variables`, `nodes` and `run`.
//!
//! In `data` (and an approval gate's `title`, `description`, `artifactData`)
//! a bound member is written `{"$bind": <binding>}`, at any depth.

use crate::expr::Template;
use serde_json::{json, Map, Value};

/// The key that marks a bound member in `data`.
pub const BIND: &str = "$bind";

#[derive(Debug, Clone, PartialEq)]
pub enum Binding {
    Variable(String),
    Static(Value),
    NodeOutput { node: String, path: Vec<String> },
    Template(Template),
}

const GRAMMAR: &str = "a binding is {\"type\":\"variable\",\"variableName\":…}, {\"type\":\"static\",\"value\":…}, {\"type\":\"nodeOutput\",\"nodeId\":…,\"path\"?:…} or {\"type\":\"template\",\"template\":…}";

impl Binding {
    /// Parses a binding; the error says what is wrong with it.
    pub fn parse(b: &Value) -> Result<Binding, String> {
        let text = |member: &str| {
            b.get(member).and_then(Value::as_str).ok_or_else(|| {
                format!(
                    "a {} binding needs {member} (a string)",
                    b["type"].as_str().unwrap_or("")
                )
            })
        };
        match b.get("type").and_then(Value::as_str) {
            Some("variable") => Ok(Binding::Variable(text("variableName")?.to_string())),
            Some("static") => Ok(Binding::Static(b.get("value").cloned().unwrap_or(Value::Null))),
            Some("nodeOutput") => {
                let node = text("nodeId")?.to_string();
                let path = match b.get("path") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::String(p)) if !p.is_empty() => p.split('.').map(str::to_string).collect(),
                    Some(_) => return Err("a nodeOutput binding's path is a dotted string".into()),
                };
                if path.iter().any(String::is_empty) {
                    return Err("a nodeOutput binding's path has an empty step".into());
                }
                Ok(Binding::NodeOutput { node, path })
            }
            Some("template") => Template::compile(text("template")?)
                .map(Binding::Template)
                .map_err(|e| format!("template: {e}")),
            _ => Err(GRAMMAR.into()),
        }
    }

    /// The node this binding reads from, if any (checked at registration).
    pub fn upstream(&self) -> Option<&str> {
        match self {
            Binding::NodeOutput { node, .. } => Some(node),
            _ => None,
        }
    }

    /// The bound value; `Ok(None)` when the source holds nothing (the member is left out).
    pub fn resolve(&self, scope: &Scope) -> Result<Option<Value>, String> {
        Ok(match self {
            Binding::Variable(name) => scope.variable(name),
            Binding::Static(v) => Some(v.clone()),
            Binding::NodeOutput { node, path } => {
                let mut at = scope.nodes.get(node.as_str());
                for step in path {
                    at = at.and_then(|v| match v {
                        Value::Array(a) => step.parse::<usize>().ok().and_then(|i| a.get(i)),
                        _ => v.get(step),
                    });
                }
                at.cloned()
            }
            Binding::Template(t) => Some(Value::String(t.render(&scope.context())?)),
        }
        .filter(|v| !v.is_null()))
    }
}

/// What bindings read: the run's inputs, the workflow's variable defaults,
/// the outputs of nodes that ran, and the run itself.
pub struct Scope<'a> {
    pub inputs: &'a Value,
    pub defaults: &'a Map<String, Value>,
    pub nodes: Map<String, Value>,
    pub run_id: &'a str,
    pub workflow_id: &'a str,
}

impl Scope<'_> {
    fn variable(&self, name: &str) -> Option<Value> {
        self.inputs
            .get(name)
            .filter(|v| !v.is_null())
            .or_else(|| self.defaults.get(name))
            .cloned()
    }

    /// The template context: `inputs`, `variables` (defaults overlaid by inputs), `nodes`, `run`.
    pub fn context(&self) -> Value {
        let mut variables = self.defaults.clone();
        if let Some(inputs) = self.inputs.as_object() {
            for (k, v) in inputs {
                variables.insert(k.clone(), v.clone());
            }
        }
        json!({
            "inputs": self.inputs,
            "variables": variables,
            "nodes": self.nodes,
            "run": {"id": self.run_id, "workflowId": self.workflow_id},
        })
    }
}

/// A member of `data` marked `{"$bind": …}`.
fn marked(v: &Value) -> Option<&Value> {
    match v {
        Value::Object(m) if m.len() == 1 => m.get(BIND),
        _ => None,
    }
}

/// Whether `v` has a bound member anywhere.
pub fn has_bindings(v: &Value) -> bool {
    match v {
        _ if marked(v).is_some() => true,
        Value::Object(m) => m.values().any(has_bindings),
        Value::Array(a) => a.iter().any(has_bindings),
        _ => false,
    }
}

/// Whether `v` itself is a bound member.
pub fn is_bound(v: &Value) -> bool {
    marked(v).is_some()
}

/// Checks every bound member under `v` (at `at`, e.g. `config.data`); each
/// error names the member. Returns the nodes they read from.
pub fn check_tree(v: &Value, at: &str) -> Result<Vec<String>, String> {
    let mut upstream = Vec::new();
    check_into(v, at, &mut upstream)?;
    Ok(upstream)
}

fn check_into(v: &Value, at: &str, upstream: &mut Vec<String>) -> Result<(), String> {
    if let Some(b) = marked(v) {
        let b = Binding::parse(b).map_err(|e| format!("{at}: {e}"))?;
        upstream.extend(b.upstream().map(str::to_string));
        return Ok(());
    }
    match v {
        Value::Object(m) => m
            .iter()
            .try_for_each(|(k, child)| check_into(child, &format!("{at}.{k}"), upstream)),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .try_for_each(|(i, child)| check_into(child, &format!("{at}[{i}]"), upstream)),
        _ => Ok(()),
    }
}

/// A member that could not be bound: which one, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct BindError {
    pub member: String,
    pub message: String,
}

/// `v` with every bound member replaced by its value (left out when the
/// source holds nothing). `at` names the root in errors (`data`).
pub fn bind_tree(v: &Value, scope: &Scope, at: &str) -> Result<Value, BindError> {
    Ok(bind_into(v, scope, at)?.unwrap_or(Value::Null))
}

fn bind_into(v: &Value, scope: &Scope, at: &str) -> Result<Option<Value>, BindError> {
    if let Some(b) = marked(v) {
        let fail = |message: String| BindError {
            member: at.to_string(),
            message,
        };
        let binding = Binding::parse(b).map_err(fail)?;
        return binding.resolve(scope).map_err(fail);
    }
    Ok(Some(match v {
        Value::Object(m) => {
            let mut out = Map::with_capacity(m.len());
            for (k, child) in m {
                if let Some(bound) = bind_into(child, scope, &format!("{at}.{k}"))? {
                    out.insert(k.clone(), bound);
                }
            }
            Value::Object(out)
        }
        Value::Array(a) => {
            let mut out = Vec::with_capacity(a.len());
            for (i, child) in a.iter().enumerate() {
                out.push(bind_into(child, scope, &format!("{at}[{i}]"))?.unwrap_or(Value::Null));
            }
            Value::Array(out)
        }
        other => other.clone(),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scope<'a>(inputs: &'a Value, defaults: &'a Map<String, Value>) -> Scope<'a> {
        let mut nodes = Map::new();
        nodes.insert(
            "review".into(),
            json!({"resumeValue": {"action": "accept", "items": [{"id": "x"}]}}),
        );
        Scope {
            inputs,
            defaults,
            nodes,
            run_id: "acme/r-1",
            workflow_id: "wf",
        }
    }

    #[test]
    fn every_binding_form_resolves() {
        let inputs = json!({"order": {"id": "o-17"}, "amount": 40});
        let mut defaults = Map::new();
        defaults.insert("currency".into(), json!("EUR"));
        let s = scope(&inputs, &defaults);
        let data = json!({
            "eventType": "order.paid",
            "correlation": {"orderId": {"$bind": {"type": "template", "template": "{{ inputs.order.id }}"}}},
            "amount": {"$bind": {"type": "variable", "variableName": "amount"}},
            "currency": {"$bind": {"type": "variable", "variableName": "currency"}},
            "first": {"$bind": {"type": "nodeOutput", "nodeId": "review", "path": "resumeValue.items.0.id"}},
            "fixed": {"$bind": {"type": "static", "value": [1, 2]}},
            "run": {"$bind": {"type": "template", "template": "conv-{{ run.id }}"}},
            "absent": {"$bind": {"type": "variable", "variableName": "nope"}},
            "list": [{"$bind": {"type": "static", "value": "a"}}, "b"]
        });
        assert!(has_bindings(&data));
        assert_eq!(check_tree(&data, "data").unwrap(), vec!["review".to_string()]);
        let bound = bind_tree(&data, &s, "data").unwrap();
        assert_eq!(
            bound,
            json!({
                "eventType": "order.paid",
                "correlation": {"orderId": "o-17"},
                "amount": 40,
                "currency": "EUR",
                "first": "x",
                "fixed": [1, 2],
                "run": "conv-acme/r-1",
                "list": ["a", "b"]
            })
        );
        assert!(!has_bindings(&bound));
    }

    #[test]
    fn errors_name_the_member() {
        let inputs = json!({});
        let defaults = Map::new();
        let s = scope(&inputs, &defaults);
        let data =
            json!({"title": {"$bind": {"type": "template", "template": "Invoice {{ inputs.invoice }}"}}});
        let e = bind_tree(&data, &s, "data").unwrap_err();
        assert_eq!(e.member, "data.title");
        assert!(e.message.contains("undefined"), "{}", e.message);

        let e = check_tree(&json!({"a": [{"$bind": {"type": "magic"}}]}), "config.data").unwrap_err();
        assert!(e.starts_with("config.data.a[0]: a binding is"), "{e}");
        let e = check_tree(
            &json!({"t": {"$bind": {"type": "template", "template": "{{ x"}}}),
            "config",
        )
        .unwrap_err();
        assert!(e.starts_with("config.t: template:"), "{e}");
        let e = check_tree(&json!({"t": {"$bind": {"type": "nodeOutput"}}}), "config").unwrap_err();
        assert!(e.contains("needs nodeId"), "{e}");
    }

    #[test]
    fn an_object_with_other_members_beside_bind_is_plain_data() {
        let v = json!({"$bind": {"type": "static", "value": 1}, "other": 2});
        assert!(!has_bindings(&v));
        assert!(!is_bound(&v));
    }
}
