//! `skilltrial report --remote`: a finalized run's report downloaded from its runner and proven
//! before anything is written: its hashes recompute, it is the settlement of this Run, and that
//! settlement recomputes ([`download`]); then the Run on-chain must hold that settlement
//! ([`against_chain`], the comparison `verify --run` makes).

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_chain::Pubkey;
use skilltrial_core::digest::Sha256Digest;
use skilltrial_core::report::{Report, ReportError};
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use super::{Client, ClientError};

/// Why the runner's report was not taken. Nothing was written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DownloadError {
    #[error(transparent)]
    Client(#[from] ClientError),
    #[error("the runner's report.json is not UTF-8")]
    NotUtf8,
    #[error("the runner's report.json: {0}")]
    NotAReport(ReportError),
    #[error("the runner's report.json does not verify: {0}")]
    DoesNotVerify(ReportError),
    #[error("the runner's report is not the settlement of run {0}")]
    OtherRun(String),
    #[error("`{0}` is not a Run account address")]
    NotAnAddress(String),
    #[error(
        "the runner's report of run {run}: its settlement does not recompute: {error}; nothing written"
    )]
    SettlementDoesNotRecompute {
        run: String,
        error: Box<SettlementError>,
    },
    /// The node could not be asked.
    #[error(transparent)]
    Chain(#[from] skilltrial_chain::rpc::RpcFailure),
    /// The chain rules a comparison out (no Run and no finalization of this run there, …).
    #[error("--run {address}: {why}")]
    ChainRefused { address: Pubkey, why: String },
    /// The Run on-chain holds another settlement than the report states: each field named.
    #[error(
        "the runner's report of run {run} is not what its Run account {account} holds; nothing written:\n  {}",
        fields.join("\n  ")
    )]
    Disagrees {
        run: Pubkey,
        account: String,
        fields: Vec<String>,
    },
}

/// How long [`against_chain`] looks again for a closed Run's finalization the node has not
/// indexed yet.
pub const FINALIZATION_WAIT: std::time::Duration = std::time::Duration::from_secs(60);

/// The downloaded report against its Run, as `verify --run` compares them (the same code,
/// [`skilltrial_chain::verify::against_run`]): its account, or once closed its finalize
/// transaction. Where the books came from when they agree, else every field where they differ.
pub fn against_chain(
    chain: &skilltrial_chain::rpc::Chain,
    downloaded: &Downloaded,
    notice: &mut dyn FnMut(&str),
) -> Result<skilltrial_chain::verify::Source, DownloadError> {
    use skilltrial_chain::verify::{self, VerifyError};
    let run = downloaded.address;
    let settlement = Ok(downloaded.settlement);
    let (checked, _) = verify::against_run(
        chain,
        &run,
        &downloaded.report,
        Some(&settlement),
        FINALIZATION_WAIT,
        notice,
    )
    .map_err(|e| match e {
        VerifyError::Rpc(e) => DownloadError::Chain(e),
        VerifyError::Refused(why) => DownloadError::ChainRefused { address: run, why },
    })?;
    if checked.agrees() {
        return Ok(checked.source);
    }
    Err(DownloadError::Disagrees {
        run,
        account: checked.address,
        fields: checked
            .disagreements
            .iter()
            .map(|d| {
                format!(
                    "{}: the report says {}, the account holds {}",
                    d.field, d.report, d.account
                )
            })
            .collect(),
    })
}

/// A report that proved itself (see the module's documentation).
#[derive(Debug)]
pub struct Downloaded {
    pub report: Report,
    /// `report.json` as the runner sent it.
    pub json: String,
    /// `report.html` as the runner sent it.
    pub html: Vec<u8>,
    pub report_hash: Sha256Digest,
    pub manifest_hash: Sha256Digest,
    /// The Run account's address.
    pub address: Pubkey,
    /// What the settlement recomputed.
    pub settlement: SettlementCheck,
}

/// Downloads the report of the Run at `run` (`report.json` and `report.html`) and proves it.
pub fn download(client: &Client, run: &str) -> Result<Downloaded, DownloadError> {
    let json_bytes = client.report(run, "report.json")?;
    let html = client.report(run, "report.html")?;
    let json = String::from_utf8(json_bytes).map_err(|_| DownloadError::NotUtf8)?;
    let report = Report::from_json(&json).map_err(DownloadError::NotAReport)?;
    let (report_hash, manifest_hash) = report.verify().map_err(DownloadError::DoesNotVerify)?;
    if report.settlement.as_ref().map(|s| s.run_address.as_str()) != Some(run) {
        return Err(DownloadError::OtherRun(run.to_owned()));
    }
    let address: Pubkey = run
        .parse()
        .map_err(|_| DownloadError::NotAnAddress(run.to_owned()))?;
    let settlement = match report.verify_settlement() {
        Some(Ok(check)) => check,
        Some(Err(error)) => {
            return Err(DownloadError::SettlementDoesNotRecompute {
                run: run.to_owned(),
                error: Box::new(error),
            });
        }
        // Its settlement names this run (checked above): it is there.
        None => return Err(DownloadError::OtherRun(run.to_owned())),
    };
    Ok(Downloaded {
        report,
        json,
        html,
        report_hash,
        manifest_hash,
        address,
        settlement,
    })
}

/// `report --remote --json`: where the proven report was written, and how the chain agreed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Saved {
    /// The Run account's address.
    pub run: String,
    pub report_hash: String,
    pub manifest_hash: String,
    /// The path `report.json` was written to.
    pub json: String,
    /// The path `report.html` was written to.
    pub html: String,
    /// The report against the Run on-chain: always `agrees` (a disagreement is an error).
    pub run_account: RunAccount,
    pub run_account_source: RunAccountSource,
}

/// How the report compares with its Run on-chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunAccount {
    /// Run id, digest, batches, trials, usage and the anchored report hash agree.
    Agrees,
}

/// What the report was compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunAccountSource {
    /// The Run account itself.
    Account,
    /// The Run's finalize transaction (the account is closed).
    FinalizeTransaction,
}
