//! What handlers share besides the error: the session of a request, the run it may read,
//! blocking work off the async threads, and answers that are never cached.

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest as _, Sha256};
use skilltrial_chain::Pubkey;

use super::error::{Answer, Failure};
use super::session::COOKIE;
use crate::App;
use crate::state::HostedRun;

/// Runs `f` on a thread of its own (SQLite, the store and the blocking RPC client never run on
/// the async runtime's threads).
pub(crate) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> T + Send + 'static,
) -> Answer<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("api-blocking".to_owned())
        .spawn(move || {
            let _ = tx.send(f());
        })
        .map_err(Failure::internal)?;
    rx.await
        .map_err(|_| Failure::internal("a request's thread ended without an answer"))
}

pub(crate) fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

pub(crate) fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A private JSON answer (see [`private`]).
pub(crate) fn private_json(value: impl serde::Serialize) -> Response {
    let mut response = axum::Json(value).into_response();
    private(&mut response);
    response
}

/// Private answers are never cached.
pub(crate) fn private(response: &mut Response) {
    let headers = response.headers_mut();
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
}

/// The wallet of the request's session: a bearer token, or the page's cookie (then a request
/// that changes something must come from the daemon's own origin).
pub(crate) async fn session(
    app: &Arc<App>,
    headers: &HeaderMap,
    method: &Method,
) -> Answer<String> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_owned);
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| {
            pair.trim()
                .strip_prefix(&format!("{COOKIE}="))
                .map(str::to_owned)
        })
        .next();
    let (token, by_cookie) = match (bearer, cookie) {
        (Some(token), _) => (token, false),
        (None, Some(token)) => (token, true),
        (None, None) => {
            return Err(Failure::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "sign in first: GET /v1/auth/challenge, sign it with your wallet, POST /v1/auth/verify",
            ));
        }
    };
    if by_cookie && method != Method::GET {
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        if origin != Some(app.expect.origin.as_str()) {
            return Err(Failure::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "a cookie session may change things only from {} (this request's Origin is {})",
                    app.expect.origin,
                    origin.unwrap_or("absent")
                ),
            ));
        }
    }
    let app2 = Arc::clone(app);
    let hashed = sha256_hex(&token);
    blocking(move || app2.state().session(&hashed, now()))
        .await?
        .map_err(Failure::internal)?
        .ok_or_else(|| {
            Failure::new(
                StatusCode::UNAUTHORIZED,
                "unauthenticated",
                "the session is unknown or expired: sign in again",
            )
        })
}

/// The run at `address`, if the session's wallet owns it.
pub(crate) async fn owned(app: &Arc<App>, headers: &HeaderMap, address: &str) -> Answer<HostedRun> {
    let wallet = session(app, headers, &Method::GET).await?;
    // A run is named by its Run account's address: nothing else reaches the state or a path.
    if address.parse::<Pubkey>().is_err() {
        return Err(Failure::invalid(format!(
            "`{address}` is not a Run account address"
        )));
    }
    let app2 = Arc::clone(app);
    let name = address.to_owned();
    let run = blocking(move || app2.state().run(&name))
        .await?
        .map_err(Failure::internal)?
        .ok_or_else(|| {
            Failure::new(
                StatusCode::NOT_FOUND,
                "not_found",
                format!("this runner serves no run {address}"),
            )
        })?;
    if run.user != wallet {
        return Err(Failure::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "run {address} belongs to another wallet; sign in with the wallet that opened it"
            ),
        ));
    }
    Ok(run)
}
