//! The `mixcheck` binary: parses the command line and dispatches it; the error that ends a
//! command decides the exit code (`errors`).

mod catalogue;
mod cli;
mod cluster;
mod errors;
mod probes;
mod run;
mod triage;

use clap::Parser as _;

/// mimalloc: the bundled cluster and a run allocate small JSON values from many threads, where
/// glibc's allocator fragments across its per-thread arenas and spends its time in free lists.
#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let args = cli::args::Cli::parse();
    init_tracing(args.verbose);
    raise_open_files_limit();
    if rustls::crypto::ring::default_provider().install_default().is_err() {
        eprintln!("mixcheck: a TLS crypto provider was already installed");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mixcheck: cannot start the async runtime: {e}");
            return errors::Code::Internal.into();
        }
    };
    match runtime.block_on(cli::dispatch(args.command)) {
        Ok(code) => code.into(),
        Err(e) => {
            eprintln!("mixcheck: {e}");
            e.process_exit_code().into()
        }
    }
}

/// Raises the soft limit on open files to the hard limit: a bundled cluster listens on every
/// node's address for every NodePort (a socket per node and port while they fit in the limit)
/// and a run keeps one connection per probe in flight, more than the common soft limit of 1024.
fn raise_open_files_limit() {
    if let Err(e) = rlimit::increase_nofile_limit(u64::MAX) {
        tracing::debug!("cannot raise the open-files limit: {e}");
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
