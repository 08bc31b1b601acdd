//! Prompts: the pinned template, and the request each trial sends.
//!
//! **Invariant:** a prompt is built from a [`PublicTask`] and, for a skill arm, that arm's own
//! bundle. `PublicTask` has no field that could carry an expected answer, so no code path can put
//! one into a prompt. Scripts and binaries are listed by name as never run; their content is
//! never sent.

use crate::bundle::{Bundle, FileKind};
use crate::digest::Sha256Digest;
use crate::pack::PublicTask;

/// Identifies the template below AND the way `build` lays out the skill and task blocks; bump it
/// when either changes, since manifests pin it (with the template's hash).
pub const TEMPLATE_ID: &str = "skilltrial-prompt-v1";

/// The template, pinned in every manifest (text and hash). `{{skill}}` is empty for the baseline.
pub const TEMPLATE: &str = "\
[system]
You are answering one self-contained Solana task. Work only from the task text below and, when \
one is given, the skill provided with it. You cannot run code, scripts or tools, read files, \
browse, or call any network. Follow the task's answer format exactly.

[user]
{{skill}}{{task}}";

/// The system part of the template.
pub fn system_text() -> &'static str {
    let after = TEMPLATE.strip_prefix("[system]\n").unwrap_or(TEMPLATE);
    after.split("\n\n[user]\n").next().unwrap_or(after)
}

/// SHA-256 of [`TEMPLATE`].
pub fn template_sha256() -> Sha256Digest {
    Sha256Digest::of(TEMPLATE.as_bytes())
}

/// The two messages of one request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    pub system: String,
    pub user: String,
    /// How many bytes at the start of `user` are the arm's skill block, the same for every task
    /// of the arm: the prefix a provider's prompt cache can keep (0 for the baseline).
    pub skill_len: usize,
}

/// Tokens added on top of the byte count for role markers and special tokens. Generous on
/// purpose: the bound must never under-count.
pub const TOKEN_OVERHEAD: u64 = 256;

impl Prompt {
    /// An upper bound on the input tokens of this prompt that cannot under-count: the byte-level
    /// BPE tokenizers of these providers emit at most one token per UTF-8 byte, plus
    /// [`TOKEN_OVERHEAD`] for message framing.
    pub fn input_token_bound(&self) -> u64 {
        (self.system.len() as u64)
            .saturating_add(self.user.len() as u64)
            .saturating_add(TOKEN_OVERHEAD)
    }
}

/// The skill block for an arm's bundle.
fn skill_block(bundle: &Bundle) -> String {
    let version = bundle.version.as_deref().unwrap_or("unversioned");
    let mut block = format!(
        "<skill name=\"{}\" version=\"{version}\" digest=\"{}\">\n",
        bundle.name, bundle.digest
    );
    let mut listed = Vec::new();
    // SKILL.md first, then references in path order.
    let mut files: Vec<_> = bundle.files.iter().collect();
    files.sort_by_key(|f| (f.kind != FileKind::Skill, f.path.clone()));
    for file in files {
        match (file.kind.is_prompt_text(), file.text()) {
            (true, Some(text)) => {
                block.push_str(&format!("=== {} ===\n{}\n", file.path, text.trim_end()));
            }
            _ => listed.push(format!("{} ({})", file.path, file.kind.as_str())),
        }
    }
    if !listed.is_empty() {
        block.push_str(&format!(
            "Files in the skill that are never run and never shown: {}\n",
            listed.join(", ")
        ));
    }
    block.push_str("</skill>\n\n");
    block
}

/// The task block: the same in both delivery modes (progressive sends it alone as the user
/// message).
pub fn task_text(task: &PublicTask<'_>) -> String {
    format!("<task id=\"{}\">\n{}</task>\n", task.id, task.render())
}

/// Builds the prompt of one trial.
pub fn build(task: &PublicTask<'_>, bundle: Option<&Bundle>) -> Prompt {
    let skill = bundle.map(skill_block).unwrap_or_default();
    let task_text = task_text(task);
    // One pass over the template: text inside the skill or task can never be taken for a
    // placeholder (a bundle that contains "{{task}}" stays as written).
    let template = TEMPLATE
        .split("\n\n[user]\n")
        .nth(1)
        .unwrap_or("{{skill}}{{task}}");
    let mut user = String::with_capacity(template.len() + skill.len() + task_text.len());
    let mut rest = template;
    while let Some(at) = rest.find("{{") {
        user.push_str(&rest[..at]);
        let after = &rest[at..];
        if let Some(tail) = after.strip_prefix("{{skill}}") {
            user.push_str(&skill);
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("{{task}}") {
            user.push_str(&task_text);
            rest = tail;
        } else {
            user.push_str("{{");
            rest = &after[2..];
        }
    }
    user.push_str(rest);
    // The template puts the skill first: it is the user message's stable prefix.
    let skill_len = if user.starts_with(&skill) {
        skill.len()
    } else {
        0
    };
    Prompt {
        system: system_text().to_owned(),
        user,
        skill_len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_inside_a_bundle_are_not_expanded() {
        let pack = crate::pack::open("solana-core@1.0.3").unwrap();
        let task = pack.task("acct-usdc-mint").unwrap();
        let mut files = vec![(
            "SKILL.md".to_owned(),
            b"---\nname: x\nversion: 1\ndescription: d\n---\nsee {{task}} and {{skill}}\n".to_vec(),
        )];
        files.push(("notes.md".to_owned(), b"n".to_vec()));
        let bundle = crate::bundle::from_files(
            files,
            crate::bundle::SourceKind::Folder,
            &crate::bundle::Limits::default(),
        )
        .unwrap();
        let prompt = build(&task.public(), Some(&bundle));
        assert!(prompt.user.contains("see {{task}} and {{skill}}"));
        assert_eq!(prompt.user.matches("<task id=").count(), 1);
    }

    #[test]
    fn template_splits_into_system_and_user() {
        assert!(system_text().starts_with("You are answering"));
        assert!(!system_text().contains("[user]"));
        // Pinned as hex (computed with `sha256sum` over the template text): manifests and
        // reports carry this hash, so an edit to the template must show up here and come with a
        // new TEMPLATE_ID.
        assert_eq!(
            template_sha256().hex(),
            "ecdaf9c8080234610f156ef19a1ecb70ca58a6cb636c7508f6b919ee628fdef5"
        );
        assert_eq!(TEMPLATE_ID, "skilltrial-prompt-v1");
    }
}
