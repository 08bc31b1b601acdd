//! `skilltrial purge [--older-than 30d]`: delete raw payloads past retention.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Serialize;
use skilltrial_engine::journal::now_ms;
use skilltrial_engine::store::parse_hex;

use crate::cli::{Global, PurgeArgs};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

/// A retention age as given (`30d`) and in milliseconds.
#[derive(Debug, Clone)]
pub struct Age {
    pub text: String,
    pub ms: i64,
}

/// `30d`, `12h`, `90m`, `45s`, `0d` → an [`Age`]; `--older-than`'s value parser.
pub fn parse_age(text: &str) -> Result<Age, String> {
    let bad = || format!("`{text}` is not an age such as 30d, 12h or 0d");
    let split = text.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (digits, unit) = text.split_at(split);
    let n: i64 = digits.parse().map_err(|_| bad())?;
    let per = match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1_000,
        _ => return Err(bad()),
    };
    let ms = n.checked_mul(per).ok_or_else(bad)?;
    Ok(Age {
        text: text.to_owned(),
        ms,
    })
}

/// `purge --json`: what was deleted.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Purged {
    /// The retention age as given (`30d`).
    pub older_than: String,
    /// How many raw payloads were deleted (the journal keeps their hashes, outcomes and usage).
    pub removed: u64,
    /// The bytes they held.
    pub bytes: u64,
    /// How many of each kind (`answer`, `request`, `response`, …).
    pub by_kind: BTreeMap<String, u64>,
}

pub fn run(args: &PurgeArgs, global: &Global) -> Result<Status, CliError> {
    let age = args.older_than.ms;
    let layout = state::layout(global)?;
    let journal = state::journal(&layout)?;
    let payloads = state::payloads(&layout)?;
    let cutoff = now_ms()
        .saturating_sub(age)
        .saturating_add(i64::from(age == 0));
    let mut removed = 0u64;
    let mut bytes = 0u64;
    let mut kinds = BTreeMap::<String, u64>::new();
    for (sha, kind, _) in journal.payloads_before(cutoff)? {
        let Some(digest) = parse_hex(&sha) else {
            continue;
        };
        // An answer journaled since schema 5 is held by the journal; older payloads, request
        // bodies and raw responses by the payload store.
        bytes = bytes.saturating_add(payloads.remove(&digest)?);
        bytes = bytes.saturating_add(journal.mark_purged(&sha)?);
        removed += 1;
        *kinds.entry(kind.to_string()).or_insert(0) += 1;
    }
    if removed > 0 {
        journal.checkpoint()?;
    }
    if global.json {
        output::json(&Purged {
            older_than: args.older_than.text.clone(),
            removed,
            bytes,
            by_kind: kinds,
        })?;
    } else {
        let detail: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let what = if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        };
        output::text(&format!(
            "purged {removed} raw payloads older than {}{what}, {bytes} bytes; the journal keeps their hashes, outcomes and usage\n",
            args.older_than.text
        ))?;
    }
    Ok(Status::Ok)
}
