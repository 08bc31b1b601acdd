//! The example bundles (`fixtures/bundles/`), built into the library by `build.rs` so that
//! `skilltrial demo` — and any other front end — can import them from anywhere.

use super::{Bundle, Limits, RejectCode, Rejected, Rejection, SourceKind};

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
    super::from_files(files, SourceKind::Folder, &Limits::default())
        .map_err(|errors| Rejected { input, errors })
}
