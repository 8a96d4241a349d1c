//! The JSON Schemas `tollgate schema NAME` prints (files under `server/schemas/`).

use super::SchemaName;

pub(super) fn text(name: SchemaName) -> &'static str {
    match name {
        SchemaName::InterruptNode => include_str!("../../schemas/interrupt-node.schema.json"),
        SchemaName::Workflow => include_str!("../../schemas/workflow.schema.json"),
        SchemaName::InterruptPayload => include_str!("../../schemas/interrupt-payload.schema.json"),
        SchemaName::RunSnapshot => include_str!("../../schemas/run-snapshot.schema.json"),
        SchemaName::ResumeValue => include_str!("../../schemas/resume-value.schema.json"),
        SchemaName::Event => include_str!("../../schemas/event.schema.json"),
        SchemaName::ErrorEnvelope => include_str!("../../schemas/error-envelope.schema.json"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::ValueEnum;

    #[test]
    fn every_schema_is_json_with_a_draft_and_title() {
        for name in SchemaName::value_variants() {
            let v: serde_json::Value =
                serde_json::from_str(text(*name)).unwrap_or_else(|e| panic!("{name:?}: {e}"));
            assert_eq!(
                v["$schema"], "https://json-schema.org/draft/2020-12/schema",
                "{name:?}"
            );
            assert!(v["title"].is_string(), "{name:?}");
        }
    }
}
