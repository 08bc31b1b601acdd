//! Request bodies, read only within bounds. Whether a request may send a body is judged from its
//! headers before a byte of the body is read: its session (on a route that needs one), its
//! declared `Content-Length` against the route's limit, and a slot among the bodies being read
//! at once. The body is then counted as it arrives (with a `Content-Length` or chunked without
//! one; hyper ends a body at its declared length, so bytes past it are never body) and cut off
//! past the route's limit or its deadline. Every refusal is the API's JSON error and closes the
//! connection, so that nothing more of the body is read.
//!
//! Why in a layer: axum's `Bytes` extractor (and `DefaultBodyLimit`) buffers a body up to the
//! limit before the handler runs, so a check in the handler comes after the memory is spent
//! (an unauthenticated 20 MiB body was read whole before its `401`).

use std::fmt;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::rejection::BytesRejection;
use axum::extract::{DefaultBodyLimit, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::MethodRouter;
use futures_util::StreamExt as _;
use skilltrial_chain::Pubkey;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::{Answer, Failure, too_large};
use super::extract::session;
use crate::App;
use crate::tree::TreeLimits;

/// How many bodies the daemon reads at once, and how long one may take to arrive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyBounds {
    /// Trees and manifests (up to about 23 MiB each) read, and held while they are handled, at
    /// once: the memory uploads can take is this many times the largest one.
    pub large_at_once: usize,
    /// Sign-ins, registrations, checks and relays (16 KiB each) read at once.
    pub small_at_once: usize,
    /// The longest a large body may take to arrive, counted from its request's headers.
    pub large_within: Duration,
    /// The longest a small body may take to arrive.
    pub small_within: Duration,
}

impl Default for BodyBounds {
    fn default() -> Self {
        Self {
            large_at_once: 4,
            small_at_once: 256,
            // 23 MiB in a minute is 3 Mbit/s; the packs and bundles people upload are far
            // smaller (the released packs hold about 140 KB).
            large_within: Duration::from_secs(60),
            small_within: Duration::from_secs(10),
        }
    }
}

/// Who may send a body to a route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Who {
    Anyone,
    /// A session's wallet (and a cookie session only from the daemon's origin).
    Session,
}

/// A route's limit on its body, in bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Limit {
    Bytes(usize),
    /// Read from the request's URI (a tree's kind sets its limit); an error refuses it.
    Of(fn(&Uri) -> Answer<usize>),
}

/// The slots every route's bodies share, and the deadlines.
#[derive(Clone)]
pub(crate) struct Gates {
    app: Arc<App>,
    bounds: BodyBounds,
    large: Arc<Semaphore>,
    small: Arc<Semaphore>,
}

impl Gates {
    pub(crate) fn new(app: &Arc<App>, bounds: BodyBounds) -> Self {
        Self {
            app: Arc::clone(app),
            bounds,
            large: Arc::new(Semaphore::new(bounds.large_at_once)),
            small: Arc::new(Semaphore::new(bounds.small_at_once)),
        }
    }

    /// `route` taking a small body (a sign-in, a registration) of at most `limit` bytes.
    pub(crate) fn small(
        &self,
        who: Who,
        limit: usize,
        route: MethodRouter<Arc<App>>,
    ) -> MethodRouter<Arc<App>> {
        let within = self.bounds.small_within;
        self.gate(route, who, Limit::Bytes(limit), &self.small, within)
    }

    /// `route` taking an upload (a session's only).
    pub(crate) fn large(
        &self,
        limit: Limit,
        route: MethodRouter<Arc<App>>,
    ) -> MethodRouter<Arc<App>> {
        let within = self.bounds.large_within;
        self.gate(route, Who::Session, limit, &self.large, within)
    }

    fn gate(
        &self,
        route: MethodRouter<Arc<App>>,
        who: Who,
        limit: Limit,
        slots: &Arc<Semaphore>,
        within: Duration,
    ) -> MethodRouter<Arc<App>> {
        let gate = Gate {
            app: Arc::clone(&self.app),
            who,
            limit,
            slots: Arc::clone(slots),
            within,
        };
        // The gate counts the body: axum's own limit (2 MB by default) would refuse an upload
        // the gate allows, with its text instead of the API's JSON.
        route
            .layer(DefaultBodyLimit::disable())
            .layer(middleware::from_fn_with_state(gate, guard))
    }
}

/// One route's bounds.
#[derive(Clone)]
struct Gate {
    app: Arc<App>,
    who: Who,
    limit: Limit,
    slots: Arc<Semaphore>,
    within: Duration,
}

/// Why a body was cut off while it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cut {
    TooLarge,
    Slow,
}

impl fmt::Display for Cut {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::TooLarge => "the body is over its limit",
            Self::Slow => "the body did not arrive in time",
        })
    }
}

impl std::error::Error for Cut {}

type BoxError = Box<dyn std::error::Error + Send + Sync>;

async fn guard(State(gate): State<Gate>, request: Request, next: Next) -> Response {
    let deadline = tokio::time::Instant::now() + gate.within;
    let (parts, body) = request.into_parts();
    let (limit, permit) = match admit(&gate, &parts).await {
        Ok(admitted) => admitted,
        Err(failure) => return closing(failure.into_response()),
    };
    let cut = Arc::new(OnceLock::new());
    let body = bounded(body, limit, deadline, Arc::clone(&cut));
    let response = next.run(Request::from_parts(parts, body)).await;
    // Held until the handler is done with what it read.
    drop(permit);
    match cut.get() {
        None => response,
        Some(Cut::TooLarge) => closing(over(limit).into_response()),
        Some(Cut::Slow) => closing(
            Failure::new(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                format!(
                    "the body did not arrive within {} s: send it whole, at once",
                    gate.within.as_secs()
                ),
            )
            .into_response(),
        ),
    }
}

/// The checks made on the headers alone, in the order a caller can fix them: the session, the
/// declared length, then room to read it.
async fn admit(gate: &Gate, head: &Parts) -> Answer<(usize, OwnedSemaphorePermit)> {
    if gate.who == Who::Session {
        session(&gate.app, &head.headers, &head.method).await?;
    }
    let limit = match gate.limit {
        Limit::Bytes(limit) => limit,
        Limit::Of(of) => of(&head.uri)?,
    };
    let declared = head
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(declared) = declared
        && declared > u64::try_from(limit).unwrap_or(u64::MAX)
    {
        return Err(Failure::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!(
                "the body is {declared} bytes; this endpoint takes at most {limit} (nothing of it was read)"
            ),
        ));
    }
    let permit = Arc::clone(&gate.slots).try_acquire_owned().map_err(|_| {
        Failure::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "busy",
            "the runner is reading as many bodies of this size as it reads at once: try again in a few seconds (Retry-After)",
        )
    })?;
    Ok((limit, permit))
}

fn over(limit: usize) -> Failure {
    Failure::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!("the body is over this endpoint's limit of {limit} bytes; it was cut off there"),
    )
}

/// A refusal after which the connection closes: the rest of the body is never read.
fn closing(mut response: Response) -> Response {
    let busy = response.status() == StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    if busy {
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
    }
    response
}

/// `body`, ended with an error (and the reason in `cut`) at the first byte past `limit` or at
/// `deadline`, whichever comes first.
fn bounded(
    body: Body,
    limit: usize,
    deadline: tokio::time::Instant,
    cut: Arc<OnceLock<Cut>>,
) -> Body {
    let data = body.into_data_stream();
    let stream = futures_util::stream::unfold(Some((data, 0usize)), move |reading| {
        let cut = Arc::clone(&cut);
        async move {
            let (mut data, read) = reading?;
            let stop = |why: Cut| {
                let _ = cut.set(why);
                Some((Err(BoxError::from(why)), None))
            };
            match tokio::time::timeout_at(deadline, data.next()).await {
                Err(_) => stop(Cut::Slow),
                Ok(None) => None,
                Ok(Some(Err(e))) => Some((Err(BoxError::from(e)), None)),
                Ok(Some(Ok(chunk))) => {
                    let read = read.saturating_add(chunk.len());
                    if read > limit {
                        return stop(Cut::TooLarge);
                    }
                    Some((Ok::<Bytes, BoxError>(chunk), Some((data, read))))
                }
            }
        }
    });
    Body::from_stream(stream)
}

/// The largest body of a sign-in or a registration.
pub const MAX_SMALL_BODY: usize = 16 * 1024;
/// The largest manifest.
pub const MAX_MANIFEST_BODY: usize = 1024 * 1024;

/// The largest upload of one tree: a pack's or a bundle's, whichever limits allow more.
pub fn max_tree_body() -> usize {
    TreeLimits::pack()
        .max_body()
        .max(TreeLimits::bundle().max_body())
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
