//! Interrupt kinds (defined with the wire types) and re-entry keys.

pub use tollgate_wire::InterruptKind;

/// The deterministic re-entry key of one invocation: run, node and visit index.
/// A node reached again over an edge gets a new visit index, hence a new key.
pub fn reentry_key(run_id: &str, node_id: &str, visit: i64) -> String {
    format!("{run_id}:{node_id}:{visit}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_differ_per_visit() {
        assert_ne!(reentry_key("t/r", "gate", 0), reentry_key("t/r", "gate", 1));
        assert_eq!(reentry_key("t/r", "gate", 0), reentry_key("t/r", "gate", 0));
    }
}
