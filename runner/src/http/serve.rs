//! Serving the router: bind, start the supervisor and the buyback scheduler, accept within
//! [`super::connections`]' bounds, and stop gracefully.

use std::sync::Arc;
use std::time::Duration;

use solana_signer::Signer;

use super::router::router;
use crate::App;

/// What the daemon prints when it is ready (`runner serve --json`: one line).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct Ready {
    /// The origin the API is served at (`http://127.0.0.1:<port>`).
    pub origin: String,
    /// The socket address it listens on.
    pub listening: String,
    /// The runner's public key (base58).
    pub runner: String,
    /// The cluster it settles on (`mainnet`, `devnet`, `testnet` or `localnet`, named by its
    /// genesis hash).
    pub chain_id: String,
    /// Where the daemon keeps its state.
    pub state_dir: String,
}

/// Serves until Ctrl-C or SIGTERM: binds, calls `ready`, resumes every run with work left, and
/// on a stop lets each run finish the request in flight (journaled) before returning.
/// Connections are served within [`super::connections`]' bounds.
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
    let renewal = runtime.block_on(async {
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
        let renewal = app.spawn_lease_renewal();
        app.spawn_buybacks();
        let stopping = Arc::clone(&app);
        super::connections::serve_connections(
            listener,
            router(Arc::clone(&app)),
            super::connections::ConnectionLimits::default(),
            async move {
                stop.await;
                tracing::info!(
                    "stopping: each run finishes its request in flight; event streams end"
                );
                stopping.begin_stop();
            },
        )
        .await;
        let _ = supervisor.join();
        Ok::<_, String>(renewal)
    })?;
    // Runs stop after their request in flight; wait for them (bounded by the request timeout).
    let started = std::time::Instant::now();
    while app.active_runs() > 0 && started.elapsed() < Duration::from_secs(600) {
        std::thread::sleep(Duration::from_millis(100));
    }
    if let Some(renewal) = renewal {
        let _ = renewal.join();
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
