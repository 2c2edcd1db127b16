//! The bundled cluster's HTTPS listener: every connection accepted with TCP_NODELAY, TLS
//! (rustls), then HTTP/1.1 or HTTP/2 for the API's routes, until its handle stops it.
//!
//! A crate of its own so that the test build compiles it optimised: the server's connection
//! handling (TLS records, HTTP parsing, WebSocket upgrades, routing) is generic code of hyper,
//! tokio-rustls and axum, compiled in the crate that names the concrete types, and the
//! simulated cluster's crate is left unoptimised in that build (the workspace's Cargo.toml).
//! Here it is compiled once, with the dependencies' optimisation, for every request of every
//! test's cluster (docs/benchmarks.md, "2026-12-07").

use std::net::SocketAddr;

use axum::Router;
use axum_server::Handle;
use axum_server::accept::NoDelayAcceptor;
use axum_server::tls_rustls::{RustlsAcceptor, RustlsConfig};
use tokio::task::JoinHandle;

/// Serves `app` on `listener` (already bound and non-blocking) over TLS with `tls` until
/// `handle` shuts it down; the task ends with the server and logs why it stopped early.
///
/// TCP_NODELAY is set on every connection, as kube-apiserver has it (Go's net package sets it
/// on every TCP connection: "The default is true (no delay)", net.TCPConn.SetNoDelay). Without
/// it an exec's small WebSocket frames wait for the peer's delayed ACK (40 ms on Linux).
pub fn spawn(
    listener: std::net::TcpListener,
    tls: RustlsConfig,
    app: Router,
    handle: Handle<SocketAddr>,
) -> std::io::Result<JoinHandle<()>> {
    let acceptor = RustlsAcceptor::new(tls).acceptor(NoDelayAcceptor::new());
    let server = axum_server::from_tcp(listener)?.acceptor(acceptor).handle(handle);
    Ok(tokio::spawn(async move {
        if let Err(e) = server.serve(app.into_make_service()).await {
            tracing::error!("bundled cluster API server stopped: {e}");
        }
    }))
}
