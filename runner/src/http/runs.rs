//! Runs: the check before an escrow, registration, a wallet's runs, one run, its report.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use skilltrial_chain::Pubkey;

use super::error::{Answer, Failure};
use super::extract::{blocking, owned, private, private_json, session};
use super::intake::posted;
use crate::api::{Event, PhaseChange};
use crate::state::{HostedRun, Phase};
use crate::{App, api, worker};

fn view(app: &App, run: &HostedRun) -> Result<api::RunView, crate::state::StateError> {
    let batches = app.batches(&run.address)?;
    let progress = app
        .events_after(&run.address, 0)?
        .into_iter()
        .rev()
        .find_map(|e| match e.event {
            Event::Progress(p) => Some(p),
            _ => None,
        });
    Ok(api::RunView {
        run: run.address.clone(),
        user: run.user.clone(),
        manifest: run.manifest.clone(),
        run_id: run.run_id,
        deadline: run.deadline,
        phase: run.phase,
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
        concurrency: run.concurrency.get(),
    })
}

pub(crate) async fn register(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let (user, ask): (_, api::Register) = posted(
        &app,
        &headers,
        body,
        "{\"manifest\": <hash>, \"concurrency\": <requests in flight, optional>}",
    )
    .await?;
    // Refused before anything is read or stored, whatever else the run is.
    let concurrency = worker::concurrency(&app, ask.concurrency).map_err(unauthorised)?;
    let app2 = Arc::clone(&app);
    let answer = blocking(move || -> Answer<api::RunView> {
        // A run registered already keeps the concurrency it was registered with.
        if let (_, Some(existing)) = registered(&app2, &user, &ask.manifest)? {
            return view(&app2, &existing).map_err(Failure::internal);
        }
        uploaded_by(&app2, &user, &ask.manifest)?;
        let run =
            worker::authorise(&app2, &user, &ask.manifest, concurrency).map_err(unauthorised)?;
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
            Event::Phase(PhaseChange {
                detail: None,
                phase: Phase::Executing,
                signature: None,
            }),
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
pub(crate) async fn check(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let (user, ask): (_, api::Check) = posted(
        &app,
        &headers,
        body,
        "{\"manifest\": <hash>, \"deadline_secs\": <seconds>, \"concurrency\": <requests in flight, optional>}",
    )
    .await?;
    // What registration would refuse, refused before the escrow.
    worker::concurrency(&app, ask.concurrency).map_err(unauthorised)?;
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

pub(crate) async fn my_runs(State(app): State<Arc<App>>, headers: HeaderMap) -> Answer<Response> {
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

pub(crate) async fn run_view(
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
    let (app2, run) = (Arc::clone(app), address.to_owned());
    let bytes = blocking(move || app2.run_file(&run, file))
        .await?
        .map_err(Failure::internal)?;
    let mut response = ([(header::CONTENT_TYPE, content_type)], bytes).into_response();
    private(&mut response);
    Ok(response)
}

pub(crate) async fn report_json(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
) -> Answer<Response> {
    report_file(&app, &headers, &address, "report.json", "application/json").await
}

pub(crate) async fn report_html(
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
