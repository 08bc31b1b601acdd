//! The New-run page (`web/`): its built assets, embedded in the binary and served with a strict
//! Content-Security-Policy, and what the page needs beyond the API the CLI speaks:
//!
//! | method and path | who | what |
//! | --- | --- | --- |
//! | `GET /`, `/app.js`, `/style.css`, `/skilltrial_web_bg.wasm` | anyone | the page |
//! | `GET /v1/offer` | anyone | the profiles as this runner runs them, the program's fee |
//! | `GET /v1/auth/session` | anyone | the signed-in wallet, or `null` (never a 401) |
//! | `GET /v1/chain/blockhash` | session | a recent blockhash for the wallet's transaction |
//! | `POST /v1/chain/send` | session | relay a transaction the session's wallet signed |
//! | `GET /v1/runs/{run}/verification[?anchor=SIG]` | its owner | `verify --run` of its report |
//! | `GET /v1/runs/{run}/funds` | its owner | its lamports on-chain (escrowed, paid out, held) |
//!
//! The page computes the manifest, its hash and the escrow itself (the project's Rust, compiled
//! to wasm) and builds `run_open` from the committed IDL, so what the wallet signs does not
//! depend on what this daemon says: the program refuses a fee or a runner other than its
//! config's, and the hash is the page's own. The relay only forwards: it sends nothing but a
//! transaction the session's wallet pays for and signed, calling only this program and the
//! Memo program, so it is no open relay.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use base64::Engine as _;
use skilltrial_chain::anchor::MEMO_PROGRAM_ID;
use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::rpc::SignedSendError;
use skilltrial_chain::send::MAX_TRANSACTION_BYTES;
use skilltrial_core::solana::transaction;

use crate::App;
use crate::api;
use crate::intake::{Gates, Who};
use crate::server::{
    Answer, Failure, MAX_SMALL_BODY, blocking, owned, posted, private_json, session,
};
use crate::worker;

/// The page's policy: its own scripts, styles and wasm only, requests to this origin only,
/// never framed.
pub const CSP: &str = "default-src 'none'; script-src 'self' 'wasm-unsafe-eval'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// How long the relay waits for a sent transaction to be confirmed.
const CONFIRM_WAIT: Duration = Duration::from_secs(60);
/// The most relays in flight at once: each holds a thread while it waits for confirmation, so a
/// flood of them is turned away (`503`, try again) instead of exhausting the daemon.
const MAX_RELAYS: usize = 16;
static RELAYS: AtomicUsize = AtomicUsize::new(0);

/// One relay in flight, counted while it lives.
struct RelaySlot;

impl RelaySlot {
    fn take() -> Option<Self> {
        RELAYS
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n < MAX_RELAYS).then_some(n + 1)
            })
            .ok()
            .map(|_| Self)
    }
}

impl Drop for RelaySlot {
    fn drop(&mut self) {
        RELAYS.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The built page (`bash scripts/web.sh` writes `web/dist/`; CI checks it is current).
const ASSETS: &[(&str, &str, &[u8])] = &[
    (
        "/",
        "text/html; charset=utf-8",
        include_bytes!("../../web/dist/index.html"),
    ),
    (
        "/app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../web/dist/app.js"),
    ),
    (
        "/style.css",
        "text/css; charset=utf-8",
        include_bytes!("../../web/dist/style.css"),
    ),
    (
        "/skilltrial_web_bg.wasm",
        "application/wasm",
        include_bytes!("../../web/dist/skilltrial_web_bg.wasm"),
    ),
];

/// The page's routes; `gates` bound the bodies it takes.
pub(crate) fn routes(gates: &Gates) -> Router<Arc<App>> {
    let mut router = Router::new()
        .route("/v1/offer", get(offer))
        .route("/v1/auth/session", get(signed_in))
        .route("/v1/chain/blockhash", get(blockhash))
        .route(
            "/v1/chain/send",
            gates.small(Who::Session, MAX_SMALL_BODY, post(send)),
        )
        .route("/v1/runs/{run}/verification", get(verification))
        .route("/v1/runs/{run}/funds", get(funds));
    for (path, kind, bytes) in ASSETS {
        router = router.route(path, get(move || async move { asset(kind, bytes) }));
    }
    router.route(
        "/index.html",
        get(|| async { asset(ASSETS[0].1, ASSETS[0].2) }),
    )
}

fn asset(kind: &'static str, bytes: &'static [u8]) -> Response {
    let mut response = (StatusCode::OK, Bytes::from_static(bytes)).into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    // The page changes with the binary: revalidate, never keep a stale one.
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

async fn offer(State(app): State<Arc<App>>) -> Answer<Response> {
    let app2 = Arc::clone(&app);
    let offer = blocking(move || -> Answer<api::Offer> {
        // Only the profiles the daemon serves (it can call them): nothing is offered that
        // would be escrowed and never run.
        let profiles = app2
            .profiles
            .served
            .iter()
            .filter_map(|served| {
                let mut profile = served.profile.clone();
                // Only the scheme, host, port and path: an operator's credentials stay here,
                // and so do its file's path and the raw base URL (a manifest pins neither).
                let endpoint = skilltrial_core::manifest::endpoint_of(&served.endpoint).ok()?;
                profile.base_url = None;
                if profile.origin != "builtin" {
                    profile.origin = "operator".to_owned();
                }
                let demo = app2.profiles.is_demo(&profile.id);
                Some(api::OfferedProfile {
                    profile,
                    endpoint,
                    demo,
                })
            })
            .collect();
        let config = app2
            .chain()
            .config()
            .map_err(|e| {
                // Said to anyone: the node's address stays in the log.
                crate::log(&format!("GET /v1/offer: {e}"));
                unavailable("the cluster did not answer; try again in a moment".to_owned())
            })?
            .ok_or_else(|| unavailable("the program has no config on this cluster".to_owned()))?;
        Ok(api::Offer {
            profiles,
            packs: skilltrial_core::pack::embedded_ids(),
            fee_per_trial_lamports: config.fee_per_trial,
            default_deadline_secs: DEFAULT_DEADLINE_SECS,
        })
    })
    .await??;
    Ok(private_json(offer))
}

/// The deadline the page proposes, as `submit --deadline` does by default.
pub const DEFAULT_DEADLINE_SECS: i64 = 24 * 60 * 60;

/// The wallet of the request's session, or none: the page asks on load whether a sign-in still
/// holds (the cookie outlives a reload) without provoking a 401.
async fn signed_in(State(app): State<Arc<App>>, headers: HeaderMap) -> Answer<Response> {
    let address = match session(&app, &headers, &Method::GET).await {
        Ok(address) => Some(address),
        Err(f) if f.is_unauthenticated() => None,
        Err(f) => return Err(f),
    };
    Ok(private_json(serde_json::json!({ "address": address })))
}

fn unavailable(message: String) -> Failure {
    Failure::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", message)
}

async fn blockhash(State(app): State<Arc<App>>, headers: HeaderMap) -> Answer<Response> {
    session(&app, &headers, &Method::GET).await?;
    let app2 = Arc::clone(&app);
    let ((blockhash, last_valid_block_height), cluster_time) = blocking(move || {
        let chain = app2.chain();
        Ok::<_, skilltrial_chain::rpc::RpcFailure>((
            chain.latest_blockhash()?,
            chain.cluster_time()?,
        ))
    })
    .await?
    .map_err(|e| unavailable(e.to_string()))?;
    Ok(private_json(api::Blockhash {
        blockhash,
        last_valid_block_height,
        cluster_time,
    }))
}

/// Why a transaction is not one the relay forwards, if it is not.
pub fn refuse_relay(bytes: &[u8], wallet: &str) -> Result<(), String> {
    if bytes.len() > MAX_TRANSACTION_BYTES {
        return Err(format!(
            "the transaction is {} bytes; one holds at most {MAX_TRANSACTION_BYTES}",
            bytes.len()
        ));
    }
    let tx = transaction::decode_wire(bytes)
        .map_err(|e| format!("the transaction cannot be read: {e}"))?;
    let payer = tx.static_keys.first().map(ToString::to_string);
    if payer.as_deref() != Some(wallet) {
        return Err(format!(
            "the transaction is paid by {}, not by the signed-in wallet {wallet}: the relay sends only your own",
            payer.as_deref().unwrap_or("nobody")
        ));
    }
    if tx
        .signatures
        .first()
        .is_none_or(|s| s.iter().all(|b| *b == 0))
    {
        return Err("the transaction is not signed: sign it with your wallet first".to_owned());
    }
    let program = skilltrial_chain::PROGRAM_ID.to_string();
    let memo = MEMO_PROGRAM_ID.to_string();
    for ix in &tx.instructions {
        let called = tx
            .static_keys
            .get(usize::from(ix.program_index))
            .map(ToString::to_string)
            .unwrap_or_default();
        if called != program && called != memo {
            return Err(format!(
                "the transaction calls {called}; the relay sends only SkillTrial's and the Memo program's instructions"
            ));
        }
    }
    Ok(())
}

async fn send(
    State(app): State<Arc<App>>,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Answer<Response> {
    let (wallet, ask): (_, api::Relay) =
        posted(&app, &headers, body, "{\"transaction\": <base64>}").await?;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(ask.transaction.trim())
        .map_err(|e| Failure::invalid(format!("the transaction is not base64: {e}")))?;
    refuse_relay(&bytes, &wallet.to_string()).map_err(Failure::invalid)?;
    let slot = RelaySlot::take().ok_or_else(|| {
        unavailable(format!(
            "the runner is relaying {MAX_RELAYS} transactions already: nothing was sent; try again in a minute"
        ))
    })?;
    let app2 = Arc::clone(&app);
    let relayed = blocking(move || -> Answer<api::Relayed> {
        let _slot = slot;
        let chain = app2.chain();
        let signature = chain.send_signed(&bytes).map_err(|why| match why {
            SignedSendError::Refused(why) => Failure::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "refused",
                format!("the cluster refused the transaction: {why}"),
            ),
            SignedSendError::Unavailable(why) => unavailable(format!(
                "the cluster did not answer, so the transaction may or may not have been sent: reload the page to see where the run stands before signing again ({why})"
            )),
        })?;
        let parsed = signature
            .parse()
            .map_err(|_| unavailable(format!("the node answered `{signature}` as a signature")))?;
        let started = Instant::now();
        loop {
            match chain.signature_status(&parsed) {
                Ok(Some(status)) if status.error.is_some() => {
                    return Err(Failure::new(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "refused",
                        format!(
                            "transaction {signature} failed: {}",
                            status.error.unwrap_or_default()
                        ),
                    ));
                }
                Ok(Some(status)) if status.level >= Commitment::Confirmed => {
                    return Ok(api::Relayed {
                        signature,
                        slot: status.slot,
                    });
                }
                _ if started.elapsed() > CONFIRM_WAIT => {
                    return Err(unavailable(format!(
                        "transaction {signature} was sent but not confirmed within {} s: it may still land; reload the page to see",
                        CONFIRM_WAIT.as_secs()
                    )));
                }
                _ => std::thread::sleep(Duration::from_millis(400)),
            }
        }
    })
    .await??;
    Ok(private_json(relayed))
}

/// The transaction signature a query parameter `name` holds.
fn signature_param(name: &str, text: &str) -> Answer<solana_signature::Signature> {
    text.parse()
        .map_err(|_| Failure::invalid(format!("{name} `{text}` is not a transaction signature")))
}

/// Where the run's lamports are, from the chain: the live Run account's escrow, settlements and
/// balance (all of which its close returns to the owner), or `None` once it is gone.
async fn funds(
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
struct VerificationQuery {
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
async fn verification(
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
        let path = worker::run_dir(&app2.config.state_dir, &run.address).join("report.json");
        let bytes = std::fs::read(path).map_err(Failure::internal)?;
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use skilltrial_chain::send::sign_with_blockhash;
    use skilltrial_chain::{anchor::AnchorMemo, ix, pda};
    use solana_keypair::Keypair;
    use solana_signer::Signer;

    const BLOCKHASH: &str = "11111111111111111111111111111111";

    fn wire(payer: &Keypair, instructions: &[skilltrial_chain::Instruction]) -> Vec<u8> {
        let signed = sign_with_blockhash(payer, &[], instructions, BLOCKHASH, 1).unwrap();
        base64::engine::general_purpose::STANDARD
            .decode(signed.wire_base64)
            .unwrap()
    }

    #[test]
    fn relays_in_flight_are_bounded_and_released() {
        let held: Vec<RelaySlot> = std::iter::from_fn(RelaySlot::take).take(100).collect();
        assert_eq!(held.len(), MAX_RELAYS);
        assert!(RelaySlot::take().is_none());
        drop(held);
        assert!(RelaySlot::take().is_some());
    }

    #[test]
    fn the_relay_sends_only_the_signed_in_wallets_own_calls_to_skilltrial_and_memo() {
        let wallet = Keypair::new();
        let me = wallet.pubkey().to_string();
        let run = pda::run(&wallet.pubkey(), &[7; 32]);
        let cancel = ix::run_cancel(&wallet.pubkey(), &run);
        let memo = AnchorMemo {
            manifest_hash: [1; 32],
            report_hash: [2; 32],
        }
        .instruction(&wallet.pubkey());

        // Given the wallet's own cancel and anchor: relayed
        assert_eq!(
            refuse_relay(&wire(&wallet, std::slice::from_ref(&cancel)), &me),
            Ok(())
        );
        assert_eq!(refuse_relay(&wire(&wallet, &[memo]), &me), Ok(()));

        // Another wallet's transaction, even a valid one: refused, naming both
        let other = Keypair::new();
        let theirs = wire(&other, &[ix::run_cancel(&other.pubkey(), &run)]);
        let why = refuse_relay(&theirs, &me).unwrap_err();
        assert!(
            why.contains(&other.pubkey().to_string()) && why.contains(&me),
            "{why}"
        );

        // A call to any other program (here a transfer out of the wallet): refused
        let transfer = skilltrial_chain::Instruction {
            program_id: skilltrial_chain::Pubkey::default(),
            accounts: vec![
                skilltrial_chain::AccountMeta::new(wallet.pubkey(), true),
                skilltrial_chain::AccountMeta::new(other.pubkey(), false),
            ],
            data: vec![2, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0],
        };
        let why = refuse_relay(&wire(&wallet, &[cancel, transfer]), &me).unwrap_err();
        assert!(why.contains("11111111111111111111111111111111"), "{why}");

        // Unsigned, garbage, oversized: refused in words
        let mut unsigned = theirs.clone();
        unsigned[1..65].fill(0);
        let why = refuse_relay(&unsigned, &other.pubkey().to_string()).unwrap_err();
        assert!(why.contains("not signed"), "{why}");
        assert!(
            refuse_relay(b"\x01garbage", &me)
                .unwrap_err()
                .contains("cannot be read")
        );
        assert!(
            refuse_relay(&vec![0; MAX_TRANSACTION_BYTES + 1], &me)
                .unwrap_err()
                .contains("at most 1232")
        );
    }
}
