//! The `mixcheck` binary: parses the command line, runs the chosen command, maps the outcome
//! to the documented exit code.

mod cli;
mod exit;
mod sim;

use clap::Parser as _;

fn main() -> std::process::ExitCode {
    let args = cli::Cli::parse();
    init_tracing(args.verbose);
    if rustls::crypto::ring::default_provider().install_default().is_err() {
        eprintln!("mixcheck: a TLS crypto provider was already installed");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mixcheck: cannot start the async runtime: {e}");
            return exit::Code::Internal.into();
        }
    };
    let result = runtime.block_on(async {
        match args.command {
            cli::Command::Sim(sim) => sim::run(sim).await,
        }
    });
    match result {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("mixcheck: {e:#}");
            exit::classify(&e).into()
        }
    }
}

fn init_tracing(verbose: u8) {
    let default = match verbose {
        0 => "warn",
        1 => "info,mixcheck=debug",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MIXCHECK_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
