//! SKILL.md's YAML front matter: `name` (required), `version` (top level or under `metadata:`),
//! `description`, plus lint warnings against the Agent Skills format.

use yaml_rust2::parser::{Event, Parser};
use yaml_rust2::{Yaml, YamlLoader};

/// What the front matter says, once it parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// The skill's name (trimmed, non-empty).
    pub name: String,
    /// The version, from `version:` or `metadata: { version: }`.
    pub version: Option<String>,
    /// The description, if any.
    pub description: Option<String>,
    /// Lint findings: (1-based line in SKILL.md, message).
    pub lints: Vec<(usize, String)>,
    /// Notes: worth knowing, not departures from the format (1-based line, message).
    pub notes: Vec<(usize, String)>,
}

/// Why the front matter cannot be read (always `invalid_front_matter`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatterError(pub String);

/// Maximum name length in the Agent Skills format.
pub const MAX_NAME_CHARS: usize = 64;
/// Largest front matter read. Front matter is a handful of keys; more is not a skill header.
pub const MAX_FRONT_MATTER_BYTES: usize = 64 * 1024;
/// Most YAML events the pre-scan accepts.
const MAX_YAML_EVENTS: usize = 10_000;

/// Walks the YAML events once, refusing aliases: the loader copies the aliased node at every
/// `*alias`, so a few hundred bytes of nested aliases would expand exponentially in memory.
fn reject_aliases(yaml: &str) -> Result<(), FrontMatterError> {
    let mut parser = Parser::new_from_str(yaml);
    for _ in 0..MAX_YAML_EVENTS {
        match parser.next_token() {
            Err(e) => {
                return Err(FrontMatterError(format!(
                    "the front matter is not valid YAML: {e}"
                )));
            }
            Ok((Event::Alias(_), mark)) => {
                return Err(FrontMatterError(format!(
                    "the front matter uses a YAML alias (line {}); aliases are not allowed",
                    mark.line() + 2
                )));
            }
            Ok((Event::StreamEnd, _)) => return Ok(()),
            Ok(_) => {}
        }
    }
    Err(FrontMatterError(
        "the front matter is too complex to be a skill header".to_owned(),
    ))
}

/// Maximum description length in the Agent Skills format.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;

/// Parses the front matter at the top of SKILL.md.
pub fn parse(text: &str) -> Result<FrontMatter, FrontMatterError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines();
    if lines.next().map(str::trim_end) != Some("---") {
        return Err(FrontMatterError(
            "SKILL.md must begin with a `---` line that opens its YAML front matter".to_owned(),
        ));
    }
    let mut yaml_lines = Vec::new();
    let mut closed = false;
    for line in lines {
        if matches!(line.trim_end(), "---" | "...") {
            closed = true;
            break;
        }
        yaml_lines.push(line);
    }
    if !closed {
        return Err(FrontMatterError(
            "the YAML front matter is never closed by a `---` line".to_owned(),
        ));
    }
    let yaml_text = yaml_lines.join("\n");
    if yaml_text.len() > MAX_FRONT_MATTER_BYTES {
        return Err(FrontMatterError(format!(
            "the front matter is {} bytes; at most {MAX_FRONT_MATTER_BYTES} are read",
            yaml_text.len()
        )));
    }
    reject_aliases(&yaml_text)?;
    let docs = YamlLoader::load_from_str(&yaml_text)
        .map_err(|e| FrontMatterError(format!("the front matter is not valid YAML: {e}")))?;
    let Some(Yaml::Hash(map)) = docs.into_iter().next() else {
        return Err(FrontMatterError(
            "the front matter must be a YAML mapping (`key: value` lines)".to_owned(),
        ));
    };
    // Line of a top-level key, for pointing lints at it: front matter starts on line 2.
    let line_of = |key: &str| {
        yaml_lines
            .iter()
            .position(|l| {
                l.strip_prefix(key)
                    .is_some_and(|rest| rest.starts_with(':'))
            })
            .map_or(1, |i| i + 2)
    };
    let get = |key: &str| map.get(&Yaml::String(key.to_owned()));

    let name = match get("name") {
        None | Some(Yaml::Null) => {
            return Err(FrontMatterError(
                "the front matter has no `name`".to_owned(),
            ));
        }
        Some(value) => scalar(value)
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty())
            .ok_or_else(|| FrontMatterError("`name` must be a non-empty string".to_owned()))?,
    };
    let mut lints = Vec::new();
    if let Some(problem) = name_problem(&name) {
        lints.push((line_of("name"), problem));
    }

    let description = get("description")
        .and_then(scalar)
        .map(|s| s.trim().to_owned());
    match description.as_deref() {
        None | Some("") => lints.push((
            line_of("description"),
            "no `description`: agents use it to decide when to load the skill".to_owned(),
        )),
        Some(d) if d.chars().count() > MAX_DESCRIPTION_CHARS => lints.push((
            line_of("description"),
            format!(
                "`description` has {} characters; the Agent Skills format allows at most {MAX_DESCRIPTION_CHARS}",
                d.chars().count()
            ),
        )),
        Some(_) => {}
    }

    let mut notes = Vec::new();
    let top_version = get("version").and_then(scalar);
    let meta_version = match get("metadata") {
        Some(Yaml::Hash(meta)) => meta
            .get(&Yaml::String("version".to_owned()))
            .and_then(scalar),
        _ => None,
    };
    let version = match (top_version, meta_version) {
        (Some(top), Some(meta)) if top != meta => {
            lints.push((
                line_of("version"),
                format!("`version` ({top}) differs from `metadata.version` ({meta}); using {top}"),
            ));
            Some(top)
        }
        (Some(v), _) | (None, Some(v)) => Some(v),
        (None, None) => {
            // The Agent Skills format does not require a version; runs label arms by digest.
            notes.push((
                1,
                "no `version` at top level or under `metadata` (not required: arms are labelled by digest)".to_owned(),
            ));
            None
        }
    };

    Ok(FrontMatter {
        name,
        version,
        description,
        lints,
        notes,
    })
}

/// A scalar as text; YAML reads `1.5` as a float and `2` as an integer, both fine as versions.
fn scalar(value: &Yaml) -> Option<String> {
    match value {
        Yaml::String(s) | Yaml::Real(s) => Some(s.clone()),
        Yaml::Integer(i) => Some(i.to_string()),
        _ => None,
    }
}

/// The Agent Skills name rule: 1–64 of `a-z`, `0-9`, `-`; no leading, trailing or double hyphen.
fn name_problem(name: &str) -> Option<String> {
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        return Some(format!(
            "`name` has {chars} characters; the Agent Skills format allows at most {MAX_NAME_CHARS}"
        ));
    }
    let allowed = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    if !allowed {
        return Some("`name` may hold only lowercase letters, digits and hyphens".to_owned());
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Some("`name` must not start or end with a hyphen or hold `--`".to_owned());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_top_level_version() {
        let fm =
            parse("---\nname: my-skill\ndescription: Does x.\nversion: 1.4.2\n---\nbody").unwrap();
        assert_eq!(fm.name, "my-skill");
        assert_eq!(fm.version.as_deref(), Some("1.4.2"));
        assert_eq!(fm.description.as_deref(), Some("Does x."));
        assert!(fm.lints.is_empty(), "{:?}", fm.lints);
    }

    #[test]
    fn reads_version_under_metadata_and_float_like_versions() {
        let fm = parse("---\nname: s\ndescription: d\nmetadata:\n  version: 1.5\n---\n").unwrap();
        assert_eq!(fm.version.as_deref(), Some("1.5"));
    }

    #[test]
    fn missing_name_or_block_is_an_error() {
        let cases = [
            (
                "---\ndescription: d\n---\n",
                "the front matter has no `name`",
            ),
            (
                "# no front matter",
                "SKILL.md must begin with a `---` line that opens its YAML front matter",
            ),
            (
                "---\nname: x\n",
                "the YAML front matter is never closed by a `---` line",
            ),
            (
                "---\n- a list\n---\n",
                "the front matter must be a YAML mapping (`key: value` lines)",
            ),
            (
                "---\nname: [unclosed\n---\n",
                "the front matter is not valid YAML: while parsing a flow sequence, expected ',' or ']' at byte 15 line 2 column 1",
            ),
        ];
        for (text, message) in cases {
            assert_eq!(parse(text).unwrap_err().0, message, "{text:?}");
        }
    }

    #[test]
    fn lints_name_description_and_version() {
        let fm = parse("---\nname: My_Skill\n---\n").unwrap();
        let messages: Vec<&str> = fm.lints.iter().map(|(_, m)| m.as_str()).collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("lowercase"));
        assert!(messages[1].contains("description"));
        assert_eq!(fm.lints[0].0, 2, "points at the name line");
        // The Agent Skills format does not require a version: a note, not lint.
        assert_eq!(fm.notes.len(), 1, "{:?}", fm.notes);
        assert!(fm.notes[0].1.contains("version"));
    }

    #[test]
    fn alias_bombs_are_refused_before_loading() {
        // A few hundred bytes that would expand to 10^8 nodes if aliases were followed.
        let mut yaml = String::from("---\nname: bomb\nl0: &l0 [a, a, a, a, a, a, a, a, a, a]\n");
        for i in 1..9 {
            let prev = i - 1;
            let refs = vec![format!("*l{prev}"); 10].join(", ");
            yaml.push_str(&format!("l{i}: &l{i} [{refs}]\n"));
        }
        yaml.push_str("---\n");
        let err = parse(&yaml).unwrap_err();
        assert!(err.0.contains("alias"), "{}", err.0);
    }

    #[test]
    fn lints_overlong_description() {
        let long = "d".repeat(MAX_DESCRIPTION_CHARS + 1);
        let fm = parse(&format!(
            "---\nname: s\nversion: 1\ndescription: {long}\n---\n"
        ))
        .unwrap();
        assert_eq!(fm.lints.len(), 1);
        assert_eq!(fm.lints[0].0, 4);
    }
}
