//! The daemon's accept loop: HTTP/1.1 connections served within bounds, so that a client that
//! opens connections and never finishes a request (a slowloris: headers one byte at a time, or
//! idle keep-alive connections) cannot hold the daemon's sockets and memory for ever.
//!
//! - **At most [`MAX_CONNECTIONS`] at once.** A slot is taken *before* a connection is accepted:
//!   past the bound, connections wait in the kernel's listen queue (never read, never given
//!   memory) and are served in order as slots free. Whatever one connection holds is bounded
//!   ([`MAX_CONNECTION_BUFFER`], the bodies by [`super::intake`]), so this bounds the memory of
//!   connections as a whole; and it keeps the daemon's file descriptors under the usual soft
//!   limit of 1024, with room for the runs' journals and the chain's connections.
//! - **A request's head must arrive within [`HEADER_READ_TIMEOUT`]**, counted from when the
//!   connection waits for it: from the accept for the first request, from the end of the previous
//!   answer for the next one. So the same bound closes an idle keep-alive connection. A body has
//!   its own deadline ([`super::intake::BodyBounds`]).
//! - **A head is at most [`MAX_HEAD_BYTES`]** (`431` past it), and a connection's buffers at most
//!   [`MAX_CONNECTION_BUFFER`] each.
//!
//! On a stop no connection is accepted any more; each open one finishes the request it is
//! answering (idle ones close), and those still open after [`SHUTDOWN_GRACE`] are dropped.

use std::future::Future;
use std::io;
use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::{Semaphore, watch};

/// Connections served at once. Each holds at most two buffers of [`MAX_CONNECTION_BUFFER`]
/// (reading and writing) besides the bodies [`super::intake`] bounds, so all of them together
/// hold at most 32 MiB of buffers; and 256 descriptors stay well under the usual soft limit of
/// 1024 open files. Legitimate use is far smaller: a CLI or a page holds one or two connections
/// per user, and one more per followed run (its event stream).
pub const MAX_CONNECTIONS: usize = 256;

/// How long a request's head may take to arrive; also how long a keep-alive connection may stay
/// idle between two requests. Any client sends a head in one go (it is at most a few KiB), so
/// 10 s is generous even over a slow link, and a slot held by a client that sends nothing is
/// freed soon (browsers open a new connection when an idle one was closed).
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest request head (request line and headers): `431` past it. The daemon's own clients
/// send well under 2 KiB; a browser's cookies for the daemon's host fit many times over.
pub const MAX_HEAD_BYTES: usize = 32 * 1024;

/// The largest buffer a connection reads into or queues its answer in (hyper's default is about
/// 400 KiB). Bodies stream through it in pieces of at most this size.
pub const MAX_CONNECTION_BUFFER: usize = 64 * 1024;

/// How long a stop waits for the connections still open (answers in progress) before dropping
/// them. Event streams end at once on a stop ([`crate::App::begin_stop`]).
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(30);

/// The most slots [`ConnectionLimits::at_once`] may ask for (far past any file-descriptor limit).
const MOST_SLOTS: u32 = 1 << 20;

/// How long the loop waits after an accept error that is not one connection's (out of file
/// descriptors): trying again at once would spin.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_secs(1);

/// The bounds [`serve_connections`] holds connections to: the constants above by default; tests
/// lower them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections served at once ([`MAX_CONNECTIONS`]).
    pub at_once: usize,
    /// How long a request's head may take, and a keep-alive connection stay idle
    /// ([`HEADER_READ_TIMEOUT`]).
    pub head_within: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            at_once: MAX_CONNECTIONS,
            head_within: HEADER_READ_TIMEOUT,
        }
    }
}

/// Serves `router` on `listener` within `limits` until `stop` completes, then lets the open
/// connections finish their answers (at most [`SHUTDOWN_GRACE`]) and returns.
pub async fn serve_connections(
    listener: TcpListener,
    router: Router,
    limits: ConnectionLimits,
    stop: impl Future<Output = ()> + Send,
) {
    // At least one slot (a daemon that can serve no connection would wait for ever), and no
    // more than a semaphore counts.
    let at_once = u32::try_from(limits.at_once)
        .unwrap_or(u32::MAX)
        .clamp(1, MOST_SLOTS);
    let slots = Arc::new(Semaphore::new(usize::try_from(at_once).unwrap_or(1)));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.head_within)
        .max_header_size(MAX_HEAD_BYTES)
        .max_buf_size(MAX_CONNECTION_BUFFER);
    let http = Arc::new(http);
    // Becomes `true` on a stop: each connection then finishes its answer and closes.
    let (closing_tx, closing_rx) = watch::channel(false);
    let mut stop = pin!(stop);
    loop {
        // The slot first: past the bound, connections wait in the listen queue, unread.
        let slot = tokio::select! {
            slot = Arc::clone(&slots).acquire_owned() => slot,
            () = &mut stop => break,
        };
        let Ok(slot) = slot else {
            break; // the semaphore is never closed
        };
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let stream = match accepted {
            Ok((stream, _peer)) => stream,
            Err(e) => {
                if !is_one_connections(&e) {
                    tracing::error!(
                        "cannot accept a connection ({e}): trying again in {} s",
                        ACCEPT_ERROR_PAUSE.as_secs()
                    );
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                }
                continue;
            }
        };
        let (http, service) = (Arc::clone(&http), TowerToHyperService::new(router.clone()));
        let mut closing = closing_rx.clone();
        tokio::spawn(async move {
            // Held while the connection lives: its end frees the slot.
            let _slot = slot;
            let mut connection = pin!(http.serve_connection(TokioIo::new(stream), service));
            let closing = async move {
                let _ = closing.wait_for(|closing| *closing).await;
            };
            tokio::select! {
                // A connection's error (a client gone, a head too slow) is its own end, not the
                // daemon's: nothing to report.
                _ = connection.as_mut() => {}
                () = closing => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    drop(listener);
    closing_tx.send_replace(true);
    // Every connection holds a slot until it ends: all of them back means none is open.
    let drained = tokio::time::timeout(SHUTDOWN_GRACE, slots.acquire_many(at_once)).await;
    if drained.is_err() {
        tracing::info!(
            "stopping: connections still open after {} s are dropped",
            SHUTDOWN_GRACE.as_secs()
        );
    }
}

/// Whether an accept error is about the one connection (it went before it was accepted), so
/// that the next accept may follow at once.
fn is_one_connections(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ConnectionRefused
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::ConnectionReset
    )
}
