//! `tollgate`: the server and its command line.

mod api;
mod cli;
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
    #[command(flatten)]
    Operator(cli::Command),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Serve { config } => {
            let config = config::Config::load(config.as_deref())?;
            let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
            runtime.block_on(server::serve(config))
        }
        Command::Operator(command) => std::process::exit(cli::run(command)),
    }
}
