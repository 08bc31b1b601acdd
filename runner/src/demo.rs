//! The scripted model behind the no-key demo: a fixed script of answers per task and skill
//! version, served over the real OpenAI wire format by [`crate::scripted::ScriptedServer`].
//!
//! It is labelled `scripted` in the manifest, in every report and on every screen, and its
//! fingerprint (`skilltrial-scripted-1`) can never be compared with a real model's. The script
//! is built from the pack's own golden records and known-wrong answers, so it exercises the
//! whole pipeline honestly: the checker scores every answer as it would a real model's.
//!
//! The story it tells: the baseline fails most tasks; 1.4.2 (A) helps but falls for the stale
//! COption authority, the v0 account order (once) and rounds the Token-2022 fee down; 1.5.0 (B)
//! fixes those but regresses on the legacy transaction in two repetitions.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;

use crate::bundle::{self, Bundle, Limits, RejectCode, Rejected, Rejection, SourceKind};
use crate::checker::Expected;
use crate::digest::Sha256Digest;
use crate::money::PerMtok;
use crate::pack::Pack;
use crate::profile::{Price, Profile, ProviderKind};
use crate::scripted::{Reply, ServerRequest};

mod embedded {
    include!(concat!(env!("OUT_DIR"), "/embedded_bundles.rs"));
}

/// The demo's bundle A, built into the binary from `fixtures/bundles/`.
pub const EXAMPLE_A: &str = "solana-reader-1.4.2";
/// The demo's bundle B, built into the binary from `fixtures/bundles/`.
pub const EXAMPLE_B: &str = "solana-reader-1.5.0";

/// Imports the example bundle `name` (a folder name under `fixtures/bundles/`) from the copy
/// built into the binary, so `demo` works from any directory. It goes through every import rule
/// a folder does, so its digest is the folder's.
pub fn example_bundle(name: &str) -> Result<Bundle, Rejected> {
    let input = format!("(built-in example) {name}");
    let prefix = format!("{name}/");
    let files: Vec<(String, Vec<u8>)> = embedded::FILES
        .iter()
        .filter_map(|(path, bytes)| {
            path.strip_prefix(&prefix)
                .map(|rel| (rel.to_owned(), bytes.to_vec()))
        })
        .collect();
    if files.is_empty() {
        return Err(Rejected {
            input,
            errors: vec![Rejection {
                code: RejectCode::NotFound,
                path: None,
                message: format!("no example bundle `{name}` is built into this binary"),
            }],
        });
    }
    bundle::from_files(files, SourceKind::Folder, &Limits::default())
        .map_err(|errors| Rejected { input, errors })
}

/// The model id the scripted server reports.
pub const SCRIPTED_MODEL: &str = "skilltrial-scripted-1";

/// The profile of the scripted model: free, so its price is known (zero).
pub fn profile(base_url: &str) -> Profile {
    Profile {
        id: "scripted@1".to_owned(),
        provider: ProviderKind::Openai,
        model: SCRIPTED_MODEL.to_owned(),
        revision: Some("1".to_owned()),
        base_url: Some(base_url.to_owned()),
        context_tokens: 200_000,
        max_output_tokens: 2048,
        price: Some(Price {
            input: PerMtok(0),
            output: PerMtok(0),
            source: "built-in scripted model: free".to_owned(),
            as_of: "n/a".to_owned(),
        }),
        origin: "builtin".to_owned(),
    }
}

/// Which answer the script gives: the golden record, or a named known-wrong answer.
fn scripted_choice(task: &str, version: Option<&str>, repetition: u32) -> Option<&'static str> {
    match (version, task) {
        (Some("1.5.0"), "tx-legacy-nonce-bonk") if repetition >= 2 => Some("transfer-checked"),
        (Some("1.5.0"), _) => None,
        (Some("1.4.2"), "acct-t22-fzyeg-mint") => Some("stale-mint-authority"),
        (Some("1.4.2"), "tx-v0-alt-usdc") if repetition == 1 => {
            Some("loaded-readonly-before-writable")
        }
        (Some("1.4.2"), "plan-t22-fee-memo") => Some("fee-rounded-down"),
        (Some("1.4.2"), _) => None,
        // The baseline, and any skill the script does not know.
        (_, "acct-usdc-mint") if repetition == 1 => None,
        (_, "acct-usdc-mint") => Some("prose"),
        (_, "acct-t22-fzyeg-mint") => Some("stale-mint-authority"),
        (_, "tx-legacy-nonce-bonk") => Some("fee-one-signature"),
        (_, "tx-v0-alt-usdc") => Some("loaded-readonly-before-writable"),
        (_, "plan-usdc-transfer") => Some("amount-in-whole-tokens"),
        (_, "plan-t22-fee-memo") => Some("six-decimals"),
        _ => Some("prose"),
    }
}

fn between<'a>(text: &'a str, start: &str, end: &str) -> Option<&'a str> {
    let from = text.find(start)? + start.len();
    let len = text[from..].find(end)?;
    Some(&text[from..from + len])
}

/// A responder for [`crate::scripted::ScriptedServer`] that plays the script for `pack`.
pub fn responder(pack: Pack) -> impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static {
    let seen: Mutex<HashMap<Sha256Digest, u32>> = Mutex::new(HashMap::new());
    move |request: &ServerRequest| {
        // Identical bodies are the same (task, arm) in a later repetition.
        let repetition = {
            let mut seen = seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let n = seen.entry(Sha256Digest::of(&request.body)).or_insert(0);
            *n += 1;
            *n
        };
        let user = request.user_text();
        let Some(task_id) = between(&user, "<task id=\"", "\"") else {
            return Reply::Answer("I can only answer SkillTrial tasks.".to_owned());
        };
        let version =
            between(&user, "<skill name=\"", ">").and_then(|tag| between(tag, "version=\"", "\""));
        let Ok(task) = pack.task(task_id) else {
            return Reply::Answer("Unknown task.".to_owned());
        };
        let text = match scripted_choice(task_id, version, repetition) {
            None => match task.reveal_expected() {
                Expected::Golden(g) => format!(
                    "Here is the decoded result.\n\n```json\n{}\n```\n",
                    serde_json::to_string_pretty(g).unwrap_or_default()
                ),
                Expected::Excluded { .. } => "{\"unsupported\": {\"needs\": \"other\"}}".to_owned(),
            },
            Some(name) => task
                .known_wrong
                .iter()
                .find(|w| w.name == name)
                .map_or_else(|| "I am not sure.".to_owned(), |w| w.text()),
        };
        Reply::Answer(text)
    }
}

/// Whether a manifest's model is the scripted one.
pub fn is_scripted(model: &str) -> bool {
    model == SCRIPTED_MODEL
}

/// The value form of the script, for documentation and tests.
pub fn script_table() -> Value {
    let tasks = [
        "acct-usdc-mint",
        "acct-t22-fzyeg-mint",
        "tx-legacy-nonce-bonk",
        "tx-v0-alt-usdc",
        "plan-usdc-transfer",
        "plan-t22-fee-memo",
    ];
    let mut rows = Vec::new();
    for task in tasks {
        for (arm, version) in [
            ("baseline", None),
            ("a", Some("1.4.2")),
            ("b", Some("1.5.0")),
        ] {
            let answers: Vec<Value> = (1..=3)
                .map(|r| {
                    scripted_choice(task, version, r)
                        .map_or(Value::String("golden".to_owned()), |w| {
                            Value::String(w.to_owned())
                        })
                })
                .collect();
            rows.push(serde_json::json!({ "task": task, "arm": arm, "answers": answers }));
        }
    }
    Value::Array(rows)
}
