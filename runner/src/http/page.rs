//! The New-run page (`web/`): its built assets, embedded in the binary and served with a strict
//! Content-Security-Policy, and what the page needs beyond the API the CLI speaks (its relay is
//! [`super::chain`], its verification and funds [`super::verify`]; [`super::router`] routes them):
//!
//! | method and path | who | what |
//! | --- | --- | --- |
//! | `GET /`, `/app.js`, `/style.css`, `/skilltrial_web_bg.wasm` | anyone | the page |
//! | `GET /v1/offer` | anyone | the profiles as this runner runs them, the program's fee |
//! | `GET /v1/auth/session` | anyone | the signed-in wallet, or `null` (never a 401) |
//! | `GET /v1/chain/blockhash` | session | a recent blockhash for the wallet's transaction |
//! | `POST /v1/chain/send` | session | relay a transaction the session's wallet signed |
//! | `GET /v1/runs/{run}/verification[?anchor=SIG]` | its owner | `verify --run` of its report |
//! | `GET /v1/runs/{run}/funds` | its owner | its lamports on-chain (escrowed, paid out, held) |
//!
//! The page computes the manifest, its hash and the escrow itself (the project's Rust, compiled
//! to wasm) and builds `run_open` from the committed IDL, so what the wallet signs does not
//! depend on what this daemon says: the program refuses a fee or a runner other than its
//! config's, and the hash is the page's own. The relay only forwards: it sends nothing but a
//! transaction the session's wallet pays for and signed, calling only this program and the
//! Memo program, so it is no open relay.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::{Answer, unavailable};
use super::extract::{blocking, private_json};
use crate::{App, api};

/// The page's policy: its own scripts, styles and wasm only, requests to this origin only,
/// never framed.
pub const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The built page (`bash scripts/web.sh` writes `web/dist/`; CI checks it is current).
pub(crate) const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_bytes!("../../../web/dist/index.html"),
    ),
    (
        "/app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../web/dist/app.js"),
    ),
    (
        "/style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../web/dist/style.css"),
    ),
    (
        "/skilltrial_web_bg.wasm",
        "application/wasm",
        include_bytes!("../../../web/dist/skilltrial_web_bg.wasm"),
    ),
];

pub(crate) fn asset(kind: &'static str, bytes: &'static [u8]) -> Response {
    let mut response = (StatusCode::OK, Bytes::from_static(bytes)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The page changes with the binary: revalidate, never keep a stale one.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

pub(crate) async fn offer(State(app): State<Arc<App>>) -> Answer<Response> {
    let app2 = Arc::clone(&app);
    let offer = blocking(move || -> Answer<api::Offer> {
        // Only the profiles the daemon serves (it can call them): nothing is offered that
        // would be escrowed and never run.
        let profiles = app2
            .profiles
            .served
            .iter()
            .filter_map(|served| {
                let mut profile = served.profile.clone();
                // Only the scheme, host, port and path: an operator's credentials stay here,
                // and so do its file's path and the raw base URL (a manifest pins neither).
                let endpoint = skilltrial_core::manifest::endpoint_of(&served.endpoint).ok()?;
                profile.base_url = None;
                if profile.origin != "builtin" {
                    profile.origin = "operator".to_owned();
                }
                let demo = app2.profiles.is_demo(&profile.id);
                Some(api::OfferedProfile {
                    profile,
                    endpoint,
                    demo,
                })
            })
            .collect();
        let config = app2
            .chain()
            .config()
            .map_err(|e| {
                // Said to anyone: the node's address stays in the log.
                tracing::warn!("GET /v1/offer: {e}");
                unavailable("the cluster did not answer; try again in a moment".to_owned())
            })?
            .ok_or_else(|| unavailable("the program has no config on this cluster".to_owned()))?;
        Ok(api::Offer {
            profiles,
            packs: skilltrial_core::pack::embedded_ids(),
            fee_per_trial_lamports: config.fee_per_trial,
            default_deadline_secs: DEFAULT_DEADLINE_SECS,
        })
    })
    .await??;
    Ok(private_json(offer))
}

/// The deadline the page proposes, as `submit --deadline` does by default (one value, in `core`).
pub use skilltrial_core::hosted::DEFAULT_DEADLINE_SECS;
