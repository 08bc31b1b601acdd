//! The HTML report in a real browser: headless Chromium opens it from `file://`, every view
//! renders, no network request leaves the page, and hostile model answers — `<script>`,
//! `<img onerror>`, `javascript:` links, CSS injection — stay inert text. A screenshot of each
//! view is saved to `target/report-screenshots/` for people to look at.
//!
//! The charts are checked at 1200 px and 390 px, light and dark: nothing wider than the viewport,
//! no CSP violation, no request, hostile task names inert inside the SVG, data tables open in
//! print. A full-page screenshot of every view in each case, and of the print layout, is saved
//! to `target/report-screenshots/charts/` (the workspace's `target/`, whatever
//! `CARGO_TARGET_DIR` says), named `<fixture>-<width>-<theme>-<view>.png`.
//!
//! The interactive parts (tabs, the light/dark toggle under a dark system theme, the evidence
//! filters, a matrix cell opening its attempts) are driven through the DevTools protocol: a
//! minimal WebSocket client below, so no browser-automation crate is needed. The system theme
//! is emulated with `Emulation.setEmulatedMedia`, which every Chromium honours (command-line
//! flags for it differ between builds).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::Mutex;
use std::time::Duration;

use skilltrial_e2e::{skilltrial_bin, workspace_root};
use skilltrial_engine::scripted::{Reply, ScriptedServer};

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

/// A DevTools-protocol session with one page, over a hand-rolled WebSocket (RFC 6455: masked
/// client frames, unmasked server frames, continuation frames joined).
struct Page {
    socket: TcpStream,
    next_id: u64,
    child: std::process::Child,
}

impl Drop for Page {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn http_get(port: u16, path: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    // Chromium keeps the connection open: read the head, then exactly Content-Length bytes.
    let mut reader = BufReader::new(s);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        if line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap();
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).unwrap();
    String::from_utf8(body).unwrap()
}

impl Page {
    /// Starts Chromium on `url` with remote debugging and attaches to its page.
    fn open(proxy: u16, profile: &Path, url: &str) -> Page {
        Self::open_when(
            proxy,
            profile,
            url,
            "document.readyState === 'complete' && document.documentElement.classList.contains('js')",
        )
    }

    /// [`Page::open`], ready once `ready` (a script expression) is true: for a page without a
    /// script of its own, the ledger's.
    fn open_when(proxy: u16, profile: &Path, url: &str, ready: &str) -> Page {
        let mut child = Command::new(chromium())
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--window-size=1280,1600",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(format!("--proxy-server=http://127.0.0.1:{proxy}"))
            .arg("--proxy-bypass-list=<-loopback>")
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let port = loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).unwrap() > 0,
                "chromium exited before its DevTools endpoint was up"
            );
            if let Some(rest) = line
                .trim()
                .strip_prefix("DevTools listening on ws://127.0.0.1:")
            {
                break rest.split('/').next().unwrap().parse::<u16>().unwrap();
            }
        };
        // Keep draining stderr so Chromium never blocks on a full pipe.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let ws = (0..50)
            .find_map(|_| {
                let list: serde_json::Value =
                    serde_json::from_str(&http_get(port, "/json/list")).ok()?;
                let found = list.as_array()?.iter().find(|t| {
                    t["type"] == "page"
                        && t["url"].as_str().is_some_and(|u| u.starts_with("file://"))
                });
                if found.is_none() {
                    std::thread::sleep(Duration::from_millis(100));
                }
                found.and_then(|t| t["webSocketDebuggerUrl"].as_str().map(str::to_owned))
            })
            .expect("the report's page target");
        let path = ws.splitn(4, '/').nth(3).unwrap();
        let mut socket = TcpStream::connect(("127.0.0.1", port)).unwrap();
        write!(socket, "GET /{path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n").unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            socket.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        socket
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut page = Page {
            socket,
            next_id: 0,
            child,
        };
        // Wait for the page to be ready (its own script to have run, where it has one).
        for _ in 0..100 {
            if page.eval(ready) == true {
                return page;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the report never finished loading");
    }

    fn send_frame(&mut self, payload: &[u8]) {
        let mask = [0x5a, 0x17, 0xc3, 0x81];
        let mut frame = vec![0x81u8];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | u8::try_from(n).unwrap()),
            n if n <= 0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&u16::try_from(n).unwrap().to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.socket.write_all(&frame).unwrap();
    }

    fn read_message(&mut self) -> Vec<u8> {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.socket.read_exact(&mut head).unwrap();
            let mut len = u64::from(head[1] & 0x7f);
            if len == 126 {
                let mut b = [0u8; 2];
                self.socket.read_exact(&mut b).unwrap();
                len = u64::from(u16::from_be_bytes(b));
            } else if len == 127 {
                let mut b = [0u8; 8];
                self.socket.read_exact(&mut b).unwrap();
                len = u64::from_be_bytes(b);
            }
            let mut payload = vec![0u8; usize::try_from(len).unwrap()];
            self.socket.read_exact(&mut payload).unwrap();
            message.extend_from_slice(&payload);
            if head[0] & 0x80 != 0 {
                return message;
            }
        }
    }

    /// Sends a DevTools command and returns its result (events in between are skipped).
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        let body = serde_json::json!({ "id": id, "method": method, "params": params }).to_string();
        self.send_frame(body.as_bytes());
        loop {
            let reply: serde_json::Value = serde_json::from_slice(&self.read_message()).unwrap();
            if reply["id"] == id {
                assert!(reply.get("error").is_none(), "{method}: {reply}");
                return reply["result"].clone();
            }
        }
    }

    /// Evaluates a JavaScript expression in the page (DevTools evaluation is not the page's
    /// script, so the page's CSP does not apply to it) and returns its value.
    fn eval(&mut self, expression: &str) -> serde_json::Value {
        let result = self.call(
            "Runtime.evaluate",
            serde_json::json!({ "expression": expression, "returnByValue": true }),
        );
        assert!(
            result.get("exceptionDetails").is_none(),
            "{expression}: {result}"
        );
        result["result"]["value"].clone()
    }

    /// Counts CSP violations from the first byte of the page on, in `window.__csp`: a listener
    /// installed before the document loads, then a reload; returns once `ready` is true again.
    fn watch_csp(&mut self, ready: &str) {
        self.call("Page.enable", serde_json::json!({}));
        self.call(
            "Page.addScriptToEvaluateOnNewDocument",
            serde_json::json!({ "source": "window.__csp=[];document.addEventListener('securitypolicyviolation',function(e){window.__csp.push(e.violatedDirective+' '+e.blockedURI)});" }),
        );
        self.call("Page.reload", serde_json::json!({}));
        let ready = format!("({ready}) && Array.isArray(window.__csp)");
        for _ in 0..100 {
            if self.eval(&ready) == true {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!("the page did not load again after installing the CSP listener");
    }

    fn emulate_color_scheme(&mut self, scheme: &str) {
        self.call(
            "Emulation.setEmulatedMedia",
            serde_json::json!({ "features": [{ "name": "prefers-color-scheme", "value": scheme }] }),
        );
    }

    fn background(&mut self) -> String {
        self.eval("getComputedStyle(document.body).backgroundColor")
            .as_str()
            .unwrap()
            .to_owned()
    }
}

const DARK_BG: &str = "rgb(21, 22, 26)";
const LIGHT_BG: &str = "rgb(251, 251, 250)";

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
    run(&["report", &id, "--out", out.to_str().unwrap(), "--json"]);
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

#[test]
fn the_theme_toggle_switches_on_its_first_click_under_a_dark_system_theme() {
    // Given the report open under a dark system theme ...
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", hostile_report(tmp.path()).display());
    let (proxy, _requests) = recording_proxy();
    let mut page = Page::open(proxy, &tmp.path().join("chrome-dark"), &url);
    page.emulate_color_scheme("dark");
    assert_eq!(
        page.background(),
        DARK_BG,
        "the system's dark theme applies"
    );
    // When the toggle is clicked once, then the page turns light (it did nothing before) ...
    page.eval("document.getElementById('theme').click()");
    assert_eq!(
        page.background(),
        LIGHT_BG,
        "the first click switched nothing"
    );
    // ... and a second click turns it dark again.
    page.eval("document.getElementById('theme').click()");
    assert_eq!(page.background(), DARK_BG);

    // Under a light system theme the first click turns it dark.
    let mut page = Page::open(proxy, &tmp.path().join("chrome-light"), &url);
    page.emulate_color_scheme("light");
    assert_eq!(page.background(), LIGHT_BG);
    page.eval("document.getElementById('theme').click()");
    assert_eq!(page.background(), DARK_BG);
}

#[test]
fn each_tab_shows_its_view_and_evidence_filters_by_task_arm_and_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let url = format!("file://{}", hostile_report(tmp.path()).display());
    let (proxy, _requests) = recording_proxy();
    let mut page = Page::open(proxy, &tmp.path().join("chrome-views"), &url);

    // Each tab: its view is the only one displayed, and it has text.
    for view in VIEWS {
        let shown = page.eval(&format!(
            "document.querySelector('nav a[href=\"#{view}\"]').click();
             JSON.stringify([].slice.call(document.querySelectorAll('section.view'))
               .filter(function(s){{return getComputedStyle(s).display !== 'none'}})
               .map(function(s){{return [s.id, s.innerText.trim().length]}}))"
        ));
        let shown: Vec<(String, usize)> = serde_json::from_str(shown.as_str().unwrap()).unwrap();
        assert_eq!(shown.len(), 1, "{view}: {shown:?}");
        assert_eq!(shown[0].0, view);
        assert!(shown[0].1 > 40, "{view} shows next to no text: {shown:?}");
    }

    // Evidence: 6 attempts, one per task; filtering by a task leaves its one attempt.
    let visible = "[].slice.call(document.querySelectorAll('#evidence details[data-task]')).filter(function(d){return getComputedStyle(d).display !== 'none'})";
    let count = |page: &mut Page| page.eval(&format!("{visible}.length")).as_u64().unwrap();
    assert_eq!(count(&mut page), 6);
    let task = page
        .eval("document.querySelector('#f-task option:nth-child(2)').value")
        .as_str()
        .unwrap()
        .to_owned();
    page.eval(&format!(
        "var s=document.getElementById('f-task');s.value={task:?};s.dispatchEvent(new Event('change'))"
    ));
    assert_eq!(count(&mut page), 1);
    assert_eq!(
        page.eval(&format!("{visible}[0].getAttribute('data-task')")),
        serde_json::json!(task)
    );
    assert_eq!(
        page.eval("document.getElementById('f-count').textContent"),
        "1 of 6 attempts"
    );
    // By outcome: no answer here passes, so `pass` is not offered; every attempt is `invalid_output`.
    page.eval("var s=document.getElementById('f-task');s.value='';s.dispatchEvent(new Event('change'));var o=document.getElementById('f-outcome');o.value='invalid_output';o.dispatchEvent(new Event('change'))");
    assert_eq!(count(&mut page), 6);
    // By arm: this run has only the baseline.
    page.eval("var o=document.getElementById('f-outcome');o.value='';o.dispatchEvent(new Event('change'));var a=document.getElementById('f-arm');a.value='baseline';a.dispatchEvent(new Event('change'))");
    assert_eq!(count(&mut page), 6);

    // A matrix cell opens its attempts: the evidence view, filtered to that task and arm, open.
    let opened = page.eval(&format!(
        "document.querySelector('nav a[href=\"#tasks\"]').click();
         var cell=document.querySelectorAll('#tasks a[data-task][data-arm]')[2];
         var want=[cell.getAttribute('data-task'), cell.getAttribute('data-arm')];
         cell.click();
         var shown={visible};
         JSON.stringify({{want: want, view: document.querySelector('section.view.on').id,
           shown: shown.map(function(d){{return [d.getAttribute('data-task'), d.getAttribute('data-arm'), d.open]}})}})"
    ));
    let opened: serde_json::Value = serde_json::from_str(opened.as_str().unwrap()).unwrap();
    assert_eq!(opened["view"], "evidence", "{opened}");
    let want = &opened["want"];
    let shown = opened["shown"].as_array().unwrap();
    assert_eq!(shown.len(), 1, "{opened}");
    assert_eq!(
        shown[0],
        serde_json::json!([want[0], want[1], true]),
        "{opened}"
    );
}

/// Task names that try to leave an SVG `<text>`, open elements, run script or end a CDATA
/// section, replacing three of the rich fixture's tasks.
const HOSTILE_TASKS: [(&str, &str); 3] = [
    (
        "plan-t22-fee-memo",
        "<script>document.title='PWNED-SVG'</script>",
    ),
    (
        "tx-v0-alt-usdc",
        "</text></svg><img src=x onerror=\"document.title='PWNED-SVG-IMG'\">",
    ),
    (
        "acct-t22-fzyeg-mint",
        "]]><svg onload=\"document.title='PWNED-ONLOAD'\">&amp;\"'\u{1}",
    ),
];

/// The committed rich report (three arms, six tasks, outcomes of every kind) with hostile task
/// names and a hostile answer, or the committed partial one (three repetitions), rendered by the
/// core's HTML view into `dir`. Returns the HTML path.
fn chart_report(dir: &Path, fixture: &str, hostile: bool) -> PathBuf {
    let path = workspace_root().join("core/tests/fixtures").join(fixture);
    let mut json = std::fs::read_to_string(&path).unwrap();
    if hostile {
        for (name, replacement) in HOSTILE_TASKS {
            json = json.replace(
                &format!("\"{name}\""),
                &serde_json::to_string(replacement).unwrap(),
            );
        }
    }
    let mut doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    if hostile {
        doc["trials"][0]["attempts"][0]["answer"] = serde_json::json!(HOSTILE.join(" "));
    }
    let report = skilltrial_core::report::Report::from_value(&doc).unwrap();
    let html = dir.join(fixture.replace(".json", ".html"));
    std::fs::write(&html, skilltrial_core::report::html::render(&report)).unwrap();
    html
}

/// Standard base64 (what DevTools returns screenshots in), without a dependency for it.
fn base64_decode(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = text.bytes().filter(|c| *c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let mut n = 0u32;
        for (i, c) in chunk.iter().enumerate() {
            n |= u32::from(value(*c)) << (18 - 6 * i);
        }
        out.extend_from_slice(&n.to_be_bytes()[1..chunk.len()]);
    }
    out
}

impl Page {
    /// The whole page as a PNG at the current viewport width.
    fn screenshot(&mut self, path: &Path) {
        let metrics = self.call("Page.getLayoutMetrics", serde_json::json!({}));
        let size = &metrics["cssContentSize"];
        let shot = self.call(
            "Page.captureScreenshot",
            serde_json::json!({
                "format": "png",
                "captureBeyondViewport": true,
                "clip": { "x": 0, "y": 0, "width": size["width"], "height": size["height"], "scale": 1 }
            }),
        );
        std::fs::write(path, base64_decode(shot["data"].as_str().unwrap())).unwrap();
    }
}

/// The views that hold charts (every view is checked for width and saved).
const CHART_VIEWS: [&str; 3] = ["summary", "tasks", "cost"];

#[test]
fn charts_fit_a_phone_and_a_desktop_in_both_themes_offline_under_the_csp_with_hostile_names_inert()
{
    let tmp = tempfile::tempdir().unwrap();
    let shots = workspace_root().join("target/report-screenshots/charts");
    std::fs::create_dir_all(&shots).unwrap();
    let (proxy, requests) = recording_proxy();
    for (fixture, hostile) in [
        ("report-v2-rich.json", true),
        ("report-v2-partial.json", false),
    ] {
        let html = chart_report(tmp.path(), fixture, hostile);
        let url = format!("file://{}", html.display());
        let mut page = Page::open(proxy, &tmp.path().join(format!("chrome-{fixture}")), &url);
        page.watch_csp(
            "document.readyState === 'complete' && document.documentElement.classList.contains('js')",
        );
        let stem = fixture.trim_end_matches(".json");
        let mut fills = Vec::new();
        for width in [1200u32, 390] {
            page.call(
                "Emulation.setDeviceMetricsOverride",
                serde_json::json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600 }),
            );
            for scheme in ["light", "dark"] {
                page.emulate_color_scheme(scheme);
                for view in VIEWS {
                    let state = page.eval(&format!(
                        "document.querySelector('nav a[href=\"#{view}\"]').click();
                         var w=window.innerWidth, charts=[].slice.call(document.querySelectorAll('section.view.on svg.chart'));
                         JSON.stringify({{inner: w, scroll: document.documentElement.scrollWidth,
                           charts: charts.length,
                           wide: charts.filter(function(s){{var r=s.getBoundingClientRect();return r.left < 0 || r.right > w + 0.5}}).map(function(s){{return s.id}}),
                           clipped: charts.reduce(function(out, s){{var r=s.getBoundingClientRect();[].slice.call(s.querySelectorAll('text')).forEach(function(t){{var b=t.getBoundingClientRect();if(b.width>0&&(b.left<r.left-1||b.right>r.right+1)){{out.push(s.id+': '+t.textContent)}}}});return out}}, []),
                           textFill: charts.length ? getComputedStyle(document.querySelector('section.view.on svg.chart text:not(.k)')).fill : ''}})"
                    ));
                    let state: serde_json::Value =
                        serde_json::from_str(state.as_str().unwrap()).unwrap();
                    let at = format!("{stem} {view} at {width} px, {scheme}");
                    // Then nothing is wider than the viewport ...
                    assert!(
                        state["scroll"].as_u64() <= state["inner"].as_u64(),
                        "{at}: the page scrolls sideways: {state}"
                    );
                    assert_eq!(state["wide"], serde_json::json!([]), "{at}: {state}");
                    // ... and no chart's text runs past its chart's edge.
                    assert_eq!(state["clipped"], serde_json::json!([]), "{at}: {state}");
                    // The tasks view has a chart only with repetitions (the partial fixture's 3).
                    if CHART_VIEWS.contains(&view) && (view != "tasks" || !hostile) {
                        assert!(state["charts"].as_u64().unwrap() >= 1, "{at}: no chart");
                    }
                    if view == "summary" {
                        fills.push((scheme, state["textFill"].as_str().unwrap().to_owned()));
                    }
                    // ... and each view is saved for people to look at.
                    page.screenshot(&shots.join(format!("{stem}-{width}-{scheme}-{view}.png")));
                }
            }
        }
        // In print every view shows, the navigation does not, and every chart's data table is
        // open on the page.
        page.call(
            "Emulation.setEmulatedMedia",
            serde_json::json!({ "media": "print", "features": [{ "name": "prefers-color-scheme", "value": "light" }] }),
        );
        let printed = page.eval(
            "JSON.stringify({
               hidden_views: [].slice.call(document.querySelectorAll('section.view')).filter(function(s){return getComputedStyle(s).display === 'none'}).map(function(s){return s.id}),
               nav: getComputedStyle(document.querySelector('nav')).display,
               tables: document.querySelectorAll('figure.chart details.data table').length,
               shown: [].slice.call(document.querySelectorAll('figure.chart details.data table')).filter(function(t){return t.getBoundingClientRect().height > 0}).length
             })",
        );
        let printed: serde_json::Value = serde_json::from_str(printed.as_str().unwrap()).unwrap();
        assert_eq!(printed["hidden_views"], serde_json::json!([]), "{printed}");
        assert_eq!(printed["nav"], "none", "{printed}");
        assert!(printed["tables"].as_u64().unwrap() >= 6, "{printed}");
        assert_eq!(printed["shown"], printed["tables"], "{printed}");
        page.screenshot(&shots.join(format!("{stem}-print.png")));
        page.call(
            "Emulation.setEmulatedMedia",
            serde_json::json!({ "media": "", "features": [] }),
        );

        // The charts follow the theme: their text is the page's foreground in each.
        for (scheme, fill) in &fills {
            let want = if *scheme == "dark" {
                "rgb(230, 230, 234)"
            } else {
                "rgb(28, 29, 33)"
            };
            assert_eq!(fill, want, "{scheme} chart text");
        }

        if hostile {
            // Hostile task names are text inside the SVG: no element they tried to open, no
            // handler, no changed title, and the names read back as written.
            let inert = page.eval(
                "JSON.stringify({
                   elements: document.querySelectorAll('svg script, svg img, svg svg, svg foreignObject').length,
                   handlers: [].slice.call(document.querySelectorAll('svg *')).filter(function(e){return e.getAttributeNames().some(function(n){return n.indexOf('on')===0})}).length,
                   title: document.title,
                   names: [].slice.call(document.querySelectorAll('#chart-forest-b-a a[data-task]')).map(function(a){return a.getAttribute('data-task')})
                 })",
            );
            let inert: serde_json::Value = serde_json::from_str(inert.as_str().unwrap()).unwrap();
            assert_eq!(inert["elements"], 0, "{inert}");
            assert_eq!(inert["handlers"], 0, "{inert}");
            assert!(
                inert["title"]
                    .as_str()
                    .unwrap()
                    .starts_with("SkillTrial report"),
                "{inert}"
            );
            let names: Vec<&str> = inert["names"]
                .as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap())
                .collect();
            assert!(names.contains(&HOSTILE_TASKS[0].1), "{names:?}");
            assert!(names.contains(&HOSTILE_TASKS[1].1), "{names:?}");

            // A forest dot opens its task's trials in the evidence view.
            let opened = page.eval(&format!(
                "document.querySelector('nav a[href=\"#summary\"]').click();
                 var a=document.querySelector('#chart-forest-b-a a[data-task]');
                 var want=a.getAttribute('data-task');
                 a.dispatchEvent(new MouseEvent('click', {{bubbles: true, cancelable: true}}));
                 var shown={visible};
                 JSON.stringify({{want: want, view: document.querySelector('section.view.on').id,
                   shown: shown.map(function(d){{return d.getAttribute('data-task')}})}})",
                visible = "[].slice.call(document.querySelectorAll('#evidence details[data-task]')).filter(function(d){return getComputedStyle(d).display !== 'none'})"
            ));
            let opened: serde_json::Value = serde_json::from_str(opened.as_str().unwrap()).unwrap();
            assert_eq!(opened["view"], "evidence", "{opened}");
            let shown = opened["shown"].as_array().unwrap();
            assert!(!shown.is_empty(), "{opened}");
            assert!(shown.iter().all(|t| *t == opened["want"]), "{opened}");
        }

        // The page itself broke no CSP rule and loaded nothing ...
        assert_eq!(page.eval("JSON.stringify(window.__csp)"), "[]", "{fixture}");
        assert_eq!(
            page.eval("performance.getEntriesByType('resource').length"),
            0,
            "{fixture}"
        );
        // ... and the listener would have seen one: an inline style set from here is refused.
        page.eval("document.body.setAttribute('style','outline:1px solid red')");
        std::thread::sleep(Duration::from_millis(200));
        assert_ne!(
            page.eval("window.__csp.length"),
            0,
            "the CSP listener saw nothing"
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    let seen = requests.lock().unwrap().clone();
    assert!(
        !seen
            .iter()
            .any(|l| l.contains("127.0.0.1") || l.contains("localhost") || l.contains("file")),
        "the page made network requests: {seen:?}"
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
}

/// The ledger page of three runs of one measurement on two models (one named with markup), and
/// a fourth measured with another repetition count: its charts in Chromium.
fn chart_ledger(dir: &Path) -> PathBuf {
    let text =
        std::fs::read_to_string(workspace_root().join("core/tests/fixtures/report-v2-rich.json"))
            .unwrap();
    let run = |id: &str, model: &str, at: i64, reps: Option<u32>| {
        let mut report = skilltrial_core::report::Report::from_json(&text).unwrap();
        report.run.id = format!("{id:0<64}");
        report.comparability.model.model = model.to_owned();
        report.run.created_at_ms = at;
        if let Some(reps) = reps {
            report.manifest.repetitions = reps;
        }
        report
    };
    let hostile = "</text></svg><img src=x onerror=\"document.title='PWNED-LEDGER'\">";
    let reports = [
        run("aa", "model-one", 3, None),
        run("bb", hostile, 2, None),
        run("cc", "model-one", 1, None),
        run("dd", "model-two", 4, Some(7)),
    ];
    let ledger =
        skilltrial_core::ledger::build(&reports, skilltrial_core::ledger::Basis::First).unwrap();
    let html = dir.join("ledger.html");
    std::fs::write(&html, skilltrial_core::ledger::html::render(&ledger)).unwrap();
    html
}

#[test]
fn ledger_charts_fit_a_phone_and_a_desktop_in_both_themes_offline_with_hostile_names_inert() {
    let tmp = tempfile::tempdir().unwrap();
    let shots = workspace_root().join("target/report-screenshots/ledger");
    std::fs::create_dir_all(&shots).unwrap();
    let (proxy, requests) = recording_proxy();
    let html = chart_ledger(tmp.path());
    let url = format!("file://{}", html.display());
    let mut page = Page::open_when(
        proxy,
        &tmp.path().join("chrome-ledger"),
        &url,
        "document.readyState === 'complete'",
    );
    page.watch_csp("document.readyState === 'complete'");
    for width in [1200u32, 390] {
        page.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600 }),
        );
        for scheme in ["light", "dark"] {
            page.emulate_color_scheme(scheme);
            let state = page.eval(
                "var w=window.innerWidth, charts=[].slice.call(document.querySelectorAll('svg.chart'));
                 JSON.stringify({inner: w, scroll: document.documentElement.scrollWidth,
                   charts: charts.length,
                   wide: charts.filter(function(s){var r=s.getBoundingClientRect();return r.left < 0 || r.right > w + 0.5}).map(function(s){return s.id}),
                   clipped: charts.reduce(function(out, s){var r=s.getBoundingClientRect();[].slice.call(s.querySelectorAll('text')).forEach(function(t){var b=t.getBoundingClientRect();if(b.width>0&&(b.left<r.left-1||b.right>r.right+1)){out.push(s.id+': '+t.textContent)}});return out}, [])})",
            );
            let state: serde_json::Value = serde_json::from_str(state.as_str().unwrap()).unwrap();
            let at = format!("ledger at {width} px, {scheme}");
            // Then the two measurements are two charts, nothing is wider than the viewport and
            // no chart's text runs past its edge.
            assert_eq!(state["charts"], 2, "{at}: {state}");
            assert!(
                state["scroll"].as_u64() <= state["inner"].as_u64(),
                "{at}: the page scrolls sideways: {state}"
            );
            assert_eq!(state["wide"], serde_json::json!([]), "{at}: {state}");
            assert_eq!(state["clipped"], serde_json::json!([]), "{at}: {state}");
            page.screenshot(&shots.join(format!("ledger-{width}-{scheme}.png")));
        }
    }
    // The model named with markup is text in the chart: nothing it tried to open, no handler,
    // the title unchanged.
    let inert = page.eval(
        "JSON.stringify({
           elements: document.querySelectorAll('svg script, svg img, svg svg, svg foreignObject, body img').length,
           handlers: [].slice.call(document.querySelectorAll('svg *')).filter(function(e){return e.getAttributeNames().some(function(n){return n.indexOf('on')===0})}).length,
           title: document.title,
           text: [].slice.call(document.querySelectorAll('svg.chart text')).map(function(t){return t.textContent}).join('\\n')
         })",
    );
    let inert: serde_json::Value = serde_json::from_str(inert.as_str().unwrap()).unwrap();
    assert_eq!(inert["elements"], 0, "{inert}");
    assert_eq!(inert["handlers"], 0, "{inert}");
    assert!(
        inert["title"]
            .as_str()
            .unwrap()
            .starts_with("SkillTrial ledger"),
        "{inert}"
    );
    assert!(
        inert["text"].as_str().unwrap().contains("</text>"),
        "{inert}"
    );
    // No CSP rule broken, nothing loaded.
    assert_eq!(page.eval("JSON.stringify(window.__csp)"), "[]");
    assert_eq!(
        page.eval("performance.getEntriesByType('resource').length"),
        0
    );
    drop(page);
    std::thread::sleep(Duration::from_millis(300));
    let seen = requests.lock().unwrap().clone();
    assert!(
        !seen
            .iter()
            .any(|l| l.contains("127.0.0.1") || l.contains("localhost") || l.contains("file")),
        "the ledger made network requests: {seen:?}"
    );
}
