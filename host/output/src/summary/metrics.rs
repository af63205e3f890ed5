//! The summary's `metrics` object: the plugin's metrics and the host's HTTP metrics, typed apart
//! but written as one object with k6's names, its keys sorted (as serde_json maps write them).

use std::collections::BTreeMap;

use loadhost_metrics::catalogue::{Phase, names};
use loadhost_metrics::http::EndpointStats;
use loadhost_metrics::{HttpStats, PluginMetrics, SeriesValue};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::views::PercentileView;

/// A trend: the percentile object plus `count` (in the recorded unit; ms for durations).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TrendSummary {
    /// Values recorded.
    pub count: u64,
    /// min, mean, percentiles (covering values ≥ 0) and max; min, max and mean are exact.
    #[serde(flatten)]
    pub stats: PercentileView,
}

/// A rate (k6's kind): `{fails, passes, rate}`, where `passes` counts the *true* values.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct RateSummary {
    /// False values.
    pub fails: u64,
    /// True values.
    pub passes: u64,
    /// passes ÷ (passes + fails).
    pub rate: f64,
}

/// A counter: `{count}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountSummary {
    /// The total.
    pub count: u64,
}

/// A gauge: `{value}`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct GaugeSummary {
    /// The latest update.
    pub value: f64,
}

/// A counter with its rate: `{count, rate}` (`http_reqs`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CountRate {
    /// The total.
    pub count: u64,
    /// Per second over the run's duration.
    pub rate: f64,
}

/// One plugin metric, in the shape of its kind. Read back from JSON, the shape tells the kind:
/// the variants are tried in order, each needing more keys than the ones after it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PluginMetric {
    /// A trend.
    Trend(TrendSummary),
    /// A check, by name (a rate: `passes` are the checks that held).
    Check(RateSummary),
    /// A counter.
    Counter(CountSummary),
    /// A gauge.
    Gauge(GaugeSummary),
}

impl From<&SeriesValue> for PluginMetric {
    fn from(value: &SeriesValue) -> Self {
        match value {
            SeriesValue::Counter(count) => PluginMetric::Counter(CountSummary { count: *count }),
            SeriesValue::Gauge { value, .. } => PluginMetric::Gauge(GaugeSummary { value: *value }),
            SeriesValue::Trend(t) => {
                PluginMetric::Trend(TrendSummary { count: t.count(), stats: PercentileView::exact(&t.percentiles()) })
            }
            SeriesValue::Check { passes, fails } => {
                let total = passes + fails;
                let rate = if total == 0 { 0.0 } else { *passes as f64 / total as f64 };
                PluginMetric::Check(RateSummary { fails: *fails, passes: *passes, rate })
            }
        }
    }
}

/// The host's HTTP metrics, with k6's names (present when the plugin made requests).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HttpMetrics {
    /// `http_reqs`: requests that got a response or failed trying, and their rate.
    pub reqs: CountRate,
    /// `http_status` {"200": n} and `http_reqs{status:N}` {count}: responses by status (0: none).
    pub by_status: BTreeMap<u16, u64>,
    /// `http_req_duration`: from sending to the end of the response body, in ms.
    pub duration: TrendSummary,
    /// `http_req_failed`: as in k6, a rate whose true value is a *failed* request (no response,
    /// or status ≥ 400), so its `passes` count failed requests and its `fails` the others.
    pub failed: RateSummary,
    /// `http_denied`: requests the allow-list refused.
    pub denied: u64,
    /// `http_connections_opened`.
    pub connections_opened: u64,
    /// `data_sent`: wire bytes written, TLS included.
    pub data_sent: u64,
    /// `data_received`: wire bytes read, TLS included.
    pub data_received: u64,
    /// `http_response_bytes`: response body bytes delivered to the plugin.
    pub response_bytes: u64,
    /// `http_req_blocked` … `http_req_receiving`, in ms: where the requests' time went, every
    /// phase when any request recorded its phases (the whole run's; per endpoint in results files).
    pub phases: BTreeMap<Phase, TrendSummary>,
    /// Per endpoint name (its methods together, as a `{name:…}` threshold judges it):
    /// `http_reqs{name:X}`, `http_req_duration{name:X}` and `http_req_failed{name:X}`.
    pub endpoints: BTreeMap<String, EndpointMetrics>,
}

/// One endpoint's figures in the summary.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EndpointMetrics {
    /// `http_reqs{name:X}`: its requests and their rate.
    pub reqs: CountRate,
    /// `http_req_duration{name:X}`: its durations, in ms.
    pub duration: TrendSummary,
    /// `http_req_failed{name:X}`: its failed requests, as `http_req_failed`.
    pub failed: RateSummary,
}

/// The metrics written once per endpoint, as `METRIC{name:X}`.
const ENDPOINT_METRICS: [&str; 3] = [names::HTTP_REQS, names::HTTP_REQ_DURATION, names::HTTP_REQ_FAILED];

fn endpoint_key(metric: &str, name: &str) -> String {
    format!("{metric}{{name:{name}}}")
}

impl EndpointMetrics {
    fn new(stats: &EndpointStats, seconds: f64) -> Self {
        let share = if stats.requests == 0 { 0.0 } else { stats.failed as f64 / stats.requests as f64 };
        EndpointMetrics {
            reqs: CountRate {
                count: stats.requests,
                rate: if seconds > 0.0 { stats.requests as f64 / seconds } else { 0.0 },
            },
            duration: TrendSummary {
                count: stats.duration.count(),
                stats: PercentileView::ms(&stats.duration.percentiles()),
            },
            failed: RateSummary { fails: stats.requests - stats.failed, passes: stats.failed, rate: share },
        }
    }

    /// Every endpoint of `http`, by name, its methods merged.
    fn all(http: &HttpStats, seconds: f64) -> BTreeMap<String, Self> {
        let mut by_name: BTreeMap<&str, EndpointStats> = BTreeMap::new();
        for (endpoint, stats) in &http.endpoints {
            by_name.entry(endpoint.name()).or_default().merge(stats);
        }
        by_name.into_iter().map(|(name, stats)| (name.to_owned(), Self::new(&stats, seconds))).collect()
    }
}

/// The keys the HTTP metrics always write (tagged `http_reqs{status:N}` aside).
const HTTP_KEYS: [&str; 9] = [
    names::HTTP_REQS,
    names::HTTP_REQ_DURATION,
    names::HTTP_REQ_FAILED,
    names::HTTP_DENIED,
    names::HTTP_CONNECTIONS_OPENED,
    names::DATA_SENT,
    names::DATA_RECEIVED,
    names::HTTP_RESPONSE_BYTES,
    names::HTTP_STATUS,
];

/// `http_reqs{redirect:true}`: the responses that were redirects (derived from the statuses).
fn redirect_key() -> String {
    format!("{}{{{}:true}}", names::HTTP_REQS, loadhost_metrics::catalogue::REDIRECT_TAG)
}

fn trend_summary(h: &loadhost_metrics::LatencyHistogram) -> TrendSummary {
    TrendSummary { count: h.count(), stats: PercentileView::ms(&h.percentiles()) }
}

fn status_key(status: u16) -> String {
    format!("{}{{status:{status}}}", names::HTTP_REQS)
}

impl HttpMetrics {
    /// The figures of `http` over a run of `seconds`; `None` when the plugin made no request.
    pub fn new(http: &HttpStats, seconds: f64) -> Option<Self> {
        if http.is_empty() {
            return None;
        }
        let share = if http.requests == 0 { 0.0 } else { http.failed as f64 / http.requests as f64 };
        Some(HttpMetrics {
            reqs: CountRate {
                count: http.requests,
                rate: if seconds > 0.0 { http.requests as f64 / seconds } else { 0.0 },
            },
            by_status: http.by_status.clone(),
            duration: TrendSummary {
                count: http.duration.count(),
                stats: PercentileView::ms(&http.duration.percentiles()),
            },
            failed: RateSummary { fails: http.requests - http.failed, passes: http.failed, rate: share },
            denied: http.denied,
            connections_opened: http.connections_opened,
            data_sent: http.bytes_sent,
            data_received: http.bytes_received,
            response_bytes: http.body_bytes,
            phases: if http.phases.is_empty() {
                BTreeMap::new()
            } else {
                Phase::ALL.into_iter().map(|p| (p, trend_summary(http.phases.get(p)))).collect()
            },
            endpoints: EndpointMetrics::all(http, seconds),
        })
    }

    /// Every key this writes into `metrics`, with its value.
    fn entries(&self) -> Vec<(String, Entry<'_>)> {
        let count = |count: u64| Entry::Count(CountSummary { count });
        let mut entries = vec![
            (names::HTTP_REQS.to_owned(), Entry::CountRate(&self.reqs)),
            (names::HTTP_REQ_DURATION.to_owned(), Entry::Trend(&self.duration)),
            (names::HTTP_REQ_FAILED.to_owned(), Entry::Rate(&self.failed)),
            (names::HTTP_DENIED.to_owned(), count(self.denied)),
            (names::HTTP_CONNECTIONS_OPENED.to_owned(), count(self.connections_opened)),
            (names::DATA_SENT.to_owned(), count(self.data_sent)),
            (names::DATA_RECEIVED.to_owned(), count(self.data_received)),
            (names::HTTP_RESPONSE_BYTES.to_owned(), count(self.response_bytes)),
            (
                names::HTTP_STATUS.to_owned(),
                Entry::Statuses(self.by_status.iter().map(|(status, n)| (status.to_string(), *n)).collect()),
            ),
        ];
        entries.extend(self.phases.iter().map(|(phase, trend)| (phase.name().to_owned(), Entry::Trend(trend))));
        entries.extend(self.by_status.iter().map(|(&status, &n)| (status_key(status), count(n))));
        let redirects = loadhost_metrics::http::redirects_of(&self.by_status);
        if redirects > 0 {
            entries.push((redirect_key(), count(redirects)));
        }
        for (name, e) in &self.endpoints {
            entries.push((endpoint_key(names::HTTP_REQS, name), Entry::CountRate(&e.reqs)));
            entries.push((endpoint_key(names::HTTP_REQ_DURATION, name), Entry::Trend(&e.duration)));
            entries.push((endpoint_key(names::HTTP_REQ_FAILED, name), Entry::Rate(&e.failed)));
        }
        entries
    }

    /// Take the `METRIC{name:X}` keys out of a `metrics` object read back.
    fn take_endpoints(
        all: &mut BTreeMap<String, Value>,
    ) -> Result<BTreeMap<String, EndpointMetrics>, serde_json::Error> {
        let prefix = endpoint_key(names::HTTP_REQS, "");
        let prefix = prefix.trim_end_matches('}');
        let named: Vec<String> = all
            .keys()
            .filter_map(|key| key.strip_prefix(prefix).and_then(|rest| rest.strip_suffix('}')))
            .map(str::to_owned)
            .collect();
        let mut endpoints = BTreeMap::new();
        for name in named {
            if !ENDPOINT_METRICS.iter().all(|m| all.contains_key(&endpoint_key(m, &name))) {
                continue;
            }
            let mut take = |metric: &str| all.remove(&endpoint_key(metric, &name)).unwrap_or(Value::Null);
            let reqs = serde_json::from_value(take(names::HTTP_REQS))?;
            let duration = serde_json::from_value(take(names::HTTP_REQ_DURATION))?;
            let failed = serde_json::from_value(take(names::HTTP_REQ_FAILED))?;
            endpoints.insert(name, EndpointMetrics { reqs, duration, failed });
        }
        Ok(endpoints)
    }

    /// Take the HTTP keys out of a `metrics` object read back; `None` when they are not all there
    /// (the plugin made no request, and a plugin metric may then carry one of these names).
    fn take(all: &mut BTreeMap<String, Value>) -> Result<Option<Self>, serde_json::Error> {
        if !HTTP_KEYS.iter().all(|key| all.contains_key(*key)) {
            return Ok(None);
        }
        let mut take = |key: &str| all.remove(key).unwrap_or(Value::Null);
        let reqs: CountRate = serde_json::from_value(take(names::HTTP_REQS))?;
        let duration: TrendSummary = serde_json::from_value(take(names::HTTP_REQ_DURATION))?;
        let failed: RateSummary = serde_json::from_value(take(names::HTTP_REQ_FAILED))?;
        let mut count = |key: &str| serde_json::from_value::<CountSummary>(take(key)).map(|c| c.count);
        let denied = count(names::HTTP_DENIED)?;
        let connections_opened = count(names::HTTP_CONNECTIONS_OPENED)?;
        let data_sent = count(names::DATA_SENT)?;
        let data_received = count(names::DATA_RECEIVED)?;
        let response_bytes = count(names::HTTP_RESPONSE_BYTES)?;
        let statuses: BTreeMap<String, u64> = serde_json::from_value(take(names::HTTP_STATUS))?;
        // Absent from summaries written before phases existed, or of runs that recorded none.
        let mut phases = BTreeMap::new();
        for phase in Phase::ALL {
            if let Some(trend) = all.remove(phase.name()) {
                phases.insert(phase, serde_json::from_value(trend)?);
            }
        }
        let endpoints = Self::take_endpoints(all)?;
        // Derived from the statuses, so not kept apart.
        all.remove(&redirect_key());
        let mut by_status = BTreeMap::new();
        for (status, n) in statuses {
            let status: u16 = status
                .parse()
                .map_err(|_| serde_json::Error::custom(format!("http_status: '{status}' is not a status code")))?;
            // Its tagged counter holds the same number; the status map is the one source.
            all.remove(&status_key(status));
            by_status.insert(status, n);
        }
        Ok(Some(HttpMetrics {
            reqs,
            by_status,
            duration,
            failed,
            denied,
            connections_opened,
            data_sent,
            data_received,
            response_bytes,
            phases,
            endpoints,
        }))
    }
}

/// `metrics`: each plugin metric by name with its tag sets folded together, each tagged series
/// under `name{key:value,…}` (k6's sub-metric syntax), and the HTTP metrics.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Metrics {
    /// The plugin's metrics by key (`name` or `name{k:v,…}`); checks by name only.
    pub plugin: BTreeMap<String, PluginMetric>,
    /// The host's HTTP metrics, when the plugin made requests.
    pub http: Option<HttpMetrics>,
}

impl Metrics {
    /// The metrics of a run's plugin series and HTTP figures, over a run of `seconds`.
    pub fn new(plugin: &PluginMetrics, http: &HttpStats, seconds: f64) -> Self {
        let mut all = BTreeMap::new();
        for series in plugin.by_name() {
            all.insert(series.key.to_string(), PluginMetric::from(&series.value));
        }
        // A check is shown by name only: its tags split a pass rate, not what users ask of it.
        for series in plugin.series() {
            if !series.key.tags.is_empty() && !matches!(series.value, SeriesValue::Check { .. }) {
                all.insert(series.key.to_string(), PluginMetric::from(&series.value));
            }
        }
        Metrics { plugin: all, http: HttpMetrics::new(http, seconds) }
    }

    /// Plugin metrics recorded without tags or folded over their tags (no `{` in the key), but
    /// not checks: what the terminal lists.
    pub fn by_name(&self) -> impl Iterator<Item = (&str, &PluginMetric)> {
        self.plugin
            .iter()
            .filter(|(key, value)| !key.contains('{') && !matches!(value, PluginMetric::Check(_)))
            .map(|(key, value)| (key.as_str(), value))
    }
}

/// One value of the `metrics` object as written.
#[derive(Serialize)]
#[serde(untagged)]
enum Entry<'a> {
    Plugin(&'a PluginMetric),
    Count(CountSummary),
    CountRate(&'a CountRate),
    Trend(&'a TrendSummary),
    Rate(&'a RateSummary),
    Statuses(BTreeMap<String, u64>),
}

impl Serialize for Metrics {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut all: BTreeMap<String, Entry<'_>> =
            self.plugin.iter().map(|(key, value)| (key.clone(), Entry::Plugin(value))).collect();
        // The host's names win over a plugin metric that took one of them.
        all.extend(self.http.iter().flat_map(HttpMetrics::entries));
        all.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Metrics {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut all = BTreeMap::<String, Value>::deserialize(deserializer)?;
        let http = HttpMetrics::take(&mut all).map_err(D::Error::custom)?;
        let plugin = all
            .into_iter()
            .map(|(key, value)| match serde_json::from_value::<PluginMetric>(value) {
                Ok(metric) => Ok((key, metric)),
                Err(err) => Err(D::Error::custom(format!("metrics.{key}: {err}"))),
            })
            .collect::<Result<_, _>>()?;
        Ok(Metrics { plugin, http })
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use loadhost_metrics::http::Endpoint;
    use loadhost_metrics::{HttpSample, SeriesKey};

    use super::*;

    fn key(name: &str, tags: &[(&str, &str)]) -> SeriesKey {
        SeriesKey::new(name.into(), tags.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect())
    }

    fn sample() -> Metrics {
        let mut plugin = PluginMetrics::default();
        plugin.counter(key("tasks", &[("parity", "odd")]), 3);
        plugin.counter(key("tasks", &[("parity", "even")]), 2);
        plugin.gauge(key("depth", &[]), 2.5, 1);
        for v in [1.0, 2.0, 299.0] {
            plugin.trend(key("size", &[]), v);
        }
        plugin.check(key("status is 200", &[("route", "/a")]), true);
        plugin.check(key("status is 200", &[]), false);
        let mut http = HttpStats::default();
        let endpoints = [("GET", "GET /"), ("POST", "login"), ("GET", "login")];
        for (status, (method, name)) in [Some(200), Some(503), None].into_iter().zip(endpoints) {
            let endpoint = Some(Endpoint::new(method, name));
            http.record(HttpSample::new(status, Duration::from_millis(3), 10, endpoint));
        }
        http.denied = 1;
        Metrics::new(&plugin, &http, 2.0)
    }

    #[test]
    fn one_object_with_sorted_keys_that_reads_back_into_the_same_types() {
        let metrics = sample();
        let text = serde_json::to_string(&metrics).unwrap();
        // The same bytes as a serde_json map of the same values (which sorts its keys).
        let as_map: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(text, as_map.to_string());
        let back: Metrics = serde_json::from_str(&text).unwrap();
        assert_eq!(back, metrics);
        assert_eq!(serde_json::to_string(&back).unwrap(), text);
        let keys: Vec<&String> = as_map.as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "data_received",
                "data_sent",
                "depth",
                "http_connections_opened",
                "http_denied",
                "http_req_duration",
                "http_req_duration{name:GET /}",
                "http_req_duration{name:login}",
                "http_req_failed",
                "http_req_failed{name:GET /}",
                "http_req_failed{name:login}",
                "http_reqs",
                "http_reqs{name:GET /}",
                "http_reqs{name:login}",
                "http_reqs{status:0}",
                "http_reqs{status:200}",
                "http_reqs{status:503}",
                "http_response_bytes",
                "http_status",
                "size",
                "status is 200",
                "tasks",
                "tasks{parity:even}",
                "tasks{parity:odd}",
            ]
        );
        assert_eq!(as_map["http_status"], serde_json::json!({"0": 1, "200": 1, "503": 1}));
        assert_eq!(as_map["http_req_failed"], serde_json::json!({"fails": 1, "passes": 2, "rate": 2.0 / 3.0}));
        assert_eq!(as_map["http_reqs"], serde_json::json!({"count": 3, "rate": 1.5}));
        // One name used with two methods is one entry: what `{name:login}` judges.
        assert_eq!(as_map["http_reqs{name:login}"], serde_json::json!({"count": 2, "rate": 1.0}));
        assert_eq!(as_map["http_req_failed{name:GET /}"]["passes"], 0);
        assert_eq!(as_map["http_req_duration{name:login}"]["count"], 2);
        assert_eq!(as_map["size"]["p999"], 299.0, "clamped at the exact max");
    }

    #[test]
    fn the_shape_tells_the_kind() {
        let metrics = sample();
        assert!(matches!(metrics.plugin["size"], PluginMetric::Trend(TrendSummary { count: 3, .. })));
        assert!(matches!(
            metrics.plugin["status is 200"],
            PluginMetric::Check(RateSummary { passes: 1, fails: 1, .. })
        ));
        assert!(matches!(metrics.plugin["depth"], PluginMetric::Gauge(GaugeSummary { value: 2.5 })));
        assert!(matches!(metrics.plugin["tasks"], PluginMetric::Counter(CountSummary { count: 5 })));
        let names: Vec<&str> = metrics.by_name().map(|(name, _)| name).collect();
        assert_eq!(names, ["depth", "size", "tasks"]);
    }

    #[test]
    fn a_plugin_metric_named_like_an_http_one_reads_back_as_the_plugins_without_requests() {
        let mut plugin = PluginMetrics::default();
        plugin.counter(key("data_sent", &[]), 7);
        let metrics = Metrics::new(&plugin, &HttpStats::default(), 1.0);
        let text = serde_json::to_string(&metrics).unwrap();
        assert_eq!(text, r#"{"data_sent":{"count":7}}"#);
        let back: Metrics = serde_json::from_str(&text).unwrap();
        assert_eq!((back.http, back.plugin.len()), (None, 1));
    }
}
