//! The watch's HTTP endpoints on `--listen`: `/metrics` (the text format, or OpenMetrics when
//! the scraper's `Accept` asks for it), `/healthz` (the process answers) and `/readyz` (the
//! fixtures are deployed and a cycle has run).

use std::sync::{Arc, Mutex};

use axum::http::{HeaderMap, StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;

use super::board::Board;
use super::exposition;

/// The board the cycles write and the endpoints read.
pub type Shared = Arc<Mutex<Board>>;

fn board(shared: &Shared) -> std::sync::MutexGuard<'_, Board> {
    match shared.lock() {
        Ok(b) => b,
        Err(poisoned) => poisoned.into_inner(),
    }
}

async fn metrics(axum::extract::State(shared): axum::extract::State<Shared>, headers: HeaderMap) -> impl IntoResponse {
    let families = board(&shared).families();
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
    if exposition::wants_openmetrics(accept) {
        (
            [(header::CONTENT_TYPE, exposition::OPENMETRICS)],
            exposition::openmetrics(&families),
        )
    } else {
        ([(header::CONTENT_TYPE, exposition::TEXT)], exposition::text(&families))
    }
}

async fn readyz(axum::extract::State(shared): axum::extract::State<Shared>) -> impl IntoResponse {
    if board(&shared).ready {
        (StatusCode::OK, "ready\n")
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            "not ready: the fixtures are being deployed\n",
        )
    }
}

/// Binds `addr` (an error names it when taken) and serves until the task is dropped.
pub async fn bind(addr: std::net::SocketAddr, shared: Shared) -> Result<tokio::task::JoinHandle<()>, String> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr} for /metrics: {e}"))?;
    let app = axum::Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(|| async { "ok\n" }))
        .route("/readyz", get(readyz))
        .with_state(shared);
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!("the metrics endpoint stopped: {e}");
        }
    }))
}
