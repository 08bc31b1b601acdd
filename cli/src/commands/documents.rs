//! Every `--json` document the CLI prints: the command that prints it, its type, one sentence.
//! docs/json.md is rendered from this list and the types' JSON Schemas (the test
//! `the_json_documents_are_the_committed_docs`), so the documented shapes are the printed ones.
//!
//! Every document is a type deriving `Serialize` and `schemars::JsonSchema`; a member's `///`
//! comment is its documentation. Members are printed in the type's order; scripts should read
//! them by name.

// Only the registry's tests and the docs they render read it; the binary never does.
#![cfg_attr(not(test), allow(dead_code))]

use schemars::{JsonSchema, Schema};

/// One `--json` document.
#[derive(Debug)]
pub struct Document {
    /// The command as typed, with the flag that selects this document when there are several
    /// (`cancel --chain`).
    pub command: &'static str,
    /// What it is, in one sentence.
    pub about: &'static str,
    /// Its JSON Schema.
    pub schema: fn() -> Schema,
}

/// The schema of what `T` serializes to (a member is required unless serde may leave it out).
fn schema_of<T: JsonSchema>() -> Schema {
    schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

macro_rules! document {
    ($command:literal, $type:ty, $about:literal) => {
        Document {
            command: $command,
            about: $about,
            schema: schema_of::<$type>,
        }
    };
}

/// Every `--json` document this build prints, in the order of `skilltrial --help`.
pub fn all() -> Vec<Document> {
    use crate::commands::*;
    // Extended below by the commands of the `chain` and `localnet` features.
    #[cfg_attr(not(feature = "chain"), allow(unused_mut))]
    let mut all = vec![
        document!(
            "validate",
            validate::Report,
            "Each bundle's verdict (and with `--lint`, its findings)."
        ),
        document!(
            "info",
            info::Info,
            "This installation: version, and where state lives and why."
        ),
        document!(
            "pack list",
            pack::PackList,
            "The packs built into this binary."
        ),
        document!(
            "pack show",
            pack::PackShown,
            "A pack's public tasks (with `--prompt`, what a model is given; with `--reveal`, the golden record)."
        ),
        document!(
            "pack verify",
            skilltrial_core::pack::VerifyReport,
            "Every claim a pack makes, checked (exit 1 when one fails)."
        ),
        document!(
            "pack regenerate",
            pack::Regenerated,
            "Maintainers: the golden records a pack folder's raw inputs regenerated."
        ),
        document!(
            "pack new",
            pack_author::PackCreated,
            "The pack folder created."
        ),
        document!(
            "pack build",
            skilltrial_core::pack::VerifyReport,
            "The sealed pack's verification, as `pack verify` prints it."
        ),
        document!(
            "check",
            skilltrial_core::checker::Verdict,
            "The checker's verdict on one answer (exit 1 unless it passes)."
        ),
        document!(
            "plan",
            plan::PlanReport<'static>,
            "The planned run: its manifest, bounds and the smallest p its paired tests can reach."
        ),
        document!(
            "run",
            skilltrial_engine::engine::RunSummary,
            "What the run did: its status, counts and money."
        ),
        document!(
            "run --dry-run",
            run::DryRun,
            "The trials a run would send, in order; nothing is sent."
        ),
        document!(
            "status",
            status::StatusReport,
            "A run's counts, money, unknown attempts and what to do next."
        ),
        document!(
            "cancel",
            cancel::Cancelled,
            "A local run's cancel, requested or found already done."
        ),
        document!(
            "resolve",
            resolve::Resolved,
            "How an unknown attempt was closed, and the attempt planned in its place."
        ),
        document!(
            "recheck",
            recheck::Rechecked,
            "A run's stored answers re-scored with this binary's checker."
        ),
        document!("purge", purge::Purged, "The raw payloads deleted."),
        document!(
            "report",
            report::ReportWritten,
            "The run's summary, as the text shows it, and where the two report files were written."
        ),
        document!(
            "compare",
            compare::Compared,
            "Two runs side by side, or what makes them not comparable (exit 1)."
        ),
        document!(
            "ledger",
            skilltrial_core::ledger::Ledger,
            "The ledger across models, as ledger.json holds it (docs/ledger.md)."
        ),
        document!(
            "gate",
            skilltrial_core::gate::Judgement,
            "The release gate's judgement of a run (exit 0 cleared, 1 missed, 3 inconclusive)."
        ),
        document!(
            "verify",
            verify::Verified,
            "A report file's hashes, derived members and settlement recomputed, and with `--run`, `--run-account` or `--signature`, checked on-chain."
        ),
        // Owned by the demo's branch: the lead puts the demo's own type here on merge if it
        // has one.
        document!(
            "demo",
            report::ReportWritten,
            "The demo run's summary and report files, as `report --json` prints them."
        ),
        document!(
            "key set",
            key::KeyStored,
            "The key was stored (it is never printed)."
        ),
        document!(
            "key remove",
            key::KeyRemoved,
            "Whether there was a key to remove."
        ),
        document!(
            "key status",
            key::KeyStatus,
            "Which providers have a key, and where it comes from (never the key itself)."
        ),
    ];
    #[cfg(feature = "chain")]
    all.extend(chain_documents());
    #[cfg(feature = "localnet")]
    all.push(document!(
        "localnet",
        localnet_impl::LocalnetReady,
        "The running validator, its program and keys, printed once it is ready (one line)."
    ));
    all
}

/// The documents of the commands that reach a cluster or a runner daemon.
#[cfg(feature = "chain")]
fn chain_documents() -> Vec<Document> {
    use crate::commands::*;
    vec![
        document!(
            "cancel --chain",
            escrow::ChainCancelled,
            "A hosted run cancelled on-chain."
        ),
        document!(
            "pack add-task",
            pack_add_task::TaskAdded,
            "The task added to your pack."
        ),
        document!(
            "open",
            skilltrial_runner::client::escrow::Escrowed,
            "The escrow opened, or the one already open for this manifest and wallet."
        ),
        document!("chain-status", escrow::RunView, "A Run account decoded."),
        document!(
            "refund",
            escrow::Returned,
            "What the refunded Run gave back."
        ),
        document!("close", escrow::Returned, "What the closed Run gave back."),
        document!(
            "anchor",
            anchor::Anchored,
            "The memo transaction that anchors a report."
        ),
        document!(
            "admin init",
            admin::Initialized,
            "The program's config created."
        ),
        document!(
            "admin update",
            admin::Sent,
            "The transaction that changed the config."
        ),
        document!(
            "admin propose",
            admin::Proposed,
            "The time-locked change proposed, and from when it may apply."
        ),
        document!(
            "admin apply",
            admin::Sent,
            "The transaction that applied the pending change."
        ),
        document!(
            "admin accept",
            admin::Sent,
            "The transaction that made your wallet the admin."
        ),
        document!(
            "admin show",
            admin::ConfigView,
            "The program's config decoded, with its pending change and the fee vault's books."
        ),
        document!(
            "buyback-log",
            admin::BuybackLogView,
            "Every buyback-and-burn the program's log holds, newest first."
        ),
        document!(
            "runner serve",
            skilltrial_runner::http::Ready,
            "The daemon's start line, printed once it listens (one line)."
        ),
        document!(
            "runner buyback",
            skilltrial_runner::buyback::BuybackReport,
            "What one buyback attempt did (one line)."
        ),
        document!(
            "submit",
            skilltrial_runner::client::submit::Submitted,
            "The run registered with the runner, with the escrow opened for it, or already registered (one line)."
        ),
        document!(
            "status --remote",
            skilltrial_runner::client::status::Runs,
            "Without a run: your runs as the runner sees them (one line)."
        ),
        document!(
            "status --remote RUN",
            skilltrial_runner::api::RunView,
            "One hosted run as the runner sees it (one line)."
        ),
        document!(
            "status --remote --follow",
            skilltrial_runner::client::StreamEvent,
            "One line per event while following: progress, settlements and phases."
        ),
        document!(
            "report --remote",
            skilltrial_runner::client::report::Saved,
            "The downloaded report, its hashes, where it was written, and the chain's agreement."
        ),
    ]
}

/// Commands whose `--json` document is not a type yet (not in [`all`]). Empty: keep it so.
pub const AWAITING_TYPES: &[&str] = &[];

/// Every command's error documents: on stdout, one line, whatever the command.
fn error_documents() -> [Document; 2] {
    [
        document!(
            "any command, failing",
            crate::exit::Failed,
            "Printed instead of the command's document when it fails (exit 1 or 2), and for a command line that does not parse."
        ),
        document!(
            "any command, declined",
            crate::exit::Declined,
            "Printed when the person declined at a prompt: nothing was sent (exit 0)."
        ),
    ]
}

/// The anchor of a command's section in docs/json.md: `cancel --chain` → `cancel-chain`.
pub fn anchor(command: &str) -> String {
    let mut out = String::new();
    for c in command.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_end_matches('-').to_owned()
}

/// docs/json.md: every document's members, their types, whether they may be null, and what
/// they mean.
pub fn render() -> String {
    let documents = all();
    let errors = error_documents();
    let mut out = String::from(
        "<!-- Generated from cli/src/commands/documents.rs and the documents' types by its test `the_json_documents_are_the_committed_docs`: do not edit. To regenerate: SKILLTRIAL_WRITE_DOCS=1 cargo test -p skilltrial-cli --features localnet the_json_documents_are_the_committed_docs -->\n\
         \n\
         # The `--json` documents\n\
         \n\
         With `--json`, every command prints one JSON document on stdout (and stderr stays quiet),\n\
         pretty-printed unless it says one line. This page lists each document's members as the\n\
         types that print them declare them. Read members by name: their order is the type's.\n\
         \n\
         - **type**: `integer` members are whole numbers (lamports, µUSD, counts: up to 2⁶⁴ − 1);\n\
           amounts are never floats.\n\
         - **null**: `yes` when the member is always present but may be `null`.\n\
         - **present**: `always`, or `optional` when the member is left out in some cases (its\n\
           meaning says when).\n\
         \n\
         A command that fails prints [an error document](#errors) instead.\n\
         \n\
         ## Commands\n\
         \n",
    );
    for d in &documents {
        out.push_str(&format!("- [`{}`](#{})\n", d.command, anchor(d.command)));
    }
    out.push_str("- [errors](#errors)\n");
    for d in &documents {
        section(&mut out, d, 2);
    }
    out.push_str("\n<a id=\"errors\"></a>\n\n## Errors\n");
    for d in &errors {
        section(&mut out, d, 3);
    }
    out
}

/// One document: its sentence, its members, and the types they are made of.
fn section(out: &mut String, d: &Document, level: usize) {
    let schema = (d.schema)().to_value();
    let id = anchor(d.command);
    let hashes = "#".repeat(level);
    out.push_str(&format!(
        "\n<a id=\"{id}\"></a>\n\n{hashes} `{}`\n\n{}\n",
        d.command, d.about
    ));
    let defs = schema
        .get("$defs")
        .and_then(serde_json::Value::as_object)
        .cloned()
        .unwrap_or_default();
    block(out, &schema, &id, false);
    // The types it is made of, each once, in the order they are first used.
    let mut order: Vec<String> = Vec::new();
    let mut pending = refs(&schema);
    while let Some(name) = pending.first().cloned() {
        pending.remove(0);
        if order.contains(&name) {
            continue;
        }
        if let Some(def) = defs.get(&name) {
            pending.extend(refs(def));
        }
        order.push(name);
    }
    for name in &order {
        let Some(def) = defs.get(name) else { continue };
        out.push_str(&format!(
            "\n<a id=\"{id}-{}\"></a>\n\n{hashes}# `{name}`\n",
            anchor(name)
        ));
        block(out, def, &id, true);
    }
}

/// Every `$ref` in `schema` (not inside `$defs`), in order.
fn refs(schema: &serde_json::Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(schema, &mut found);
    found
}

fn walk(v: &serde_json::Value, found: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(map) => {
            for (key, value) in map {
                if key == "$defs" {
                    continue;
                }
                if key == "$ref"
                    && let Some(name) = value.as_str().and_then(|r| r.strip_prefix("#/$defs/"))
                {
                    found.push(name.to_owned());
                }
                walk(value, found);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, found)),
        _ => {}
    }
}

/// A schema in words: its description, then its members (an object), its values (an enum),
/// its alternatives (one of several shapes) or its type.
fn block(out: &mut String, schema: &serde_json::Value, doc: &str, describe: bool) {
    if describe && let Some(text) = schema.get("description").and_then(|d| d.as_str()) {
        out.push_str(&format!("\n{}\n", one_paragraph(text)));
    }
    if schema.get("properties").is_some() {
        table(out, schema, doc);
        return;
    }
    let alternatives = schema
        .get("oneOf")
        .or_else(|| schema.get("anyOf"))
        .and_then(|a| a.as_array());
    if let Some(alternatives) = alternatives {
        let all_values = alternatives
            .iter()
            .all(|a| a.get("const").is_some() || a.get("enum").is_some());
        out.push('\n');
        if all_values {
            out.push_str("One of:\n\n");
            for a in alternatives {
                let values: Vec<String> = match (a.get("const"), a.get("enum")) {
                    (Some(c), _) => vec![format!("`{}`", plain(c))],
                    (None, Some(serde_json::Value::Array(e))) => {
                        e.iter().map(|v| format!("`{}`", plain(v))).collect()
                    }
                    _ => Vec::new(),
                };
                let what = a
                    .get("description")
                    .and_then(|d| d.as_str())
                    .map(|d| format!(": {}", one_paragraph(d)))
                    .unwrap_or_default();
                out.push_str(&format!("- {}{what}\n", values.join(", ")));
            }
            return;
        }
        out.push_str("One of these shapes:\n");
        for a in alternatives {
            if a.get("properties").is_some() {
                let what = a
                    .get("description")
                    .and_then(|d| d.as_str())
                    .map(one_paragraph)
                    .unwrap_or_default();
                out.push_str(&format!("\n- an object. {what}\n"));
                table(out, a, doc);
            } else {
                let what = a
                    .get("description")
                    .and_then(|d| d.as_str())
                    .map(|d| format!(": {}", one_paragraph(d)))
                    .unwrap_or_default();
                out.push_str(&format!("\n- {}{what}\n", type_of(a, doc).0));
            }
        }
        return;
    }
    if let Some(serde_json::Value::Array(values)) = schema.get("enum") {
        let values: Vec<String> = values.iter().map(|v| format!("`{}`", plain(v))).collect();
        out.push_str(&format!("\nOne of: {}.\n", values.join(", ")));
        return;
    }
    out.push_str(&format!("\nA {}.\n", type_of(schema, doc).0));
}

/// An object's members as a table.
fn table(out: &mut String, schema: &serde_json::Value, doc: &str) {
    let required: Vec<&str> = schema
        .get("required")
        .and_then(|r| r.as_array())
        .map(|r| r.iter().filter_map(|n| n.as_str()).collect())
        .unwrap_or_default();
    out.push_str("\n| member | type | null | present | meaning |\n|---|---|---|---|---|\n");
    let Some(properties) = schema.get("properties").and_then(|p| p.as_object()) else {
        return;
    };
    for (name, property) in properties {
        let (ty, nullable) = type_of(property, doc);
        let present = required.contains(&name.as_str());
        // Every optional member of these documents is an `Option` serde leaves out when it is
        // `None`: absent, never null.
        let nullable = nullable && present;
        let meaning = property
            .get("description")
            .and_then(|d| d.as_str())
            .map(one_paragraph)
            .unwrap_or_default();
        out.push_str(&format!(
            "| `{name}` | {ty} | {} | {} | {} |\n",
            if nullable { "yes" } else { "" },
            if present { "always" } else { "optional" },
            meaning.replace('|', "\\|")
        ));
    }
}

/// A member's type in words, with a link to a named type, and whether it may be null.
fn type_of(schema: &serde_json::Value, doc: &str) -> (String, bool) {
    if schema == &serde_json::Value::Bool(true) || schema.as_object().is_some_and(|m| m.is_empty())
    {
        return ("any JSON".to_owned(), false);
    }
    if let Some(name) = schema
        .get("$ref")
        .and_then(|r| r.as_str())
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        return (format!("[`{name}`](#{doc}-{})", anchor(name)), false);
    }
    if let Some(c) = schema.get("const") {
        return (format!("`{}`", plain(c)), false);
    }
    if let Some(serde_json::Value::Array(values)) = schema.get("enum") {
        let nullable = values.iter().any(serde_json::Value::is_null);
        let values: Vec<String> = values
            .iter()
            .filter(|v| !v.is_null())
            .map(|v| format!("`{}`", plain(v)))
            .collect();
        return (format!("one of {}", values.join(", ")), nullable);
    }
    if let Some(alternatives) = schema
        .get("anyOf")
        .or_else(|| schema.get("oneOf"))
        .and_then(|a| a.as_array())
    {
        let nullable = alternatives.iter().any(is_null);
        let rest: Vec<String> = alternatives
            .iter()
            .filter(|a| !is_null(a))
            .map(|a| type_of(a, doc).0)
            .collect();
        return (rest.join(" or "), nullable);
    }
    let types: Vec<&str> = match schema.get("type") {
        Some(serde_json::Value::String(t)) => vec![t.as_str()],
        Some(serde_json::Value::Array(ts)) => ts.iter().filter_map(|t| t.as_str()).collect(),
        _ => Vec::new(),
    };
    let nullable = types.contains(&"null");
    let words: Vec<String> = types
        .iter()
        .filter(|t| **t != "null")
        .map(|t| match *t {
            "array" => {
                let size = match (schema.get("minItems"), schema.get("maxItems")) {
                    (Some(min), Some(max)) if min == max => format!("{min} "),
                    _ => String::new(),
                };
                let items = schema
                    .get("items")
                    .map_or_else(|| "any JSON".to_owned(), |i| type_of(i, doc).0);
                format!("array of {size}{items}")
            }
            "object" => match schema.get("additionalProperties") {
                Some(value) if value.is_object() => {
                    format!("map of string to {}", type_of(value, doc).0)
                }
                _ => "object".to_owned(),
            },
            other => other.to_owned(),
        })
        .collect();
    if words.is_empty() {
        return ("any JSON".to_owned(), nullable);
    }
    (words.join(" or "), nullable)
}

fn is_null(schema: &serde_json::Value) -> bool {
    schema.get("type").and_then(|t| t.as_str()) == Some("null")
}

/// A JSON value as it would be typed (a string without its quotes).
fn plain(v: &serde_json::Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// A doc comment's lines as one line (a table cell holds one).
fn one_paragraph(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the rendered documents live, from the crate's folder.
    const DOCS: &str = "docs/json.md";

    /// The whole list needs every command built in (`--features localnet`, as the tests run).
    #[cfg(feature = "localnet")]
    #[test]
    fn the_json_documents_are_the_committed_docs() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(DOCS);
        let want = render();
        if std::env::var_os("SKILLTRIAL_WRITE_DOCS").is_some() {
            std::fs::write(&path, &want).unwrap();
            return;
        }
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{DOCS} is not what cli/src/commands/documents.rs renders: run `SKILLTRIAL_WRITE_DOCS=1 cargo test -p skilltrial-cli --features localnet the_json_documents_are_the_committed_docs` and commit it"
        );
    }

    /// The leaf commands clap parses, as typed (`admin show`); `help` prints no document.
    fn leaves(command: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        for sub in command.get_subcommands() {
            if sub.get_name() == "help" {
                continue;
            }
            let name = if prefix.is_empty() {
                sub.get_name().to_owned()
            } else {
                format!("{prefix} {}", sub.get_name())
            };
            if sub.has_subcommands() {
                leaves(sub, &name, out);
            } else {
                out.push(name);
            }
        }
    }

    #[cfg(feature = "localnet")]
    #[test]
    fn every_command_that_takes_json_has_a_document() {
        use clap::CommandFactory;
        // Given every leaf command of the real command line
        let mut cli = crate::cli::Cli::command();
        cli.build();
        let mut commands = Vec::new();
        leaves(&cli, "", &mut commands);
        assert!(commands.len() > 30, "{commands:?}");
        // When the registry's commands are read without the flag that selects a document
        let documents = all();
        let registered: Vec<String> = documents
            .iter()
            .map(|d| {
                d.command
                    .split(" --")
                    .next()
                    .unwrap_or(d.command)
                    .to_owned()
            })
            .collect();
        // Then every leaf that takes --json has a document (or awaits its type on another
        // branch), and every document names a real command
        let mut missing = Vec::new();
        for command in &commands {
            let mut sub = &cli;
            for word in command.split(' ') {
                sub = sub.find_subcommand(word).unwrap();
            }
            let takes_json = sub.get_arguments().any(|a| a.get_id() == "json");
            assert!(takes_json, "{command} has no --json");
            if !registered.contains(command) && !AWAITING_TYPES.contains(&command.as_str()) {
                missing.push(command.clone());
            }
        }
        assert!(
            missing.is_empty(),
            "no --json document registered for {missing:?}"
        );
        for name in registered
            .iter()
            .map(String::as_str)
            .chain(AWAITING_TYPES.iter().copied())
        {
            assert!(commands.iter().any(|c| c == name), "no command `{name}`");
        }
        for name in AWAITING_TYPES {
            assert!(
                !registered.iter().any(|r| r == name),
                "{name} is registered: take it out of AWAITING_TYPES"
            );
        }
    }

    #[test]
    fn a_documents_schema_names_its_members_their_nulls_and_meanings() {
        // Given a document with a nullable member, an absent-when-empty one and a named type
        let d = document!("resolve", crate::commands::resolve::Resolved, "x");
        let mut out = String::new();
        // When it is rendered
        section(&mut out, &d, 2);
        // Then each member is a row with its type, nullability, presence and meaning
        assert!(
            out.contains("| `new_attempt` | string | yes | always | The new attempt"),
            "{out}"
        );
        assert!(
            out.contains("| `attempt` | string |  | always | The attempt decided. |"),
            "{out}"
        );
        // A member serde leaves out when empty is optional, never null
        let shown = document!("pack show", crate::commands::pack::PackShown, "x");
        let mut out = String::new();
        section(&mut out, &shown, 2);
        assert!(
            out.contains("| `prompt` | string |  | optional | The full text"),
            "{out}"
        );
        let anchored = document!("anchor", crate::exit::Failed, "x");
        let mut out = String::new();
        section(&mut out, &anchored, 2);
        assert!(out.contains("[`ErrorBody`](#anchor-errorbody)"), "{out}");
        assert!(out.contains("- `rejected`: An input was read"), "{out}");
    }

    #[test]
    fn anchors_are_the_command_in_lowercase_words() {
        assert_eq!(anchor("cancel --chain"), "cancel-chain");
        assert_eq!(anchor("admin show"), "admin-show");
        assert_eq!(anchor("run --dry-run"), "run-dry-run");
        assert_eq!(anchor("ErrorBody"), "errorbody");
    }
}
