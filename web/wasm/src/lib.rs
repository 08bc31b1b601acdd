//! The New-run page's validation, in the browser: the bundle a user drops is read by
//! `skilltrial-core`, the same code `skilltrial validate` and the runner run, so the page shows
//! the same verdict, flags, rejections and digest. Nothing here uploads anything.
//!
//! Each export answers one JSON document, a [`BundleReport`] (the objects of `validate --json`),
//! so that the page and the CLI can be compared byte for byte on the same bundle.

use skilltrial_core::bundle::verdict::BundleReport;
use skilltrial_core::bundle::{self, Limits, Rejection, SourceKind};
use wasm_bindgen::prelude::wasm_bindgen;

/// A ZIP dropped on the page (`name` is how the page shows it).
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn validate_zip(name: &str, bytes: &[u8]) -> String {
    let result = bundle::import_zip_bytes(bytes, &Limits::default());
    verdict_json(name, result.as_ref().map_err(Vec::as_slice))
}

/// A folder dropped or picked on the page: `paths` relative to the folder's root (`SKILL.md`,
/// `references/x.md`), and each file's bytes, in order, in `data` (`lengths[i]` bytes each), as
/// a browser hands them over without one copy per file.
#[allow(unsafe_code)] // wasm-bindgen's export (see Cargo.toml)
#[wasm_bindgen]
pub fn validate_folder(name: &str, paths: Vec<String>, lengths: Vec<u32>, data: &[u8]) -> String {
    let result = folder(paths, &lengths, data)
        .and_then(|files| bundle::from_files(files, SourceKind::Folder, &Limits::default()));
    verdict_json(name, result.as_ref().map_err(Vec::as_slice))
}

/// The files of a folder out of one buffer; a count or a length that does not add up is the
/// page's mistake, said as a rejection rather than a panic.
fn folder(
    paths: Vec<String>,
    lengths: &[u32],
    data: &[u8],
) -> Result<Vec<(String, Vec<u8>)>, Vec<Rejection>> {
    let broken = |why: String| {
        vec![Rejection {
            code: bundle::RejectCode::Unreadable,
            path: None,
            message: format!("the page handed over a broken folder: {why}"),
        }]
    };
    if paths.len() != lengths.len() {
        return Err(broken(format!(
            "{} paths and {} lengths",
            paths.len(),
            lengths.len()
        )));
    }
    let mut files = Vec::with_capacity(paths.len());
    let mut at = 0usize;
    for (path, length) in paths.into_iter().zip(lengths) {
        let end = usize::try_from(*length)
            .ok()
            .and_then(|n| at.checked_add(n))
            .filter(|end| *end <= data.len())
            .ok_or_else(|| broken(format!("{path}: past the end of the data")))?;
        files.push((path, data[at..end].to_vec()));
        at = end;
    }
    if at != data.len() {
        return Err(broken(format!(
            "{} bytes of data beyond the last file",
            data.len() - at
        )));
    }
    Ok(files)
}

fn verdict_json(name: &str, result: Result<&bundle::Bundle, &[Rejection]>) -> String {
    let report = BundleReport::of(name, result);
    serde_json::to_string(&report).unwrap_or_else(|e| {
        serde_json::json!({ "input": name, "ok": false, "errors": [{ "code": "internal", "message": e.to_string() }] })
            .to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_whose_lengths_do_not_add_up_is_rejected_in_words() {
        let short = validate_folder("x", vec!["SKILL.md".into()], vec![10], b"abc");
        assert!(short.contains("past the end of the data"), "{short}");
        let long = validate_folder("x", vec!["SKILL.md".into()], vec![1], b"abc");
        assert!(long.contains("2 bytes of data beyond"), "{long}");
        let counts = validate_folder("x", vec!["SKILL.md".into()], vec![], b"");
        assert!(counts.contains("1 paths and 0 lengths"), "{counts}");
    }
}
