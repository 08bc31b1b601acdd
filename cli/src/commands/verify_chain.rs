//! `verify`'s checks against the chain (built with the `chain` feature): the report against its
//! Run account (`--run-account`, a file the Solana CLI wrote; `--run`, fetched, or its
//! finalization found in the address's history once closed) and its anchor memo
//! (`--signature`).

use std::fmt::Write as _;
use std::io::Read as _;

use std::time::Duration;

use anyhow::Context;
use skilltrial_chain::account;
use skilltrial_chain::cli_config::Commitment;
use skilltrial_chain::verify::{self as chain_verify, AnchorCheck, OnChain, Source, VerifyError};
use skilltrial_core::report::Report;
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use crate::cli::{Global, VerifyArgs};
use crate::commands::verify::{self, AnchorView, OnChainFindings, RunAccountCheck};
use crate::commands::{chain, input};
use crate::exit::CliError;

/// Runs the on-chain checks `args` asks for and says what they found.
pub(crate) fn on_chain(
    args: &VerifyArgs,
    global: &Global,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChainFindings, CliError> {
    let session = if args.signature.is_some() || args.run.is_some() {
        Some(chain::connect(&args.solana, global)?)
    } else {
        None
    };
    let (on_chain, run_user) = match (&args.run_account, &args.run, &session) {
        (Some(path), _, _) => (Some(run_account(path, report, settlement)?), None),
        (None, Some(address), Some(session)) => {
            let address = skilltrial_chain::host_key(address);
            let (checked, user) = chain_verify::against_run(
                &session.chain,
                &address,
                report,
                settlement,
                Duration::from_secs(args.wait_secs),
                &mut |line| crate::commands::progress::notice(line),
            )
            .map_err(|e| refused_as(&format!("--run {address}"), e))?;
            (Some(checked), Some(user))
        }
        _ => (None, None),
    };
    let anchor = match (&args.signature, &session) {
        (Some(signature), Some(session)) => {
            let signer = match (&args.signer, run_user) {
                (Some(given), _) => skilltrial_chain::host_key(given),
                (None, Some(user)) => user,
                (None, None) => {
                    return Err(CliError::Rejected(anyhow::anyhow!(
                        "--signature: say whose anchor it must be with --signer <ADDRESS> (or give --run, whose user it then must be)"
                    )));
                }
            };
            Some(
                chain_verify::anchor(
                    &session.chain,
                    &solana_signature::Signature::from(signature.0),
                    signer,
                    report,
                    Duration::from_secs(args.wait_secs),
                    &mut |line| crate::commands::progress::notice(line),
                )
                .map_err(|e| match e {
                    VerifyError::Rpc(e) => CliError::from(e),
                    VerifyError::Refused(why) => CliError::Rejected(anyhow::anyhow!(why)),
                })?,
            )
        }
        _ => None,
    };
    let mut found = OnChainFindings::none();
    found.ok = on_chain.as_ref().is_none_or(OnChain::agrees)
        && anchor.as_ref().is_none_or(|a| a.problems.is_empty());
    found.pending = anchor.as_ref().is_some_and(|a| a.pending.is_some());
    if let Some(chain) = &on_chain {
        found.run_account = Some(run_account_check(chain));
        let _ = writeln!(
            found.ok_text,
            "{} agrees (run id, digest, batches, trials, usage and the anchored report hash)",
            chain.describe()
        );
        if !chain.compared {
            let _ = writeln!(
                found.mismatch_text,
                "run account {}: not compared: the report's settlement does not recompute",
                chain.address
            );
        }
    }
    if let Some(anchor) = &anchor {
        found.anchor = Some(anchor_view(anchor));
        match anchor.pending {
            None => {
                let _ = writeln!(
                    found.ok_text,
                    "anchor: transaction {} is finalized and carries {} in a top-level memo signed by {}",
                    anchor.signature, anchor.memo, anchor.signer
                );
            }
            Some(level) => {
                let _ = writeln!(
                    found.ok_text,
                    "PENDING: anchor {} is {} but not finalized after {} s: nothing is wrong and nothing is proven yet; run verify again shortly (exit {})",
                    anchor.signature,
                    level.as_str(),
                    anchor.waited_secs,
                    crate::exit::PENDING_EXIT
                );
            }
        }
        for problem in &anchor.problems {
            let _ = writeln!(
                found.mismatch_text,
                "MISMATCH: anchor {}: {problem}",
                anchor.signature
            );
        }
    }
    if let Some(chain) = &on_chain {
        for d in &chain.disagreements {
            let _ = writeln!(
                found.mismatch_text,
                "MISMATCH: {}: {}: the report says {}, the chain holds {}",
                chain.describe(),
                d.field,
                d.report,
                d.account
            );
        }
    }
    Ok(found)
}

/// The largest account file `--run-account` reads: a Run account is a few hundred bytes, which
/// the Solana CLI's JSON wraps in well under a kilobyte.
const MAX_ACCOUNT_BYTES: u64 = 64 * 1024;

/// A chain error as the CLI reports it: the node failing is the environment; any other reason
/// a judgement, named with the flag (`what`) that asked for the comparison.
fn refused_as(what: &str, e: VerifyError) -> CliError {
    match e {
        VerifyError::Rpc(e) => CliError::from(e),
        VerifyError::Refused(why) => CliError::Rejected(anyhow::anyhow!("{what}: {why}")),
    }
}

/// The `run_account` member of `verify --json`.
fn run_account_check(chain: &OnChain) -> RunAccountCheck {
    let disagreements = chain
        .disagreements
        .iter()
        .map(|d| verify::Disagreement {
            field: d.field,
            report: d.report.clone(),
            account: d.account.clone(),
        })
        .collect();
    let (source, signature) = match &chain.source {
        Source::Account => ("account", None),
        Source::Finalization(signature) => ("finalize_transaction", Some(signature.clone())),
    };
    RunAccountCheck {
        ok: chain.compared.then_some(chain.disagreements.is_empty()),
        compared: chain.compared,
        address: chain.address.clone(),
        source,
        finalize_signature: signature,
        disagreements,
    }
}

/// The `anchor` member of `verify --json`.
fn anchor_view(anchor: &AnchorCheck) -> AnchorView {
    AnchorView {
        ok: anchor.problems.is_empty() && anchor.pending.is_none(),
        pending: anchor.pending.map(Commitment::as_str),
        signature: anchor.signature.clone(),
        signer: anchor.signer.to_string(),
        memo: anchor.memo.clone(),
        problems: anchor.problems.clone(),
    }
}

/// Reads `path` (`solana account <RUN> --output json`) and compares it with the report. Refuses a
/// report without a settlement, a file that is not a Run account of the program, and a
/// settlement that does not recompute (there is then nothing sound to compare).
fn run_account(
    path: &std::path::Path,
    report: &Report,
    settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChain, CliError> {
    // Refused before the file is read: there is nothing to compare it with.
    if report.settlement.is_none() || settlement.is_none() {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "--run-account {}: the report is not a hosted run's (it has no settlement to compare)",
            path.display()
        )));
    }
    let meta = input::regular_file(path, "an account JSON file")
        .map_err(|e| CliError::from(e).context("--run-account"))?;
    let rejected = |why: String| {
        CliError::Rejected(anyhow::anyhow!("--run-account {}: {why}", path.display()))
    };
    if meta.len() > MAX_ACCOUNT_BYTES {
        return Err(rejected(format!(
            "larger than {} KiB: not a Run account",
            MAX_ACCOUNT_BYTES / 1024
        )));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_ACCOUNT_BYTES + 1).read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let text = String::from_utf8(bytes).map_err(|_| rejected("not UTF-8 text".to_owned()))?;
    let account = account::run_from_cli_json(&text).map_err(|e| rejected(e.to_string()))?;
    let books = account::RunBooks::of_account(&account);
    chain_verify::against_account(&books, report, settlement)
        .map_err(|e| refused_as(&format!("--run-account {}", path.display()), e))
}
