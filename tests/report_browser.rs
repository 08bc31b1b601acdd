//! The HTML report in a real browser: headless Chromium opens it from `file://`, every view
//! renders, no network request leaves the page, and hostile model answers — `<script>`,
//! `<img onerror>`, `javascript:` links, CSS injection — stay inert text. A screenshot of each
//! view is saved to `target/report-screenshots/` for people to look at.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use skilltrial_e2e::{skilltrial_bin, workspace_root};
use skilltrial_runner::scripted::{Reply, ScriptedServer};

const VIEWS: [&str; 6] = ["summary", "pairs", "tasks", "evidence", "cost", "manifest"];

const HOSTILE: [&str; 4] = [
    "<script>document.title='PWNED-SCRIPT'</script>",
    "<img src=x onerror=\"document.title='PWNED-IMG'\">",
    "<a href=\"javascript:document.title='PWNED-LINK'\">click</a>",
    "<style>body{display:none!important}</style><div style=\"background:url(http://127.0.0.1:9/leak)\">css</div>",
];

fn chromium() -> PathBuf {
    let path = std::env::var("CHROMIUM")
        .map_or_else(|_| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "{} not found: the test command installs Debian's chromium (apt-get install chromium); set CHROMIUM to another path",
        path.display()
    );
    path
}

/// A TCP listener that records the first line of every request: Chromium's proxy, so any
/// network request (http or https, loopback included) lands here.
fn recording_proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&seen);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let log = Arc::clone(&log);
            std::thread::spawn(move || {
                let mut buf = [0u8; 2048];
                let _ = s.set_read_timeout(Some(Duration::from_millis(500)));
                let n = s.read(&mut buf).unwrap_or(0);
                let line = String::from_utf8_lossy(&buf[..n])
                    .lines()
                    .next()
                    .unwrap_or("")
                    .to_owned();
                log.lock().unwrap().push(line);
            });
        }
    });
    (port, seen)
}

fn browser(proxy: u16, profile: &Path, extra: &[String], url: &str) -> std::process::Output {
    Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-default-apps",
            "--disable-client-side-phishing-detection",
            "--safebrowsing-disable-auto-update",
            "--no-pings",
            "--disable-features=OptimizationHints,MediaRouter,Translate,AutofillServerCommunication",
            "--window-size=1280,1600",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--proxy-server=http://127.0.0.1:{proxy}"))
        .arg("--proxy-bypass-list=<-loopback>")
        .args(extra)
        .arg(url)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// Plans and runs a 6-trial baseline run whose model answers are hostile markup, then writes
/// its report. Returns the HTML path.
fn hostile_report(dir: &Path) -> PathBuf {
    let server = ScriptedServer::start(|r| {
        Reply::Answer(HOSTILE[usize::try_from(r.index).unwrap() % HOSTILE.len()].to_owned())
    })
    .unwrap();
    let profiles = dir.join("profiles.toml");
    std::fs::write(
        &profiles,
        format!("[[profile]]\nid = \"loopback\"\nprovider = \"anthropic\"\nmodel = \"loopback-model\"\nbase_url = \"{}\"\ncontext_tokens = 100000\nmax_output_tokens = 512\ninput_usd_per_mtok = \"1\"\noutput_usd_per_mtok = \"1\"\nprice_source = \"test\"\nprice_as_of = \"2026-11-29\"\n", server.url()),
    )
    .unwrap();
    let home = dir.join("home");
    let run = |args: &[&str]| {
        let out = Command::new(skilltrial_bin().unwrap())
            .args(args)
            .arg("--home")
            .arg(&home)
            .current_dir(workspace_root())
            .env("ANTHROPIC_API_KEY", "test-key")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap()
    };
    let plan = run(&[
        "plan",
        "--model",
        "loopback",
        "--profiles",
        profiles.to_str().unwrap(),
        "--reps",
        "1",
        "--cap-usd",
        "1",
        "--json",
    ]);
    let id = plan["run"].as_str().unwrap().to_owned();
    run(&["run", "--manifest", &id, "--json"]);
    let out = dir.join("report");
    run(&[
        "report",
        &id,
        "--html",
        "--out",
        out.to_str().unwrap(),
        "--json",
    ]);
    out.join("report.html")
}

#[test]
fn the_html_report_renders_offline_and_hostile_answers_stay_inert() {
    let tmp = tempfile::tempdir().unwrap();
    let html = hostile_report(tmp.path());
    let url = format!("file://{}", html.display());
    let (proxy, requests) = recording_proxy();
    let shots = workspace_root().join("target/report-screenshots");
    std::fs::create_dir_all(&shots).unwrap();

    // Every view renders (a screenshot of each, for people) ...
    for (i, view) in VIEWS.iter().enumerate() {
        let shot = shots.join(format!("{i}-{view}.png"));
        let _ = std::fs::remove_file(&shot);
        let out = browser(
            proxy,
            &tmp.path().join(format!("chrome-{view}")),
            &[format!("--screenshot={}", shot.display())],
            &format!("{url}#{view}"),
        );
        assert!(
            shot.is_file(),
            "no screenshot of {view}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            std::fs::metadata(&shot).unwrap().len() > 10_000,
            "{view} rendered an empty page"
        );
    }

    // ... the DOM after scripts ran holds every view and only our own script ...
    let dom = browser(
        proxy,
        &tmp.path().join("chrome-dom"),
        &["--dump-dom".to_owned()],
        &format!("{url}#evidence"),
    );
    let dom = String::from_utf8(dom.stdout).unwrap();
    for view in VIEWS {
        assert!(
            dom.contains(&format!("id=\"{view}\"")),
            "view {view} missing"
        );
    }
    assert!(
        dom.contains("class=\"view on\" id=\"evidence\"")
            || dom.contains("id=\"evidence\" class=\"view on\""),
        "the tab script ran and selected the view"
    );
    assert_eq!(
        dom.matches("<script").count(),
        1,
        "only the report's own script"
    );
    assert!(!dom.contains("<img"), "an answer's <img> became an element");
    let tags: Vec<&str> = dom
        .split('<')
        .skip(1)
        .filter_map(|t| t.split('>').next())
        .collect();
    assert!(
        !tags.iter().any(|t| t.contains(" onerror=")),
        "an answer's handler became an attribute"
    );
    assert!(
        !tags.iter().any(|t| t.contains("href=\"javascript:")),
        "an answer's javascript: link became a link"
    );
    assert!(
        !tags.iter().any(|t| t.contains(" style=")),
        "an answer's inline style became an attribute"
    );
    assert!(
        !dom.contains("<style>body{display:none"),
        "an answer's style became a stylesheet"
    );
    assert!(
        dom.contains("&lt;script&gt;document.title="),
        "the hostile answer is shown as text"
    );
    assert!(
        dom.contains("<title>SkillTrial report"),
        "no script changed the title"
    );
    assert!(!dom.contains("PWNED-SCRIPT</title>") && !dom.contains("<title>PWNED"));

    // ... and the page requested nothing: the one address its hostile CSS names was never asked
    // for, and nothing else the browser sent was for the page (Chromium's own background
    // requests go to its vendor's hosts, never to a file:// page's content).
    std::thread::sleep(Duration::from_millis(700));
    let seen = requests.lock().unwrap().clone();
    let from_page: Vec<&String> = seen
        .iter()
        .filter(|l| l.contains("127.0.0.1") || l.contains("/leak") || l.contains("localhost"))
        .collect();
    assert!(
        from_page.is_empty(),
        "the page made network requests: {from_page:?}"
    );
    for line in &seen {
        assert!(
            line.is_empty()
                || line.contains("google")
                || line.contains("gstatic")
                || line.contains("gvt1")
                || line.contains("chrome"),
            "unexpected network request: {line}"
        );
    }
    let html_text = std::fs::read_to_string(&html).unwrap();
    assert!(
        !html_text.contains("src=\"http") && !html_text.contains("href=\"http"),
        "no network reference in the file"
    );
}
