//! Entry-path rules shared by folders and ZIPs: one normal form, and the rejections that guard it.

use super::RejectCode;

/// Normalizes an entry name into a relative `/`-separated path, or says why it is rejected.
///
/// Both `/` and `\` separate components, because a ZIP written on Windows (or crafted to look
/// like one) uses `\`, and `..\..\x` must not slip through as one odd file name. `.` and empty
/// components are dropped; `..` anywhere is traversal, even where it would stay inside the
/// bundle (`a/../b`), since no honest packer writes it.
pub fn normalize(raw: &str) -> Result<String, (RejectCode, String)> {
    if raw.chars().any(char::is_control) {
        return Err((
            RejectCode::InvalidPath,
            "path contains a control character (NUL, newline, escape, ...)".to_owned(),
        ));
    }
    if raw.starts_with('/') || raw.starts_with('\\') {
        let what = if raw.starts_with("\\\\") || raw.starts_with("//") {
            "a UNC or network path"
        } else {
            "an absolute path"
        };
        return Err((
            RejectCode::AbsolutePath,
            format!("{what}; bundle paths must be relative"),
        ));
    }
    if has_drive_prefix(raw) {
        return Err((
            RejectCode::AbsolutePath,
            "a Windows drive path; bundle paths must be relative".to_owned(),
        ));
    }
    let mut parts = Vec::new();
    for component in raw.split(['/', '\\']) {
        match component {
            "" | "." => {}
            ".." => {
                return Err((
                    RejectCode::PathTraversal,
                    "path contains `..` and could leave the bundle".to_owned(),
                ));
            }
            other => parts.push(other),
        }
    }
    if parts.is_empty() {
        return Err((RejectCode::InvalidPath, "path names no file".to_owned()));
    }
    Ok(parts.join("/"))
}

/// `C:`, `c:foo`, `C:\x`: a drive letter makes a path absolute (or drive-relative) on Windows.
fn has_drive_prefix(raw: &str) -> bool {
    let bytes = raw.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(raw: &str) -> RejectCode {
        normalize(raw).unwrap_err().0
    }

    #[test]
    fn accepts_and_normalizes_relative_paths() {
        assert_eq!(normalize("SKILL.md").unwrap(), "SKILL.md");
        assert_eq!(normalize("./refs//a.md").unwrap(), "refs/a.md");
        assert_eq!(normalize("refs\\a.md").unwrap(), "refs/a.md");
    }

    #[test]
    fn rejects_traversal_in_both_separator_styles() {
        assert_eq!(code("../x.md"), RejectCode::PathTraversal);
        assert_eq!(code("a/../../x.md"), RejectCode::PathTraversal);
        assert_eq!(code("..\\..\\evil.md"), RejectCode::PathTraversal);
        assert_eq!(code("a/.."), RejectCode::PathTraversal);
    }

    #[test]
    fn rejects_absolute_paths_of_every_platform() {
        assert_eq!(code("/etc/passwd"), RejectCode::AbsolutePath);
        assert_eq!(code("C:\\Windows\\x.md"), RejectCode::AbsolutePath);
        assert_eq!(code("c:relative.md"), RejectCode::AbsolutePath);
        assert_eq!(code("\\\\server\\share\\x.md"), RejectCode::AbsolutePath);
        assert_eq!(code("\\x.md"), RejectCode::AbsolutePath);
    }

    #[test]
    fn rejects_control_characters_and_empty_names() {
        assert_eq!(code("a\nb.md"), RejectCode::InvalidPath);
        assert_eq!(code("a\0.md"), RejectCode::InvalidPath);
        assert_eq!(code("./"), RejectCode::InvalidPath);
    }
}
