//! The one expression language of a workflow definition: edge `condition`s
//! and `template` bindings, both MiniJinja (Jinja2 syntax). Documented in
//! `docs/workflows.md`.
//!
//! - A condition is an expression (`action == "refine"`,
//!   `resumeValue.amount > 1000 and not (outcome in ["skip", "later"])`)
//!   evaluated over the source node's facts; a missing path is undefined and
//!   falsy, so a condition over a member a decision did not carry is false.
//! - A template is text with `{{ … }}` placeholders (`Invoice {{ inputs.invoice }}`);
//!   a placeholder that names nothing is an error, so a run never asks a
//!   question with a hole in it.
//!
//! Both are checked for syntax at registration and run with a fuel bound.

use minijinja::{Environment, UndefinedBehavior};
use serde_json::Value;
use std::sync::LazyLock;

/// Instructions one evaluation may spend (a runaway loop in a template ends).
const FUEL: u64 = 50_000;
/// Longest condition or template accepted at registration.
pub const MAX_SOURCE_LEN: usize = 4_096;
/// Longest text a template may produce.
pub const MAX_OUTPUT_LEN: usize = 64 * 1024;

fn environment(undefined: UndefinedBehavior) -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(undefined);
    env.set_fuel(Some(FUEL));
    env
}

static CONDITIONS: LazyLock<Environment<'static>> =
    LazyLock::new(|| environment(UndefinedBehavior::Chainable));
static TEMPLATES: LazyLock<Environment<'static>> = LazyLock::new(|| environment(UndefinedBehavior::Strict));

/// Error text without MiniJinja's pointer to its internal template name.
fn message(e: &minijinja::Error) -> String {
    let mut text = e.kind().to_string();
    if let Some(detail) = e.detail() {
        text = format!("{text}: {detail}");
    }
    text
}

fn check_len(source: &str) -> Result<(), String> {
    if source.len() > MAX_SOURCE_LEN {
        return Err(format!("longer than {MAX_SOURCE_LEN} bytes"));
    }
    Ok(())
}

/// An edge condition: a boolean expression over the source node's facts.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition {
    source: String,
}

impl Condition {
    /// Checks the syntax; the error says what is wrong.
    pub fn compile(source: &str) -> Result<Condition, String> {
        check_len(source)?;
        if source.trim().is_empty() {
            return Err("is empty".into());
        }
        CONDITIONS.compile_expression(source).map_err(|e| message(&e))?;
        Ok(Condition {
            source: source.to_string(),
        })
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Whether the condition holds for `facts` (an object whose members are
    /// the expression's names). An evaluation error is returned, not guessed.
    pub fn holds(&self, facts: &Value) -> Result<bool, String> {
        let expr = CONDITIONS
            .compile_expression(&self.source)
            .map_err(|e| message(&e))?;
        expr.eval(facts).map(|v| v.is_true()).map_err(|e| message(&e))
    }
}

/// A text template with `{{ … }}` placeholders.
#[derive(Debug, Clone, PartialEq)]
pub struct Template {
    source: String,
}

impl Template {
    pub fn compile(source: &str) -> Result<Template, String> {
        check_len(source)?;
        TEMPLATES.template_from_str(source).map_err(|e| message(&e))?;
        Ok(Template {
            source: source.to_string(),
        })
    }

    /// Renders over `context`; a placeholder naming nothing is an error.
    pub fn render(&self, context: &Value) -> Result<String, String> {
        let text = TEMPLATES
            .render_str(&self.source, context)
            .map_err(|e| message(&e))?;
        if text.len() > MAX_OUTPUT_LEN {
            return Err(format!("renders to more than {MAX_OUTPUT_LEN} bytes"));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(expr: &str, facts: Value) -> bool {
        Condition::compile(expr).unwrap().holds(&facts).unwrap()
    }

    #[test]
    fn conditions_compare_combine_and_reach_into_values() {
        let facts = json!({"action": "refine", "decision": "rejected", "resumeValue": {"amount": 1200, "tags": ["a", "b"]}});
        assert!(holds("action == \"refine\"", facts.clone()));
        assert!(!holds("action == 'accept'", facts.clone()));
        assert!(holds(
            "resumeValue.amount > 1000 and decision != 'granted'",
            facts.clone()
        ));
        assert!(holds("not (resumeValue.amount <= 1000)", facts.clone()));
        assert!(holds("'b' in resumeValue.tags", facts.clone()));
        assert!(holds("action in ['refine', 'reject'] or false", facts.clone()));
        assert!(holds("resumeValue['amount'] >= 1200", facts.clone()));
    }

    #[test]
    fn a_missing_path_is_false_not_an_error() {
        let facts = json!({"resumeValue": {}});
        assert!(!holds("resumeValue.reason.code == 'x'", facts.clone()));
        assert!(!holds("outcome == 'approved'", facts.clone()));
        assert!(holds("outcome is not defined", facts));
    }

    #[test]
    fn syntax_errors_are_refused_at_compile_time() {
        assert!(Condition::compile("action ==").is_err());
        assert!(Condition::compile("   ").is_err());
        assert!(Condition::compile(&"a or ".repeat(2000))
            .unwrap_err()
            .contains("longer than"));
        assert!(Template::compile("Hello {{ name").is_err());
        assert!(Template::compile("{% for x in y %}").is_err());
    }

    #[test]
    fn templates_render_bound_values_and_refuse_holes() {
        let t = Template::compile("Invoice {{ inputs.invoice }} for {{ inputs.amount }} EUR").unwrap();
        assert_eq!(
            t.render(&json!({"inputs": {"invoice": "INV-7", "amount": 12.5}}))
                .unwrap(),
            "Invoice INV-7 for 12.5 EUR"
        );
        let e = t.render(&json!({"inputs": {"invoice": "INV-7"}})).unwrap_err();
        assert!(e.contains("undefined"), "{e}");
        // Text is not HTML-escaped here: escaping belongs to whoever draws it.
        let t = Template::compile("{{ v }}").unwrap();
        assert_eq!(t.render(&json!({"v": "<b>&"})).unwrap(), "<b>&");
    }

    #[test]
    fn a_runaway_template_runs_out_of_fuel() {
        let t = Template::compile(
            "{% for a in range(1000) %}{% for b in range(1000) %}x{% endfor %}{% endfor %}",
        )
        .unwrap();
        let e = t.render(&json!({})).unwrap_err();
        assert!(e.contains("fuel") || e.contains("out of"), "{e}");
    }
}
