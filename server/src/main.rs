//! `tollgate`: the server and its command line.

mod api;
mod callbacks;
mod cli;
mod config;
mod console;
mod dashboard;
mod delegations;
mod form_post;
mod headers;
mod live;
mod mailer;
mod middleware;
mod published;
mod server;
mod server_fns;
mod session;
mod state;

use clap::{Parser, Subcommand};
use std::path::PathBuf;

// mimalloc instead of glibc's allocator, for Rust and (feature `override`)
// for the embedded SQLite: a resolve allocates and frees many small buffers
// (JSON, rows, events, SQLite's own), and glibc's malloc was a tenth of the
// writer thread's instructions (docs/performance.md, sixth sitting).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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
        /// TOML configuration file; `TOLLGATE__SECTION__KEY` environment variables override it.
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Print the argon2 PHC string for a console password read from stdin
    /// (for `[[principals]] password_hash`).
    #[command(name = "hash-password")]
    HashPassword,
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
        Command::HashPassword => {
            let mut line = String::new();
            std::io::stdin().read_line(&mut line)?;
            let password = line.trim_end_matches(['\r', '\n']);
            if password.is_empty() {
                anyhow::bail!("give the password on stdin");
            }
            tollgate::passwords::check_new(password)?;
            println!("{}", tollgate::passwords::hash(password)?);
            Ok(())
        }
        Command::Operator(command) => std::process::exit(cli::run(command)),
    }
}
