//! `skilltrial demo` as one operation, and the scripted model behind the no-key demo.
//!
//! [`run`] is the whole local job: validate the bundles, open the pack, choose the model, plan,
//! run and write the reports, telling its caller each step as an [`Event`] and ending in a
//! [`DemoOutcome`] or a typed [`DemoError`] (the CLI only parses, calls it and renders).
//!
//! The scripted model: a fixed script of answers per task, skill version and repetition, served
//! over the real OpenAI wire format by [`crate::scripted::ScriptedServer`]. The repetition comes from the plan ([`Plans`]), never
//! from what one server process has seen, so a killed and resumed demo answers the same.
//!
//! It is labelled `scripted` in the manifest, in every report and on every screen, and its
//! fingerprint (`skilltrial-scripted-1`) can never be compared with a real model's. The script
//! is built from the pack's own golden records and known-wrong answers, so it exercises the
//! whole pipeline honestly: the checker scores every answer as it would a real model's.
//!
//! The story it tells: the baseline fails most tasks; 1.4.2 (A) helps but falls for the stale
//! COption authority, the v0 account order (once) and rounds the Token-2022 fee down; 1.5.0 (B)
//! fixes those but regresses on the legacy transaction in two repetitions.
//!
//! A second scripted "model" ([`ScriptedModel::Two`], `demo --scripted-model 2`) plays another
//! script, so that `skilltrial ledger` can be tried across two models without a key: a stronger
//! baseline, an A that gets every task right, and a B that rounds the Token-2022 fee down in
//! every repetition — B helps and breaks on the first model, and only breaks on the second.
//! Which script answers is read from the request's `model`, so a resumed run answers the same.
//!
//! On `solana-core@2.0.0` ([`larger_pack_script`]) the first model's baseline fails nearly every
//! task (a script it asks for, an account creation a plan does not need, the base fee read as the
//! whole fee) and passes two; A gets most right but misreads failed transactions, truncates lookup
//! tables, gives up on the stake account and floors Token-2022 fees; B fixes all of those and
//! regresses on two tasks from the second repetition. With 46 tasks the paired test can show
//! that (the first pack's six tasks cannot go below p = 3/32 after Holm).

mod job;

pub use job::{
    CallerError, DemoError, DemoOutcome, DemoRequest, Event, Reported, Step, UNPRICED_MAX_REQUESTS,
    UNPRICED_MAX_TOKENS, run,
};

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::provider::ATTEMPT_HEADER;
use crate::scripted::{Reply, ServerRequest};
use skilltrial_core::checker::Expected;
use skilltrial_core::manifest::PlannedTrial;
use skilltrial_core::money::PerMtok;
use skilltrial_core::pack::{Pack, Task};
use skilltrial_core::profile::{Price, Profile, ProviderKind};

/// The model id the scripted server reports.
pub const SCRIPTED_MODEL: &str = "skilltrial-scripted-1";

/// Which of the built-in scripts a scripted run plays.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptedModel {
    /// `skilltrial-scripted-1`, the demo's default.
    #[default]
    One,
    /// `skilltrial-scripted-2`, another script, for a ledger across two models.
    Two,
}

impl ScriptedModel {
    /// Every scripted model, by its number.
    pub const ALL: [Self; 2] = [Self::One, Self::Two];

    /// `1` or `2`.
    pub fn number(self) -> u8 {
        match self {
            Self::One => 1,
            Self::Two => 2,
        }
    }

    /// The scripted model numbered `n`, if there is one.
    pub fn from_number(n: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.number() == n)
    }

    /// The model id the request names and the server reports.
    pub fn model_id(self) -> String {
        format!("skilltrial-scripted-{}", self.number())
    }

    /// The script a request's `model` names; the first for any other name.
    fn of_request(request: &ServerRequest) -> Self {
        let named = request.json().and_then(|v| {
            v.get("model")
                .and_then(serde_json::Value::as_str)
                .map(str::to_owned)
        });
        Self::ALL
            .into_iter()
            .find(|m| named.as_deref() == Some(m.model_id().as_str()))
            .unwrap_or_default()
    }
}

/// The profile of the first scripted model: free, so its price is known (zero).
pub fn profile(base_url: &str) -> Profile {
    profile_of(ScriptedModel::One, base_url)
}

/// The profile of scripted model `model` at `base_url`.
pub fn profile_of(model: ScriptedModel, base_url: &str) -> Profile {
    let n = model.number();
    Profile {
        id: format!("scripted@{n}"),
        provider: ProviderKind::Openai,
        model: model.model_id(),
        revision: Some(n.to_string()),
        base_url: Some(base_url.to_owned()),
        context_tokens: 200_000,
        max_output_tokens: 2048,
        price: Some(Price {
            input: PerMtok(0),
            output: PerMtok(0),
            source: "built-in scripted model: free".to_owned(),
            as_of: "n/a".to_owned(),
            cache: None,
        }),
        origin: "builtin".to_owned(),
    }
}

/// Which answer a script gives: the golden record (`None`), or a named known-wrong answer.
fn scripted_choice(
    pack: &str,
    model: ScriptedModel,
    task: &Task,
    version: Option<&str>,
    repetition: u32,
) -> Option<&'static str> {
    if pack == LARGER_PACK {
        return larger_pack_script(model, &task.id, version, repetition).map(|names| {
            // The first of the script's choices this task has (the last is always there).
            names
                .iter()
                .copied()
                .find(|name| task.known_wrong.iter().any(|w| w.name == *name))
                .unwrap_or("prose")
        });
    }
    match model {
        ScriptedModel::One => first_script(&task.id, version, repetition),
        ScriptedModel::Two => second_script(&task.id, version, repetition),
    }
}

/// The pack with enough tasks for the paired test to say something.
pub const LARGER_PACK: &str = "solana-core@2.0.0";

/// The script on [`LARGER_PACK`] (see the module's documentation): the golden record (`None`),
/// or known-wrong answers in order of preference, of which the task's first is given (a test
/// holds that every task has one).
fn larger_pack_script(
    model: ScriptedModel,
    task: &str,
    version: Option<&str>,
    repetition: u32,
) -> Option<&'static [&'static str]> {
    let failed_tx = matches!(
        task,
        "tx-legacy-failed-rent" | "tx-v0-failed-slippage" | "tx-v0-failed-swap-lamports"
    );
    let fee_plan = matches!(
        task,
        "plan-t22-bern-fee" | "plan-t22-bern-fee-memo-small" | "plan-t22-fzyeg-fee-memo"
    );
    match (model, version) {
        (ScriptedModel::One, Some("1.5.0")) => match task {
            "acct-multisig-2of2" if repetition >= 2 => Some(&["signers-truncated"]),
            "tx-v0-jupiter-three-tables" if repetition >= 2 => Some(&["last-instruction-dropped"]),
            _ => None,
        },
        (ScriptedModel::Two, Some("1.5.0")) if fee_plan => Some(&["fee-rounded-down"]),
        (ScriptedModel::Two, Some("1.5.0" | "1.4.2")) => None,
        (ScriptedModel::One, Some("1.4.2")) => match task {
            _ if failed_tx => Some(&["outcome-flipped"]),
            _ if fee_plan => Some(&["fee-rounded-down"]),
            "acct-alt-104" | "acct-alt-deactivated" | "acct-alt-3" => {
                Some(&["addresses-truncated"])
            }
            "acct-stake-deactivated" => Some(&["asks-for-a-script"]),
            _ => None,
        },
        // The baseline, and any skill the script does not know. The second model's baseline
        // knows the plain mints and SOL transfers.
        (ScriptedModel::Two, _)
            if matches!(
                task,
                "acct-usdc-mint-current" | "acct-usdt-mint" | "tx-v0-devnet-transfer"
            ) =>
        {
            None
        }
        _ => match task {
            "acct-usdc-mint-current" | "tx-v0-devnet-transfer" if repetition == 1 => None,
            t if t.starts_with("acct-") => {
                if ["nonce", "stake", "alt-", "multisig"]
                    .iter()
                    .any(|k| t.contains(k))
                {
                    Some(&["asks-for-a-script"])
                } else {
                    Some(&["other-token-program"])
                }
            }
            t if t.starts_with("tx-") => {
                if failed_tx || t == "tx-legacy-ata-create" {
                    Some(&["outcome-flipped"])
                } else {
                    Some(&[
                        "fee-base-only",
                        "last-instruction-dropped",
                        "outcome-flipped",
                    ])
                }
            }
            _ => Some(&["creates-the-recipient-account"]),
        },
    }
}

/// The second script: the baseline knows the USDC mint and the plain transfer plan; A gets
/// every task right; B rounds the Token-2022 fee down every time.
fn second_script(task: &str, version: Option<&str>, repetition: u32) -> Option<&'static str> {
    match (version, task) {
        (Some("1.5.0"), "plan-t22-fee-memo") => Some("fee-rounded-down"),
        (Some("1.5.0") | Some("1.4.2"), _) => None,
        (_, "acct-usdc-mint" | "plan-usdc-transfer") => None,
        (_, "tx-v0-alt-usdc") if repetition == 2 => None,
        _ => first_script(task, None, repetition),
    }
}

/// The first script (the story in the module's documentation).
fn first_script(task: &str, version: Option<&str>, repetition: u32) -> Option<&'static str> {
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

/// The trials the scripted model may be asked for, by run: what it needs to place a request.
///
/// The script depends only on a trial's (task, arm, repetition), so that a demo killed and
/// resumed (a new process, a new server) gives exactly the answers an uninterrupted one does.
/// The request body names the task and the skill (so the arm); the repetition comes from the
/// plan: the `x-skilltrial-attempt` header (`<12 hex of run>-<trial index>-<seq>-<random>`)
/// names the run and the trial index, and [`skilltrial_core::manifest::trials`] — the one plan function —
/// says which repetition that index is. Shared between the server's thread and whoever plans
/// (the demo plans only after the server has its port, which the manifest pins).
#[derive(Debug, Clone, Default)]
pub struct Plans(Arc<Mutex<HashMap<String, Vec<Placed>>>>);

/// A planned trial's task and repetition, by trial index.
type Placed = (String, u32);

impl Plans {
    /// Registers run `run` (its manifest hash, hex) with its trials in execution order.
    pub fn add(&self, run: &str, trials: &[PlannedTrial]) {
        let key = run.get(..12).unwrap_or(run).to_owned();
        let placed = trials
            .iter()
            .map(|t| (t.task.clone(), t.repetition))
            .collect();
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(key, placed);
    }

    /// The planned task and repetition of the trial an attempt id names.
    fn place(&self, attempt: &str) -> Option<Placed> {
        let mut parts = attempt.split('-');
        let run = parts.next()?;
        let index: usize = parts.next()?.parse().ok()?;
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(run)?
            .get(index)
            .cloned()
    }
}

/// The error the scripted model sends for a request it cannot place in a registered plan: an
/// error status (nothing is answered, nothing spent), so a wiring mistake shows as an
/// infrastructure error naming the attempt instead of a made-up verdict.
fn unplaced(why: &str) -> Reply {
    let body = serde_json::json!({
        "type": "error",
        "error": { "type": "invalid_request_error", "message": format!("scripted model: {why}") },
    });
    Reply::Verbatim {
        status: 400,
        headers: vec![("content-type".to_owned(), "application/json".to_owned())],
        body: body.to_string(),
    }
}

/// A responder for [`crate::scripted::ScriptedServer`] that plays the script for `pack`, for the
/// runs registered in `plans`.
pub fn responder(
    pack: Pack,
    plans: Plans,
) -> impl Fn(&ServerRequest) -> Reply + Send + Sync + 'static {
    move |request: &ServerRequest| {
        let Some(attempt) = request.header(ATTEMPT_HEADER) else {
            return unplaced(&format!("the request has no `{ATTEMPT_HEADER}` header"));
        };
        let Some((planned_task, repetition)) = plans.place(attempt) else {
            return unplaced(&format!("attempt `{attempt}` names no planned trial"));
        };
        let progressive = request.has_tools();
        let user = if progressive {
            request.task_text()
        } else {
            request.user_text()
        };
        let Some(task_id) = between(&user, "<task id=\"", "\"") else {
            return Reply::Answer("I can only answer SkillTrial tasks.".to_owned());
        };
        let version = if progressive {
            match progressive_step(request, task_id) {
                Move::Call(name, arguments) => {
                    return Reply::Tools {
                        text: String::new(),
                        calls: vec![(name.to_owned(), arguments)],
                    };
                }
                Move::Answer(version) => version,
            }
        } else {
            between(&user, "<skill name=\"", ">")
                .and_then(|tag| between(tag, "version=\"", "\""))
                .map(str::to_owned)
        };
        if task_id != planned_task {
            return unplaced(&format!(
                "attempt `{attempt}` asks task `{task_id}`, its trial is planned for `{planned_task}`"
            ));
        }
        let Ok(task) = pack.task(task_id) else {
            return Reply::Answer("Unknown task.".to_owned());
        };
        let model = ScriptedModel::of_request(request);
        let text = match scripted_choice(&pack.id(), model, task, version.as_deref(), repetition) {
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

/// What the scripted model does next in a progressive trial.
enum Move {
    /// Call this tool with these arguments (JSON text).
    Call(&'static str, String),
    /// Answer, as one who read the skill of this version (`None`: it loaded none).
    Answer(Option<String>),
}

/// The progressive script, read from the request alone (so a resumed run answers the same): on
/// its first turn the model loads the catalog's skill unless the task is one it believes it
/// knows (every fifth task by a fixed hash of its id; on the baseline the catalog is empty); once
/// loaded, it reads the reference its family needs when the skill lists one, then answers as the
/// inline script does for the version it loaded.
fn progressive_step(request: &ServerRequest, task: &str) -> Move {
    let system = request.system_text();
    let names: Vec<&str> = system
        .split("<name>")
        .skip(1)
        .filter_map(|rest| rest.split("</name>").next())
        .collect();
    // A fee task draws the model to the fee planner, when the catalog lists it; any other to
    // the arm's own skill (the catalog's first other name).
    let skill = match names.iter().find(|n| **n == DISTRACTOR) {
        Some(distractor) if task.contains("fee") => Some(*distractor),
        _ => names.iter().find(|n| **n != DISTRACTOR).copied(),
    };
    let results = request.all_tool_results();
    let loaded = results.iter().find_map(|(_, content, is_error)| {
        (!is_error)
            .then(|| between(content, "<skill_content ", ">"))
            .flatten()
    });
    let Some(skill) = skill else {
        return Move::Answer(None);
    };
    let Some(tag) = loaded else {
        if request.turn() > 1 || fnv(task).is_multiple_of(5) {
            return Move::Answer(None);
        }
        return Move::Call(
            "load_skill",
            serde_json::json!({ "name": skill }).to_string(),
        );
    };
    if between(tag, "name=\"", "\"") == Some(DISTRACTOR) {
        // The fee planner says nothing about decoding: answered as without a skill.
        return Move::Answer(None);
    }
    let version = between(tag, "version=\"", "\"").map(str::to_owned);
    let read = results
        .iter()
        .any(|(_, content, _)| content.starts_with("<skill_resource "));
    let wanted = match task.split('-').next() {
        Some("acct") => "account",
        Some("tx") => "transaction",
        Some("plan") => "transfer",
        _ => "",
    };
    let listed = results.iter().find_map(|(_, content, _)| {
        let files = between(content, "<skill_files>\n", "</skill_files>")?;
        files
            .lines()
            .find(|line| line.contains(wanted) && line.contains("readable"))
            .and_then(|line| line.split(' ').next())
    });
    match listed {
        Some(path) if !read && !wanted.is_empty() => Move::Call(
            "read_skill_resource",
            serde_json::json!({ "name": skill, "path": path }).to_string(),
        ),
        _ => Move::Answer(version),
    }
}

/// The other skill `demo --delivery progressive` lists in every catalog: a fee estimator whose
/// description draws a model that reads "fee" in a task, though it decodes nothing.
pub const DISTRACTOR: &str = "solana-fee-planner";

/// The embedded bundle of [`DISTRACTOR`].
pub const DISTRACTOR_BUNDLE: &str = "solana-fee-planner-1.0.0";

/// FNV-1a of a text: a fixed hash, the same on every platform and run.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use skilltrial_core::manifest::Arm;
    use skilltrial_core::money::MicroUsd;

    fn request(attempt: Option<&str>, task: &str) -> ServerRequest {
        request_of(SCRIPTED_MODEL, "", attempt, task)
    }

    /// A request to `model`, with `skill` (a `<skill …>` tag, or nothing for the baseline).
    fn request_of(model: &str, skill: &str, attempt: Option<&str>, task: &str) -> ServerRequest {
        let body = serde_json::json!({
            "model": model,
            "messages": [{ "role": "user", "content": format!("{skill}<task id=\"{task}\">decode</task>") }],
        });
        ServerRequest {
            index: 0,
            method: "POST".to_owned(),
            path: "/v1/chat/completions".to_owned(),
            headers: attempt
                .map(|a| vec![(ATTEMPT_HEADER.to_owned(), a.to_owned())])
                .unwrap_or_default(),
            body: body.to_string().into_bytes(),
        }
    }

    fn planned(index: u32, task: &str, repetition: u32) -> PlannedTrial {
        PlannedTrial {
            index,
            task: task.to_owned(),
            arm: Arm::Baseline,
            repetition,
            input_token_bound: 1,
            max_output_tokens: 1,
            reserve: MicroUsd::ZERO,
            turns: None,
        }
    }

    fn answer(reply: Reply) -> String {
        match reply {
            Reply::Answer(text) => text,
            other => panic!("not an answer: {other:?}"),
        }
    }

    #[test]
    fn the_answer_follows_the_planned_repetition_not_the_order_requests_arrive_in() {
        let pack = skilltrial_core::pack::open("solana-core@1.0.3").unwrap();
        let task = "acct-usdc-mint";
        let plans = Plans::default();
        let run = "0123456789abcdef";
        // Trial 0 is the baseline's second repetition, trial 1 its first.
        plans.add(run, &[planned(0, task, 2), planned(1, task, 1)]);
        let respond = responder(pack.clone(), plans);
        let prose = pack
            .task(task)
            .unwrap()
            .known_wrong
            .iter()
            .find(|w| w.name == "prose");
        let prose = prose.unwrap().text();

        // The same body three times: a server that counted bodies would answer 1, 2, 3.
        let second = answer(respond(&request(
            Some("0123456789ab-000-1-aaaaaaaaaaaa"),
            task,
        )));
        let first = answer(respond(&request(
            Some("0123456789ab-001-1-bbbbbbbbbbbb"),
            task,
        )));
        let again = answer(respond(&request(
            Some("0123456789ab-000-2-cccccccccccc"),
            task,
        )));
        assert_eq!(second, prose, "repetition 2 of the baseline answers prose");
        assert!(
            first.contains("```json"),
            "repetition 1 answers the golden record: {first}"
        );
        assert_eq!(
            again, second,
            "a later attempt of the same trial gets the same answer"
        );
    }

    #[test]
    fn the_request_s_model_picks_the_script_and_any_other_name_gets_the_first() {
        let pack = skilltrial_core::pack::open("solana-core@1.0.3").unwrap();
        let task = "plan-t22-fee-memo";
        let plans = Plans::default();
        plans.add("0123456789abcdef", &[planned(0, task, 1)]);
        let respond = responder(pack.clone(), plans);
        let b = "<skill name=\"solana-reader\" version=\"1.5.0\">";
        let rounded = pack
            .task(task)
            .unwrap()
            .known_wrong
            .iter()
            .find(|w| w.name == "fee-rounded-down")
            .unwrap()
            .text();
        let attempt = Some("0123456789ab-000-1-aaaaaaaaaaaa");
        let ask = |model: &str| answer(respond(&request_of(model, b, attempt, task)));
        // B on the first script answers the golden plan; on the second it rounds the fee down.
        assert!(ask("skilltrial-scripted-1").contains("```json"));
        assert_eq!(ask(&ScriptedModel::Two.model_id()), rounded);
        assert!(ask("some-other-model").contains("```json"));
        assert_eq!(ScriptedModel::from_number(2), Some(ScriptedModel::Two));
        assert_eq!(ScriptedModel::from_number(3), None);
        assert_eq!(profile_of(ScriptedModel::Two, "http://x").id, "scripted@2");
    }

    /// Every answer a script names exists among its task's known-wrong answers, on both packs;
    /// and on the larger pack the story holds: the baseline passes almost nothing, B almost
    /// everything, and some answers are wrong, some invalid and some unsupported.
    #[test]
    fn every_scripted_answer_exists_and_the_larger_pack_tells_its_story() {
        use skilltrial_core::outcome::Outcome;
        for id in ["solana-core@1.0.3", LARGER_PACK] {
            let pack = skilltrial_core::pack::open(id).unwrap();
            for model in ScriptedModel::ALL {
                let mut passes: HashMap<Option<&str>, usize> = HashMap::new();
                let mut outcomes = std::collections::BTreeSet::new();
                for version in [None, Some("1.4.2"), Some("1.5.0")] {
                    for repetition in 1..=3 {
                        for task in &pack.tasks {
                            match scripted_choice(&pack.id(), model, task, version, repetition) {
                                None => *passes.entry(version).or_default() += 1,
                                Some(name) => {
                                    assert!(
                                        id != LARGER_PACK || name != "prose",
                                        "{} fell back to prose: none of its script's answers exist",
                                        task.id
                                    );
                                    let wrong = task
                                        .known_wrong
                                        .iter()
                                        .find(|w| w.name == name)
                                        .unwrap_or_else(|| {
                                            panic!("{id} {} has no known-wrong `{name}`", task.id)
                                        });
                                    outcomes.insert(wrong.outcome);
                                }
                            }
                        }
                    }
                }
                if id == LARGER_PACK {
                    let trials = 3 * pack.tasks.len();
                    let baseline = passes.get(&None).copied().unwrap_or(0);
                    let b = passes.get(&Some("1.5.0")).copied().unwrap_or(0);
                    assert!(baseline * 5 < trials, "{model:?}: baseline {baseline}");
                    assert!(b * 10 > trials * 9, "{model:?}: B {b} of {trials}");
                    assert!(outcomes.contains(&Outcome::Fail), "{model:?}");
                    assert!(outcomes.contains(&Outcome::UnsupportedCase), "{model:?}");
                }
            }
        }
    }

    #[test]
    fn a_request_outside_every_registered_plan_gets_an_error_naming_why() {
        let pack = skilltrial_core::pack::open("solana-core@1.0.3").unwrap();
        let plans = Plans::default();
        plans.add("0123456789abcdef", &[planned(0, "acct-usdc-mint", 1)]);
        let respond = responder(pack, plans);
        let message = |reply: Reply| match reply {
            Reply::Verbatim { status, body, .. } => {
                assert_eq!(status, 400);
                let v: serde_json::Value = serde_json::from_str(&body).unwrap();
                v["error"]["message"].as_str().unwrap().to_owned()
            }
            other => panic!("not an error: {other:?}"),
        };
        assert_eq!(
            message(respond(&request(None, "acct-usdc-mint"))),
            "scripted model: the request has no `x-skilltrial-attempt` header"
        );
        assert_eq!(
            message(respond(&request(
                Some("ffffffffffff-000-1-aa"),
                "acct-usdc-mint"
            ))),
            "scripted model: attempt `ffffffffffff-000-1-aa` names no planned trial"
        );
        assert_eq!(
            message(respond(&request(
                Some("0123456789ab-001-1-aa"),
                "acct-usdc-mint"
            ))),
            "scripted model: attempt `0123456789ab-001-1-aa` names no planned trial"
        );
        assert_eq!(
            message(respond(&request(
                Some("0123456789ab-000-1-aa"),
                "plan-usdc-transfer"
            ))),
            "scripted model: attempt `0123456789ab-000-1-aa` asks task `plan-usdc-transfer`, its trial is planned for `acct-usdc-mint`"
        );
    }
}
