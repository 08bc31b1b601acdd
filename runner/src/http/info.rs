//! `GET /v1/info`: who this runner is, and on what terms it runs.

use std::sync::Arc;

use axum::extract::State;
use solana_signer::Signer;

use super::error::Answer;
use super::extract::blocking;
use crate::{App, api};

pub(crate) async fn info(State(app): State<Arc<App>>) -> Answer<axum::Json<api::Info>> {
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
        max_concurrency: app.config.max_concurrency.get(),
    }))
}
