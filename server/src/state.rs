//! State shared by every handler.

use crate::config::Config;
use axum::extract::FromRef;
use leptos::prelude::LeptosOptions;
use std::sync::Arc;
use tollgate::Engine;

/// Cloned for every request, by each layer and extractor that takes it: one
/// reference count to move, not one per member (issue #17: the counts sit
/// on cache lines both cores write).
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// What every request shares: the engine, the configuration and the
/// console's Leptos options.
pub struct Shared {
    pub engine: Engine,
    pub config: Arc<Config>,
    pub leptos: LeptosOptions,
}

impl AppState {
    pub fn new(engine: Engine, config: Arc<Config>, leptos: LeptosOptions) -> Self {
        AppState(Arc::new(Shared {
            engine,
            config,
            leptos,
        }))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;
    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl FromRef<AppState> for LeptosOptions {
    fn from_ref(s: &AppState) -> Self {
        s.leptos.clone()
    }
}
