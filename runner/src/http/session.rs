//! Sign-in With Solana: the challenge, its verification into a session (a bearer token and the
//! page's cookie), and whether a session holds.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use skilltrial_chain::Pubkey;

use super::error::{Answer, Failure};
use super::extract::{blocking, now, private, private_json, session, sha256_hex};
use super::intake::within_limit;
use crate::{App, api, siws};

/// How long a session lasts.
pub const SESSION_TTL_SECS: i64 = 12 * 60 * 60;
/// The session cookie's name.
pub const COOKIE: &str = "skilltrial_session";

fn random(bytes: usize) -> Answer<Vec<u8>> {
    let mut out = vec![0u8; bytes];
    getrandom::fill(&mut out).map_err(Failure::internal)?;
    Ok(out)
}

#[derive(Debug, Deserialize)]
pub(crate) struct ChallengeQuery {
    address: Option<String>,
}

pub(crate) async fn challenge(
    State(app): State<Arc<App>>,
    Query(q): Query<ChallengeQuery>,
) -> Answer<axum::Json<api::Challenge>> {
    let text = q
        .address
        .ok_or_else(|| Failure::invalid("give ?address=<your wallet's public key>"))?;
    let address: Pubkey = text
        .parse()
        .map_err(|_| Failure::invalid(format!("address `{text}` is not a Solana public key")))?;
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&random(16)?);
    let issued = now();
    // Nothing is stored: the nonce authenticates itself (siws::Challenges).
    let nonce = app.challenges.nonce(&address, &bytes, issued);
    let message = siws::message(&app.expect, &address, &nonce, issued);
    let expires_at = issued.saturating_add(siws::CHALLENGE_TTL_SECS);
    Ok(axum::Json(api::Challenge {
        message,
        nonce,
        expires_at,
    }))
}

pub(crate) async fn verify(
    State(app): State<Arc<App>>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let body = within_limit(body)?;
    let sign_in: api::SignIn = serde_json::from_slice(&body).map_err(|e| {
        Failure::invalid(format!(
            "the body is not a sign-in ({{message, signature, address}}): {e}"
        ))
    })?;
    let unauthenticated = |e: siws::SignInError| {
        Failure::new(StatusCode::UNAUTHORIZED, "unauthenticated", e.to_string())
    };
    let at = now();
    let verified = siws::verify(
        &app.expect,
        sign_in.message.as_bytes(),
        &sign_in.signature,
        &sign_in.address,
        at,
    )
    .map_err(unauthenticated)?;
    let token = format!("st1_{}", bs58::encode(random(32)?).into_string());
    let address = verified.address.to_string();
    let expires_at = at.saturating_add(SESSION_TTL_SECS);
    {
        let (app, nonce, owner, hashed) = (
            Arc::clone(&app),
            verified.nonce.clone(),
            address.clone(),
            sha256_hex(&token),
        );
        let nonce_expires = verified.issued_at.saturating_add(siws::CHALLENGE_TTL_SECS);
        if nonce_expires <= at
            || !app
                .challenges
                .issued(&verified.nonce, &verified.address, verified.issued_at)
        {
            return Err(unauthenticated(siws::SignInError::UnknownNonce(
                verified.nonce.clone(),
            )));
        }
        let spent = blocking(move || {
            let mut state = app.state();
            if !state.spend_nonce(&nonce, &owner, nonce_expires, at)? {
                return Ok(false);
            }
            state
                .create_session(&hashed, &owner, expires_at)
                .map(|()| true)
        })
        .await?
        .map_err(Failure::internal)?;
        if !spent {
            return Err(unauthenticated(siws::SignInError::NonceUsed(
                verified.nonce.clone(),
            )));
        }
    }
    let secure = if app.config.origin.scheme() == "https" {
        "; Secure"
    } else {
        ""
    };
    let cookie = format!(
        "{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age={SESSION_TTL_SECS}{secure}"
    );
    let mut response = axum::Json(api::Session {
        token,
        address,
        expires_at,
    })
    .into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_str(&cookie).map_err(Failure::internal)?,
    );
    private(&mut response);
    Ok(response)
}

/// The wallet of the request's session, or none: the page asks on load whether a sign-in still
/// holds (the cookie outlives a reload) without provoking a 401.
pub(crate) async fn signed_in(State(app): State<Arc<App>>, headers: HeaderMap) -> Answer<Response> {
    let address = match session(&app, &headers, &Method::GET).await {
        Ok(address) => Some(address),
        Err(f) if f.is_unauthenticated() => None,
        Err(f) => return Err(f),
    };
    Ok(private_json(api::SignedIn { address }))
}
