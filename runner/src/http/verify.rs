//! A run's report checked for the page as `skilltrial verify --run` checks it
//! (`GET /v1/runs/{run}/verification`), and where its lamports are (`GET /v1/runs/{run}/funds`).

use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use skilltrial_chain::cli_config::Commitment;

use super::error::{Answer, Failure, unavailable};
use super::extract::{blocking, owned, private_json};
use crate::{App, api};

/// The transaction signature a query parameter `name` holds.
fn signature_param(name: &str, text: &str) -> Answer<solana_signature::Signature> {
    text.parse()
        .map_err(|_| Failure::invalid(format!("{name} `{text}` is not a transaction signature")))
}

/// Where the run's lamports are, from the chain: the live Run account's escrow, settlements and
/// balance (all of which its close returns to the owner), or `None` once it is gone.
pub(crate) async fn funds(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
) -> Answer<Response> {
    let run = owned(&app, &headers, &address).await?;
    let app2 = Arc::clone(&app);
    let funds = blocking(move || -> Answer<api::Funds> {
        let chain = app2.chain();
        let key = run.address.parse().map_err(Failure::internal)?;
        let account = match chain.run(&key) {
            Ok(live) => live.map(|live| api::HeldFunds {
                escrowed: live.account.run.escrowed,
                settled_usage: live.account.run.settled_usage,
                settled_fees: live.account.run.settled_fees,
                lamports: live.lamports,
            }),
            Err(e) => return Err(unavailable(e.to_string())),
        };
        Ok(api::Funds { account })
    })
    .await??;
    Ok(private_json(funds))
}

#[derive(Debug, serde::Deserialize)]
pub(crate) struct VerificationQuery {
    anchor: Option<String>,
}

/// One check of [`verification`].
fn checked(name: &str, ok: bool, detail: String) -> api::VerifiedCheck {
    api::VerifiedCheck {
        name: name.to_owned(),
        ok,
        pending: false,
        detail,
    }
}

/// What `skilltrial verify <report> --run <run> [--signature <anchor>]` checks, for the page:
/// the report's two hashes recomputed, its settlement recomputed from its evidence, the report
/// against the live Run account, and an anchor memo finalized for the run's user.
pub(crate) async fn verification(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    Path(address): Path<String>,
    Query(q): Query<VerificationQuery>,
) -> Answer<Response> {
    let run = owned(&app, &headers, &address).await?;
    if run.report_hash.is_none() {
        return Err(Failure::new(
            StatusCode::CONFLICT,
            "not_yet",
            format!(
                "run {address} has no report yet (it is {})",
                run.phase.as_str()
            ),
        ));
    }
    let anchor = q
        .anchor
        .map(|s| signature_param("anchor", &s))
        .transpose()?;
    let app2 = Arc::clone(&app);
    let checks = blocking(move || -> Answer<Vec<api::VerifiedCheck>> {
        let bytes = app2
            .run_file(&run.address, "report.json")
            .map_err(Failure::internal)?;
        let report: skilltrial_core::report::Report =
            serde_json::from_slice(&bytes).map_err(Failure::internal)?;
        verify_report(&app2, &report, &run.address, &run.user, anchor.as_ref())
    })
    .await??;
    Ok(private_json(api::Verification { checks }))
}

fn verify_report(
    app: &App,
    report: &skilltrial_core::report::Report,
    address: &str,
    user: &str,
    anchor: Option<&solana_signature::Signature>,
) -> Answer<Vec<api::VerifiedCheck>> {
    use skilltrial_chain::account;
    use skilltrial_chain::anchor::{AnchorMemo, check_transaction};
    let mut checks = Vec::new();
    let report_hash = report.hash().map_err(Failure::internal)?;
    let manifest_hash = report.manifest_digest().map_err(Failure::internal)?;
    let stated = report.report_hash.clone().unwrap_or_default();
    checks.push(checked(
        "report hash",
        stated == report_hash.to_string(),
        format!("states {stated}, the content hashes to {report_hash}"),
    ));
    checks.push(checked(
        "manifest hash",
        report.manifest_hash == manifest_hash.to_string(),
        format!(
            "states {}, the manifest hashes to {manifest_hash}",
            report.manifest_hash
        ),
    ));
    let settlement = report.verify_settlement();
    match (&report.settlement, &settlement) {
        (Some(section), Some(Ok(check))) => {
            checks.push(checked(
                "settlement",
                true,
                format!(
                    "digest {} recomputed from {} evidence records in {} batches ({} lamports of usage)",
                    check.digest.hex(),
                    check.records,
                    check.batches,
                    check.usage_lamports
                ),
            ));
            let key = address.parse().map_err(Failure::internal)?;
            match app.chain().run(&key) {
                Ok(Some(live)) => {
                    let disagreements = account::compare(
                        section,
                        check,
                        &manifest_hash.0,
                        &report_hash.0,
                        &live.account,
                    );
                    let detail = if disagreements.is_empty() {
                        format!(
                            "{address} agrees: run id, digest, batches, trials, usage and the report hash the runner anchored"
                        )
                    } else {
                        disagreements
                            .iter()
                            .map(|d| {
                                format!(
                                    "{}: the report says {}, the account holds {}",
                                    d.field, d.report, d.account
                                )
                            })
                            .collect::<Vec<_>>()
                            .join("; ")
                    };
                    checks.push(checked("Run account", disagreements.is_empty(), detail));
                }
                Ok(None) => checks.push(checked(
                    "Run account",
                    false,
                    format!("{address} is not on the cluster (closed, or never opened)"),
                )),
                Err(e) => return Err(unavailable(e.to_string())),
            }
        }
        (_, Some(Err(e))) => checks.push(checked("settlement", false, e.to_string())),
        _ => checks.push(checked(
            "settlement",
            false,
            "the report has no settlement: it is not a hosted run's".to_owned(),
        )),
    }
    if let Some(signature) = anchor {
        let memo = AnchorMemo {
            manifest_hash: manifest_hash.0,
            report_hash: report_hash.0,
        };
        let signer = user.parse().map_err(Failure::internal)?;
        let chain = app.chain();
        let problems = match chain.transaction(signature, Commitment::Finalized) {
            Ok(Some(tx)) => check_transaction(&tx, &memo, &signer),
            Ok(None) => {
                let seen = chain
                    .signature_status(signature)
                    .map_err(|e| unavailable(e.to_string()))?;
                let Some(status) = seen else {
                    checks.push(checked(
                        "anchor",
                        false,
                        format!("the cluster has no transaction {signature}"),
                    ));
                    return Ok(checks);
                };
                checks.push(api::VerifiedCheck {
                    pending: true,
                    ..checked(
                        "anchor",
                        false,
                        format!(
                            "transaction {signature} is {}, not finalized yet: it is checked once it is",
                            status.level.as_str()
                        ),
                    )
                });
                return Ok(checks);
            }
            Err(e) => return Err(unavailable(e.to_string())),
        };
        checks.push(checked(
            "anchor",
            problems.is_empty(),
            if problems.is_empty() {
                format!(
                    "transaction {signature} is finalized and carries {} in a memo signed by {user}",
                    memo.text()
                )
            } else {
                problems.join("; ")
            },
        ));
    }
    Ok(checks)
}
