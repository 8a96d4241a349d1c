//! `tollgate`: the server and its command line.

mod api;
mod config;
mod server;
mod state;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

#[derive(Parser)]
#[command(
    name = "tollgate",
    version,
    about = "Durable interrupts and an approver console for workflow runs"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Start the server: REST API, console and timers.
    Serve {
        /// TOML configuration file; `TOLLGATE_*` environment variables override it.
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Check a workflow definition with the same rules as registration.
    #[command(name = "validate-workflow")]
    ValidateWorkflow {
        /// The workflow JSON file.
        file: PathBuf,
    },
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { config } => {
            let config = config::Config::load(config.as_deref())?;
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(server::serve(config))
        }
        Command::ValidateWorkflow { file } => {
            let text = std::fs::read_to_string(&file)?;
            let raw: serde_json::Value = serde_json::from_str(&text)
                .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", file.display()))?;
            match tollgate::Engine::validate_workflow(raw) {
                Ok(wf) => {
                    println!(
                        "{}",
                        serde_json::json!({"valid": true, "id": wf.id, "nodes": wf.nodes.len()})
                    );
                    Ok(())
                }
                Err(e) => {
                    println!(
                        "{}",
                        serde_json::json!({"valid": false, "error": e.to_string(), "details": e.details()})
                    );
                    std::process::exit(1);
                }
            }
        }
    }
}
