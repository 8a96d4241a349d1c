//! State shared by every handler.

use crate::config::Config;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use std::sync::Arc;
use tollgate::Engine;

#[derive(Clone)]
pub struct AppState {
    pub engine: Engine,
    pub config: Arc<Config>,
    /// Shared: the state is cloned for every request, the options are not.
    pub leptos: Arc<LeptosOptions>,
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> Self {
        (*s.leptos).clone()
    }
}
