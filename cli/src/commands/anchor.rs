//! `skilltrial anchor <report.json>`: anchor a report on-chain. The report's two hashes are
//! recomputed from the file first (a report whose stated hashes do not recompute is refused:
//! anchoring it would vouch for something else), then one top-level SPL Memo v3 instruction
//! carrying `st1:<manifest hash>:<report hash>` (docs/program.md, "The anchor memo") is signed by
//! the wallet and sent through the outbox. `skilltrial verify <report.json> --signature <sig>
//! --signer <wallet>` checks it from the file alone and the cluster.

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::anchor::AnchorMemo;
use solana_signer::Signer;

use crate::cli::{AnchorArgs, Global};
use crate::commands::chain;
use crate::exit::{CliError, Status};
use crate::output;
use skilltrial_engine::files::read_report;

/// `anchor --json`: the memo transaction that anchors the report.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Anchored {
    /// The transaction's signature (base58).
    pub signature: String,
    /// True when this wallet had already anchored this report on this cluster: nothing was
    /// signed now, and `signature` is that earlier transaction.
    pub already_anchored: bool,
    /// The memo: `st1:<manifest hash>:<report hash>`.
    pub memo: String,
    /// The wallet that signed it.
    pub signer: String,
    /// The report's manifest hash, recomputed from the file.
    pub manifest_hash: String,
    /// The report hash, recomputed from the file.
    pub report_hash: String,
    /// The slot it landed in; absent when it was already anchored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub slot: Option<u64>,
}

pub fn run(args: &AnchorArgs, global: &Global) -> Result<Status, CliError> {
    let report = read_report(&args.report)?;
    let shown = args.report.display();
    let hashes = report
        .manifest_digest()
        .and_then(|m| report.hash().map(|r| (m, r)))
        .map_err(|e| CliError::Rejected(anyhow::anyhow!("{shown}: cannot hash it: {e}")))?;
    let (manifest, recomputed) = hashes;
    if report.report_hash.as_deref() != Some(recomputed.to_string().as_str()) {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "{shown}: its stated report hash does not recompute from its content ({}): not anchored; `skilltrial verify {shown}` shows the mismatch",
            recomputed
        )));
    }
    if report.manifest_hash != manifest.to_string() {
        return Err(CliError::Rejected(anyhow::anyhow!(
            "{shown}: its stated manifest hash does not recompute from its manifest ({manifest}): not anchored"
        )));
    }
    let memo = AnchorMemo {
        manifest_hash: manifest.0,
        report_hash: recomputed.0,
    };
    let session = chain::connect(&args.solana, global)?;
    let wallet = session.signer()?;
    let signer = wallet.pubkey();
    let intent = format!("anchor:{signer}:{}", memo.text());
    if !args.again
        && let Some(earlier) = session.landed(&intent)?
    {
        if global.json {
            output::json(&Anchored {
                signature: earlier.signature.clone(),
                already_anchored: true,
                memo: memo.text(),
                signer: signer.to_string(),
                manifest_hash: manifest.to_string(),
                report_hash: recomputed.to_string(),
                slot: None,
            })?;
        } else {
            output::text(&format!(
                "already anchored by {signer} on this cluster: transaction {} (nothing was signed; --again sends a new anchor)\n",
                earlier.signature
            ))?;
        }
        return Ok(Status::Ok);
    }
    let sent = session.send(&intent, &wallet, &[memo.instruction(&signer)])?;
    if global.json {
        output::json(&Anchored {
            signature: sent.signature.to_string(),
            already_anchored: false,
            memo: memo.text(),
            signer: signer.to_string(),
            manifest_hash: manifest.to_string(),
            report_hash: recomputed.to_string(),
            slot: Some(sent.slot),
        })?;
    } else {
        output::text(&format!(
            "anchored {shown}\n  transaction {}\n  memo        {}\n  signer      {signer}\n  check it:   skilltrial verify {shown} --signature {} --signer {signer} --url {}\n",
            sent.signature,
            memo.text(),
            sent.signature,
            session.chain.url(),
        ))?;
    }
    Ok(Status::Ok)
}
