//! What an operator watches (`GET /metrics`, OpenMetrics text through prometheus-client): HTTP
//! requests and model requests by outcome with their latency, trials settled, settlements and
//! their lag, claims and takeovers, leases lost, and — read from the state at each scrape — runs
//! by phase and settlement batches still to land. Labels are few and bounded (a route template,
//! never a run, a wallet or a signature). On PostgreSQL every worker exports the same
//! database-wide gauges: aggregate them with `max`, and the counters with `sum`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;
use skilltrial_engine::provider::{CallError, ModelRequest, ModelResponse, Provider};

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct HttpLabels {
    /// The route's template (`/v1/runs/{run}`), or `other` for a path no route matched.
    pub route: String,
    pub method: String,
    /// `2xx`, `4xx`, `5xx`…
    pub status: String,
}

/// A label value as its lower-case word (the derive would write the variant's name).
macro_rules! label_words {
    ($name:ident { $($variant:ident => $word:literal),+ $(,)? }) => {
        #[derive(Clone, Debug, Hash, PartialEq, Eq)]
        pub enum $name {
            $($variant),+
        }

        impl EncodeLabelValue for $name {
            fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
                use std::fmt::Write as _;
                encoder.write_str(match self {
                    $(Self::$variant => $word),+
                })
            }
        }
    };
}

label_words!(Outcome { Ok => "ok", Error => "error" });

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct OutcomeLabels {
    pub outcome: Outcome,
}

label_words!(ClaimKind { Fresh => "fresh", Takeover => "takeover" });

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClaimLabels {
    pub kind: ClaimKind,
}

label_words!(Settled { Landed => "landed", Refused => "refused" });

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct SettledLabels {
    pub result: Settled,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PhaseLabels {
    pub phase: String,
}

fn latency() -> Histogram {
    // 5 ms to about 3 minutes.
    Histogram::new(exponential_buckets(0.005, 2.0, 16))
}

fn slow() -> Histogram {
    // 100 ms to about 7 minutes (a model answer, a settlement waiting for its commitment).
    Histogram::new(exponential_buckets(0.1, 2.0, 13))
}

/// The daemon's metrics.
#[derive(Debug)]
pub struct Metrics {
    registry: Registry,
    pub http: Family<HttpLabels, Histogram, fn() -> Histogram>,
    pub model: Family<OutcomeLabels, Histogram, fn() -> Histogram>,
    pub trials_settled: Counter,
    pub settlements: Family<SettledLabels, Counter>,
    pub settlement_seconds: Histogram,
    pub claims: Family<ClaimLabels, Counter>,
    pub leases_lost: Counter,
    pub runs: Family<PhaseLabels, Gauge>,
    pub batches_pending: Gauge,
    pub runs_here: Gauge,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("skilltrial_runner");
        let http = Family::<HttpLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            latency as fn() -> Histogram,
        );
        let model = Family::<OutcomeLabels, Histogram, fn() -> Histogram>::new_with_constructor(
            slow as fn() -> Histogram,
        );
        let trials_settled = Counter::default();
        let settlements = Family::<SettledLabels, Counter>::default();
        let settlement_seconds = slow();
        let claims = Family::<ClaimLabels, Counter>::default();
        let leases_lost = Counter::default();
        let runs = Family::<PhaseLabels, Gauge>::default();
        let batches_pending = Gauge::default();
        let runs_here = Gauge::default();
        // Every series an operator alerts on exists from the start, at zero.
        for outcome in [Outcome::Ok, Outcome::Error] {
            let _ = model.get_or_create(&OutcomeLabels { outcome });
        }
        for result in [Settled::Landed, Settled::Refused] {
            let _ = settlements.get_or_create(&SettledLabels { result });
        }
        for kind in [ClaimKind::Fresh, ClaimKind::Takeover] {
            let _ = claims.get_or_create(&ClaimLabels { kind });
        }
        registry.register(
            "http_request_duration_seconds",
            "HTTP requests served, by route template, method and status class",
            http.clone(),
        );
        registry.register(
            "model_request_duration_seconds",
            "Model requests sent for runs this worker executes, by outcome (an error includes a lost connection)",
            model.clone(),
        );
        registry.register(
            "trials_settled",
            "Trials charged by a settlement transaction this worker landed",
            trials_settled.clone(),
        );
        registry.register(
            "settlements",
            "Settlement batches this worker landed, or recorded as refused for good",
            settlements.clone(),
        );
        registry.register(
            "settlement_duration_seconds",
            "From a settlement batch's first send to its transaction landing",
            settlement_seconds.clone(),
        );
        registry.register(
            "claims",
            "Runs this worker claimed: fresh, or taken over from a worker whose lease lapsed",
            claims.clone(),
        );
        registry.register(
            "leases_lost",
            "Leases this worker found lost (not renewed in time, or taken over): their runs stopped here",
            leases_lost.clone(),
        );
        registry.register(
            "runs",
            "Hosted runs by phase, in the whole state (the same on every worker of one database)",
            runs.clone(),
        );
        registry.register(
            "settlement_batches_pending",
            "Settlement batches recorded and not yet landed or refused, in the whole state",
            batches_pending.clone(),
        );
        registry.register(
            "runs_executing_here",
            "Runs executing on this worker now",
            runs_here.clone(),
        );
        Self {
            registry,
            http,
            model,
            trials_settled,
            settlements,
            settlement_seconds,
            claims,
            leases_lost,
            runs,
            batches_pending,
            runs_here,
        }
    }

    /// Records one HTTP request.
    pub fn http_request(&self, route: &str, method: &str, status: u16, took: Duration) {
        self.http
            .get_or_create(&HttpLabels {
                route: route.to_owned(),
                method: method.to_owned(),
                status: format!("{}xx", status / 100),
            })
            .observe(took.as_secs_f64());
    }

    /// The text exposition.
    pub fn encode(&self) -> Result<String, std::fmt::Error> {
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &self.registry)?;
        Ok(text)
    }
}

/// A provider whose every call is timed into [`Metrics::model`].
pub struct Measured {
    pub inner: Box<dyn Provider>,
    pub metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Measured {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Measured").finish_non_exhaustive()
    }
}

impl Provider for Measured {
    fn kind(&self) -> skilltrial_core::profile::ProviderKind {
        self.inner.kind()
    }

    fn body(&self, request: &ModelRequest) -> Vec<u8> {
        self.inner.body(request)
    }

    fn call(&self, request: &ModelRequest) -> Result<ModelResponse, CallError> {
        let started = Instant::now();
        let answered = self.inner.call(request);
        let outcome = if answered.is_ok() {
            Outcome::Ok
        } else {
            Outcome::Error
        };
        self.metrics
            .model
            .get_or_create(&OutcomeLabels { outcome })
            .observe(started.elapsed().as_secs_f64());
        answered
    }
}
