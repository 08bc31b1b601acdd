//! A bundle's verdict as `skilltrial validate --json` prints it, one object per bundle: the same
//! document wherever a bundle is validated (the CLI, the hosted runner's uploads, the browser's
//! wasm build), so that the three can be compared field for field.

use serde::Serialize;

use super::{Bundle, FileKind, Flag, Rejection, SourceKind};

/// One bundle's verdict. A rejected bundle carries `errors` and nulls elsewhere.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct BundleReport {
    pub input: String,
    pub ok: bool,
    pub source: Option<SourceKind>,
    pub name: Option<String>,
    pub version: Option<String>,
    pub description: Option<String>,
    pub digest: Option<String>,
    /// `full`, or `partial` when the bundle holds scripts or binaries that are never run.
    pub coverage: Option<&'static str>,
    pub files: Vec<FileReport>,
    pub flags: Vec<Flag>,
    pub errors: Vec<Rejection>,
}

/// One file of an accepted bundle.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FileReport {
    pub path: String,
    pub kind: FileKind,
    pub size: u64,
    pub sha256: String,
    /// Whether the file's text can reach a model: SKILL.md and references (inline in the prompt,
    /// or through the progressive tools). Scripts and binaries are listed by name only: never
    /// run, never sent.
    pub sent_to_model: bool,
}

impl BundleReport {
    /// The verdict on `input` (the name it was given as): the bundle, or every rejection.
    pub fn of(input: &str, result: Result<&Bundle, &[Rejection]>) -> Self {
        match result {
            Ok(b) => Self {
                input: input.to_owned(),
                ok: true,
                source: Some(b.source),
                name: Some(b.name.clone()),
                version: b.version.clone(),
                description: b.description.clone(),
                digest: Some(b.digest.to_string()),
                coverage: Some(if b.has_non_executable() {
                    "partial"
                } else {
                    "full"
                }),
                files: b
                    .files
                    .iter()
                    .map(|f| FileReport {
                        path: f.path.clone(),
                        kind: f.kind,
                        size: f.size(),
                        sha256: f.sha256.hex(),
                        sent_to_model: f.kind.is_prompt_text(),
                    })
                    .collect(),
                flags: b.flags.clone(),
                errors: Vec::new(),
            },
            Err(errors) => Self {
                input: input.to_owned(),
                ok: false,
                source: None,
                name: None,
                version: None,
                description: None,
                digest: None,
                coverage: None,
                files: Vec::new(),
                flags: Vec::new(),
                errors: errors.to_vec(),
            },
        }
    }
}
