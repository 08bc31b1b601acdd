//! The router: every route of the API and of the page, the body limit and gate of each route
//! that takes a body ([`super::intake`]), and the answers for a path or a method it does not
//! serve. Nothing else assembles routes.

use std::sync::Arc;

use axum::Router;
use axum::http::{Method, StatusCode};
use axum::routing::{get, post};

use super::error::Failure;
use super::intake::{BodyBounds, Gates, Limit, MAX_MANIFEST_BODY, MAX_SMALL_BODY, Who};
use super::{chain, events, info, ops, page, runs, session, uploads, verify};
use crate::App;

/// The router, with its state and the default [`BodyBounds`].
pub fn router(app: Arc<App>) -> Router {
    router_with(app, BodyBounds::default())
}

/// The router, reading bodies within `bounds`. Every route that takes a body is gated
/// ([`super::intake`]): its session and declared length are checked before a byte is read.
pub fn router_with(app: Arc<App>, bounds: BodyBounds) -> Router {
    let gates = Gates::new(&app, bounds);
    Router::new()
        .route("/v1/info", get(info::info))
        .route("/v1/auth/challenge", get(session::challenge))
        .route(
            "/v1/auth/verify",
            gates.small(Who::Anyone, MAX_SMALL_BODY, post(session::verify)),
        )
        .route(
            "/v1/trees",
            gates.large(
                Limit::Of(uploads::tree_body_limit),
                post(uploads::upload_tree),
            ),
        )
        .route(
            "/v1/manifests",
            gates.large(
                Limit::Bytes(MAX_MANIFEST_BODY),
                post(uploads::upload_manifest),
            ),
        )
        .route(
            "/v1/runs",
            get(runs::my_runs).merge(gates.small(
                Who::Session,
                MAX_SMALL_BODY,
                post(runs::register),
            )),
        )
        .route(
            "/v1/runs/check",
            gates.small(Who::Session, MAX_SMALL_BODY, post(runs::check)),
        )
        .route("/v1/runs/{run}", get(runs::run_view))
        .route("/v1/runs/{run}/events", get(events::events))
        .route("/v1/runs/{run}/report.json", get(runs::report_json))
        .route("/v1/runs/{run}/report.html", get(runs::report_html))
        .merge(page_routes(&gates))
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route_layer(axum::middleware::from_fn_with_state(
            Arc::clone(&app),
            ops::track,
        ))
        .fallback(|| async {
            Failure::new(
                StatusCode::NOT_FOUND,
                "not_found",
                "no such endpoint (see GET /v1/info)",
            )
        })
        .method_not_allowed_fallback(|method: Method| async move {
            Failure::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "invalid",
                format!("this endpoint does not take {method} (docs/runner.md lists the API)"),
            )
        })
        .with_state(app)
}

/// The New-run page's routes ([`page`] lists them); `gates` bound the bodies they take.
fn page_routes(gates: &Gates) -> Router<Arc<App>> {
    let mut router = Router::new()
        .route("/v1/offer", get(page::offer))
        .route("/v1/auth/session", get(session::signed_in))
        .route("/v1/chain/blockhash", get(chain::blockhash))
        .route(
            "/v1/chain/send",
            gates.small(Who::Session, MAX_SMALL_BODY, post(chain::send)),
        )
        .route("/v1/runs/{run}/verification", get(verify::verification))
        .route("/v1/runs/{run}/funds", get(verify::funds));
    for (path, kind, bytes) in page::ASSETS {
        router = router.route(path, get(move || async move { page::asset(kind, bytes) }));
    }
    router.route(
        "/index.html",
        get(|| async { page::asset(page::ASSETS[0].1, page::ASSETS[0].2) }),
    )
}
