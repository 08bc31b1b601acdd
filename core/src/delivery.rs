//! How a skill reaches the model: pasted whole into the prompt (`inline`, the default), or
//! disclosed progressively the way agents load Agent Skills (`progressive`): the system prompt
//! carries a catalog of each listed skill's `name` and `description`; the model loads a skill's
//! SKILL.md with the `load_skill` tool and reads one bundle file with `read_skill_resource`.
//!
//! **Invariants:**
//! - Everything a progressive request carries besides the task is a pure function of the pinned
//!   bundles (their stored bytes, never the disk), the pinned template and the pinned tool
//!   definitions, so a turn can be rebuilt byte for byte after a crash from the journal alone.
//! - A tool call is answered only from the bundle's own file list, by the normalised paths the
//!   digest uses: a path is looked up, never joined to a directory. Scripts and binaries are
//!   listed and never sent.
//! - Every tool call gets exactly one reply; every failure is a reply marked as an error (for
//!   the model) and an [`Effect::Error`] (for the evidence), never a panic.
//! - The bound of a trial of at most K turns ([`TurnBounds`]) cannot under-count the input of any
//!   of its requests: one token per byte of everything a request can carry, plus fixed overheads.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::bundle::{Bundle, FileKind};
use crate::digest::Sha256Digest;

/// The delivery modes.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The whole bundle in the user message of one request (today's prompt, byte for byte).
    #[default]
    Inline,
    /// A catalog in the system prompt and two tools, over at most K turns.
    Progressive,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Progressive => "progressive",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "inline" => Ok(Self::Inline),
            "progressive" => Ok(Self::Progressive),
            other => Err(format!(
                "unknown delivery `{other}`: use `inline` (the whole skill in the prompt) or `progressive` (a catalog and the load_skill / read_skill_resource tools)"
            )),
        }
    }
}

/// The default turn limit K of a progressive trial.
pub const DEFAULT_MAX_TURNS: u32 = 4;
/// The largest K accepted: the bound grows with K², and agents load a skill in one or two turns.
pub const MAX_TURNS: u32 = 12;

/// Checks a turn limit given by a person.
pub fn parse_max_turns(text: &str) -> Result<u32, String> {
    let k: u32 = text
        .trim()
        .parse()
        .map_err(|_| format!("--max-turns `{text}` is not a whole number from 2 to {MAX_TURNS}"))?;
    if !(2..=MAX_TURNS).contains(&k) {
        return Err(format!(
            "--max-turns {k} is outside 2 to {MAX_TURNS}: a progressive trial needs one turn to load and one to answer"
        ));
    }
    Ok(k)
}

/// Identifies [`TEMPLATE`], the tool definitions and the reply wrappers below; bump it when any
/// of them changes, since manifests pin it (with the hashes).
pub const TEMPLATE_ID: &str = "skilltrial-progressive-v1";

/// The progressive system template. `{{catalog}}` is replaced by the arm's catalog (an empty
/// `<available_skills>` element for an arm without skills). The user message is the task alone.
pub const TEMPLATE: &str = "\
[system]
You are answering one self-contained Solana task. Work only from the task text and from the \
skills you choose to load. You cannot run code or scripts, browse, or call any network. The only \
tools are load_skill, which returns a listed skill's instructions, and read_skill_resource, which \
returns one text file of a skill. Load a skill only when its description fits the task; read a \
file only when you need it. Follow the task's answer format exactly, and give the final answer \
as text, not as a tool call.

{{catalog}}

[user]
{{task}}";

/// SHA-256 of [`TEMPLATE`].
pub fn template_sha256() -> Sha256Digest {
    Sha256Digest::of(TEMPLATE.as_bytes())
}

/// The name of the tool that returns a skill's SKILL.md body.
pub const LOAD_SKILL: &str = "load_skill";
/// The name of the tool that returns one bundle file's text.
pub const READ_SKILL_RESOURCE: &str = "read_skill_resource";

/// One tool, provider-neutral: each wire format wraps it in its own envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ToolDef {
    pub name: &'static str,
    pub description: &'static str,
    /// JSON Schema of the arguments.
    pub input_schema: serde_json::Value,
}

/// The two tools, in their fixed order. The skill name is a free string (not an enum of the
/// catalog), so the definitions are the same for every arm and a wrong name is the model's
/// choice, counted as such.
pub fn tools() -> Vec<ToolDef> {
    vec![
        ToolDef {
            name: LOAD_SKILL,
            description: "Load the full instructions (SKILL.md) of one skill listed in <available_skills>. Returns the instructions and the list of the skill's files.",
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "The skill's name as listed." }
                },
                "required": ["name"],
                "additionalProperties": false
            }),
        },
        ToolDef {
            name: READ_SKILL_RESOURCE,
            description: "Read one text file of a listed skill, by the path load_skill listed (for example references/layouts.md).",
            input_schema: serde_json::json!({
                "type": "object",
                "properties": {
                    "name": { "type": "string", "description": "The skill's name as listed." },
                    "path": { "type": "string", "description": "The file's path inside the skill, as listed." }
                },
                "required": ["name", "path"],
                "additionalProperties": false
            }),
        },
    ]
}

/// The tool definitions as pinned: compact JSON, keys in the order written above.
pub fn tools_json() -> String {
    serde_json::to_string(&tools()).unwrap_or_default()
}

/// SHA-256 of [`tools_json`].
pub fn tools_sha256() -> Sha256Digest {
    Sha256Digest::of(tools_json().as_bytes())
}

/// What a manifest pins of a progressive run. Absent from an inline manifest, whose bytes and
/// hash it then leaves as they were.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeliveryPin {
    /// Always `progressive` (inline is the absence of this pin).
    pub mode: Mode,
    /// K: the most requests one trial sends.
    pub max_turns: u32,
    /// The tool definitions sent (compact JSON, provider-neutral) and their hash.
    pub tools: String,
    pub tools_sha256: String,
    /// Other skills listed in every arm's catalog beside the arm's own (`--with-skills`),
    /// digested and stored like A and B, in the order given. Absent when there are none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub with_skills: Vec<crate::manifest::BundleRef>,
}

impl DeliveryPin {
    /// The pin of a progressive run with turn limit `max_turns`.
    pub fn progressive(max_turns: u32) -> Self {
        Self {
            mode: Mode::Progressive,
            max_turns,
            tools: tools_json(),
            tools_sha256: tools_sha256().hex(),
            with_skills: Vec::new(),
        }
    }

    /// Whether the pin is what this build would write: a manifest whose tools or mode this build
    /// does not speak is refused, never run with other tools.
    pub fn is_current(&self) -> bool {
        self.mode == Mode::Progressive
            && self.tools == tools_json()
            && self.tools_sha256 == tools_sha256().hex()
            && (2..=MAX_TURNS).contains(&self.max_turns)
    }
}

/// Escapes text for the catalog's XML-like elements: a description cannot close an element or
/// open a new one.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            c => out.push(c),
        }
    }
    out
}

/// The inverse of [`escape`].
fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// The description shown for a bundle without one.
pub const NO_DESCRIPTION: &str = "(no description)";

/// The catalog block for `bundles`: sorted by name, one entry per name (the first given wins).
pub fn catalog_block(bundles: &[&Bundle]) -> String {
    let mut listed: Vec<&Bundle> = Vec::new();
    for bundle in bundles {
        if !listed.iter().any(|b| b.name == bundle.name) {
            listed.push(bundle);
        }
    }
    listed.sort_by(|x, y| x.name.cmp(&y.name));
    let mut block = String::from("<available_skills>\n");
    for bundle in listed {
        block.push_str(&format!(
            "<skill>\n<name>{}</name>\n<description>{}</description>\n</skill>\n",
            escape(&bundle.name),
            escape(
                bundle
                    .description
                    .as_deref()
                    .map(str::trim)
                    .filter(|d| !d.is_empty())
                    .unwrap_or(NO_DESCRIPTION)
            )
        ));
    }
    block.push_str("</available_skills>");
    block
}

/// The system text of a progressive request for the arm whose catalog lists `bundles`.
pub fn system_text(bundles: &[&Bundle]) -> String {
    let template = TEMPLATE.strip_prefix("[system]\n").unwrap_or(TEMPLATE);
    let system = template.split("\n\n[user]\n").next().unwrap_or(template);
    system.replacen("{{catalog}}", &catalog_block(bundles), 1)
}

/// One tool call as the model made it, provider-neutral.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The provider's id for the call (`toolu_…`, `call_…`), echoed in the reply.
    pub id: String,
    pub name: String,
    /// The arguments as JSON text, exactly as received (OpenAI sends a string that may not be
    /// valid JSON; Anthropic's `input` object is kept as its compact JSON).
    pub arguments: String,
}

/// The runner's reply to one call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolReply {
    /// The call's id.
    pub call_id: String,
    pub content: String,
    pub is_error: bool,
}

/// Why a call failed.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum ToolError {
    /// A tool that does not exist.
    UnknownTool,
    /// Arguments that are not a JSON object with the expected string fields.
    BadArguments,
    /// A skill name not in the catalog.
    UnknownSkill,
    /// A path that is not one of the skill's files (absolute, `..`, or simply absent).
    NotABundleFile,
    /// A script or a binary: listed, never sent.
    NeverSent,
    /// A second call in one turn (parallel calls are off): not served.
    ExtraCall,
    /// The trial had used its K turns.
    TurnLimit,
    /// A response with more than [`MAX_CALLS_PER_TURN`] calls: none served, the trial ends.
    TooManyCalls,
}

impl ToolError {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::UnknownTool => "unknown_tool",
            Self::BadArguments => "bad_arguments",
            Self::UnknownSkill => "unknown_skill",
            Self::NotABundleFile => "not_a_bundle_file",
            Self::NeverSent => "never_sent",
            Self::ExtraCall => "extra_call",
            Self::TurnLimit => "turn_limit",
            Self::TooManyCalls => "too_many_calls",
        }
    }
}

/// What a served call did, for the evidence.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "effect", rename_all = "snake_case")]
pub enum Effect {
    /// `load_skill` returned the skill's instructions.
    Loaded { skill: String },
    /// `load_skill` of a skill already loaded in this trial: a short note, not a second copy.
    AlreadyLoaded { skill: String },
    /// `read_skill_resource` returned a file.
    Read { skill: String, path: String },
    /// The call failed; the model got an error reply.
    Error {
        error: ToolError,
        /// The tool named in the call (as the model wrote it, at most 64 characters).
        tool: String,
    },
}

/// A call and what serving it did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Served {
    pub reply: ToolReply,
    pub effect: Effect,
}

/// The most calls one response may hold: the first is served, the next ones get
/// [`ToolError::ExtraCall`]; a response with more ends the trial (its replies could not be
/// bounded).
pub const MAX_CALLS_PER_TURN: usize = 8;

/// The tool side of one progressive trial: the catalog's bundles and what was loaded so far.
#[derive(Debug, Clone)]
pub struct Session<'a> {
    bundles: Vec<&'a Bundle>,
    loaded: BTreeSet<String>,
}

impl<'a> Session<'a> {
    /// A session over the arm's catalog.
    pub fn new(bundles: &[&'a Bundle]) -> Self {
        Self {
            bundles: bundles.to_vec(),
            loaded: BTreeSet::new(),
        }
    }

    /// Serves the calls of one response, in order: the first is answered, the others get
    /// [`ToolError::ExtraCall`]. `last_turn` marks the replies sent with the trial's last
    /// request, which says so.
    pub fn serve_turn(&mut self, calls: &[ToolCall], last_turn: bool) -> Vec<Served> {
        calls
            .iter()
            .enumerate()
            .map(|(i, call)| {
                let mut served = if i == 0 {
                    self.serve(call)
                } else {
                    error(call, ToolError::ExtraCall, EXTRA_CALL.to_owned())
                };
                if last_turn {
                    served.reply.content.push_str(LAST_TURN_NOTE);
                }
                served
            })
            .collect()
    }

    /// Serves one call.
    pub fn serve(&mut self, call: &ToolCall) -> Served {
        let args: Option<serde_json::Map<String, serde_json::Value>> =
            serde_json::from_str::<serde_json::Value>(&call.arguments)
                .ok()
                .and_then(|v| v.as_object().cloned());
        let field = |name: &str| {
            args.as_ref()
                .and_then(|a| a.get(name))
                .and_then(serde_json::Value::as_str)
        };
        match call.name.as_str() {
            LOAD_SKILL => {
                let Some(name) = field("name") else {
                    return error(call, ToolError::BadArguments, bad_arguments(LOAD_SKILL));
                };
                let Some(bundle) = self.find(name) else {
                    return error(call, ToolError::UnknownSkill, self.unknown_skill(name));
                };
                let skill = bundle.name.clone();
                if !self.loaded.insert(skill.clone()) {
                    return ok(
                        call,
                        format!(
                            "The skill {} is already loaded in this conversation; its instructions are above.",
                            escape(&skill)
                        ),
                        Effect::AlreadyLoaded { skill },
                    );
                }
                ok(call, skill_content(bundle), Effect::Loaded { skill })
            }
            READ_SKILL_RESOURCE => {
                let (Some(name), Some(path)) = (field("name"), field("path")) else {
                    return error(
                        call,
                        ToolError::BadArguments,
                        bad_arguments(READ_SKILL_RESOURCE),
                    );
                };
                let Some(bundle) = self.find(name) else {
                    return error(call, ToolError::UnknownSkill, self.unknown_skill(name));
                };
                let wanted = path.strip_prefix("./").unwrap_or(path);
                // The file list is XML-escaped: a path copied from it as written is found too.
                let unescaped = unescape(wanted);
                let Some(file) = bundle
                    .files
                    .iter()
                    .find(|f| f.path == wanted)
                    .or_else(|| bundle.files.iter().find(|f| f.path == unescaped))
                else {
                    return error(
                        call,
                        ToolError::NotABundleFile,
                        format!(
                            "{} is not a file of the skill {}: use a path load_skill listed.",
                            clip(path),
                            escape(&bundle.name)
                        ),
                    );
                };
                match (file.kind.is_prompt_text(), file.text()) {
                    (true, Some(text)) => ok(
                        call,
                        format!(
                            "<skill_resource name=\"{}\" path=\"{}\">\n{}\n</skill_resource>",
                            escape(&bundle.name),
                            escape(&file.path),
                            text.trim_end()
                        ),
                        Effect::Read {
                            skill: bundle.name.clone(),
                            path: file.path.clone(),
                        },
                    ),
                    _ => error(
                        call,
                        ToolError::NeverSent,
                        format!(
                            "{} is a {} file: it is listed, never run and never shown.",
                            escape(&file.path),
                            file.kind.as_str()
                        ),
                    ),
                }
            }
            _ => error(call, ToolError::UnknownTool, UNKNOWN_TOOL.to_owned()),
        }
    }

    fn find(&self, name: &str) -> Option<&'a Bundle> {
        self.bundles.iter().copied().find(|b| b.name == name)
    }

    fn unknown_skill(&self, name: &str) -> String {
        let mut names: Vec<&str> = self.bundles.iter().map(|b| b.name.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        if names.is_empty() {
            format!(
                "No skill is named {}: no skills are available here.",
                clip(name)
            )
        } else {
            format!(
                "No skill is named {}. Available: {}.",
                clip(name),
                escape(&names.join(", "))
            )
        }
    }
}

const UNKNOWN_TOOL: &str = "Unknown tool. The tools are load_skill and read_skill_resource.";
const EXTRA_CALL: &str = "Not served: one tool call per turn. Call it again on its own.";
/// Appended to every reply of a trial's last request.
pub const LAST_TURN_NOTE: &str = "\n[This is your last turn: answer now, as text. A further tool call ends the task unanswered.]";
/// The longest name or path echoed back in an error, in characters.
const ECHO_CHARS: usize = 120;

fn clip(text: &str) -> String {
    let clipped: String = text.chars().take(ECHO_CHARS).collect();
    format!("\"{}\"", escape(&clipped))
}

fn bad_arguments(tool: &str) -> String {
    if tool == LOAD_SKILL {
        "Bad arguments: load_skill takes a JSON object {\"name\": \"<skill name>\"}.".to_owned()
    } else {
        "Bad arguments: read_skill_resource takes a JSON object {\"name\": \"<skill name>\", \"path\": \"<file path>\"}.".to_owned()
    }
}

fn ok(call: &ToolCall, content: String, effect: Effect) -> Served {
    Served {
        reply: ToolReply {
            call_id: call.id.clone(),
            content,
            is_error: false,
        },
        effect,
    }
}

fn error(call: &ToolCall, error: ToolError, content: String) -> Served {
    Served {
        reply: ToolReply {
            call_id: call.id.clone(),
            content,
            is_error: true,
        },
        effect: Effect::Error {
            error,
            tool: call.name.chars().take(64).collect(),
        },
    }
}

/// The SKILL.md body (front matter removed) and the list of the skill's other files.
fn skill_content(bundle: &Bundle) -> String {
    let body = bundle
        .files
        .iter()
        .find(|f| f.kind == FileKind::Skill)
        .and_then(|f| f.text())
        .map(strip_front_matter)
        .unwrap_or("");
    let mut out = format!(
        "<skill_content name=\"{}\" version=\"{}\">\n{}\n</skill_content>\n<skill_files>\n",
        escape(&bundle.name),
        escape(bundle.version.as_deref().unwrap_or("unversioned")),
        body.trim()
    );
    for file in bundle.files.iter().filter(|f| f.kind != FileKind::Skill) {
        let note = if file.kind.is_prompt_text() {
            "readable"
        } else {
            "listed, never shown"
        };
        out.push_str(&format!(
            "{} ({}, {note})\n",
            escape(&file.path),
            file.kind.as_str()
        ));
    }
    out.push_str("</skill_files>");
    out
}

/// The text after a leading `---` front matter block, or the whole text.
fn strip_front_matter(text: &str) -> &str {
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return text;
    };
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        offset += line.len();
        if line.trim_end() == "---" {
            return &rest[offset..];
        }
    }
    text
}

/// A file read by a trial.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
pub struct ReadFile {
    pub skill: String,
    pub path: String,
}

/// How many calls failed for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct ErrorCount {
    pub error: ToolError,
    pub count: u32,
}

/// What one progressive trial showed about loading: derived from the tool calls journaled with
/// its turns (never from the answer's text), the same way on every replay.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TrialEvidence {
    /// Requests the trial sent (answered or not).
    pub turns: u32,
    /// The arm's own skill was loaded: a `load_skill` of its name that returned its
    /// instructions. Always false for the baseline.
    pub loaded: bool,
    /// The turn (1-based) whose call loaded the arm's skill.
    pub loaded_at_turn: Option<u32>,
    /// Every skill loaded, in the order of the calls (the arm's own and any other listed).
    pub skills_loaded: Vec<String>,
    /// Every file read, in the order of the calls.
    pub reads: Vec<ReadFile>,
    /// Failed calls, by reason (sorted by reason).
    pub tool_errors: Vec<ErrorCount>,
    /// The model still called a tool in the trial's last allowed turn: the trial ended there.
    pub turn_limit: bool,
    /// Bytes each tier put in front of the model (tokens are at most bytes): the catalog
    /// (system text with the catalog), the instructions (`load_skill` replies) and the resources
    /// (`read_skill_resource` replies).
    pub catalog_bytes: u64,
    pub instructions_bytes: u64,
    pub resources_bytes: u64,
}

impl TrialEvidence {
    /// The evidence of a trial whose turns served `turns` (each turn's calls, in order), for the
    /// arm whose own skill is `arm_skill` (`None` for the baseline), with `catalog_bytes` of
    /// system text.
    pub fn of(
        arm_skill: Option<&str>,
        catalog_bytes: u64,
        turns: &[Vec<Served>],
        requests: u32,
        turn_limit: bool,
    ) -> Self {
        let mut evidence = Self {
            turns: requests,
            catalog_bytes,
            turn_limit,
            ..Self::default()
        };
        let mut errors: std::collections::BTreeMap<ToolError, u32> = Default::default();
        for (i, served) in turns.iter().enumerate() {
            for s in served {
                let bytes = s.reply.content.len() as u64;
                match &s.effect {
                    Effect::Loaded { skill } => {
                        evidence.instructions_bytes += bytes;
                        if Some(skill.as_str()) == arm_skill && !evidence.loaded {
                            evidence.loaded = true;
                            evidence.loaded_at_turn = u32::try_from(i + 1).ok();
                        }
                        evidence.skills_loaded.push(skill.clone());
                    }
                    Effect::AlreadyLoaded { .. } => evidence.instructions_bytes += bytes,
                    Effect::Read { skill, path } => {
                        evidence.resources_bytes += bytes;
                        evidence.reads.push(ReadFile {
                            skill: skill.clone(),
                            path: path.clone(),
                        });
                    }
                    Effect::Error { error, .. } => *errors.entry(*error).or_default() += 1,
                }
            }
        }
        evidence.tool_errors = errors
            .into_iter()
            .map(|(error, count)| ErrorCount { error, count })
            .collect();
        evidence
    }
}

/// Token overhead of the tools' hidden system prompt that providers add (Anthropic's table tops
/// out at 804 tokens; OpenAI does not publish its figure): generous on purpose.
pub const TOOL_PROMPT_OVERHEAD: u64 = 1_024;
/// Tokens of framing per turn carried in the history (role markers, tool ids, block wrappers).
pub const TURN_OVERHEAD: u64 = 256;

/// The bound of a progressive trial, in tokens (one per byte plus overheads).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct TurnBounds {
    /// The input of the first request: system with catalog, tools, task, overheads.
    pub first_input: u64,
    /// What each later request may add: the previous answer (at most the output limit), the
    /// replies to its calls, framing.
    pub step: u64,
    /// K.
    pub turns: u32,
}

impl TurnBounds {
    /// The bound for a trial of at most `turns` requests of `max_output_tokens` each, whose first
    /// request carries `system` and `task_text`, over a catalog of `bundles`.
    pub fn of(
        bundles: &[&Bundle],
        system: &str,
        task_text: &str,
        max_output_tokens: u64,
        turns: u32,
    ) -> Self {
        let first_input = (system.len() as u64)
            .saturating_add(task_text.len() as u64)
            .saturating_add(tools_json().len() as u64)
            .saturating_add(TOOL_PROMPT_OVERHEAD)
            .saturating_add(crate::prompt::TOKEN_OVERHEAD);
        let replies = largest_reply(bundles)
            .saturating_add(LAST_TURN_NOTE.len() as u64)
            .saturating_add(
                (MAX_CALLS_PER_TURN as u64 - 1)
                    .saturating_mul(EXTRA_CALL.len() as u64 + LAST_TURN_NOTE.len() as u64),
            );
        let step = max_output_tokens
            .saturating_add(replies)
            .saturating_add((MAX_CALLS_PER_TURN as u64).saturating_mul(TURN_OVERHEAD));
        Self {
            first_input,
            step,
            turns,
        }
    }

    /// The input bound of request `turn` (1-based).
    pub fn input_of(&self, turn: u32) -> u64 {
        self.first_input
            .saturating_add(u64::from(turn.saturating_sub(1)).saturating_mul(self.step))
    }

    /// The input bound of turns `from..=K`, summed.
    pub fn input_from(&self, from: u32) -> u64 {
        (from.max(1)..=self.turns).fold(0u64, |sum, k| sum.saturating_add(self.input_of(k)))
    }

    /// The whole trial's input bound.
    pub fn input_total(&self) -> u64 {
        self.input_from(1)
    }
}

/// The largest single reply a call to `bundles` can get, in bytes: a loaded SKILL.md with its
/// file list, one text file with its wrapper, or the longest error.
fn largest_reply(bundles: &[&Bundle]) -> u64 {
    let errors = [
        UNKNOWN_TOOL.len(),
        EXTRA_CALL.len(),
        bad_arguments(READ_SKILL_RESOURCE).len(),
        // An echoed name or path (each character at most 4 bytes, escaped at most 6) plus the
        // catalog's names and the sentence around them.
        ECHO_CHARS * 6 + 200,
    ];
    let mut largest = errors.into_iter().max().unwrap_or(0) as u64;
    let names: u64 = bundles.iter().map(|b| b.name.len() as u64 * 6 + 2).sum();
    largest = largest.saturating_add(names);
    for bundle in bundles {
        largest = largest.max(skill_content(bundle).len() as u64);
        // Scripts and binaries are never returned (their call gets an error, bounded above).
        for file in bundle.files.iter().filter(|f| f.kind.is_prompt_text()) {
            let wrapped = (file.size())
                .saturating_add(bundle.name.len() as u64 * 6)
                .saturating_add(file.path.len() as u64 * 6)
                .saturating_add(80);
            largest = largest.max(wrapped);
        }
    }
    largest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::{Limits, SourceKind, from_files};

    fn bundle(name: &str, description: &str) -> Bundle {
        from_files(
            vec![
                (
                    "SKILL.md".to_owned(),
                    format!(
                        "---\nname: {name}\ndescription: {description}\n---\n# {name}\nRead references/a.md.\n"
                    )
                    .into_bytes(),
                ),
                (
                    "references/a.md".to_owned(),
                    b"layout notes <b>&</b>\n".to_vec(),
                ),
                (
                    "scripts/run.py".to_owned(),
                    b"#!/usr/bin/env python3\nprint(1)\n".to_vec(),
                ),
            ],
            SourceKind::Folder,
            &Limits::default(),
        )
        .expect("a valid bundle")
    }

    fn call(name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            id: "call_1".to_owned(),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        }
    }

    #[test]
    fn scripts_and_binaries_never_widen_a_trials_bound() {
        // Given the same skill with and without a large binary and a large script,
        let with = |extra: Vec<(String, Vec<u8>)>| {
            let mut files = vec![
                (
                    "SKILL.md".to_owned(),
                    b"---\nname: s\ndescription: d\n---\n# s\n".to_vec(),
                ),
                ("references/a.md".to_owned(), vec![b'x'; 5_000]),
            ];
            files.extend(extra);
            from_files(files, SourceKind::Folder, &Limits::default()).expect("a valid bundle")
        };
        let plain = with(Vec::new());
        let heavy = with(vec![
            ("assets/blob.bin".to_owned(), vec![0xff; 400_000]),
            (
                "scripts/big.py".to_owned(),
                format!("#!/usr/bin/env python3\n{}", "#".repeat(200_000)).into_bytes(),
            ),
        ]);
        let bound = |b: &Bundle| TurnBounds::of(&[b], "system", "task", 1_000, 4);
        // then their bounds are the same: neither is ever returned to the model; a longer
        // reference does widen it.
        assert_eq!(bound(&plain), bound(&heavy));
        let longer = with(vec![("references/b.md".to_owned(), vec![b'y'; 50_000])]);
        assert!(bound(&longer).step > bound(&plain).step);
    }

    #[test]
    fn the_catalog_is_sorted_escaped_and_lists_each_name_once() {
        let x = bundle("zeta-skill", "ends </description><b>");
        let y = bundle("alpha-skill", "reads & decodes");
        let block = catalog_block(&[&x, &y, &x]);
        assert!(block.find("alpha-skill") < block.find("zeta-skill"));
        assert_eq!(block.matches("<name>zeta-skill</name>").count(), 1);
        assert!(block.contains("ends &lt;/description&gt;&lt;b&gt;"));
        assert!(block.contains("reads &amp; decodes"));
        assert_eq!(
            catalog_block(&[]),
            "<available_skills>\n</available_skills>"
        );
        assert!(system_text(&[&y]).ends_with("</available_skills>"));
        assert!(!system_text(&[&y]).contains("{{"));
    }

    #[test]
    fn load_skill_returns_the_body_without_front_matter_and_lists_files_once() {
        let x = bundle("solana-x", "d");
        let mut session = Session::new(&[&x]);
        let served = session.serve(&call(LOAD_SKILL, r#"{"name":"solana-x"}"#));
        assert!(!served.reply.is_error);
        assert_eq!(
            served.effect,
            Effect::Loaded {
                skill: "solana-x".into()
            }
        );
        assert!(served.reply.content.contains("# solana-x"));
        assert!(!served.reply.content.contains("description: d"));
        assert!(
            served
                .reply
                .content
                .contains("scripts/run.py (script, listed, never shown)")
        );
        let again = session.serve(&call(LOAD_SKILL, r#"{"name":"solana-x"}"#));
        assert!(matches!(again.effect, Effect::AlreadyLoaded { .. }));
        assert!(again.reply.content.len() < served.reply.content.len());
    }

    #[test]
    fn every_bad_call_is_an_error_reply_with_its_kind() {
        let x = bundle("solana-x", "d");
        let mut session = Session::new(&[&x]);
        let kind = |s: Served| match s.effect {
            Effect::Error { error, .. } => {
                assert!(s.reply.is_error);
                Some(error)
            }
            _ => None,
        };
        let cases = [
            (call("bash", "{}"), ToolError::UnknownTool),
            (call(LOAD_SKILL, "not json"), ToolError::BadArguments),
            (call(LOAD_SKILL, r#"{"name":7}"#), ToolError::BadArguments),
            (call(LOAD_SKILL, r#"["solana-x"]"#), ToolError::BadArguments),
            (
                call(LOAD_SKILL, r#"{"name":"other"}"#),
                ToolError::UnknownSkill,
            ),
            (
                call(READ_SKILL_RESOURCE, r#"{"name":"solana-x"}"#),
                ToolError::BadArguments,
            ),
            (
                call(
                    READ_SKILL_RESOURCE,
                    r#"{"name":"solana-x","path":"../etc/passwd"}"#,
                ),
                ToolError::NotABundleFile,
            ),
            (
                call(
                    READ_SKILL_RESOURCE,
                    r#"{"name":"solana-x","path":"/references/a.md"}"#,
                ),
                ToolError::NotABundleFile,
            ),
            (
                call(
                    READ_SKILL_RESOURCE,
                    r#"{"name":"solana-x","path":"scripts/run.py"}"#,
                ),
                ToolError::NeverSent,
            ),
        ];
        for (c, expected) in cases {
            assert_eq!(kind(session.serve(&c)), Some(expected), "{c:?}");
        }
        let read = session.serve(&call(
            READ_SKILL_RESOURCE,
            r#"{"name":"solana-x","path":"./references/a.md"}"#,
        ));
        assert_eq!(
            read.effect,
            Effect::Read {
                skill: "solana-x".into(),
                path: "references/a.md".into()
            }
        );
        assert!(read.reply.content.contains("layout notes <b>&</b>"));
    }

    #[test]
    fn a_path_copied_as_the_file_list_escapes_it_is_found() {
        let odd = from_files(
            vec![
                (
                    "SKILL.md".to_owned(),
                    b"---\nname: odd\ndescription: d\n---\nbody\n".to_vec(),
                ),
                ("references/a & \"b\".md".to_owned(), b"text\n".to_vec()),
            ],
            SourceKind::Folder,
            &Limits::default(),
        )
        .unwrap();
        let mut session = Session::new(&[&odd]);
        let listed = session.serve(&call(LOAD_SKILL, r#"{"name":"odd"}"#));
        assert!(
            listed
                .reply
                .content
                .contains("references/a &amp; &quot;b&quot;.md")
        );
        for path in [
            "references/a & \"b\".md",
            "references/a &amp; &quot;b&quot;.md",
        ] {
            let args = serde_json::json!({ "name": "odd", "path": path }).to_string();
            let read = session.serve(&call(READ_SKILL_RESOURCE, &args));
            assert!(
                matches!(read.effect, Effect::Read { .. }),
                "{path}: {read:?}"
            );
        }
    }

    #[test]
    fn only_the_first_call_of_a_turn_is_served_and_the_last_turn_says_so() {
        let x = bundle("solana-x", "d");
        let mut session = Session::new(&[&x]);
        let calls = [
            call(LOAD_SKILL, r#"{"name":"solana-x"}"#),
            call(LOAD_SKILL, r#"{"name":"solana-x"}"#),
        ];
        let served = session.serve_turn(&calls, true);
        assert!(matches!(served[0].effect, Effect::Loaded { .. }));
        assert!(matches!(
            served[1].effect,
            Effect::Error {
                error: ToolError::ExtraCall,
                ..
            }
        ));
        assert!(
            served
                .iter()
                .all(|s| s.reply.content.ends_with(LAST_TURN_NOTE))
        );
    }

    #[test]
    fn no_reply_is_larger_than_the_bound_allows() {
        let x = bundle("solana-x", "d");
        let bounds = TurnBounds::of(&[&x], &system_text(&[&x]), "task", 100, 4);
        let mut session = Session::new(&[&x]);
        let long_path = format!(r#"{{"name":"solana-x","path":"{}"}}"#, "é\\\"<".repeat(500));
        let replies: Vec<Served> = [
            call(LOAD_SKILL, r#"{"name":"solana-x"}"#),
            call(
                READ_SKILL_RESOURCE,
                r#"{"name":"solana-x","path":"references/a.md"}"#,
            ),
            call(READ_SKILL_RESOURCE, &long_path),
            call(LOAD_SKILL, &format!(r#"{{"name":"{}"}}"#, "<".repeat(900))),
        ]
        .iter()
        .map(|c| session.serve(c))
        .collect();
        let step_replies = bounds.step - 100 - MAX_CALLS_PER_TURN as u64 * TURN_OVERHEAD;
        for served in replies {
            assert!(
                (served.reply.content.len() + LAST_TURN_NOTE.len()) as u64 <= step_replies,
                "{served:?}"
            );
        }
        assert_eq!(bounds.input_of(1), bounds.first_input);
        assert_eq!(
            bounds.input_total(),
            4 * bounds.first_input + 6 * bounds.step
        );
        assert_eq!(
            bounds.input_from(3),
            bounds.input_of(3) + bounds.input_of(4)
        );
    }

    #[test]
    fn the_pinned_definitions_are_what_this_build_sends() {
        let pin = DeliveryPin::progressive(DEFAULT_MAX_TURNS);
        assert!(pin.is_current());
        let json: serde_json::Value = serde_json::from_str(&pin.tools).unwrap();
        assert_eq!(json[0]["name"], LOAD_SKILL);
        assert_eq!(json[1]["name"], READ_SKILL_RESOURCE);
        assert!(
            !DeliveryPin {
                max_turns: 1,
                ..pin.clone()
            }
            .is_current()
        );
        assert_eq!(parse_max_turns("4"), Ok(4));
        assert!(
            parse_max_turns("1")
                .unwrap_err()
                .contains("outside 2 to 12")
        );
        assert!(parse_max_turns("x").is_err());
        assert_eq!("progressive".parse::<Mode>(), Ok(Mode::Progressive));
        assert!("eager".parse::<Mode>().unwrap_err().contains("`eager`"));
    }
}
