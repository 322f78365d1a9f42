//! FrontRow's configuration: one typed tree.
//!
//! Defaults, then a TOML file (`--config FILE` or `FRONTROW_CONFIG`), then `FRONTROW_*`
//! environment variables (`FRONTROW_LISTEN`, `FRONTROW_DATA_DIR`, `FRONTROW_PARTITIONS`, ...;
//! nested keys use `__`), then command-line flags. Secrets are [`SecretString`]s: they never
//! print, not even in `Debug`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use figment::Figment;
use figment::providers::{Env, Format, Serialized, Toml};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Settings {
    /// Address the HTTP API listens on.
    pub listen: SocketAddr,
    /// Connections the kernel may hold for the server to accept (capped by
    /// `net.core.somaxconn`), see [`crate::net`].
    pub listen_backlog: u32,
    /// Where the embedded journal and the generated secrets live.
    pub data_dir: PathBuf,
    /// Journal partitions: one writer each. Fixed once the journal exists.
    pub partitions: u32,
    /// The journal: `sqlite` (embedded, in the data directory) or `kafka://BROKERS[/TOPIC]`.
    pub journal: JournalChoice,
    /// Requests waiting per writer before new ones get `503`.
    pub mailbox: usize,
    /// Most commands decided and appended in one group commit.
    pub batch: usize,
    /// Records between two snapshots of a partition writer's state (0: never).
    pub snapshot_every: u64,
    /// Snapshots per partition the embedded journal's snapshot history keeps (at least 1): time
    /// travel and seat history start from the nearest one before their instant.
    pub snapshot_history: usize,
    /// Largest accepted request body, in bytes.
    pub max_body_bytes: usize,
    /// Secret that signs customer bearer tokens (HS256). Generated into the data directory
    /// when not set.
    #[serde(serialize_with = "hide")]
    pub token_secret: Option<SecretString>,
    /// The payment webhook's signing secret. Generated into the data directory when not set.
    #[serde(serialize_with = "hide")]
    pub webhook_secret: Option<SecretString>,
    /// How far a webhook signature's timestamp may be from our clock, in seconds.
    pub webhook_tolerance_secs: i64,
    /// Organizer id -> API key. When empty, a `demo` organizer with a generated key is used.
    #[serde(serialize_with = "hide_map")]
    pub organizers: BTreeMap<String, SecretString>,
    /// Demo mode: `POST /demo/tokens`, `POST /demo/payments` (simulated provider).
    pub demo: bool,
    /// Create the sample event on first start.
    pub sample_event: bool,
    /// Base URL the simulated provider posts webhooks to (default: `http://<listen>`).
    pub public_url: Option<String>,
    /// The search index: `tantivy` (embedded, in `<data_dir>/search`) or `opensearch`.
    pub search: SearchChoice,
    /// Elasticsearch/OpenSearch base URL when `search = "opensearch"`.
    pub opensearch_url: String,
    /// The alias the search index is served under (versioned indexes behind it).
    pub search_alias: String,
    /// The typo allowance by word length: `algolia` (1 typo from 4 letters, 2 from 8) or
    /// `meilisearch` (from 5 and 9).
    pub search_typos: TyposChoice,
    /// PostgreSQL URL of the ledger; without one the ledger is SQLite in `<data_dir>/ledger`.
    #[serde(serialize_with = "hide")]
    pub database_url: Option<SecretString>,
    /// The PostgreSQL schema the serving ledger lives in.
    pub ledger_schema: String,
    /// Most events the ledger projector applies in one transaction.
    pub projector_batch: usize,
    /// While the journal keeps growing, the ledger projector starts a transaction and the search
    /// projector writes its documents at most once per this many milliseconds per partition
    /// (the first after a quiet spell at once; 0: after every append).
    pub projector_interval_ms: u64,
    /// How many `nice` steps below the request path a serving node runs its projections
    /// (0 to 19; 0: the same priority), see [`crate::budget`].
    pub projections_nice: u8,
    /// Abuse limits: request rates per customer and per client address, the trusted proxies,
    /// and the caps on server-sent event streams (`[limits]`, `FRONTROW_LIMITS__*`).
    pub limits: frontrow_http::limits::Limits,
    /// Record Prometheus metrics and serve them at `GET /metrics` (for the whole process: the
    /// first app built decides).
    pub metrics: bool,
    /// OpenTelemetry trace export (`[telemetry]`, `FRONTROW_TELEMETRY__*`); off by default.
    pub telemetry: crate::telemetry::Telemetry,
    /// The Kafka journal's replication and the command group's failover (`[kafka]`,
    /// `FRONTROW_KAFKA__*`).
    pub kafka: KafkaOptions,
}

/// Where the log lives. Written in settings and flags as `sqlite` or
/// `kafka://HOST:PORT[,HOST:PORT...][/TOPIC]`, and parsed once, when the settings are read.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(try_from = "String", into = "String")]
pub enum JournalChoice {
    /// The embedded SQLite file `journal.db` in the data directory.
    Sqlite,
    /// A Kafka cluster: its bootstrap brokers (comma-separated) and the events topic.
    Kafka { brokers: String, topic: String },
}

impl std::str::FromStr for JournalChoice {
    type Err = anyhow::Error;

    fn from_str(s: &str) -> anyhow::Result<Self> {
        if s == "sqlite" {
            return Ok(Self::Sqlite);
        }
        let Some(rest) = s.strip_prefix("kafka://") else {
            anyhow::bail!("journal {s:?} is not `sqlite` or `kafka://BROKERS[/TOPIC]`");
        };
        let (brokers, topic) = rest.split_once('/').unwrap_or((rest, ""));
        anyhow::ensure!(
            !brokers.is_empty(),
            "journal {s:?}: kafka:// needs at least one broker address"
        );
        let topic = if topic.is_empty() {
            frontrow_journal::DEFAULT_TOPIC
        } else {
            topic
        };
        Ok(Self::Kafka {
            brokers: brokers.to_owned(),
            topic: topic.to_owned(),
        })
    }
}

impl TryFrom<String> for JournalChoice {
    type Error = anyhow::Error;

    fn try_from(s: String) -> anyhow::Result<Self> {
        s.parse()
    }
}

impl std::fmt::Display for JournalChoice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Sqlite => f.write_str("sqlite"),
            Self::Kafka { brokers, topic } => write!(f, "kafka://{brokers}/{topic}"),
        }
    }
}

impl From<JournalChoice> for String {
    fn from(choice: JournalChoice) -> Self {
        choice.to_string()
    }
}

/// Which search index serves `GET /search`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SearchChoice {
    /// Embedded, in `<data_dir>/search` (each node projects its own).
    Tantivy,
    /// A shared OpenSearch (or Elasticsearch) cluster at `opensearch_url`, fed by a projector.
    OpenSearch,
}

/// How many typos a search word may have, by its length: one engine's published defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TyposChoice {
    /// 1 typo from 4 letters, 2 from 8 ([`Typos::ALGOLIA`](frontrow_search::text::Typos::ALGOLIA)).
    Algolia,
    /// 1 typo from 5 letters, 2 from 9 ([`Typos::MEILISEARCH`](frontrow_search::text::Typos::MEILISEARCH)).
    Meilisearch,
}

impl TyposChoice {
    pub fn typos(self) -> frontrow_search::text::Typos {
        match self {
            Self::Algolia => frontrow_search::text::Typos::ALGOLIA,
            Self::Meilisearch => frontrow_search::text::Typos::MEILISEARCH,
        }
    }
}

/// How FrontRow uses a Kafka cluster. Appends always use `acks=all` with an idempotent,
/// transactional producer (transactions require both), so neither is a setting.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaOptions {
    /// Replicas of each topic FrontRow creates; unset: one per broker, at most 3.
    pub replication: Option<i32>,
    /// `min.insync.replicas` of the events topic; unset: 2 when replicated, else 1.
    pub min_insync_replicas: Option<i32>,
    /// Milliseconds a command node may be silent before its partitions move to another node.
    pub session_timeout_ms: u64,
    /// Milliseconds between a command node's heartbeats (at most a third of the session).
    pub heartbeat_interval_ms: u64,
    /// Join the command group as a static member named after the node's URL
    /// (`group.instance.id`), so that a node coming back under the same URL, or every node
    /// finding the group again after its coordinator moved, takes back its own partitions
    /// without a rebalance.
    pub static_membership: bool,
    /// Hours the snapshot history topic keeps a snapshot (its `retention.ms`, set when FrontRow
    /// creates the topic; at least 1).
    pub snapshot_history_hours: u64,
}

impl Default for KafkaOptions {
    fn default() -> Self {
        Self {
            replication: None,
            min_insync_replicas: None,
            session_timeout_ms: 1000,
            heartbeat_interval_ms: 200,
            static_membership: true,
            snapshot_history_hours: frontrow_journal::DEFAULT_SNAPSHOT_HISTORY_RETENTION.as_secs() / 3600,
        }
    }
}

fn hide<S: serde::Serializer>(v: &Option<SecretString>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(_) => s.serialize_some("[redacted]"),
        None => s.serialize_none(),
    }
}

fn hide_map<S: serde::Serializer>(v: &BTreeMap<String, SecretString>, s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    let mut m = s.serialize_map(Some(v.len()))?;
    for k in v.keys() {
        m.serialize_entry(k, "[redacted]")?;
    }
    m.end()
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            listen_backlog: crate::net::DEFAULT_BACKLOG,
            data_dir: PathBuf::from("frontrow-data"),
            partitions: 8,
            journal: JournalChoice::Sqlite,
            mailbox: 4096,
            batch: 1024,
            snapshot_every: 50_000,
            snapshot_history: frontrow_journal::DEFAULT_SNAPSHOT_HISTORY,
            max_body_bytes: 1 << 20,
            token_secret: None,
            webhook_secret: None,
            webhook_tolerance_secs: 300,
            organizers: BTreeMap::new(),
            demo: true,
            sample_event: true,
            public_url: None,
            search: SearchChoice::Tantivy,
            opensearch_url: "http://127.0.0.1:9200".into(),
            search_alias: frontrow_search::DEFAULT_ALIAS.into(),
            search_typos: TyposChoice::Algolia,
            database_url: None,
            ledger_schema: "ledger".into(),
            projector_batch: 10_000,
            projector_interval_ms: 1000,
            projections_nice: 10,
            limits: frontrow_http::limits::Limits::default(),
            metrics: true,
            telemetry: crate::telemetry::Telemetry::default(),
            kafka: KafkaOptions::default(),
        }
    }
}

/// The top-level keys of [`Settings`], for picking its variables out of the environment.
const KEYS: &[&str] = &[
    "listen",
    "listen_backlog",
    "data_dir",
    "partitions",
    "journal",
    "mailbox",
    "batch",
    "snapshot_every",
    "snapshot_history",
    "max_body_bytes",
    "token_secret",
    "webhook_secret",
    "webhook_tolerance_secs",
    "organizers",
    "demo",
    "sample_event",
    "public_url",
    "search",
    "opensearch_url",
    "search_alias",
    "search_typos",
    "database_url",
    "ledger_schema",
    "projector_batch",
    "projector_interval_ms",
    "projections_nice",
    "limits",
    "metrics",
    "telemetry",
    "kafka",
];

impl Settings {
    /// Defaults, then the file (if any), then `FRONTROW_*` variables.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Self> {
        let mut figment = Figment::from(Serialized::defaults(Settings::default()));
        if let Some(file) = file {
            anyhow::ensure!(file.exists(), "config file {} does not exist", file.display());
            figment = figment.merge(Toml::file(file));
        }
        // Only this tree's keys: other tools share the FRONTROW_ prefix (deploy/local's ports,
        // FRONTROW_LOG, FRONTROW_CONFIG), while a file must not carry unknown keys.
        let env = Env::prefixed("FRONTROW_").filter(|key| {
            let top = key.as_str().split("__").next().unwrap_or_default();
            KEYS.iter().any(|k| top.eq_ignore_ascii_case(k))
        });
        let settings: Self = figment.merge(env.split("__")).extract()?;
        anyhow::ensure!(
            settings.listen_backlog > 0,
            "listen_backlog is 0: the kernel would refuse every connection it cannot accept at once"
        );
        anyhow::ensure!(
            settings.snapshot_history > 0,
            "snapshot_history is 0: the history keeps at least the newest snapshot"
        );
        anyhow::ensure!(
            settings.kafka.snapshot_history_hours > 0,
            "kafka.snapshot_history_hours is 0: the topic would delete a snapshot as it is written"
        );
        anyhow::ensure!(
            settings.projections_nice <= 19,
            "projections_nice is {}: it counts nice steps, 0 to 19",
            settings.projections_nice
        );
        Ok(settings)
    }

    /// How often, at most, the ledger and search projectors write while the journal grows.
    pub fn projector_interval(&self) -> std::time::Duration {
        std::time::Duration::from_millis(self.projector_interval_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The settings read with `file` as the configuration file (none when `None`) and the
    /// variables `env` set, in a jail that restores the environment afterwards; or the error's
    /// words.
    #[expect(clippy::result_large_err, reason = "figment's Jail API returns figment::Error")]
    fn settings_from(file: Option<&str>, env: &[(&str, &str)]) -> Result<Settings, String> {
        let mut read = None;
        figment::Jail::expect_with(|jail| {
            for (key, value) in env {
                jail.set_env(key, value);
            }
            if let Some(text) = file {
                jail.create_file("frontrow.toml", text)?;
            }
            read = Some(Settings::load(file.map(|_| Path::new("frontrow.toml"))).map_err(|e| e.to_string()));
            Ok(())
        });
        read.expect("the jail ran")
    }

    #[test]
    fn environment_overrides_file_overrides_defaults() {
        let file = "partitions = 4\nlisten = \"127.0.0.1:9000\"\n";
        let env = [
            ("FRONTROW_LISTEN", "127.0.0.1:9100"),
            ("FRONTROW_TOKEN_SECRET", "s3cret"),
        ];
        let s = settings_from(Some(file), &env).unwrap();
        assert_eq!(s.partitions, 4);
        assert_eq!(s.listen.port(), 9100);
        assert_eq!(s.data_dir, PathBuf::from("frontrow-data"));
        // Secrets never print.
        assert!(!format!("{s:?}").contains("s3cret"));
        assert!(!serde_json::to_string(&s).unwrap().contains("s3cret"));
    }

    #[test]
    fn the_listen_backlog_is_read_and_zero_is_refused() {
        assert_eq!(
            settings_from(None, &[]).unwrap().listen_backlog,
            crate::net::DEFAULT_BACKLOG
        );
        let s = settings_from(None, &[("FRONTROW_LISTEN_BACKLOG", "65535")]).unwrap();
        assert_eq!(s.listen_backlog, 65535);
        let e = settings_from(Some("listen_backlog = 0\n"), &[]).unwrap_err();
        assert!(e.contains("listen_backlog is 0"), "{e}");
    }

    #[test]
    fn projections_nice_counts_nice_steps_up_to_19() {
        let s = settings_from(None, &[("FRONTROW_PROJECTIONS_NICE", "19")]).unwrap();
        assert_eq!(s.projections_nice, 19);
        let e = settings_from(None, &[("FRONTROW_PROJECTIONS_NICE", "20")]).unwrap_err();
        assert!(e.contains("0 to 19"), "{e}");
    }

    #[test]
    fn the_snapshot_history_is_sized_by_count_and_on_kafka_by_hours() {
        let s = settings_from(None, &[]).unwrap();
        assert_eq!((s.snapshot_history, s.kafka.snapshot_history_hours), (48, 168));
        let env = [
            ("FRONTROW_SNAPSHOT_HISTORY", "5"),
            ("FRONTROW_KAFKA__SNAPSHOT_HISTORY_HOURS", "24"),
        ];
        let s = settings_from(None, &env).unwrap();
        assert_eq!((s.snapshot_history, s.kafka.snapshot_history_hours), (5, 24));
        let e = settings_from(Some("snapshot_history = 0\n"), &[]).unwrap_err();
        assert!(e.contains("snapshot_history is 0"), "{e}");
        let e = settings_from(None, &[("FRONTROW_KAFKA__SNAPSHOT_HISTORY_HOURS", "0")]).unwrap_err();
        assert!(e.contains("snapshot_history_hours is 0"), "{e}");
    }

    #[test]
    fn the_environment_key_list_names_every_setting() {
        let value = serde_json::to_value(Settings::default()).unwrap();
        let mut fields: Vec<_> = value.as_object().unwrap().keys().cloned().collect();
        let mut keys: Vec<_> = KEYS.iter().map(|k| k.to_string()).collect();
        fields.sort();
        keys.sort();
        assert_eq!(fields, keys);
    }

    #[test]
    fn other_frontrow_variables_are_left_alone() {
        let others = [
            ("FRONTROW_SERVICES_DIR", "/somewhere"),
            ("FRONTROW_KAFKA_PORT", "9999"),
            ("FRONTROW_KAFKA_BROKERS", "127.0.0.1:9999"),
        ];
        let ours = [("FRONTROW_PARTITIONS", "3"), ("FRONTROW_KAFKA__REPLICATION", "3")];
        let s = settings_from(None, &[&others[..], &ours[..]].concat()).unwrap();
        assert_eq!(s.partitions, 3);
        assert_eq!(s.kafka.replication, Some(3));
    }

    #[test]
    fn limits_come_from_a_table_or_nested_variables() {
        let env = [
            ("FRONTROW_LIMITS__SSE_PER_NODE", "7"),
            ("FRONTROW_LIMITS__TRUSTED_PROXIES", "[\"10.0.0.1\"]"),
        ];
        let s = settings_from(Some("[limits]\ncustomer_per_second = 2\n"), &env).unwrap();
        assert_eq!(s.limits.customer_per_second, 2);
        assert_eq!(
            s.limits.trusted_proxies,
            vec!["10.0.0.1".parse::<std::net::IpAddr>().unwrap()]
        );
        assert_eq!(s.limits.sse_per_node, 7);
        assert_eq!(
            s.limits.address_per_second,
            frontrow_http::limits::Limits::default().address_per_second
        );
    }

    #[test]
    fn unknown_keys_are_refused_at_the_top_and_in_tables() {
        for typo in ["partitons = 4\n", "[limits]\ncustomer_per_secnd = 2\n"] {
            assert!(settings_from(Some(typo), &[]).is_err(), "{typo:?}");
        }
    }

    #[test]
    fn backend_choices_are_parsed_once_when_the_settings_are_read() {
        let brokers = "127.0.0.1:19092,127.0.0.1:19093";
        let s = settings_from(
            None,
            &[
                ("FRONTROW_JOURNAL", &format!("kafka://{brokers}")),
                ("FRONTROW_SEARCH", "opensearch"),
            ],
        )
        .unwrap();
        assert_eq!(
            s.journal,
            JournalChoice::Kafka {
                brokers: brokers.into(),
                topic: frontrow_journal::DEFAULT_TOPIC.into(),
            }
        );
        assert_eq!(s.search, SearchChoice::OpenSearch);
        // They print as they are written, so a printed configuration reads back the same.
        let printed = serde_json::to_value(&s).unwrap();
        assert_eq!(printed["journal"], format!("kafka://{brokers}/frontrow.events"));
        assert_eq!(printed["search"], "opensearch");

        let bad = settings_from(None, &[("FRONTROW_JOURNAL", "postgres://somewhere")]).unwrap_err();
        assert!(bad.contains("is not `sqlite` or `kafka://BROKERS[/TOPIC]`"), "{bad}");
        let bad = settings_from(None, &[("FRONTROW_SEARCH", "solr")]).unwrap_err();
        assert!(bad.contains("tantivy") && bad.contains("opensearch"), "{bad}");
        let s = settings_from(None, &[("FRONTROW_SEARCH_TYPOS", "meilisearch")]).unwrap();
        assert_eq!(s.search_typos.typos(), frontrow_search::text::Typos::MEILISEARCH);
        assert_eq!(
            Settings::default().search_typos.typos(),
            frontrow_search::text::Typos::ALGOLIA
        );
        let bad = settings_from(None, &[("FRONTROW_SEARCH_TYPOS", "lucene")]).unwrap_err();
        assert!(bad.contains("algolia") && bad.contains("meilisearch"), "{bad}");
        assert_eq!("sqlite".parse::<JournalChoice>().unwrap(), JournalChoice::Sqlite);
        assert_eq!(
            "kafka://b:9092/t.events".parse::<JournalChoice>().unwrap(),
            JournalChoice::Kafka {
                brokers: "b:9092".into(),
                topic: "t.events".into()
            }
        );
        assert!("kafka://".parse::<JournalChoice>().is_err());
        assert!("kafka:///topic".parse::<JournalChoice>().is_err());
    }
}
