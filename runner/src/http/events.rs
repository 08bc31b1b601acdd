//! A run's server-sent events (`GET /v1/runs/{run}/events`): its recorded events after
//! `Last-Event-ID`, then the live ones, until the run is over or the daemon stops.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::Stream;

use super::error::{Answer, Failure};
use super::extract::{blocking, now, owned};
use crate::api::{Event, Framed, Notice};
use crate::{App, Recorded};

struct Follow {
    app: Arc<App>,
    run: String,
    queue: VecDeque<Recorded>,
    rx: tokio::sync::broadcast::Receiver<Recorded>,
    /// On PostgreSQL: runs with new events, appended by any worker.
    hints: Option<tokio::sync::broadcast::Receiver<String>>,
    closing: tokio::sync::watch::Receiver<bool>,
    last: u64,
    done: bool,
}

/// On PostgreSQL, how long a follower waits for a hint before it reads the run's events anyway.
const POLL_WITHOUT_HINT: Duration = Duration::from_secs(2);

/// The frame's `data:` line ([`Framed`]).
fn framed(at: i64, event: &Event) -> String {
    let frame = Framed {
        at,
        data: event.data(),
    };
    // A number and a JSON value always serialize.
    serde_json::to_string(&frame).unwrap_or_default()
}

fn sse(recorded: &Recorded) -> SseEvent {
    SseEvent::default()
        .id(recorded.seq.to_string())
        .event(recorded.event.kind())
        .data(framed(recorded.at, &recorded.event))
}

/// The last event of a stream the daemon's stop ends: not recorded (the run has not changed),
/// so it has no id, and a follower resumes after the last event it did get.
fn stopping() -> SseEvent {
    let notice = Event::Notice(Notice {
        stopping: Some(true),
        ..Notice::says(
            "the runner is stopping; the run resumes where it stopped once the runner is back (`status --remote --follow` reconnects by itself, for two minutes)",
        )
    });
    SseEvent::default()
        .event(notice.kind())
        .data(framed(now(), &notice))
}

pub(crate) async fn events(
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
    let hints = app.hints();
    let closing = app.closing();
    let app2 = Arc::clone(&app);
    let name = run.address.clone();
    let replay = blocking(move || app2.events_after(&name, after))
        .await?
        .map_err(Failure::internal)?;
    let follow = Follow {
        app: Arc::clone(&app),
        run: run.address.clone(),
        queue: replay.into(),
        rx,
        hints,
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
                f.done = event.event.ends_run();
                return Some((Ok(sse(&event)), f));
            }
            if over_at_start {
                return None;
            }
            // On PostgreSQL the run may execute on another worker: its events are read from the
            // database on a hint that it has new ones, and every few seconds in case a hint was
            // lost with a connection.
            let reread = async {
                match f.hints.as_mut() {
                    Some(hints) => loop {
                        tokio::select! {
                            hint = hints.recv() => match hint {
                                Ok(run) if run == f.run || run == "*" => return,
                                Ok(_) => {}
                                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => return,
                                Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                                    std::future::pending::<()>().await;
                                }
                            },
                            () = tokio::time::sleep(POLL_WITHOUT_HINT) => return,
                        }
                    },
                    None => std::future::pending::<()>().await,
                }
            };
            let received = tokio::select! {
                received = f.rx.recv() => Some(Some(received)),
                () = reread => Some(None),
                _ = f.closing.wait_for(|closing| *closing) => None,
            };
            let Some(received) = received else {
                // The daemon is stopping: an open stream would hold its graceful shutdown
                // forever (a follower could keep an operator's daemon up). Say so, and end.
                f.done = true;
                return Some((Ok(stopping()), f));
            };
            let Some(received) = received else {
                let (app, run, last) = (Arc::clone(&f.app), f.run.clone(), f.last);
                match blocking(move || app.events_after(&run, last)).await {
                    Ok(Ok(events)) => f.queue.extend(events),
                    _ => return None,
                }
                continue;
            };
            match received {
                Ok(event) if event.run == f.run => f.queue.push_back(event),
                Ok(_) => {}
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {
                    // Too far behind the live channel: read the rest from the state.
                    let (app, run, last) = (Arc::clone(&f.app), f.run.clone(), f.last);
                    match blocking(move || app.events_after(&run, last)).await {
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
