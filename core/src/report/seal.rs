//! The report's two hashes: `report_hash` over the canonical form of everything but itself, and
//! the manifest hash over the canonical `manifest`; sealing, verifying, and reading a report file.

use serde::Deserialize as _;
use serde_json::Value;

use super::Report;
use crate::canonical;
use crate::digest::Sha256Digest;

/// Why a report could not be built, hashed or read.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("{0}")]
    Invalid(String),
    /// Not a report of this format: the text is JSON, but not the members of a report.
    #[error("not a {format} report: {reason}", format = super::FORMAT)]
    NotAReport { reason: String },
}

fn invalid(e: impl std::fmt::Display) -> ReportError {
    ReportError::Invalid(e.to_string())
}

/// The report hash of a JSON document: SHA-256 over its canonical form without `report_hash`.
pub fn hash_value(report: &Value) -> Result<Sha256Digest, ReportError> {
    let mut copy = report.clone();
    if let Some(map) = copy.as_object_mut() {
        map.remove("report_hash");
    }
    canonical::hash(&copy).map_err(invalid)
}

impl Report {
    /// The document as JSON (members sorted, as the canonical form and the report file have them).
    pub fn to_value(&self) -> Result<Value, ReportError> {
        serde_json::to_value(self).map_err(invalid)
    }

    /// The canonical text of the whole document, `report_hash` included if sealed.
    pub fn canonical(&self) -> Result<String, ReportError> {
        canonical::to_string(&self.to_value()?).map_err(invalid)
    }

    /// The report hash: SHA-256 over the canonical form without `report_hash`.
    pub fn hash(&self) -> Result<Sha256Digest, ReportError> {
        hash_value(&self.to_value()?)
    }

    /// The manifest hash recomputed from the `manifest` member.
    pub fn manifest_digest(&self) -> Result<Sha256Digest, ReportError> {
        let manifest = serde_json::to_value(&self.manifest).map_err(invalid)?;
        canonical::hash(&manifest).map_err(invalid)
    }

    /// Sets `report_hash` and returns it.
    pub fn seal(&mut self) -> Result<Sha256Digest, ReportError> {
        self.report_hash = None;
        let digest = self.hash()?;
        self.report_hash = Some(digest.to_string());
        Ok(digest)
    }

    /// Verifies the report: its `report_hash` and its manifest hash both recompute. Returns
    /// (report hash, manifest hash).
    pub fn verify(&self) -> Result<(Sha256Digest, Sha256Digest), ReportError> {
        let claimed = self
            .report_hash
            .as_deref()
            .ok_or_else(|| ReportError::Invalid("no report_hash".to_owned()))?;
        let actual = self.hash()?;
        if claimed != actual.to_string() {
            return Err(ReportError::Invalid(format!(
                "report_hash says {claimed}, the content hashes to {actual}"
            )));
        }
        let manifest_hash = self.manifest_digest()?;
        if self.manifest_hash != manifest_hash.to_string() {
            return Err(ReportError::Invalid(format!(
                "manifest_hash does not match the manifest ({manifest_hash})"
            )));
        }
        Ok((actual, manifest_hash))
    }

    /// Reads a report from its JSON document. The typed report must be the document: a member
    /// the type does not know, a member it would write differently (`null` for absent, another
    /// number form) is refused, so the hashes of the typed report are the hashes of the file.
    pub fn from_value(document: &Value) -> Result<Self, ReportError> {
        if !document.is_object() {
            return Err(ReportError::NotAReport {
                reason: "not a JSON object".to_owned(),
            });
        }
        // The format first: a report of another format (or none) is named as such, not by the
        // first member it lacks.
        match document.get("format") {
            Some(Value::String(f)) if f == super::FORMAT => {}
            Some(other) => {
                return Err(ReportError::NotAReport {
                    reason: format!("its format is {other}"),
                });
            }
            None => {
                return Err(ReportError::NotAReport {
                    reason: "it has no format member".to_owned(),
                });
            }
        }
        let report = Self::deserialize_value(document)?;
        let typed = report.to_value()?;
        if typed != *document {
            return Err(ReportError::NotAReport {
                reason: "a member is not written as this format writes it".to_owned(),
            });
        }
        Ok(report)
    }

    fn deserialize_value(document: &Value) -> Result<Self, ReportError> {
        Self::deserialize(document).map_err(|e| ReportError::NotAReport {
            reason: e.to_string(),
        })
    }

    /// Reads a report from JSON text (see [`Report::from_value`]).
    pub fn from_json(text: &str) -> Result<Self, ReportError> {
        let document: Value = serde_json::from_str(text)
            .map_err(|e| ReportError::Invalid(format!("not JSON: {e}")))?;
        Self::from_value(&document)
    }
}
