//! The form renderer on a 50-field resume schema (`benches/data/resume-50.json`):
//! schema → field tree, field tree → HTML, and both, as the interrupt page
//! does it (the approval's `action` field taken out, default values filled in).
//!
//! cargo bench -p tollgate-app --features ssr --bench form

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use leptos::prelude::*;
use serde_json::Value;
use std::collections::HashMap;
use tollgate_app::form::{default_values, field_tree, FieldNode, SchemaForm};

fn schema() -> Value {
    serde_json::from_str(include_str!("../../benches/data/resume-50.json")).expect("schema")
}

fn tree_of(schema: &Value) -> FieldNode {
    let mut tree = field_tree(schema).expect("drawable");
    tree.remove_field("action");
    tree
}

fn html_of(tree: FieldNode) -> String {
    let values = default_values(&tree);
    view! { <SchemaForm tree values errors=HashMap::new() id_prefix="answer" /> }.to_html()
}

fn form(c: &mut Criterion) {
    let schema = schema();
    assert!(
        tollgate_wire::schema_subset::check(&schema).is_ok(),
        "the engine accepts the schema"
    );
    let tree = tree_of(&schema);
    assert_eq!(tree.fields().len(), 50);
    let html = html_of(tree.clone());
    assert!(html.matches("<input").count() >= 40, "{html}");

    let mut g = c.benchmark_group("form_50_fields");
    g.bench_function("schema_to_tree", |b| b.iter(|| tree_of(black_box(&schema))));
    g.bench_function("tree_to_html", |b| b.iter(|| html_of(black_box(tree.clone()))));
    g.bench_function("schema_to_html", |b| {
        b.iter(|| html_of(tree_of(black_box(&schema))))
    });
    g.finish();
}

criterion_group!(benches, form);
criterion_main!(benches);
