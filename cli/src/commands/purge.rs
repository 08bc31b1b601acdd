//! `skilltrial purge [--older-than 30d]`: delete raw payloads past retention.

use skilltrial_engine::journal::now_ms;
use skilltrial_engine::store::parse_hex;

use crate::cli::{Global, PurgeArgs};
use crate::commands::state;
use crate::exit::{CliError, Status};
use crate::output;

/// `30d`, `12h`, `90m`, `0d` → milliseconds.
fn parse_age(text: &str) -> Option<i64> {
    let (digits, unit) = text.split_at(text.find(|c: char| !c.is_ascii_digit())?);
    let n: i64 = digits.parse().ok()?;
    let per = match unit {
        "d" => 86_400_000,
        "h" => 3_600_000,
        "m" => 60_000,
        "s" => 1_000,
        _ => return None,
    };
    n.checked_mul(per)
}

pub fn run(args: &PurgeArgs, global: &Global) -> Result<Status, CliError> {
    let age = parse_age(&args.older_than).ok_or_else(|| {
        CliError::Environment(anyhow::anyhow!(
            "--older-than `{}` is not an age such as 30d, 12h or 0d",
            args.older_than
        ))
    })?;
    let layout = state::layout(global)?;
    let journal = state::journal(&layout)?;
    let payloads = state::payloads(&layout)?;
    let cutoff = now_ms()
        .saturating_sub(age)
        .saturating_add(i64::from(age == 0));
    let mut removed = 0u64;
    let mut bytes = 0u64;
    let mut kinds = std::collections::BTreeMap::<String, u64>::new();
    for (sha, kind, _) in journal
        .payloads_before(cutoff)
        .map_err(anyhow::Error::from)?
    {
        let Some(digest) = parse_hex(&sha) else {
            continue;
        };
        bytes = bytes.saturating_add(payloads.remove(&digest).map_err(anyhow::Error::from)?);
        journal.mark_purged(&sha).map_err(anyhow::Error::from)?;
        removed += 1;
        *kinds.entry(kind.to_string()).or_insert(0) += 1;
    }
    if global.json {
        output::json(
            &serde_json::json!({ "older_than": args.older_than, "removed": removed, "bytes": bytes, "by_kind": kinds }),
        )?;
    } else {
        let detail: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
        let what = if detail.is_empty() {
            String::new()
        } else {
            format!(" ({})", detail.join(", "))
        };
        output::text(&format!(
            "purged {removed} raw payloads older than {}{what}, {bytes} bytes; the journal keeps their hashes, outcomes and usage\n",
            args.older_than
        ))?;
    }
    Ok(Status::Ok)
}
