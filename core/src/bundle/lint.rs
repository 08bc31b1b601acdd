//! `validate --lint` (docs/bundles.md, "Lint rules"): named rules for skill authors, each with a
//! stable id, a severity per mode and a `file:line`.
//!
//! Two modes: **strict** holds a bundle to the Agent Skills format as written; **lenient** accepts
//! what Claude Code accepts (its extra front-matter keys, a name that is not the folder's) and
//! turns the format's recommendations into information. Linting reads an imported [`Bundle`] and
//! changes nothing in it: a bundle's digest, a manifest and every score are the same whatever the
//! lint says. [`fix`] rewrites only what is mechanical (a `name` into the format, a link whose
//! target differs from a bundle file only in letter case), and only when asked.

use std::collections::BTreeMap;

use serde::Serialize;

use super::front_matter::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS};
use super::scan::{BundleLink, bundle_links};
use super::{Bundle, FileKind, SKILL_FILE};

/// Which rule set applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// The Agent Skills format as written.
    #[default]
    Strict,
    /// What Claude Code accepts.
    Lenient,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Strict => "strict",
            Self::Lenient => "lenient",
        }
    }
}

/// How much a finding matters. Only errors fail `validate --lint`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warning => "warning",
            Self::Info => "info",
        }
    }
}

/// A rule: its id, what it asks, and its severity in each mode (`None`: not checked).
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Rule {
    pub id: &'static str,
    pub summary: &'static str,
    pub strict: Option<Severity>,
    pub lenient: Option<Severity>,
    /// Whether `--fix` can repair it.
    pub fixable: bool,
}

impl Rule {
    /// The severity in `mode`, if the rule applies there.
    pub fn severity(&self, mode: Mode) -> Option<Severity> {
        match mode {
            Mode::Strict => self.strict,
            Mode::Lenient => self.lenient,
        }
    }
}

use Severity::{Error, Info, Warning};

/// Every rule, in the order findings are reported within a line.
pub const RULES: [Rule; 12] = [
    Rule {
        id: "name-format",
        summary: "`name` is 1-64 lowercase letters, digits and single hyphens, not at either end",
        strict: Some(Error),
        lenient: Some(Warning),
        fixable: true,
    },
    Rule {
        id: "name-matches-folder",
        summary: "`name` is the name of the skill's folder",
        strict: Some(Warning),
        lenient: None,
        fixable: false,
    },
    Rule {
        id: "description-missing",
        summary: "the front matter has a non-empty `description`",
        strict: Some(Error),
        lenient: Some(Error),
        fixable: false,
    },
    Rule {
        id: "description-too-long",
        summary: "`description` has at most 1024 characters",
        strict: Some(Error),
        lenient: Some(Warning),
        fixable: false,
    },
    Rule {
        id: "description-trigger",
        summary: "`description` says when to use the skill (\"Use when …\")",
        strict: Some(Warning),
        lenient: Some(Info),
        fixable: false,
    },
    Rule {
        id: "front-matter-key",
        summary: "the front matter holds only keys the mode knows",
        strict: Some(Warning),
        lenient: Some(Info),
        fixable: false,
    },
    Rule {
        id: "body-lines",
        summary: "SKILL.md's body has at most 500 lines",
        strict: Some(Warning),
        lenient: Some(Warning),
        fixable: false,
    },
    Rule {
        id: "body-tokens",
        summary: "SKILL.md's body has at most about 5000 tokens",
        strict: Some(Warning),
        lenient: Some(Info),
        fixable: false,
    },
    Rule {
        id: "reference-missing",
        summary: "every link to a bundle file names a file the bundle holds",
        strict: Some(Error),
        lenient: Some(Error),
        fixable: true,
    },
    Rule {
        id: "reference-depth",
        summary: "every file SKILL.md relies on is linked from SKILL.md itself (one level deep)",
        strict: Some(Warning),
        lenient: Some(Info),
        fixable: false,
    },
    Rule {
        id: "script-usage",
        summary: "every script is named in SKILL.md or a reference, saying how to run it",
        strict: Some(Warning),
        lenient: Some(Warning),
        fixable: false,
    },
    Rule {
        id: "file-unreferenced",
        summary: "every reference file is linked from a Markdown file of the bundle",
        strict: Some(Info),
        lenient: None,
        fixable: false,
    },
];

/// The most lines the body of SKILL.md should have.
pub const MAX_BODY_LINES: usize = 500;
/// The most tokens (estimated) the body of SKILL.md should have.
pub const MAX_BODY_TOKENS: usize = 5_000;

/// Front-matter keys of the Agent Skills format.
const AGENT_SKILLS_KEYS: [&str; 6] = [
    "name",
    "description",
    "license",
    "compatibility",
    "metadata",
    "allowed-tools",
];

/// Keys Claude Code reads besides those (and `version`, which SkillTrial reads).
const CLAUDE_CODE_KEYS: [&str; 10] = [
    "version",
    "argument-hint",
    "disable-model-invocation",
    "user-invocable",
    "model",
    "effort",
    "context",
    "agent",
    "hooks",
    "when_to_use",
];

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Finding {
    pub rule: &'static str,
    pub severity: Severity,
    /// Bundle path of the file.
    pub path: String,
    /// 1-based line.
    pub line: usize,
    pub message: String,
    /// The mechanical fix, `null` when there is none.
    pub fix: Option<Fix>,
}

/// A mechanical fix: on line `line` of `path`, `old` becomes `new`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Fix {
    pub path: String,
    pub line: usize,
    pub old: String,
    pub new: String,
    pub kind: FixKind,
}

/// What a fix rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FixKind {
    /// The whole line (`old` is the line as it stands).
    Line,
    /// Every link target `old` on the line — in `](…)`, `]: …` and `href`/`src` attributes,
    /// outside code spans — and nothing else on it.
    LinkTarget,
}

/// What [`fix`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fixed {
    /// The files that changed, with their new text.
    pub changed: BTreeMap<String, String>,
    /// The fixes applied.
    pub applied: Vec<Fix>,
    /// The fixes not applied, and why.
    pub skipped: Vec<(Fix, String)>,
}

/// Lints `bundle` in `mode`. `folder` is the name of the folder it was read from (`None` for a
/// ZIP, whose name says nothing). Findings sorted by path, line, rule order.
pub fn lint(bundle: &Bundle, mode: Mode, folder: Option<&str>) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut push =
        |rule_id: &'static str, path: &str, line: usize, message: String, fix: Option<Fix>| {
            let Some(rule) = RULES.iter().find(|r| r.id == rule_id) else {
                return;
            };
            if let Some(severity) = rule.severity(mode) {
                out.push(Finding {
                    rule: rule.id,
                    severity,
                    path: path.to_owned(),
                    line,
                    message,
                    fix,
                });
            }
        };
    let skill = bundle
        .files
        .iter()
        .find(|f| f.path == SKILL_FILE)
        .and_then(|f| f.text())
        .unwrap_or("");
    let header = Header::read(skill);

    // The front matter.
    let name_line = header.line_of("name");
    if let Some(problem) = name_problem(&bundle.name) {
        let fixed = normalized_name(&bundle.name);
        let fix = fixed
            .as_ref()
            .and_then(|new| header.value_fix(skill, "name", &bundle.name, new));
        let hint = match (&fixed, &fix) {
            (Some(n), Some(_)) => format!(" (`{n}` would be)"),
            (Some(n), None) => format!(
                " (`{n}` would be; --fix rewrites only a plain `name: value` line: edit this one by hand)"
            ),
            (None, _) => String::new(),
        };
        push(
            "name-format",
            SKILL_FILE,
            name_line,
            format!("{problem}{hint}"),
            fix,
        );
    }
    if let Some(folder) = folder.filter(|f| *f != bundle.name) {
        push(
            "name-matches-folder",
            SKILL_FILE,
            name_line,
            format!("`name` is `{}` but the folder is `{folder}`", bundle.name),
            None,
        );
    }
    let description_line = header.line_of("description");
    match bundle.description.as_deref().map(str::trim) {
        None | Some("") => push(
            "description-missing",
            SKILL_FILE,
            description_line,
            "no `description`: agents read it to decide when to load the skill".to_owned(),
            None,
        ),
        Some(d) => {
            let chars = d.chars().count();
            if chars > MAX_DESCRIPTION_CHARS {
                push(
                    "description-too-long",
                    SKILL_FILE,
                    description_line,
                    format!(
                        "`description` has {chars} characters; at most {MAX_DESCRIPTION_CHARS}"
                    ),
                    None,
                );
            }
            if !says_when(d) {
                push(
                    "description-trigger",
                    SKILL_FILE,
                    description_line,
                    "`description` says what the skill does but not when to use it: add a sentence such as \"Use when …\"".to_owned(),
                    None,
                );
            }
        }
    }
    for (key, line) in &header.keys {
        let known = AGENT_SKILLS_KEYS.contains(&key.as_str())
            || (mode == Mode::Lenient && CLAUDE_CODE_KEYS.contains(&key.as_str()));
        if !known {
            let known_to = if CLAUDE_CODE_KEYS.contains(&key.as_str()) {
                "a Claude Code key, not in the Agent Skills format"
            } else {
                "not a key of the Agent Skills format or Claude Code"
            };
            push(
                "front-matter-key",
                SKILL_FILE,
                *line,
                format!("`{key}`: {known_to}"),
                None,
            );
        }
    }

    // The body.
    let body_lines = skill.lines().count().saturating_sub(header.end_line);
    if body_lines > MAX_BODY_LINES {
        push(
            "body-lines",
            SKILL_FILE,
            header.end_line + MAX_BODY_LINES + 1,
            format!(
                "the body has {body_lines} lines; keep SKILL.md under {MAX_BODY_LINES} and move detail into reference files it links"
            ),
            None,
        );
    }
    let body_bytes: usize = skill
        .lines()
        .skip(header.end_line)
        .map(|l| l.len() + 1)
        .sum();
    let tokens = body_bytes.div_ceil(4);
    if tokens > MAX_BODY_TOKENS {
        push(
            "body-tokens",
            SKILL_FILE,
            header.end_line + 1,
            format!(
                "the body is about {tokens} tokens (bytes ÷ 4); keep it under {MAX_BODY_TOKENS} and move detail into reference files it links"
            ),
            None,
        );
    }

    // References.
    let exists = |p: &str| {
        if let Some(dir) = p.strip_suffix('/') {
            let prefix = format!("{dir}/");
            bundle.files.iter().any(|f| f.path.starts_with(&prefix))
        } else {
            bundle.files.iter().any(|f| f.path == p)
        }
    };
    let mut links: BTreeMap<&str, Vec<BundleLink>> = BTreeMap::new();
    for file in &bundle.files {
        if let Some(text) = file.text() {
            links.insert(&file.path, bundle_links(&file.path, text, &exists));
        }
    }
    for (path, list) in &links {
        for link in list.iter().filter(|l| !l.exists) {
            let fix = case_fix(bundle, link).map(|new| Fix {
                path: (*path).to_owned(),
                line: link.line,
                old: link.target.clone(),
                new,
                kind: FixKind::LinkTarget,
            });
            let hint = fix
                .as_ref()
                .map_or_else(String::new, |f| format!(" (did you mean `{}`?)", f.new));
            push(
                "reference-missing",
                path,
                link.line,
                format!(
                    "links to `{}`, which the bundle does not hold{hint}",
                    link.resolved
                ),
                fix,
            );
        }
    }
    let from_skill: Vec<&str> = links
        .get(SKILL_FILE)
        .map(|l| {
            l.iter()
                .filter(|l| l.exists)
                .map(|l| l.resolved.as_str())
                .collect()
        })
        .unwrap_or_default();
    let linked_directly = |p: &str| {
        p == SKILL_FILE
            || from_skill
                .iter()
                .any(|t| *t == p || p.starts_with(&format!("{}/", t.trim_end_matches('/'))))
    };
    for reference in &from_skill {
        for link in links.get(reference).into_iter().flatten() {
            if link.exists && !linked_directly(&link.resolved) {
                push(
                    "reference-depth",
                    reference,
                    link.line,
                    format!(
                        "`{}` is reached only through `{reference}`: link it from SKILL.md, so an agent finds every file one step from the skill",
                        link.resolved
                    ),
                    None,
                );
            }
        }
    }
    let linked_anywhere = |p: &str| {
        links.values().flatten().any(|l| {
            l.exists
                && (l.resolved == p
                    || p.starts_with(&format!("{}/", l.resolved.trim_end_matches('/'))))
        })
    };
    let markdown_text: Vec<&str> = bundle
        .files
        .iter()
        .filter(|f| super::markdown::is_markdown(&f.path))
        .filter_map(|f| f.text())
        .collect();
    for file in &bundle.files {
        match file.kind {
            FileKind::Script => {
                let base = file.path.rsplit('/').next().unwrap_or(&file.path);
                let named = markdown_text
                    .iter()
                    .any(|t| mentions(t, &file.path) || mentions(t, base));
                if !named {
                    push(
                        "script-usage",
                        &file.path,
                        1,
                        format!(
                            "no Markdown file of the bundle names `{}`: say in SKILL.md what it does and how to run it",
                            file.path
                        ),
                        None,
                    );
                }
            }
            _ if file.path != SKILL_FILE
                && super::markdown::is_markdown(&file.path)
                && !linked_anywhere(&file.path) =>
            {
                push(
                    "file-unreferenced",
                    &file.path,
                    1,
                    "no Markdown file of the bundle links here: an agent reading SKILL.md will not find it".to_owned(),
                    None,
                );
            }
            _ => {}
        }
    }
    let order = |id: &str| RULES.iter().position(|r| r.id == id).unwrap_or(usize::MAX);
    out.sort_by(|a, b| {
        (&a.path, a.line, order(a.rule), &a.message).cmp(&(
            &b.path,
            b.line,
            order(b.rule),
            &b.message,
        ))
    });
    // A file linked several times from SKILL.md is reported once per line, not once per link.
    out.dedup();
    out
}

/// Whether `text` names `name` as a whole word: not as part of a longer file name or path.
fn mentions(text: &str, name: &str) -> bool {
    let part = |c: char| c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/');
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        before.is_none_or(|c| !part(c) || (c == '/' && !name.contains('/')))
            && after.is_none_or(|c| {
                !part(c)
                    || (c == '.'
                        && text[at + name.len() + 1..]
                            .chars()
                            .next()
                            .is_none_or(char::is_whitespace))
            })
    })
}

/// Applies the mechanical fixes of `findings` to `files` (bundle path → text). A fix whose
/// text is no longer where it was found is skipped and said so. Each file is split and joined
/// once, whatever the number of fixes.
pub fn fix(files: &BTreeMap<String, String>, findings: &[Finding]) -> Fixed {
    let mut by_path: BTreeMap<&str, Vec<&Fix>> = BTreeMap::new();
    for f in findings.iter().filter_map(|f| f.fix.as_ref()) {
        by_path.entry(f.path.as_str()).or_default().push(f);
    }
    let mut out = Fixed::default();
    for (path, fixes) in by_path {
        let Some(text) = files.get(path) else {
            continue;
        };
        let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
        let mut changed = false;
        for f in fixes {
            let Some(line) = f.line.checked_sub(1).and_then(|i| lines.get_mut(i)) else {
                out.skipped
                    .push((f.clone(), format!("{path} has no line {}", f.line)));
                continue;
            };
            let ending = if line.ends_with('\r') { "\r" } else { "" };
            let body = line.trim_end_matches('\r');
            let rewritten = match f.kind {
                FixKind::Line => (body == f.old).then(|| f.new.clone()),
                FixKind::LinkTarget => replace_link_targets(body, &f.old, &f.new),
            };
            match rewritten {
                Some(new) => {
                    *line = format!("{new}{ending}");
                    changed = true;
                    out.applied.push(f.clone());
                }
                None => out.skipped.push((
                    f.clone(),
                    format!("{path}:{}: the text to fix is no longer there", f.line),
                )),
            }
        }
        if changed {
            out.changed.insert(path.to_owned(), lines.join("\n"));
        }
    }
    out
}

/// `line` with every link target `old` replaced by `new`: an occurrence right after `](`, `](<`,
/// `]:` (with spaces) or `="` / `='`, ending the target (followed by `)`, `>`, `#`, `?`, a quote,
/// a space or the end), outside code spans. `None` when there is none.
fn replace_link_targets(line: &str, old: &str, new: &str) -> Option<String> {
    if old.is_empty() {
        return None;
    }
    let visible = super::markdown::blank_code_spans(line);
    let mut out = String::with_capacity(line.len());
    let mut copied = 0;
    let mut found = false;
    let mut from = 0;
    while let Some(i) = visible[from..].find(old).map(|i| i + from) {
        let before = visible[..i].trim_end_matches(' ');
        let opens = visible[..i].ends_with("](")
            || visible[..i].ends_with("](<")
            || visible[..i].ends_with("=\"")
            || visible[..i].ends_with("='")
            || (before.ends_with("]:") && before.trim_start().starts_with('['));
        let end = i + old.len();
        let closes = visible[end..]
            .chars()
            .next()
            .is_none_or(|c| matches!(c, ')' | '>' | '#' | '?' | '"' | '\'' | ' ' | '\t'));
        if opens && closes {
            out.push_str(&line[copied..i]);
            out.push_str(new);
            copied = end;
            found = true;
        }
        from = end;
    }
    if !found {
        return None;
    }
    out.push_str(&line[copied..]);
    Some(out)
}

/// The top-level keys of SKILL.md's front matter with their lines, and where it ends.
struct Header {
    keys: Vec<(String, usize)>,
    /// The line of the closing `---` (0 without front matter): the body starts after it.
    end_line: usize,
}

impl Header {
    fn read(skill: &str) -> Self {
        let skill = skill.strip_prefix('\u{feff}').unwrap_or(skill);
        let mut keys = Vec::new();
        let mut lines = skill.lines().enumerate();
        if lines.next().map(|(_, l)| l.trim_end()) != Some("---") {
            return Self { keys, end_line: 0 };
        }
        for (i, line) in lines {
            if matches!(line.trim_end(), "---" | "...") {
                return Self {
                    keys,
                    end_line: i + 1,
                };
            }
            // A top-level key: not indented, not a comment or list item, up to the first `:`
            // that ends it (followed by a space or the end), quotes taken off.
            if line.starts_with([' ', '\t', '#', '-']) {
                continue;
            }
            let colon = line.char_indices().find(|(at, c)| {
                *c == ':'
                    && line[at + 1..]
                        .chars()
                        .next()
                        .is_none_or(char::is_whitespace)
            });
            if let Some((at, _)) = colon {
                let key = line[..at].trim().trim_matches(|c| c == '"' || c == '\'');
                if !key.is_empty() {
                    keys.push((key.to_owned(), i + 1));
                }
            }
        }
        Self { keys, end_line: 0 }
    }

    /// The line of a top-level key; line 1 (the opening `---`) when it is absent.
    fn line_of(&self, key: &str) -> usize {
        self.keys
            .iter()
            .find(|(k, _)| k == key)
            .map_or(1, |(_, line)| *line)
    }

    /// A fix that writes `new` for `old` as the value of `key` on its line, when the value stands
    /// there as written (plain or quoted).
    fn value_fix(&self, skill: &str, key: &str, old: &str, new: &str) -> Option<Fix> {
        let line = self.keys.iter().find(|(k, _)| k == key)?.1;
        let text = skill.lines().nth(line - 1)?;
        let colon = text
            .find(": ")
            .or_else(|| text.strip_suffix(':').map(str::len))?;
        let value = text[colon + 1..].trim();
        let unquoted = value.trim_matches(|c| c == '"' || c == '\'');
        (unquoted.trim() == old).then(|| Fix {
            path: SKILL_FILE.to_owned(),
            line,
            old: text.to_owned(),
            new: format!("{key}: {new}"),
            kind: FixKind::Line,
        })
    }
}

/// What is wrong with a name, by the Agent Skills format.
fn name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Some(format!(
            "`name` has {chars} characters; at most {MAX_NAME_CHARS}"
        ));
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Some(format!(
            "`name` `{name}` may hold only lowercase letters, digits and hyphens"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some(format!(
            "`name` `{name}` must not start or end with a hyphen or hold `--`"
        ));
    }
    None
}

/// The name in the format: lowercase, spaces and underscores as hyphens, other characters
/// dropped, hyphens single and inside. `None` when nothing is left or it is too long.
fn normalized_name(name: &str) -> Option<String> {
    let mut out = String::new();
    for c in name.trim().chars() {
        let c = match c {
            ' ' | '_' | '.' => '-',
            c => c.to_ascii_lowercase(),
        };
        if c.is_ascii_lowercase() || c.is_ascii_digit() || (c == '-' && !out.ends_with('-')) {
            out.push(c);
        }
    }
    let out = out.trim_matches('-').to_owned();
    (!out.is_empty() && out.chars().count() <= MAX_NAME_CHARS && name_problem(&out).is_none())
        .then_some(out)
}

/// Whether a description says when to use the skill: a "use when/for/to/this/it" phrase, or a
/// "when …" clause.
fn says_when(description: &str) -> bool {
    let lower = description.to_lowercase();
    let words: Vec<&str> = lower
        .split(|c: char| !c.is_alphanumeric() && c != '-')
        .filter(|w| !w.is_empty())
        .collect();
    words.iter().enumerate().any(|(i, w)| {
        matches!(*w, "when" | "whenever")
            || (*w == "use"
                && words.get(i + 1).is_some_and(|n| {
                    matches!(*n, "when" | "for" | "to" | "this" | "it" | "whenever")
                }))
            || *w == "trigger"
            || *w == "triggers"
    })
}

/// The link with its target re-cased to the one bundle file it matches ignoring case, if exactly
/// one does.
fn case_fix(bundle: &Bundle, link: &BundleLink) -> Option<String> {
    let lower = link.resolved.to_lowercase();
    let mut matches = bundle
        .files
        .iter()
        .filter(|f| f.path.to_lowercase() == lower);
    let file = matches.next()?;
    if matches.next().is_some() {
        return None;
    }
    // Only the part of the target that names the path changes; a fragment stays.
    let (path_part, rest) = match link.target.find(['#', '?']) {
        Some(i) => link.target.split_at(i),
        None => (link.target.as_str(), ""),
    };
    // The resolved path ends with the target's path part, cased differently.
    let tail_chars = path_part.trim_start_matches("./").chars().count();
    let actual_tail: String = {
        let chars: Vec<char> = file.path.chars().collect();
        chars[chars.len().saturating_sub(tail_chars)..]
            .iter()
            .collect()
    };
    if actual_tail.to_lowercase() != path_part.trim_start_matches("./").to_lowercase() {
        return None;
    }
    let prefix = &path_part[..path_part.len() - path_part.trim_start_matches("./").len()];
    Some(format!("{prefix}{actual_tail}{rest}"))
}
