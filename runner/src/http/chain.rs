//! The page's chain access through the daemon: a recent blockhash, and the relay of a
//! transaction the session's wallet signed (only its own, calling only SkillTrial and Memo).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::Response;
use base64::Engine as _;
use skilltrial_chain::anchor::MEMO_PROGRAM_ID;
use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::rpc::SignedSendError;
use skilltrial_chain::send::MAX_TRANSACTION_BYTES;
use skilltrial_core::solana::transaction;

use super::error::{Answer, Failure, unavailable};
use super::extract::{blocking, private_json, session};
use super::intake::posted;
use crate::{App, api};

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

pub(crate) async fn blockhash(State(app): State<Arc<App>>, headers: HeaderMap) -> Answer<Response> {
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

pub(crate) async fn send(
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
