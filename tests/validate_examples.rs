//! End to end: the example bundles shipped in `fixtures/` validate through the real binary, and a
//! ZIP of them written by a mainstream archiver (the `zip` crate's writer, Deflate, with a
//! top-level folder, timestamps and Unix modes) gets the same digest as the folder.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::process::Command;

use skilltrial_e2e::{skilltrial_bin, workspace_root};
use zip::write::SimpleFileOptions;

const EXAMPLES: [&str; 2] = [
    "fixtures/bundles/solana-reader-1.4.2",
    "fixtures/bundles/solana-reader-1.5.0",
];

fn validate_json(args: &[&str], home: &Path) -> (i32, serde_json::Value) {
    let out = Command::new(skilltrial_bin().unwrap())
        .arg("validate")
        .arg("--json")
        .args(args)
        .current_dir(workspace_root())
        .env("SKILLTRIAL_HOME", home)
        .output()
        .unwrap();
    (
        out.status.code().unwrap(),
        serde_json::from_slice(&out.stdout).unwrap(),
    )
}

fn zip_folder(folder: &Path, root_name: &str, out: &Path) {
    let mut writer = zip::ZipWriter::new(std::fs::File::create(out).unwrap());
    let mut stack = vec![folder.to_path_buf()];
    let mut files = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    files.sort();
    files.reverse(); // a different order than the folder walk: order must not matter
    for (i, path) in files.iter().enumerate() {
        let rel = path.strip_prefix(folder).unwrap().to_str().unwrap();
        let options = SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(if i % 2 == 0 { 0o644 } else { 0o600 });
        writer
            .start_file(format!("{root_name}/{rel}"), options)
            .unwrap();
        writer.write_all(&std::fs::read(path).unwrap()).unwrap();
    }
    writer.finish().unwrap();
}

#[test]
fn example_bundles_validate_and_zip_digest_equals_folder_digest() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");

    // Given the two example folders, and ZIPs of them made by a real archiver
    let mut zips = Vec::new();
    for example in EXAMPLES {
        let folder = workspace_root().join(example);
        let name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        let zip_path = tmp.path().join(format!("{name}.zip"));
        zip_folder(&folder, &name, &zip_path);
        zips.push(zip_path);
    }

    // When all four are validated in one call
    let zip_args: Vec<&str> = zips.iter().map(|p| p.to_str().unwrap()).collect();
    let args: Vec<&str> = EXAMPLES.iter().copied().chain(zip_args).collect();
    let (code, doc) = validate_json(&args, &home);

    // Then all are accepted, each ZIP's digest equals its folder's, and the library agrees
    assert_eq!(code, 0, "{doc}");
    let bundles = doc["bundles"].as_array().unwrap();
    assert_eq!(bundles.len(), 4);
    for i in 0..2 {
        assert_eq!(bundles[i]["ok"], true);
        assert_eq!(bundles[i]["source"], "folder");
        assert_eq!(bundles[i + 2]["source"], "zip");
        assert_eq!(
            bundles[i]["digest"],
            bundles[i + 2]["digest"],
            "folder and ZIP digests differ"
        );
        let library =
            skilltrial_runner::bundle::import(&workspace_root().join(EXAMPLES[i])).unwrap();
        assert_eq!(bundles[i]["digest"], library.digest.to_string());
        assert_eq!(bundles[i]["name"], "solana-reader");
    }
    assert_eq!(bundles[0]["version"], "1.4.2");
    assert_eq!(bundles[1]["version"], "1.5.0");
    assert!(!home.exists(), "validate wrote a state directory");
}
