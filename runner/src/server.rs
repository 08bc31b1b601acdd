//! The HTTP API ([`crate::api`] lists the routes). Every error is JSON `{error, code}` with a
//! status that says whose move it is: 400/413/422 the request, 408 a body too slow, 401 sign
//! in, 403 another wallet's, 404 no such thing, 409 not yet (or, for a check, already done),
//! 503 the chain did not answer (or, `busy`, the runner reads as many uploads as it reads at
//! once). Bodies are read only within [`crate::intake`]'s bounds.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use futures_util::Stream;
use serde::Deserialize;
use sha2::{Digest as _, Sha256};
use skilltrial_chain::Pubkey;
use skilltrial_core::bundle;
use skilltrial_core::manifest::Manifest;
use solana_signer::Signer;

use crate::api::{self, ApiError};
use crate::intake::{BodyBounds, Gates, Limit, Who};
use crate::state::{Event, HostedRun};
use crate::tree::{self, TreeLimits, TreeRefusal};
use crate::{App, log, siws, worker};

/// How long a session lasts.
pub const SESSION_TTL_SECS: i64 = 12 * 60 * 60;
/// The session cookie's name.
pub const COOKIE: &str = "skilltrial_session";
/// The largest body of a sign-in or a registration.
pub const MAX_SMALL_BODY: usize = 16 * 1024;
/// The largest manifest.
pub const MAX_MANIFEST_BODY: usize = 1024 * 1024;

/// An error answer.
#[derive(Debug)]
pub struct Failure {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl Failure {
    pub(crate) fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }
    /// Whether it is "sign in first" (no session, or an expired one).
    pub(crate) fn is_unauthenticated(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED
    }
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "invalid", message)
    }
    pub(crate) fn internal(e: impl std::fmt::Display) -> Self {
        log(&format!("internal error: {e}"));
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "the runner could not do this (its log says why); try again",
        )
    }
}

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        let body = ApiError {
            error: self.message,
            code: self.code.to_owned(),
        };
        (self.status, axum::Json(body)).into_response()
    }
}

pub(crate) type Answer<T> = Result<T, Failure>;

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

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn random(bytes: usize) -> Answer<Vec<u8>> {
    let mut out = vec![0u8; bytes];
    getrandom::fill(&mut out).map_err(Failure::internal)?;
    Ok(out)
}

fn sha256_hex(text: &str) -> String {
    Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The router, with its state and the default [`BodyBounds`].
pub fn router(app: Arc<App>) -> Router {
    router_with(app, BodyBounds::default())
}

/// The router, reading bodies within `bounds`. Every route that takes a body is gated
/// ([`crate::intake`]): its session and declared length are checked before a byte is read.
pub fn router_with(app: Arc<App>, bounds: BodyBounds) -> Router {
    let gates = Gates::new(&app, bounds);
    Router::new()
        .route("/v1/info", get(info))
        .route("/v1/auth/challenge", get(challenge))
        .route(
            "/v1/auth/verify",
            gates.small(Who::Anyone, MAX_SMALL_BODY, post(verify)),
        )
        .route(
            "/v1/trees",
            gates.large(Limit::Of(tree_body_limit), post(upload_tree)),
        )
        .route(
            "/v1/manifests",
            gates.large(Limit::Bytes(MAX_MANIFEST_BODY), post(upload_manifest)),
        )
        .route(
            "/v1/runs",
            get(my_runs).merge(gates.small(Who::Session, MAX_SMALL_BODY, post(register))),
        )
        .route(
            "/v1/runs/check",
            gates.small(Who::Session, MAX_SMALL_BODY, post(check)),
        )
        .route("/v1/runs/{run}", get(run_view))
        .route("/v1/runs/{run}/events", get(events))
        .route("/v1/runs/{run}/report.json", get(report_json))
        .route("/v1/runs/{run}/report.html", get(report_html))
        .merge(crate::page::routes(&gates))
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

/// The largest upload of one tree: a pack's or a bundle's, whichever limits allow more.
pub fn max_tree_body() -> usize {
    TreeLimits::pack()
        .max_body()
        .max(TreeLimits::bundle().max_body())
}

/// A tree's limits, by the kind its upload names.
fn tree_limits(kind: &str) -> Answer<TreeLimits> {
    match kind {
        "bundle" => Ok(TreeLimits::bundle()),
        "pack" => Ok(TreeLimits::pack()),
        other => Err(Failure::invalid(format!(
            "?kind=`{other}`: upload a `bundle` or a `pack`"
        ))),
    }
}

/// The largest body of the tree upload at `uri`: its kind's, known before the body is read.
fn tree_body_limit(uri: &axum::http::Uri) -> Answer<usize> {
    let q = Query::<TreeQuery>::try_from_uri(uri)
        .map_err(|e| Failure::invalid(format!("the query is not ?kind=..&id=..: {e}")))?;
    tree_limits(q.kind.as_deref().unwrap_or_default()).map(|l| l.max_body())
}

fn too_large(message: String) -> Failure {
    Failure::new(StatusCode::PAYLOAD_TOO_LARGE, "too_large", message)
}

/// The body, or the error JSON for one the route's limit refused (axum's own answer is text).
pub(crate) fn within_limit(body: Result<Bytes, BytesRejection>) -> Answer<Bytes> {
    body.map_err(|rejection| {
        let status = rejection.status();
        if status == StatusCode::PAYLOAD_TOO_LARGE {
            too_large(format!(
                "the body is over this endpoint's limit ({} bytes for a sign-in or a registration, {MAX_MANIFEST_BODY} for a manifest, {} for a tree)",
                MAX_SMALL_BODY,
                max_tree_body()
            ))
        } else {
            Failure::new(
                status,
                "invalid",
                format!("the body could not be read: {}", rejection.body_text()),
            )
        }
    })
}

async fn info(State(app): State<Arc<App>>) -> Answer<axum::Json<api::Info>> {
    let ids = {
        let app = Arc::clone(&app);
        blocking(move || app.profile_ids()).await?
    };
    Ok(axum::Json(api::Info {
        service: "skilltrial-runner".to_owned(),
        version: env!("CARGO_PKG_VERSION").to_owned(),
        runner: app.runner.pubkey().to_string(),
        origin: app.expect.origin.clone(),
        chain_id: app.expect.chain_id.clone(),
        program: skilltrial_chain::PROGRAM_ID.to_string(),
        profiles: ids,
        sol_usd: app.config.rate.info(),
        buyback: app.buyback_info(),
    }))
}

#[derive(Debug, Deserialize)]
struct ChallengeQuery {
    address: Option<String>,
}

async fn challenge(
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

async fn verify(
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

#[derive(Debug, Deserialize)]
struct TreeQuery {
    kind: Option<String>,
    id: Option<String>,
}

async fn upload_tree(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Query(q): Query<TreeQuery>,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let body = within_limit(body)?;
    let wallet = session(&app, &headers, &Method::POST).await?;
    let kind = q.kind.unwrap_or_default();
    let id = q.id;
    let limits = tree_limits(&kind)?;
    if body.len() > limits.max_body() {
        return Err(too_large(format!(
            "the body is {} bytes; a {} within `skilltrial validate`'s limits ({} files, {} bytes) takes at most {}",
            body.len(),
            limits.kind,
            limits.max_files,
            limits.max_total_bytes,
            limits.max_body()
        )));
    }
    // Read and decoded off the async threads, refused at the first entry over a limit.
    let files = blocking(move || tree::parse(&body, &limits))
        .await?
        .map_err(|refusal| match refusal {
            TreeRefusal::TooLarge(why) => too_large(why),
            TreeRefusal::Invalid(why) => Failure::invalid(why),
        })?;
    let app2 = Arc::clone(&app);
    let stored = blocking(move || -> Answer<api::Stored> {
        let count = files.len();
        match kind.as_str() {
            "bundle" => {
                let b = bundle::from_files(
                    files.clone(),
                    bundle::SourceKind::Folder,
                    &bundle::Limits::default(),
                )
                .map_err(|errors| {
                    Failure::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid",
                        format!(
                            "the bundle is rejected: {}",
                            errors
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join("; ")
                        ),
                    )
                })?;
                let digest = app2
                    .store
                    .put_tree(
                        b.files
                            .iter()
                            .map(|f| (f.path.as_str(), f.bytes.as_slice())),
                    )
                    .map_err(Failure::internal)?;
                if digest != b.digest {
                    return Err(Failure::internal(format!(
                        "bundle digest {} stored as {digest}",
                        b.digest
                    )));
                }
                app2.state()
                    .hold(&wallet, &digest.hex())
                    .map_err(Failure::internal)?;
                Ok(api::Stored {
                    kind,
                    digest: digest.hex(),
                    name: Some(b.name),
                    version: b.version,
                    files: count,
                })
            }
            "pack" => {
                let id = id.ok_or_else(|| {
                    Failure::invalid("a pack upload names its id: ?kind=pack&id=<name@version>")
                })?;
                let map = files.into_iter().collect();
                let pack = skilltrial_core::pack::from_files(&id, map).map_err(|e| {
                    Failure::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "invalid",
                        format!("pack {id}: {e}"),
                    )
                })?;
                let digest = app2
                    .store
                    .put_tree(pack.files().iter().map(|(p, b)| (p.as_str(), b.as_slice())))
                    .map_err(Failure::internal)?;
                if digest != pack.hash {
                    return Err(Failure::internal(format!(
                        "pack {id} stored under another digest"
                    )));
                }
                // A pack is this wallet's to run, as a bundle is: its tasks and golden records
                // are the uploader's, and a hash alone must not run them.
                app2.state()
                    .hold(&wallet, &digest.hex())
                    .map_err(Failure::internal)?;
                Ok(api::Stored {
                    kind,
                    digest: digest.hex(),
                    name: Some(id),
                    version: None,
                    files: count,
                })
            }
            other => Err(Failure::invalid(format!(
                "?kind=`{other}`: upload a `bundle` or a `pack`"
            ))),
        }
    })
    .await??;
    Ok(private_json(stored))
}

async fn upload_manifest(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let body = within_limit(body)?;
    let wallet = session(&app, &headers, &Method::POST).await?;
    let manifest: Manifest = serde_json::from_slice(&body)
        .map_err(|e| Failure::invalid(format!("the body is not a manifest: {e}")))?;
    let canonical = manifest
        .canonical()
        .map_err(|e| Failure::invalid(format!("the manifest cannot be hashed: {e}")))?;
    let app2 = Arc::clone(&app);
    let terms = blocking(move || -> Answer<api::Terms> {
        // Its pack and bundles are this wallet's to run only if this wallet uploaded them: a
        // manifest names them by digest, and a digest alone must not run another wallet's
        // skill or tasks.
        let held = |digest: &str| {
            let hex = skilltrial_engine::store::parse_hex(digest)
                .map_or_else(|| digest.to_owned(), |d| d.hex());
            app2.state()
                .holds(&wallet, &hex)
                .map_err(Failure::internal)
        };
        for arm in &manifest.arms {
            if let Some(b) = &arm.bundle
                && !held(&b.digest)?
            {
                return Err(Failure::new(
                    StatusCode::FORBIDDEN,
                    "forbidden",
                    format!(
                        "the manifest's bundle `{}` ({}) was not uploaded by this wallet: upload it first (POST /v1/trees?kind=bundle; `submit` does)",
                        b.name, b.digest
                    ),
                ));
            }
        }
        if !held(&manifest.pack.hash)? {
            return Err(Failure::new(
                StatusCode::FORBIDDEN,
                "forbidden",
                format!(
                    "the manifest's pack `{}` ({}) was not uploaded by this wallet: upload it first (POST /v1/trees?kind=pack&id={}; `submit` and the page do)",
                    manifest.pack.id, manifest.pack.hash, manifest.pack.id
                ),
            ));
        }
        let hash = app2
            .store
            .put(canonical.as_bytes())
            .map_err(Failure::internal)?;
        app2.state()
            .hold(&wallet, &hash.hex())
            .map_err(Failure::internal)?;
        let (inputs, terms) = worker::admit_manifest(&app2, &hash.hex(), worker::Admission::Before)
            .map_err(|e| Failure::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", e))?;
        let config = app2
            .chain()
            .config()
            .map_err(|e| {
                Failure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    e.to_string(),
                )
            })?
            .ok_or_else(|| {
                Failure::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "unavailable",
                    "the program has no config on this cluster",
                )
            })?;
        let escrow = terms
            .escrow(config.fee_per_trial)
            .ok_or_else(|| Failure::invalid("the escrow overflows u64 lamports"))?;
        Ok(api::Terms {
            manifest: hash.hex(),
            trials: terms.planned_trials,
            per_request_cap_lamports: terms.per_request_cap.0,
            fee_per_trial_lamports: config.fee_per_trial,
            escrow_lamports: escrow,
            runner: app2.runner.pubkey().to_string(),
            min_deadline_secs: worker::min_deadline_secs(&inputs.manifest),
        })
    })
    .await??;
    Ok(private_json(terms))
}

fn view(app: &App, run: &HostedRun) -> Result<api::RunView, crate::state::StateError> {
    let state = app.state();
    let batches = state.batches(&run.address)?;
    let progress = state
        .events_after(&run.address, 0)?
        .into_iter()
        .rev()
        .find(|e| e.kind == "progress")
        .map(|e| e.data);
    Ok(api::RunView {
        run: run.address.clone(),
        user: run.user.clone(),
        manifest: run.manifest.clone(),
        run_id: run.run_id,
        deadline: run.deadline,
        phase: run.phase.as_str().to_owned(),
        detail: run.detail.clone(),
        progress,
        settled_trials: batches
            .iter()
            .filter(|b| b.signature.is_some())
            .map(|b| b.evidence.len())
            .sum(),
        settle_batches: batches.iter().filter(|b| b.signature.is_some()).count(),
        report_hash: run.report_hash.clone(),
        finalize_signature: run.finalize_signature.clone(),
    })
}

/// A session's JSON request about a run: its wallet and the body, read as `shape` says.
pub(crate) async fn posted<T: serde::de::DeserializeOwned>(
    app: &Arc<App>,
    headers: &HeaderMap,
    body: Result<Bytes, BytesRejection>,
    shape: &str,
) -> Answer<(Pubkey, T)> {
    let body = within_limit(body)?;
    let wallet = session(app, headers, &Method::POST).await?;
    let ask = serde_json::from_slice(&body)
        .map_err(|e| Failure::invalid(format!("the body is not {shape}: {e}")))?;
    let user: Pubkey = wallet.parse().map_err(Failure::internal)?;
    Ok((user, ask))
}

async fn register(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let (user, ask): (_, api::Register) =
        posted(&app, &headers, body, "{\"manifest\": <hash>}").await?;
    let app2 = Arc::clone(&app);
    let answer = blocking(move || -> Answer<api::RunView> {
        if let (_, Some(existing)) = registered(&app2, &user, &ask.manifest)? {
            return view(&app2, &existing).map_err(Failure::internal);
        }
        uploaded_by(&app2, &user, &ask.manifest)?;
        let run = worker::authorise(&app2, &user, &ask.manifest).map_err(unauthorised)?;
        // The insert decides, not the read above: of two registrations racing, one inserts and
        // the other answers the run as registered, with no second `phase` event.
        let inserted = app2.state().register_run(&run).map_err(Failure::internal)?;
        if !inserted {
            let stored = app2
                .state()
                .run(&run.address)
                .map_err(Failure::internal)?
                .ok_or_else(|| Failure::internal("the run registered meanwhile is gone"))?;
            return view(&app2, &stored).map_err(Failure::internal);
        }
        app2.event(
            &run.address,
            "phase",
            &serde_json::json!({"phase": "executing", "detail": null}),
        );
        app2.dispatch_runs();
        view(&app2, &run).map_err(Failure::internal)
    })
    .await??;
    let mut response = (StatusCode::CREATED, axum::Json(answer)).into_response();
    private(&mut response);
    Ok(response)
}

fn unauthorised(e: worker::Unauthorised) -> Failure {
    match e {
        worker::Unauthorised::Inadmissible(why) => {
            Failure::new(StatusCode::UNPROCESSABLE_ENTITY, "invalid", why)
        }
        worker::Unauthorised::Refused(why) => Failure::new(StatusCode::FORBIDDEN, "refused", why),
        worker::Unauthorised::Unavailable(why) => {
            Failure::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", why)
        }
    }
}

/// A stored manifest is run only for a wallet that uploaded it (`403` otherwise); one not stored
/// is left to the admission's own words (`422`, upload it first).
fn uploaded_by(app: &App, user: &Pubkey, hex: &str) -> Answer<()> {
    let Some(digest) = skilltrial_engine::store::parse_hex(hex) else {
        return Ok(());
    };
    if app.store.contains(&digest)
        && !app
            .state()
            .holds(&user.to_string(), &digest.hex())
            .map_err(Failure::internal)?
    {
        return Err(Failure::new(
            StatusCode::FORBIDDEN,
            "forbidden",
            format!(
                "manifest {hex} was not uploaded by this wallet ({user}): a runner runs a manifest only for a wallet that uploaded it and its bundles (`submit` does)"
            ),
        ));
    }
    Ok(())
}

/// The Run account address of `user`'s run of the manifest `hex`, and the run if it is
/// registered. Read, and the state's lock released, before `view` takes it again: a second
/// registration of the same run (a re-run `submit`) must answer, not deadlock.
fn registered(app: &App, user: &Pubkey, hex: &str) -> Answer<(Pubkey, Option<HostedRun>)> {
    let hash = skilltrial_engine::store::parse_hex(hex)
        .ok_or_else(|| Failure::invalid(format!("`{hex}` is not a manifest hash")))?;
    let address = skilltrial_chain::pda::run(user, &hash.0);
    let existing = app
        .state()
        .run(&address.to_string())
        .map_err(Failure::internal)?;
    Ok((address, existing))
}

/// Before `submit` escrows: would the daemon register this run? Every check registration makes
/// but the Run account's (which does not exist yet), so that a refusal costs the user nothing.
async fn check(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let (user, ask): (_, api::Check) = posted(
        &app,
        &headers,
        body,
        "{\"manifest\": <hash>, \"deadline_secs\": <seconds>}",
    )
    .await?;
    let app2 = Arc::clone(&app);
    let answer = blocking(move || -> Answer<api::Checked> {
        let (address, existing) = registered(&app2, &user, &ask.manifest)?;
        if let Some(existing) = existing {
            if existing.phase.is_final() {
                return Err(Failure::new(
                    StatusCode::CONFLICT,
                    "conflict",
                    format!(
                        "this wallet's run {address} of manifest {} is already {} on this runner, which runs a manifest once per wallet: do not escrow it again; its report: `skilltrial report {address} --remote`; to run again, plan again (another --seed is another manifest)",
                        ask.manifest,
                        existing.phase.as_str()
                    ),
                ));
            }
            return Ok(api::Checked {
                run: address.to_string(),
                manifest: ask.manifest,
                registered: Some(view(&app2, &existing).map_err(Failure::internal)?),
                escrowed: true,
                min_deadline_secs: 0,
            });
        }
        uploaded_by(&app2, &user, &ask.manifest)?;
        let (inputs, _) = worker::preflight(
            &app2,
            &ask.manifest,
            worker::Admission::Before,
            Some(ask.deadline_secs),
        )
        .map_err(unauthorised)?;
        // An escrow already on-chain (an earlier approval that landed but never registered):
        // the client registers it instead of escrowing again.
        let escrowed = app2
            .chain()
            .run(&address)
            .map_err(|e| Failure::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", e.to_string()))?
            .is_some();
        Ok(api::Checked {
            run: address.to_string(),
            manifest: ask.manifest,
            registered: None,
            escrowed,
            min_deadline_secs: worker::min_deadline_secs(&inputs.manifest)
                .saturating_add(worker::CHECK_LANDING_SECS),
        })
    })
    .await??;
    Ok(private_json(answer))
}

async fn my_runs(State(app): State<Arc<App>>, headers: HeaderMap) -> Answer<Response> {
    let wallet = session(&app, &headers, &Method::GET).await?;
    let app2 = Arc::clone(&app);
    let views = blocking(
        move || -> Result<Vec<api::RunView>, crate::state::StateError> {
            let runs = app2.state().runs_of(&wallet)?;
            runs.iter().map(|r| view(&app2, r)).collect()
        },
    )
    .await?
    .map_err(Failure::internal)?;
    Ok(private_json(views))
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

async fn run_view(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
) -> Answer<Response> {
    let run = owned(&app, &headers, &address).await?;
    let app2 = Arc::clone(&app);
    let view = blocking(move || view(&app2, &run))
        .await?
        .map_err(Failure::internal)?;
    Ok(private_json(view))
}

async fn report_file(
    app: &Arc<App>,
    headers: &HeaderMap,
    address: &str,
    file: &'static str,
    content_type: &'static str,
) -> Answer<Response> {
    let run = owned(app, headers, address).await?;
    if !run.phase.is_final() || run.report_hash.is_none() {
        return Err(Failure::new(
            StatusCode::CONFLICT,
            "not_yet",
            format!(
                "run {address} has no report yet (it is {}): follow it with `skilltrial status --remote --follow`",
                run.phase.as_str()
            ),
        ));
    }
    let path = worker::run_dir(&app.config.state_dir, address).join(file);
    let bytes = blocking(move || std::fs::read(path))
        .await?
        .map_err(Failure::internal)?;
    let mut response = ([(header::CONTENT_TYPE, content_type)], bytes).into_response();
    private(&mut response);
    Ok(response)
}

async fn report_json(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
) -> Answer<Response> {
    report_file(&app, &headers, &address, "report.json", "application/json").await
}

async fn report_html(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
) -> Answer<Response> {
    report_file(
        &app,
        &headers,
        &address,
        "report.html",
        "text/html; charset=utf-8",
    )
    .await
}

struct Follow {
    app: Arc<App>,
    run: String,
    queue: VecDeque<Event>,
    rx: tokio::sync::broadcast::Receiver<Event>,
    closing: tokio::sync::watch::Receiver<bool>,
    last: u64,
    done: bool,
}

fn sse(event: &Event) -> SseEvent {
    SseEvent::default()
        .id(event.seq.to_string())
        .event(event.kind.clone())
        .data(serde_json::json!({"at": event.at, "data": event.data}).to_string())
}

/// The last event of a stream the daemon's stop ends: not recorded (the run has not changed),
/// so it has no id, and a follower resumes after the last event it did get.
fn stopping() -> SseEvent {
    SseEvent::default().event("notice").data(
        serde_json::json!({
            "at": now(),
            "data": {
                "message": "the runner is stopping; the run resumes where it stopped once the runner is back (`status --remote --follow` reconnects by itself, for two minutes)",
                "stopping": true,
            }
        })
        .to_string(),
    )
}

fn ends_stream(event: &Event) -> bool {
    event.kind == "phase"
        && matches!(
            event.data.get("phase").and_then(|p| p.as_str()),
            Some("finalized" | "failed")
        )
}

async fn events(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
) -> Answer<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>> {
    let run = owned(&app, &headers, &address).await?;
    let after = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(0);
    // Subscribed before the replay is read: nothing falls between the two.
    let rx = app.subscribe();
    let closing = app.closing();
    let app2 = Arc::clone(&app);
    let name = run.address.clone();
    let replay = blocking(move || app2.state().events_after(&name, after))
        .await?
        .map_err(Failure::internal)?;
    let follow = Follow {
        app: Arc::clone(&app),
        run: run.address.clone(),
        queue: replay.into(),
        rx,
        closing,
        last: after,
        // A run already over replays its events and ends.
        done: false,
    };
    let over_at_start = run.phase.is_final();
    let stream = futures_util::stream::unfold(follow, move |mut f| async move {
        loop {
            if f.done {
                return None;
            }
            if let Some(event) = f.queue.pop_front() {
                if event.seq <= f.last {
                    continue;
                }
                f.last = event.seq;
                f.done = ends_stream(&event);
                return Some((Ok(sse(&event)), f));
            }
            if over_at_start {
                return None;
            }
            let received = tokio::select! {
                received = f.rx.recv() => Some(received),
                _ = f.closing.wait_for(|closing| *closing) => None,
            };
            let Some(received) = received else {
                // The daemon is stopping: an open stream would hold its graceful shutdown
                // forever (a follower could keep an operator's daemon up). Say so, and end.
                f.done = true;
                return Some((Ok(stopping()), f));
            };
            match received {
                Ok(event) if event.run == f.run => f.queue.push_back(event),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    // Too far behind the live channel: read the rest from the state.
                    let (app, run, last) = (Arc::clone(&f.app), f.run.clone(), f.last);
                    match blocking(move || app.state().events_after(&run, last)).await {
                        Ok(Ok(events)) => f.queue.extend(events),
                        _ => return None,
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    Ok(Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15))))
}

/// What the daemon prints when it is ready.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Ready {
    pub origin: String,
    pub listening: String,
    pub runner: String,
    pub chain_id: String,
    pub state_dir: String,
}

/// Serves until Ctrl-C or SIGTERM: binds, calls `ready`, resumes every run with work left, and
/// on a stop lets each run finish the request in flight (journaled) before returning.
/// Connections are served within [`crate::connections`]' bounds.
pub fn serve(app: Arc<App>, ready: impl FnOnce(&Ready)) -> Result<(), String> {
    serve_until(app, ready, shutdown_signal())
}

/// [`serve`], stopping when `stop` completes instead of on a signal.
pub fn serve_until(
    app: Arc<App>,
    ready: impl FnOnce(&Ready),
    stop: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(app.config.bind)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", app.config.bind))?;
        let local = listener
            .local_addr()
            .map_err(|e| format!("cannot read the listening address: {e}"))?;
        ready(&Ready {
            origin: app.expect.origin.clone(),
            listening: local.to_string(),
            runner: app.runner.pubkey().to_string(),
            chain_id: app.expect.chain_id.clone(),
            state_dir: app.config.state_dir.display().to_string(),
        });
        // The supervisor: runs with work left start (again after a restart), every second.
        let supervisor = {
            let app = Arc::clone(&app);
            std::thread::Builder::new()
                .name("supervisor".to_owned())
                .spawn(move || {
                    while !app.stopping() {
                        app.dispatch_runs();
                        std::thread::sleep(Duration::from_millis(500));
                    }
                })
                .map_err(|e| format!("cannot start the supervisor: {e}"))?
        };
        app.spawn_buybacks();
        let stopping = Arc::clone(&app);
        crate::connections::serve_connections(
            listener,
            router(Arc::clone(&app)),
            crate::connections::ConnectionLimits::default(),
            async move {
                stop.await;
                log("stopping: each run finishes its request in flight; event streams end");
                stopping.begin_stop();
            },
        )
        .await;
        let _ = supervisor.join();
        Ok::<(), String>(())
    })?;
    // Runs stop after their request in flight; wait for them (bounded by the request timeout).
    let started = std::time::Instant::now();
    while app.active_runs() > 0 && started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(())
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = ctrl_c => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = ctrl_c.await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}
