//! What an operator's infrastructure asks: `GET /healthz` (the process answers: liveness, no
//! database call, so a database outage never restarts every worker at once), `GET /readyz`
//! (the state answers: take the worker out of a load balancer otherwise) and `GET /metrics`
//! ([`crate::metrics`]), and the layer that times every request.

use std::sync::Arc;
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::extract::blocking;
use crate::App;
use crate::metrics::PhaseLabels;

pub(crate) async fn healthz() -> Response {
    ([(header::CACHE_CONTROL, "no-store")], "ok\n").into_response()
}

pub(crate) async fn readyz(State(app): State<Arc<App>>) -> Response {
    let checked = blocking(move || app.state().census()).await;
    match checked {
        Ok(Ok(_)) => ([(header::CACHE_CONTROL, "no-store")], "ready\n").into_response(),
        Ok(Err(e)) => {
            tracing::warn!("not ready: {e}");
            (
                StatusCode::SERVICE_UNAVAILABLE,
                "the state does not answer\n",
            )
                .into_response()
        }
        Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "not ready\n").into_response(),
    }
}

pub(crate) async fn metrics(State(app): State<Arc<App>>) -> Response {
    let app2 = Arc::clone(&app);
    let census = blocking(move || app2.state().census()).await;
    let m = &app.metrics;
    match census {
        Ok(Ok(census)) => {
            // A phase no run is in any more is absent from the census: its series goes too,
            // rather than keeping the count of an earlier scrape.
            m.runs.clear();
            for (phase, n) in census.runs {
                m.runs
                    .get_or_create(&PhaseLabels {
                        phase: phase.as_str().to_owned(),
                    })
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
            m.batches_pending
                .set(i64::try_from(census.batches_pending).unwrap_or(i64::MAX));
        }
        // The process's own series are still worth a scrape.
        Ok(Err(e)) => tracing::warn!("metrics: the state does not answer: {e}"),
        Err(_) => tracing::warn!("metrics: the state does not answer"),
    }
    m.runs_here
        .set(i64::try_from(app.active_runs()).unwrap_or(i64::MAX));
    match m.encode() {
        Ok(text) => (
            [
                (
                    header::CONTENT_TYPE,
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
                (header::CACHE_CONTROL, "no-store"),
            ],
            text,
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

/// Times a request of a matched route into [`crate::metrics::Metrics::http`].
pub(crate) async fn track(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("other", MatchedPath::as_str)
        .to_owned();
    let method = match request.method().as_str() {
        m @ ("GET" | "POST" | "PUT" | "DELETE" | "HEAD" | "OPTIONS" | "PATCH") => m,
        _ => "other",
    }
    .to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    app.metrics.http_request(
        &route,
        &method,
        response.status().as_u16(),
        started.elapsed(),
    );
    response
}
