//! # tern: the binary
//!
//! Subcommands:
//! - `tern serve`: load the zones and answer on the listen addresses.
//! - `tern check`: validate the configuration and zones; non-zero exit on errors.
//! - `tern dump ORIGIN FILE`: print a zone in canonical one-record-per-line form.
//!
//! Command-line flags override the YAML configuration file, which overrides
//! the built-in defaults (docs/config.md lists every key).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};

mod config;
mod zones;

use config::Config;

//----------- Command line ---------------------------------------------------

/// tern: a thread-per-core authoritative DNS server.
#[derive(Parser, Debug)]
#[command(name = "tern", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Load the zones and serve them over UDP and TCP.
    Serve(ServeArgs),
    /// Validate the configuration and zones; exit non-zero on any error.
    Check(CheckArgs),
    /// Print a zone file in canonical form, one record per line.
    Dump {
        /// The zone's origin, e.g. example.com.
        origin: String,
        /// The zone file.
        file: PathBuf,
    },
}

/// Flags shared by `serve` and `check` that override the configuration file.
#[derive(clap::Args, Debug, Default)]
struct Overrides {
    /// YAML configuration file.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Directory of zone files: every NAME.zone in it is the zone NAME.
    #[arg(long, value_name = "DIR")]
    zones: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct ServeArgs {
    #[command(flatten)]
    overrides: Overrides,
    /// Address to listen on, over UDP and TCP (repeatable).
    #[arg(long, value_name = "ADDR:PORT")]
    listen: Vec<std::net::SocketAddr>,
    /// CPUs to run on: a list like 0,2-3, or `all`.
    #[arg(long, value_name = "LIST")]
    cores: Option<String>,
}

#[derive(clap::Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    overrides: Overrides,
    /// Check one zone instead of the configured ones: its origin ...
    #[arg(requires = "file")]
    origin: Option<String>,
    /// ... and its file.
    file: Option<PathBuf>,
}

//----------- main -----------------------------------------------------------

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("tern: error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::FAILURE
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Serve(args) => serve(args),
        Command::Check(args) => check(args),
        Command::Dump { origin, file } => dump(&origin, &file),
    }
}

fn load_config(overrides: &Overrides) -> anyhow::Result<Config> {
    let mut config = match &overrides.config {
        Some(path) => Config::from_file(path)?,
        None => Config::default(),
    };
    if let Some(dir) = &overrides.zones {
        config.zones_dir = Some(dir.clone());
        config.zone_files.clear();
    }
    Ok(config)
}

fn serve(args: ServeArgs) -> anyhow::Result<ExitCode> {
    let mut config = load_config(&args.overrides)?;
    if !args.listen.is_empty() {
        config.listen = args.listen;
    }
    if let Some(list) = &args.cores {
        config.cores = config::parse_cores(list).context("--cores")?;
    }
    let loaded = zones::load_all(&config)?;
    for line in &loaded.warnings {
        eprintln!("tern: {line}");
    }
    if !loaded.errors.is_empty() {
        for line in &loaded.errors {
            eprintln!("tern: {line}");
        }
        anyhow::bail!("{} zone(s) failed to load", loaded.failed);
    }
    let zone_count = loaded.zones.len();
    let catalog = Arc::new(tern_authority::Catalog::new(loaded.zones));
    let server = tern_server::Server::start(config.server_config(), catalog)
        .context("starting the server")?;
    let addresses: Vec<String> = config.listen.iter().map(|a| a.to_string()).collect();
    eprintln!(
        "tern: serving {zone_count} zone(s) on {}",
        addresses.join(", ")
    );
    server.join().context("serving")?;
    Ok(ExitCode::SUCCESS)
}

fn check(args: CheckArgs) -> anyhow::Result<ExitCode> {
    let loaded = match (&args.origin, &args.file) {
        (Some(origin), Some(file)) => zones::load_one_for_check(origin, file)?,
        _ => zones::load_all(&load_config(&args.overrides)?)?,
    };
    for line in loaded.warnings.iter().chain(&loaded.errors) {
        println!("{line}");
    }
    if loaded.errors.is_empty() {
        println!("{} zone(s) OK", loaded.zones.len());
        Ok(ExitCode::SUCCESS)
    } else {
        println!(
            "{} zone(s) OK, {} failed",
            loaded.zones.len(),
            loaded.failed
        );
        Ok(ExitCode::FAILURE)
    }
}

fn dump(origin: &str, file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let text = zones::dump(origin, file)?;
    print!("{text}");
    Ok(ExitCode::SUCCESS)
}
