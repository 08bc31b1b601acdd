//! `skilltrial verify <report.json>`: recompute both hashes from the file alone. The file must be
//! a report of this format (it is read into the typed report); anything else is refused, naming
//! the file. A hosted run's report also carries its settlement: its digest is recomputed from the
//! evidence records and each record tied to a published attempt (`Report::verify_settlement`).
//! With `--run-account` (the Run account as `solana account <RUN> --output json` prints it), the
//! report is also compared with the account field by field (`skilltrial_chain::account`): run id,
//! digest, batches, trials, usage and the report hash the runner anchored.
//!
//! Both hashes are always checked and both reported, in one shape whether they match or not:
//! `{"ok", "report_hash": {"stated", "recomputed", "ok"}, "manifest_hash": {…}}`, so a script
//! reads a mismatch the way it reads a success, and an edited manifest names both hashes it
//! breaks (the manifest is part of the report's content). A `settlement` member is added only
//! when the report has one.

use std::fmt::Write as _;

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_core::report;
use skilltrial_core::settlement::{SettlementCheck, SettlementError};

use crate::cli::{Global, VerifyArgs};
use crate::exit::{CliError, Status};
use crate::output;

/// `verify --json`: every check, in one shape whether it holds or not (exit 1 when one fails,
/// 3 when the anchor is not final yet).
#[derive(Debug, Serialize, JsonSchema)]
pub struct Verified {
    /// Everything checked holds, and nothing is pending.
    pub ok: bool,
    /// Nothing failed, but the anchor is not finalized yet: nothing is proven either.
    pub pending: bool,
    pub report_hash: HashCheck,
    pub manifest_hash: HashCheck,
    /// The members the builder derives (summary, pairs, task table, outcomes, cost sums),
    /// recomputed from the report's own trials.
    pub derived: DerivedCheck,
    /// A hosted run's settlement digest recomputed from its evidence; present only when the
    /// report has a settlement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub settlement: Option<SettlementView>,
    /// The report compared with its Run account; only with `--run-account` or `--run`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_account: Option<RunAccountCheck>,
    /// The anchor memo transaction checked; only with `--signature`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub anchor: Option<AnchorView>,
}

/// One hash: what the file states and what its content hashes to.
#[derive(Debug, Serialize, JsonSchema)]
pub struct HashCheck {
    /// What the file states (null when absent).
    pub stated: Option<String>,
    /// What the content hashes to.
    pub recomputed: Option<String>,
    /// Both are there and equal.
    pub ok: bool,
}

/// The derivation check: every member that differs.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DerivedCheck {
    /// No member differs; null when not checked (the manifest does not recompute).
    pub ok: Option<bool>,
    pub differences: Vec<DerivedDifference>,
}

/// A member the report states differently from what its trials give.
#[derive(Debug, Serialize, JsonSchema)]
pub struct DerivedDifference {
    /// The member's path, as `summary.arms[1].pass`.
    pub path: String,
    /// What the report states there (JSON text; `absent` when it has no such member).
    pub stated: String,
    /// What its trials give (JSON text; `absent` likewise).
    pub derived: String,
}

/// The settlement, in one shape whether it recomputes or not.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SettlementView {
    pub ok: bool,
    /// The digest the file states (hex).
    pub stated: String,
    /// The digest recomputed (null when the evidence stops short of one).
    pub recomputed: Option<String>,
    /// Evidence records (null when it does not recompute).
    pub records: Option<usize>,
    pub batches: Option<usize>,
    /// The usage of every record.
    pub usage_lamports: Option<u64>,
    /// The first thing that does not hold (null when it recomputes).
    pub error: Option<String>,
}

/// The report compared with the chain field by field: run id, digest, batches, trials, usage
/// and the report hash the runner anchored.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunAccountCheck {
    /// Every field agrees; null when not compared (the settlement does not recompute).
    pub ok: Option<bool>,
    pub compared: bool,
    /// The Run account's address.
    pub address: String,
    /// `account` (the Run account itself) or `finalize_transaction` (its `RunFinalized`
    /// event, once the account is closed).
    pub source: &'static str,
    /// That finalize transaction (null when read from the account).
    pub finalize_signature: Option<String>,
    pub disagreements: Vec<Disagreement>,
}

/// A field the report and the chain disagree on.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Disagreement {
    pub field: &'static str,
    /// What the report says.
    pub report: String,
    /// What the chain holds.
    pub account: String,
}

/// The anchor memo transaction checked against the report.
#[derive(Debug, Serialize, JsonSchema)]
pub struct AnchorView {
    /// It anchors this report's recomputed hashes for the signer, and is finalized.
    pub ok: bool,
    /// Where it stands when it landed but was not finalized within the wait (`processed`,
    /// `confirmed`); null otherwise.
    pub pending: Option<&'static str>,
    pub signature: String,
    /// The wallet it must be signed by.
    pub signer: String,
    /// The memo it must carry.
    pub memo: String,
    /// Every way it falls short.
    pub problems: Vec<String>,
}

/// One hash: what the file states and what its content hashes to (null when absent).
fn check(stated: Option<&str>, recomputed: Option<String>) -> HashCheck {
    let ok = stated.is_some() && stated == recomputed.as_deref();
    HashCheck {
        stated: stated.map(str::to_owned),
        recomputed,
        ok,
    }
}

pub fn run(args: &VerifyArgs, global: &Global) -> Result<Status, CliError> {
    let report = skilltrial_engine::files::read_report(&args.report)?;
    let rejected = |e: report::ReportError| {
        CliError::Rejected(anyhow::anyhow!(
            "{}: cannot hash it: {e}",
            args.report.display()
        ))
    };
    let report_hash = check(
        report.report_hash.as_deref(),
        Some(report.hash().map_err(rejected)?.to_string()),
    );
    let manifest_hash = check(
        Some(&report.manifest_hash),
        Some(report.manifest_digest().map_err(rejected)?.to_string()),
    );
    // The members the builder derives must be what the report's own trials give: a summary
    // edited and sealed again has hashes that recompute, and is still a forgery.
    // They are derived with the manifest, so they are checked only when it recomputes (an edited
    // manifest is already named, and everything derived from it would differ with it).
    let derived = if manifest_hash.ok {
        Some(report::derivations(&report).map_err(rejected)?)
    } else {
        None
    };
    let settlement = report.verify_settlement();
    let settled_ok = settlement.as_ref().is_none_or(Result::is_ok);
    let on_chain = on_chain(args, global, &report, settlement.as_ref())?;
    let failed = !(report_hash.ok
        && manifest_hash.ok
        && derived.as_ref().is_none_or(Vec::is_empty)
        && settled_ok
        && on_chain.ok);
    // Nothing failed, but the anchor is not final: nothing is proven yet either.
    let pending = on_chain.pending;
    let ok = !failed && !pending;
    if global.json {
        output::json(&Verified {
            ok,
            pending: !failed && pending,
            report_hash,
            manifest_hash,
            derived: derived_json(derived.as_ref()),
            // Only a hosted run's report has the member, so a local report's output is unchanged.
            settlement: match (&settlement, &report.settlement) {
                (Some(result), Some(section)) => {
                    Some(settlement_json(&section.digest_sha256, result))
                }
                _ => None,
            },
            run_account: on_chain.run_account,
            anchor: on_chain.anchor,
        })?;
    } else if !failed {
        let mut out = format!(
            "ok: report hash {} and manifest hash {} recompute from the file\n",
            report_hash.stated.as_deref().unwrap_or(""),
            manifest_hash.stated.as_deref().unwrap_or("")
        );
        out.push_str(
            "derived: the summary, pairs, task table, trial outcomes and cost sums are what its trials give\n",
        );
        if let Some(Ok(check)) = &settlement {
            let _ = writeln!(
                out,
                "settlement: digest {} recomputed from {} in {} ({} lamports of usage)",
                check.digest.hex(),
                report::count_of(check.records as u64, "evidence record", "evidence records"),
                report::count_of(check.batches as u64, "batch", "batches"),
                check.usage_lamports
            );
        }
        out.push_str(&on_chain.ok_text);
        output::text(&out)?;
    } else {
        let mut out = String::new();
        for (name, what, check) in [
            ("report hash", "the content", &report_hash),
            ("manifest hash", "the manifest", &manifest_hash),
        ] {
            if check.ok {
                continue;
            }
            let said = |v: &Option<String>| v.as_deref().unwrap_or("nothing").to_owned();
            let _ = writeln!(
                out,
                "MISMATCH: {name}: the file states {}, {what} hashes to {}",
                said(&check.stated),
                said(&check.recomputed)
            );
        }
        let derived = derived.as_deref().unwrap_or_default();
        for d in derived.iter().take(SHOWN_DERIVATIONS) {
            let _ = writeln!(out, "MISMATCH: {}", d.shown());
        }
        if derived.len() > SHOWN_DERIVATIONS {
            let _ = writeln!(
                out,
                "MISMATCH: … and {} more members its trials do not give (--json lists them all)",
                derived.len() - SHOWN_DERIVATIONS
            );
        }
        if let Some(Err(e)) = &settlement {
            let _ = writeln!(out, "MISMATCH: {e}");
        }
        out.push_str(&on_chain.mismatch_text);
        output::text(&out)?;
    }
    Ok(if failed {
        Status::CheckFailed
    } else if pending {
        Status::Pending
    } else {
        Status::Ok
    })
}

/// What `verify` found on-chain (`--run-account`, `--run`, `--signature`), ready to show: the
/// `--json` members, the lines said when everything agrees, the lines said when something does
/// not. Empty when none of those flags was given.
#[derive(Debug)]
pub(crate) struct OnChainFindings {
    /// Every on-chain check that ran agrees (or is still pending).
    pub(crate) ok: bool,
    /// The anchor landed but is not finalized yet.
    pub(crate) pending: bool,
    pub(crate) run_account: Option<RunAccountCheck>,
    pub(crate) anchor: Option<AnchorView>,
    pub(crate) ok_text: String,
    pub(crate) mismatch_text: String,
}

impl OnChainFindings {
    /// Nothing asked of the chain.
    pub(crate) fn none() -> Self {
        OnChainFindings {
            ok: true,
            pending: false,
            run_account: None,
            anchor: None,
            ok_text: String::new(),
            mismatch_text: String::new(),
        }
    }
}

#[cfg(feature = "chain")]
use crate::commands::verify_chain::on_chain;

/// A build with the local commands only checks the file alone.
#[cfg(not(feature = "chain"))]
fn on_chain(
    args: &VerifyArgs,
    _global: &Global,
    _report: &report::Report,
    _settlement: Option<&Result<SettlementCheck, SettlementError>>,
) -> Result<OnChainFindings, CliError> {
    if args.run_account.is_some() || args.run.is_some() || args.signature.is_some() {
        return Err(crate::commands::not_built(
            "verify --run, --run-account or --signature",
        ));
    }
    Ok(OnChainFindings::none())
}

/// The derived members that differ shown in text; `--json` lists every one.
const SHOWN_DERIVATIONS: usize = 10;

/// The derivation check as `--json` reports it: every member that differs; `ok` null when it
/// was not checked (the manifest does not recompute).
fn derived_json(derived: Option<&Vec<report::Derivation>>) -> DerivedCheck {
    let differences = derived
        .into_iter()
        .flatten()
        .map(|d| DerivedDifference {
            path: d.path.clone(),
            stated: d.stated.clone(),
            derived: d.derived.clone(),
        })
        .collect();
    DerivedCheck {
        ok: derived.map(Vec::is_empty),
        differences,
    }
}

/// The settlement as `--json` reports it, in one shape whether it recomputes or not: the digest
/// the file states, the one recomputed (`null` when the evidence stops short of a digest), the
/// counts, and the first thing that does not hold.
fn settlement_json(
    stated: &str,
    result: &Result<SettlementCheck, SettlementError>,
) -> SettlementView {
    match result {
        Ok(check) => SettlementView {
            ok: true,
            stated: stated.to_owned(),
            recomputed: Some(check.digest.hex()),
            records: Some(check.records),
            batches: Some(check.batches),
            usage_lamports: Some(check.usage_lamports),
            error: None,
        },
        Err(e) => {
            let recomputed = match e {
                SettlementError::Digest { expected, .. } => Some(expected.clone()),
                _ => None,
            };
            SettlementView {
                ok: false,
                stated: stated.to_owned(),
                recomputed,
                records: None,
                batches: None,
                usage_lamports: None,
                error: Some(e.to_string()),
            }
        }
    }
}
