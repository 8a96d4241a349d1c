//! Server functions: the console's only way to reach the engine.

use leptos::prelude::*;
use serde::{Deserialize, Serialize};

/// Counts shown on the home page; read from the database on every call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Overview {
    pub workflows: i64,
    pub runs: i64,
    pub pending_interrupts: i64,
}

#[server]
pub async fn load_overview() -> Result<Overview, ServerFnError> {
    let engine = expect_context::<tollgate::Engine>();
    let stats = engine
        .overview()
        .await
        .map_err(|e| ServerFnError::new(e.to_string()))?;
    Ok(Overview {
        workflows: stats.workflows,
        runs: stats.runs,
        pending_interrupts: stats.pending_interrupts,
    })
}
