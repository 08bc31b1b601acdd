//! `skilltrial ledger [RUN…] [--report FILE…] [--out DIR]`: one run per model side by side, every
//! other run left out with why (core::ledger has the rules).

use skilltrial_core::bundle::display_safe;
use skilltrial_core::ledger::{self, Basis};
use skilltrial_core::report::Report;
use skilltrial_engine::report;

use crate::cli::{Global, LedgerArgs};
use crate::exit::{CliError, Status};
use crate::output;
use crate::state;

pub fn run(args: &LedgerArgs, global: &Global) -> Result<Status, CliError> {
    let mut reports: Vec<Report> = Vec::new();
    let mut broken: Vec<ledger::LeftOut> = Vec::new();
    // The journal is read when runs are named, or when nothing is (then every run in it).
    let every = args.runs.is_empty() && args.reports.is_empty();
    if every || !args.runs.is_empty() {
        let layout = state::layout(global)?;
        let journal = state::existing_journal(&layout)?;
        let store = state::store(&layout)?;
        let payloads = state::payloads(&layout)?;
        let rows = if every {
            journal
                .runs()
                .map_err(|e| CliError::Environment(anyhow::anyhow!("{e}")))?
        } else {
            args.runs
                .iter()
                .map(|r| state::find_run(&journal, Some(r)))
                .collect::<Result<_, _>>()?
        };
        for row in &rows {
            match report::build(&journal, &store, &payloads, row) {
                Ok(r) => reports.push(r),
                // Over the whole journal, one damaged run is left out with why; a run the user
                // named must build.
                Err(e) if every => broken.push(ledger::LeftOut {
                    run: row.id.clone(),
                    model: "(unknown: its report cannot be built)".to_owned(),
                    reason: format!(
                        "its report cannot be built: {e} (`skilltrial report {}` says more)",
                        &row.id[..row.id.len().min(12)]
                    ),
                    differs: Vec::new(),
                }),
                Err(e) => return Err(e.into()),
            }
        }
    }
    for path in &args.reports {
        let report = skilltrial_engine::files::read_report(path)?;
        // A file joins the ledger only if it is what it says: its hashes recomputed from it.
        report.verify().map_err(|e| {
            CliError::Rejected(anyhow::anyhow!(
                "{}: {e}: an edited report cannot join a ledger; write it again with `skilltrial report`",
                path.display()
            ))
        })?;
        reports.push(report);
    }
    let basis = if every {
        Basis::MostModels
    } else {
        Basis::First
    };
    let mut ledger = ledger::build(&reports, basis).map_err(|e| {
        let why: Vec<String> = broken
            .iter()
            .map(|b| format!("{}: {}", b.run, b.reason))
            .collect();
        CliError::Environment(anyhow::anyhow!(
            "{e}{}",
            if why.is_empty() {
                String::new()
            } else {
                format!(" (every run's report failed: {})", why.join("; "))
            }
        ))
    })?;
    ledger.left_out.extend(broken);
    let written = match &args.out {
        Some(dir) => {
            let mut json = serde_json::to_string_pretty(&ledger).map_err(|e| {
                CliError::Environment(anyhow::anyhow!("cannot encode the ledger: {e}"))
            })?;
            json.push('\n');
            let (json_path, html_path) = (dir.join("ledger.json"), dir.join("ledger.html"));
            // Both or neither: anything in the way is named before either file is written.
            if dir.exists() && !dir.is_dir() {
                return Err(CliError::Environment(anyhow::anyhow!(
                    "--out {}: a file, not a folder: give a folder for ledger.json and ledger.html",
                    dir.display()
                )));
            }
            for path in [&json_path, &html_path] {
                if path.is_dir() {
                    return Err(CliError::Environment(anyhow::anyhow!(
                        "{} is a folder: move it, or give another --out",
                        path.display()
                    )));
                }
            }
            skilltrial_engine::files::write_file(&json_path, json.as_bytes())?;
            skilltrial_engine::files::write_file(
                &html_path,
                ledger::html::render(&ledger).as_bytes(),
            )?;
            Some((json_path, html_path))
        }
        None => None,
    };
    if global.json {
        output::json(&ledger)?;
    } else {
        let mut text = ledger.text();
        if ledger.models.len() == 1 {
            text.push_str(
                "\none model only: plan and run the same bundles and pack on another model (same repetitions, temperature and output limit) to put it beside this one\n",
            );
        }
        if let Some((json, html)) = &written {
            text.push_str(&format!(
                "\njson    {}\nhtml    {}\n",
                display_safe(&json.display().to_string()),
                display_safe(&html.display().to_string())
            ));
        }
        output::text(&text)?;
    }
    Ok(Status::Ok)
}
