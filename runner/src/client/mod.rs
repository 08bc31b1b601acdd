//! The daemon's client, as `skilltrial submit`, `status --remote` and `report --remote` use it:
//! blocking, one request at a time, every error naming the endpoint and what the daemon said.
//!
//! [`Client`] speaks the HTTP API one request at a time. The hosted workflows are built on it,
//! one module each, each returning a typed result (what the CLI prints, `--json` included) or a
//! typed error, and printing nothing:
//!
//! - [`submit`]: inputs uploaded, the runner's checks, the escrow, the registration, staged so
//!   that the caller asks the person before anything is signed;
//! - [`escrow`]: a stored manifest's escrow (prepare, approve, open), shared with `open`;
//! - [`status`]: the wallet's runs, and a run's events followed across restarts of the runner;
//! - [`report`]: a finalized run's report, downloaded and proven before it is written.

pub mod escrow;
pub mod report;
pub mod status;
pub mod submit;

use std::io::{BufRead, BufReader};
use std::time::Duration;

use base64::Engine as _;
use serde::de::DeserializeOwned;
use skilltrial_core::concurrency::Concurrency;
use solana_keypair::Keypair;
use solana_signer::Signer;

use crate::api;

/// A client failure, in words.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The daemon could not be reached or answered with something that is not its API.
    #[error("{0}")]
    Unreachable(String),
    /// The daemon refused (its message, its code, the HTTP status).
    #[error("the runner refused ({status}, {code}): {message}")]
    Refused {
        status: u16,
        code: String,
        message: String,
    },
}

/// A client of one daemon, signed in or not.
#[derive(Debug)]
pub struct Client {
    base: url::Url,
    http: reqwest::blocking::Client,
    token: Option<String>,
}

/// One event of a run's stream. Serialized, it is the event's `kind` and `data` with its `id`
/// and `at` beside them: one line of `status --remote --follow --json`.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct StreamEvent {
    /// Its number in the run (`0` for the notice of a daemon stopping, which is not recorded).
    pub id: u64,
    /// When the daemon recorded it (Unix seconds).
    pub at: Option<i64>,
    #[serde(flatten)]
    pub event: api::Event,
}

/// An SSE frame's `data:` as the client reads it: `at` may be missing, never the event's data.
#[derive(serde::Deserialize)]
struct Frame {
    at: Option<i64>,
    #[serde(default)]
    data: serde_json::Value,
}

impl Client {
    pub fn new(base: &url::Url) -> Result<Self, ClientError> {
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(None)
            .build()
            .map_err(|e| ClientError::Unreachable(format!("cannot build an HTTP client: {e}")))?;
        Ok(Self {
            base: base.clone(),
            http,
            token: None,
        })
    }

    /// A client of `base`, signed in with `wallet` ([`Client::sign_in`]).
    pub fn signed_in(base: &url::Url, wallet: &Keypair) -> Result<Self, ClientError> {
        let mut client = Self::new(base)?;
        client.sign_in(wallet)?;
        Ok(client)
    }

    fn url(&self, path: &str) -> Result<url::Url, ClientError> {
        self.base
            .join(path)
            .map_err(|e| ClientError::Unreachable(format!("{}{path}: {e}", self.base)))
    }

    /// Sends `request` (with the session's token) and returns the body of a success; a refusal
    /// carries the daemon's message.
    fn fetch(
        &self,
        what: &str,
        request: reqwest::blocking::RequestBuilder,
    ) -> Result<Vec<u8>, ClientError> {
        let request = match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        };
        let response = request
            .timeout(Duration::from_secs(120))
            .send()
            .map_err(|e| ClientError::Unreachable(format!("{what}: {}", e.without_url())))?;
        let status = response.status();
        let bytes = response
            .bytes()
            .map_err(|e| ClientError::Unreachable(format!("{what}: {}", e.without_url())))?;
        if status.is_success() {
            return Ok(bytes.to_vec());
        }
        Err(refusal(what, status, &bytes))
    }

    fn send<T: DeserializeOwned>(
        &self,
        what: &str,
        request: reqwest::blocking::RequestBuilder,
    ) -> Result<T, ClientError> {
        let bytes = self.fetch(what, request)?;
        serde_json::from_slice(&bytes).map_err(|e| {
            ClientError::Unreachable(format!("{what}: the answer is not the runner's API: {e}"))
        })
    }

    pub fn info(&self) -> Result<api::Info, ClientError> {
        self.send("GET /v1/info", self.http.get(self.url("v1/info")?))
    }

    /// Signs in with `wallet`: the daemon's challenge, signed as it is, exchanged for a session.
    /// The message is checked before it is signed: it must name this daemon's origin and this
    /// wallet, and be a sign-in, not something else.
    pub fn sign_in(&mut self, wallet: &Keypair) -> Result<api::Session, ClientError> {
        let mut url = self.url("v1/auth/challenge")?;
        url.query_pairs_mut()
            .append_pair("address", &wallet.pubkey().to_string());
        let challenge: api::Challenge = self.send("GET /v1/auth/challenge", self.http.get(url))?;
        let fields = crate::siws::parse(&challenge.message).map_err(|e| {
            ClientError::Unreachable(format!("the runner's challenge is not a sign-in: {e}"))
        })?;
        if fields.address != wallet.pubkey().to_string() {
            return Err(ClientError::Unreachable(
                "the runner's challenge names another wallet: not signed".to_owned(),
            ));
        }
        let signature = wallet.sign_message(challenge.message.as_bytes());
        let session: api::Session = self.send(
            "POST /v1/auth/verify",
            self.http
                .post(self.url("v1/auth/verify")?)
                .json(&api::SignIn {
                    message: challenge.message,
                    signature: signature.to_string(),
                    address: wallet.pubkey().to_string(),
                }),
        )?;
        self.token = Some(session.token.clone());
        Ok(session)
    }

    /// Uploads a tree (`kind` `bundle` or `pack`; a pack names its `id`).
    pub fn upload_tree(
        &self,
        kind: &str,
        id: Option<&str>,
        files: &[(String, Vec<u8>)],
    ) -> Result<api::Stored, ClientError> {
        let mut url = self.url("v1/trees")?;
        url.query_pairs_mut().append_pair("kind", kind);
        if let Some(id) = id {
            url.query_pairs_mut().append_pair("id", id);
        }
        let tree = api::Tree {
            files: files
                .iter()
                .map(|(path, bytes)| api::TreeFile {
                    path: path.clone(),
                    base64: base64::engine::general_purpose::STANDARD.encode(bytes),
                })
                .collect(),
        };
        self.send("POST /v1/trees", self.http.post(url).json(&tree))
    }

    pub fn upload_manifest(&self, canonical: &str) -> Result<api::Terms, ClientError> {
        self.send(
            "POST /v1/manifests",
            self.http
                .post(self.url("v1/manifests")?)
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(canonical.to_owned()),
        )
    }

    /// Asks, before the escrow, whether the daemon would register this run (at the daemon's
    /// default concurrency, 1).
    pub fn check(&self, manifest: &str, deadline_secs: i64) -> Result<api::Checked, ClientError> {
        self.check_with(manifest, deadline_secs, None)
    }

    /// [`Client::check`] for a run to be registered with `concurrency` (`None`: the daemon's
    /// default, 1).
    pub fn check_with(
        &self,
        manifest: &str,
        deadline_secs: i64,
        concurrency: Option<Concurrency>,
    ) -> Result<api::Checked, ClientError> {
        self.send(
            "POST /v1/runs/check",
            self.http
                .post(self.url("v1/runs/check")?)
                .json(&api::Check {
                    manifest: manifest.to_owned(),
                    deadline_secs,
                    concurrency: concurrency.map(Concurrency::get),
                }),
        )
    }

    /// Registers the run of `manifest` (escrowed already), at the daemon's default
    /// concurrency, 1.
    pub fn register(&self, manifest: &str) -> Result<api::RunView, ClientError> {
        self.register_with(manifest, None)
    }

    /// [`Client::register`] with `concurrency` requests in flight (`None`: the daemon's
    /// default, 1).
    pub fn register_with(
        &self,
        manifest: &str,
        concurrency: Option<Concurrency>,
    ) -> Result<api::RunView, ClientError> {
        self.send(
            "POST /v1/runs",
            self.http.post(self.url("v1/runs")?).json(&api::Register {
                manifest: manifest.to_owned(),
                concurrency: concurrency.map(Concurrency::get),
            }),
        )
    }

    pub fn runs(&self) -> Result<Vec<api::RunView>, ClientError> {
        self.send("GET /v1/runs", self.http.get(self.url("v1/runs")?))
    }

    pub fn run(&self, address: &str) -> Result<api::RunView, ClientError> {
        let path = format!("v1/runs/{address}");
        self.send(&format!("GET /{path}"), self.http.get(self.url(&path)?))
    }

    /// The report file (`report.json` or `report.html`) as bytes.
    pub fn report(&self, address: &str, file: &str) -> Result<Vec<u8>, ClientError> {
        let path = format!("v1/runs/{address}/{file}");
        self.fetch(&format!("GET /{path}"), self.http.get(self.url(&path)?))
    }

    /// Follows a run's event stream from after event `after`, calling `on_event` for each,
    /// until the run is over (finalized or failed) or `on_event` returns `false`.
    pub fn follow(
        &self,
        address: &str,
        after: u64,
        on_event: &mut dyn FnMut(&StreamEvent) -> bool,
    ) -> Result<(), ClientError> {
        let path = format!("v1/runs/{address}/events");
        let what = format!("GET /{path}");
        let mut request = self
            .http
            .get(self.url(&path)?)
            .header("last-event-id", after.to_string());
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response = request
            .send()
            .map_err(|e| ClientError::Unreachable(format!("{what}: {}", e.without_url())))?;
        let status = response.status();
        if !status.is_success() {
            let bytes = response.bytes().unwrap_or_default();
            return Err(refusal(&what, status, &bytes));
        }
        let mut id = 0u64;
        let mut kind = String::new();
        let mut data = String::new();
        for line in BufReader::new(response).lines() {
            let line = line.map_err(|e| ClientError::Unreachable(format!("{what}: {e}")))?;
            if line.is_empty() {
                // An event of a kind or shape this client does not know (a newer daemon's) is
                // passed over: the events it knows, and the end of the run, still arrive.
                let frame = serde_json::from_str::<Frame>(&data).ok();
                let kind = std::mem::take(&mut kind);
                if let Some(frame) = frame
                    && let Ok(event) = api::Event::from_parts(&kind, frame.data)
                {
                    let event = StreamEvent {
                        id,
                        at: frame.at,
                        event,
                    };
                    if !on_event(&event) {
                        return Ok(());
                    }
                }
                data.clear();
                continue;
            }
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().unwrap_or(id);
            } else if let Some(v) = line.strip_prefix("event:") {
                v.trim().clone_into(&mut kind);
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.strip_prefix(' ').unwrap_or(v));
            }
        }
        Ok(())
    }
}

/// The error of a non-success answer: the daemon's own, or "not the runner's API".
fn refusal(what: &str, status: reqwest::StatusCode, body: &[u8]) -> ClientError {
    match serde_json::from_slice::<api::ApiError>(body) {
        Ok(err) => ClientError::Refused {
            status: status.as_u16(),
            code: err.code,
            message: err.error,
        },
        Err(_) => ClientError::Unreachable(format!("{what}: HTTP {status}, not the runner's API")),
    }
}
