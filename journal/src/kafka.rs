//! The journal on Apache Kafka: topic `frontrow.events`, one partition per writer.
//!
//! Records are keyed by event id and land on the partition the schema's murmur2 partitioner
//! chose (the writer passes it explicitly, so every client agrees). Appends go through a
//! transactional producer per partition whose `transactional.id` is derived from the topic and
//! partition: whoever [`claim`](Journal::claim)s a partition calls `init_transactions`, which
//! fences the previous owner — its next commit fails and it acknowledges nothing. A batch is
//! one transaction, so it is visible whole or not at all, and readers use `read_committed`.
//!
//! Kafka spends an offset on each transaction's commit marker, so offsets have gaps; reads
//! report the consumer's position as [`Batch::next`]. The end offset seen by watchers is the
//! partitions' high watermark, polled in the background (other processes append too).
//!
//! The topic is created with `flush.messages=1` (each append is fsynced by the broker before it
//! is acknowledged), so an acknowledged batch survives a broker crash even with one replica. On
//! a cluster the topics get [`KafkaSettings::replication`] replicas (by default one per broker, at
//! most 3) and `min.insync.replicas` of [`KafkaSettings::min_insync_replicas`] (2 when
//! replicated), and the producers append with `acks=all` and idempotence (transactions need
//! both), so an acknowledged batch is on at least that many brokers.
//!
//! Snapshots: the latest of each partition is kept in the compacted topic `<topic>.snapshots`
//! (keyed by partition), which is all a writer's restore reads. Snapshots saved with
//! [`Journal::save_snapshot_at`] also go to `<topic>.snapshot-history`, partitioned like the
//! events topic: history partition `p` holds `p`'s snapshots in the order they were saved
//! (increasing covered offset), each keyed by its [`SnapshotMark`] as JSON. A lookup binary
//! searches that partition by offset, reading one record per probe. The history topic deletes
//! records older than [`KafkaSettings::snapshot_history_retention`].

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, KafkaResult, RDKafkaErrorCode};
use rdkafka::message::{Header, Message, OwnedHeaders};
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::{Offset as KafkaOffset, TopicPartitionList};
use tokio::sync::watch;
use tracing::{debug, info, warn};

use crate::{
    Backend, Batch, Journal, JournalError, Offset, Record, Snapshot, SnapshotBound, SnapshotMark, StoredRecord,
    blocking, run_blocking,
};

/// How long a broker call may take before the journal reports it unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the end offsets are refreshed for watchers.
const WATERMARK_POLL: Duration = Duration::from_millis(50);

/// The longest a client waits before it connects again to a broker that went away. librdkafka
/// doubles the wait after each failed try up to 10 s by default (Kafka's Java client: 1 s), and
/// a transactional producer asks anew which broker coordinates its transactions only when such
/// a try fails: after a broker died, a producer whose coordinator it was kept trying it, and
/// found the coordinator's new broker 6-13 s after the kill in the chaos runs, seconds after
/// the cluster had moved it.
const RECONNECT_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// The configuration every Kafka client of FrontRow starts from: the brokers, and reconnects
/// that back off to at most [`RECONNECT_BACKOFF_MAX`].
pub fn client_config(brokers: &str) -> ClientConfig {
    let mut config = ClientConfig::new();
    config.set("bootstrap.servers", brokers).set(
        "reconnect.backoff.max.ms",
        RECONNECT_BACKOFF_MAX.as_millis().to_string(),
    );
    config
}

/// Where the Kafka journal lives.
#[derive(Debug, Clone)]
pub struct KafkaSettings {
    /// `host:port[,host:port...]`.
    pub brokers: String,
    pub topic: String,
    pub partitions: u32,
    /// Replication factor of the topics this journal creates; `None`: one replica per broker
    /// the cluster reports, at most 3 (so 1 on a single local broker, 3 on a cluster).
    pub replication: Option<i32>,
    /// `min.insync.replicas` of the events topic: how many replicas must have an append before
    /// it is acknowledged (the producer always asks for `acks=all`). `None`: 2 when replicated,
    /// else 1. With 3 replicas and 2 in sync, one broker can die without losing an
    /// acknowledged event or stopping the writers.
    pub min_insync_replicas: Option<i32>,
    /// How long the snapshot history topic keeps a snapshot (its `retention.ms` when created).
    pub snapshot_history_retention: Duration,
}

/// The events topic when none is named (`kafka://BROKERS` without `/TOPIC`).
pub const DEFAULT_TOPIC: &str = "frontrow.events";

impl KafkaSettings {
    pub fn new(brokers: impl Into<String>, partitions: u32) -> Self {
        Self {
            brokers: brokers.into(),
            topic: DEFAULT_TOPIC.into(),
            partitions,
            replication: None,
            min_insync_replicas: None,
            snapshot_history_retention: DEFAULT_SNAPSHOT_HISTORY_RETENTION,
        }
    }
}

pub struct KafkaJournal {
    inner: Arc<Inner>,
}

struct Inner {
    settings: KafkaSettings,
    /// The transactional producer of each partition this process has claimed.
    producers: Vec<tokio::sync::Mutex<Option<Arc<FutureProducer>>>>,
    /// One transaction at a time per partition: a producer runs a single transaction.
    appending: Vec<tokio::sync::Mutex<()>>,
    readers: Vec<Mutex<Reader>>,
    /// A consumer used only for metadata and watermarks. It reads uncommitted, so the end it
    /// reports covers every acknowledged append at once; the commit markers that make an append
    /// visible to `read_committed` readers are written just after the commit returns, and a
    /// reader told to read up to this end waits for them.
    meta: BaseConsumer,
    ends: Vec<watch::Sender<Offset>>,
    /// Writes snapshots to `<topic>.snapshots` (not transactional: a snapshot is a cache).
    snapshots: FutureProducer,
}

/// How long the snapshot history keeps a snapshot unless told otherwise: a week.
pub const DEFAULT_SNAPSHOT_HISTORY_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// Largest snapshot the snapshot topic accepts, compressed (lz4 shrinks the JSON several times).
const MAX_SNAPSHOT_BYTES: usize = 100 << 20;
/// Largest snapshot before compression (librdkafka's ceiling).
const MAX_SNAPSHOT_RAW_BYTES: usize = 1_000_000_000;

struct Reader {
    consumer: BaseConsumer,
    /// Where the consumer is positioned, if it is assigned.
    cursor: Option<Offset>,
}

fn kafka_err(e: KafkaError) -> JournalError {
    JournalError::Storage(format!("kafka: {e}"))
}

/// How long each call of a claim's `init_transactions` waits before the claim calls again (see
/// [`Inner::producer`]). The call resumes the same request: one still on its way is waited for,
/// one the coordinator refused is asked again at once instead of after librdkafka's fixed 500 ms.
const CLAIM_STEP: Duration = Duration::from_millis(25);

/// The key of the record a claim commits to end an earlier writer's transaction (see
/// [`Inner::close_dangling_blocking`]); reads pass over it, so no reader ever sees it.
const CLOSING_KEY: &[u8] = b"frontrow.closing-commit";

/// The longest a read's seek waits for the topic's metadata (see [`Inner::read_blocking`]).
const METADATA_HINT: Duration = Duration::from_secs(1);

/// How long a read waits at a time for its first record before it looks whether the consumer
/// has passed the end already (over transaction markers only).
const MARKER_STEP: Duration = Duration::from_millis(20);

fn consumer(brokers: &str, isolation: &str) -> Result<BaseConsumer, JournalError> {
    client_config(brokers)
        .set("group.id", "frontrow-journal-reader")
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("isolation.level", isolation)
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "20")
        .create()
        .map_err(kafka_err)
}

fn is_fenced(e: &KafkaError) -> bool {
    let fenced_code = |c: RDKafkaErrorCode| {
        matches!(
            c,
            RDKafkaErrorCode::Fenced | RDKafkaErrorCode::ProducerFenced | RDKafkaErrorCode::InvalidProducerEpoch
        )
    };
    match e {
        KafkaError::Transaction(t) => t.is_fatal() || fenced_code(t.code()),
        other => other.rdkafka_error_code().is_some_and(fenced_code),
    }
}

/// The transactional id of `partition`'s writer: whoever initialises it fences every producer
/// that had it before.
pub fn writer_transactional_id(topic: &str, partition: u32) -> String {
    format!("frontrow-writer.{topic}.{partition}")
}

/// A claim: `init_transactions` until the coordinator gives `producer` the partition's id (fencing
/// every earlier writer), a fatal answer, or [`CALL_TIMEOUT`] after `began`.
///
/// In a failover the dead writer's transaction is usually still open: the coordinator answers the
/// first InitProducerId with CONCURRENT_TRANSACTIONS while it aborts it, and librdkafka asks again
/// only after a fixed 500 ms. Each call here resumes the claim ([`CLAIM_STEP`] at a time), and a
/// resumed call asks again at once; a request still on its way is left to answer (the answer to
/// the epoch bump comes only once the coordinator's log has it, which took over 250 ms under load).
fn claim_blocking(producer: &FutureProducer, partition: u32, began: Instant) -> KafkaResult<()> {
    let deadline = began + CALL_TIMEOUT;
    loop {
        let result = producer.init_transactions(CLAIM_STEP);
        match &result {
            Err(KafkaError::Transaction(e)) if e.is_retriable() && Instant::now() < deadline => {
                if e.code() != RDKafkaErrorCode::OperationTimedOut {
                    debug!(
                        partition,
                        at_ms = began.elapsed().as_millis(),
                        error = %e,
                        "claim refused for now; asking again"
                    );
                }
            }
            _ => return result,
        }
    }
}

impl KafkaJournal {
    /// Connects, creating the topic if it does not exist; an existing topic must have the
    /// configured partition count.
    pub async fn connect(settings: KafkaSettings) -> Result<Self, JournalError> {
        if settings.partitions == 0 {
            return Err(JournalError::Storage("a journal needs at least one partition".into()));
        }
        let admin: AdminClient<DefaultClientContext> = client_config(&settings.brokers).create().map_err(kafka_err)?;
        let replication = match settings.replication {
            Some(r) => r,
            None => default_replication(&settings.brokers).await?,
        };
        let min_insync = settings.min_insync_replicas.unwrap_or(default_min_insync(replication));
        if replication < 1 || min_insync < 1 || min_insync > replication {
            return Err(JournalError::Storage(format!(
                "kafka: replication {replication} with min.insync.replicas {min_insync}: need 1 <= min.insync.replicas <= replication"
            )));
        }
        let min_insync = min_insync.to_string();
        let topic = NewTopic::new(
            &settings.topic,
            settings.partitions as i32,
            TopicReplication::Fixed(replication),
        )
        .set("flush.messages", "1")
        .set("min.insync.replicas", &min_insync)
        .set("unclean.leader.election.enable", "false");
        let options = AdminOptions::new()
            .operation_timeout(Some(CALL_TIMEOUT))
            .request_timeout(Some(CALL_TIMEOUT));
        for result in admin.create_topics([&topic], &options).await.map_err(kafka_err)? {
            match result {
                Ok(name) => info!(topic = name, partitions = settings.partitions, "journal topic created"),
                Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => return Err(JournalError::Storage(format!("creating topic {name}: {code}"))),
            }
        }
        let snapshots_name = snapshot_topic(&settings.topic);
        let snapshots_topic = NewTopic::new(&snapshots_name, 1, TopicReplication::Fixed(replication))
            .set("cleanup.policy", "compact")
            .set("max.message.bytes", "104857600");
        let history_name = history_topic(&settings.topic);
        let retention_ms = settings.snapshot_history_retention.as_millis().max(1).to_string();
        // Kafka deletes whole segments: roll them often enough that retention can bite.
        let segment_ms = (settings.snapshot_history_retention.as_millis() / 4)
            .max(3_600_000)
            .to_string();
        let history = NewTopic::new(
            &history_name,
            settings.partitions as i32,
            TopicReplication::Fixed(replication),
        )
        .set("cleanup.policy", "delete")
        .set("retention.ms", &retention_ms)
        .set("segment.ms", &segment_ms)
        .set("max.message.bytes", "104857600");
        for result in admin
            .create_topics([&snapshots_topic, &history], &options)
            .await
            .map_err(kafka_err)?
        {
            match result {
                Ok(_) | Err((_, RDKafkaErrorCode::TopicAlreadyExists)) => {}
                Err((name, code)) => return Err(JournalError::Storage(format!("creating topic {name}: {code}"))),
            }
        }
        let snapshots: FutureProducer = client_config(&settings.brokers)
            .set("acks", "all")
            .set("compression.type", "lz4")
            .set("message.max.bytes", MAX_SNAPSHOT_RAW_BYTES.to_string())
            .create()
            .map_err(kafka_err)?;
        let meta = consumer(&settings.brokers, "read_uncommitted")?;
        let found = {
            let (meta_topic, brokers) = (settings.topic.clone(), settings.brokers.clone());
            blocking(move || -> Result<usize, JournalError> {
                let c = consumer(&brokers, "read_uncommitted")?;
                // Metadata can lag a fresh topic by a moment.
                let deadline = Instant::now() + CALL_TIMEOUT;
                loop {
                    let md = c.fetch_metadata(Some(&meta_topic), CALL_TIMEOUT).map_err(kafka_err)?;
                    let n = md.topics().first().map_or(0, |t| t.partitions().len());
                    if n > 0 || Instant::now() > deadline {
                        return Ok(n);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
            .await?
        };
        if found != settings.partitions as usize {
            return Err(JournalError::PartitionCountMismatch {
                path: format!("kafka topic {}", settings.topic),
                found: found as u32,
                configured: settings.partitions,
            });
        }
        let mut readers = Vec::new();
        for _ in 0..settings.partitions {
            readers.push(Mutex::new(Reader {
                consumer: consumer(&settings.brokers, "read_committed")?,
                cursor: None,
            }));
        }
        let inner = Arc::new(Inner {
            producers: (0..settings.partitions)
                .map(|_| tokio::sync::Mutex::new(None))
                .collect(),
            appending: (0..settings.partitions).map(|_| tokio::sync::Mutex::new(())).collect(),
            readers,
            meta,
            ends: (0..settings.partitions).map(|_| watch::Sender::new(0)).collect(),
            snapshots,
            settings,
        });
        for p in 0..inner.settings.partitions {
            let high = inner.clone().high_watermark(p).await?;
            inner.ends[p as usize].send_replace(high);
        }
        tokio::spawn(poll_watermarks(Arc::downgrade(&inner)));
        Ok(Self { inner })
    }

    pub fn settings(&self) -> &KafkaSettings {
        &self.inner.settings
    }
}

/// One replica per broker the cluster reports, at most 3.
pub async fn default_replication(brokers: &str) -> Result<i32, JournalError> {
    let c = consumer(brokers, "read_uncommitted")?;
    let n = blocking(move || {
        c.fetch_metadata(None, CALL_TIMEOUT)
            .map(|md| md.brokers().len())
            .map_err(kafka_err)
    })
    .await?;
    Ok((n as i32).clamp(1, 3))
}

/// Deletes the topics of the log `topic` (the events, its snapshots and their history) and the
/// topics named in `also`, e.g. the command group's owner directory. For runs that make a log
/// of their own (the chaos run, benchmarks): a cluster that keeps every run's topics restarts a
/// broker ever more slowly. A topic already gone is not an error.
pub async fn delete_log(brokers: &str, topic: &str, also: &[String]) -> Result<(), JournalError> {
    let admin: AdminClient<DefaultClientContext> = client_config(brokers).create().map_err(kafka_err)?;
    let mut names = vec![topic.to_owned(), snapshot_topic(topic), history_topic(topic)];
    names.extend(also.iter().cloned());
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let options = AdminOptions::new().operation_timeout(Some(CALL_TIMEOUT));
    for result in admin.delete_topics(&names, &options).await.map_err(kafka_err)? {
        if let Err((name, code)) = result
            && code != RDKafkaErrorCode::UnknownTopicOrPartition
        {
            return Err(JournalError::Storage(format!("kafka: deleting {name}: {code}")));
        }
    }
    Ok(())
}

/// `min.insync.replicas` unless configured: 2 when the topic is replicated (an acknowledged
/// append is on two brokers, and one broker may be down), 1 on a single replica.
pub fn default_min_insync(replication: i32) -> i32 {
    if replication > 1 { 2 } else { 1 }
}

fn snapshot_topic(topic: &str) -> String {
    format!("{topic}.snapshots")
}

fn history_topic(topic: &str) -> String {
    format!("{topic}.snapshot-history")
}

/// The configuration of a consumer in `group` that can fetch one whole snapshot record.
fn snapshot_config(brokers: &str, group: &str) -> ClientConfig {
    let mut config = client_config(brokers);
    config
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("fetch.message.max.bytes", MAX_SNAPSHOT_BYTES.to_string())
        .set(
            "receive.message.max.bytes",
            (MAX_SNAPSHOT_BYTES + (1 << 20)).to_string(),
        );
    config
}

/// A consumer that can read one whole snapshot record, and answers soon at the end.
fn snapshot_consumer(brokers: &str, group: &str) -> Result<BaseConsumer, JournalError> {
    snapshot_config(brokers, group)
        .set("auto.offset.reset", "earliest")
        .set("fetch.wait.max.ms", "20")
        .create()
        .map_err(kafka_err)
}

/// The CloudEvents context attributes of a structured-mode event, if the value is one.
#[derive(serde::Deserialize)]
struct Attributes<'a> {
    #[serde(borrow)]
    specversion: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    source: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow, rename = "type")]
    ty: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    subject: Option<std::borrow::Cow<'a, str>>,
    #[serde(borrow)]
    time: Option<std::borrow::Cow<'a, str>>,
}

/// Kafka headers for a record: the CloudEvents Kafka binding's, when the value is a CloudEvent.
fn cloudevents_headers(value: &[u8]) -> OwnedHeaders {
    let Ok(attrs) = serde_json::from_slice::<Attributes<'_>>(value) else {
        return OwnedHeaders::new();
    };
    if attrs.specversion.is_none() || attrs.id.is_none() {
        return OwnedHeaders::new();
    }
    let mut headers = OwnedHeaders::new().insert(Header {
        key: "content-type",
        value: Some("application/cloudevents+json; charset=UTF-8"),
    });
    for (key, value) in [
        ("ce_specversion", &attrs.specversion),
        ("ce_id", &attrs.id),
        ("ce_source", &attrs.source),
        ("ce_type", &attrs.ty),
        ("ce_subject", &attrs.subject),
        ("ce_time", &attrs.time),
    ] {
        if let Some(v) = value {
            headers = headers.insert(Header {
                key,
                value: Some(v.as_ref()),
            });
        }
    }
    headers
}

/// Keeps every partition's end offset current for watchers, until the journal is dropped.
async fn poll_watermarks(inner: Weak<Inner>) {
    loop {
        tokio::time::sleep(WATERMARK_POLL).await;
        let Some(inner) = inner.upgrade() else { return };
        for p in 0..inner.settings.partitions {
            match inner.clone().high_watermark(p).await {
                Ok(high) => {
                    inner.ends[p as usize].send_if_modified(|end| {
                        let grew = high > *end;
                        *end = (*end).max(high);
                        grew
                    });
                }
                Err(e) => debug!(partition = p, error = %e, "watermark poll failed"),
            }
        }
    }
}

impl Backend for Inner {
    fn partition_count(&self) -> u32 {
        self.settings.partitions
    }
}

impl Inner {
    async fn high_watermark(self: Arc<Self>, partition: u32) -> Result<Offset, JournalError> {
        blocking(move || self.high_watermark_blocking(partition)).await
    }

    fn high_watermark_blocking(&self, partition: u32) -> Result<Offset, JournalError> {
        let topic = &self.settings.topic;
        let query = || self.meta.fetch_watermarks(topic, partition as i32, CALL_TIMEOUT);
        // After the brokers were away the client's metadata can be stale ("unknown partition")
        // until refreshed, and a fresh topic's partition or a restarted broker's can be without a
        // leader for a moment ("not leader"): refresh it and ask again, for as long as a call
        // may take. The shared client was once seen to answer "unknown partition" for minutes
        // after a broker restart while the readers' own clients read the partition, so the
        // retries also ask one client of their own (made once per call, not per retry: the
        // background watermark poll retries through whole outages).
        let deadline = Instant::now() + CALL_TIMEOUT;
        let mut own = None;
        let watermarks = loop {
            match query() {
                Err(_) if Instant::now() < deadline => {
                    let _ = self.meta.fetch_metadata(Some(topic), CALL_TIMEOUT);
                    let own = match own.as_mut() {
                        Some(c) => c,
                        None => own.insert(consumer(&self.settings.brokers, "read_uncommitted")?),
                    };
                    if let Ok(answer) = own.fetch_watermarks(topic, partition as i32, CALL_TIMEOUT) {
                        break Ok(answer);
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                answer => break answer,
            }
        };
        watermarks.map(|(_, high)| high.max(0) as Offset).map_err(kafka_err)
    }

    /// A transactional producer for `partition`, fencing whoever had it before.
    async fn producer(self: &Arc<Self>, partition: u32) -> Result<Arc<FutureProducer>, JournalError> {
        let mut slot = self.producers[partition as usize].lock().await;
        if let Some(p) = slot.as_ref() {
            return Ok(p.clone());
        }
        let transactional_id = writer_transactional_id(&self.settings.topic, partition);
        let began = Instant::now();
        let producer: FutureProducer = client_config(&self.settings.brokers)
            .set("transactional.id", &transactional_id)
            .set("enable.idempotence", "true")
            .set("acks", "all")
            .set("linger.ms", "0")
            .set("transaction.timeout.ms", "10000")
            .set("message.timeout.ms", "10000")
            .create()
            .map_err(kafka_err)?;
        // A producer whose claim failed is dropped there too: librdkafka's destroy blocks.
        let inner = self.clone();
        let producer = tokio::task::spawn_blocking(move || {
            claim_blocking(&producer, partition, began).map_err(kafka_err)?;
            inner.close_dangling_blocking(&producer, partition)?;
            Ok::<_, JournalError>(Arc::new(producer))
        })
        .await
        .map_err(|e| JournalError::Storage(e.to_string()))??;
        info!(
            partition,
            transactional_id,
            took_ms = began.elapsed().as_millis(),
            "partition claimed: earlier writers are fenced"
        );
        *slot = Some(producer.clone());
        Ok(producer)
    }

    /// Ends a transaction of this partition's writer that a claim cannot end, so that readers
    /// (`read_committed`) get past it, and ends it committed.
    ///
    /// A broker stopped right after acknowledging a commit can come back without the commit's
    /// marker on the partition and with a coordinator that no longer knows the transaction (seen
    /// in the broker-restart test, four runs in about 115): the claim writes no marker there,
    /// and the partition's stable end stays at the transaction's first record for good, below
    /// the end. A marker of the same producer id ends the producer's open transaction on the
    /// partition from its first record whatever its epoch, so the claimant, which has that id,
    /// commits a transaction of its own with one record on the partition.
    ///
    /// Committed, not aborted: the open transaction may be one whose commit was acknowledged
    /// (in every case seen it was), and an acknowledged append must not be lost. If it was one
    /// whose commit never returned, its requests were answered `503` and now take effect; a
    /// retry with the same `Idempotency-Key` gets their answer. Its records are a prefix of its
    /// batch (a partition keeps a producer's order), so the state they make is one the writer
    /// decided. Checked after every claim: one watermark query when nothing is open.
    fn close_dangling_blocking(&self, producer: &FutureProducer, partition: u32) -> Result<(), JournalError> {
        let topic = &self.settings.topic;
        let end = self.high_watermark_blocking(partition)?;
        let stable = self.stable_end_blocking(partition)?;
        if stable >= end {
            return Ok(());
        }
        warn!(
            partition,
            stable, end, "a transaction of an earlier writer is still open on the partition; committing it"
        );
        let committed = producer.begin_transaction().and_then(|()| {
            let record = FutureRecord::<[u8], [u8]>::to(topic)
                .partition(partition as i32)
                .key(CLOSING_KEY);
            producer.send_result(record).map_err(|(e, _)| e)?;
            producer.commit_transaction(CALL_TIMEOUT)
        });
        if let Err(e) = committed {
            let _ = producer.abort_transaction(CALL_TIMEOUT);
            return Err(kafka_err(e));
        }
        let deadline = Instant::now() + CALL_TIMEOUT;
        loop {
            let stable = self.stable_end_blocking(partition)?;
            if stable >= end {
                info!(partition, stable, "the open transaction is committed");
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(JournalError::Storage(format!(
                    "kafka: partition {partition} stays readable only up to offset {stable} of {end}: a transaction is still open there"
                )));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Where the partition's committed records end (its last stable offset): what a
    /// `read_committed` reader can reach. The readers' consumers ask with their isolation level.
    fn stable_end_blocking(&self, partition: u32) -> Result<Offset, JournalError> {
        let reader = self.readers[partition as usize]
            .lock()
            .map_err(|e| JournalError::Storage(e.to_string()))?;
        let (_, stable) = reader
            .consumer
            .fetch_watermarks(&self.settings.topic, partition as i32, CALL_TIMEOUT)
            .map_err(kafka_err)?;
        Ok(stable.max(0) as Offset)
    }

    async fn forget_producer(&self, partition: u32) {
        self.producers[partition as usize].lock().await.take();
    }

    /// The newest snapshot of `partition`: reads the (compacted) snapshot topic to its end.
    fn load_snapshot_blocking(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        let topic = snapshot_topic(&self.settings.topic);
        let c: BaseConsumer = snapshot_config(&self.settings.brokers, "frontrow-snapshot-reader")
            .create()
            .map_err(kafka_err)?;
        let (_, high) = c.fetch_watermarks(&topic, 0, CALL_TIMEOUT).map_err(kafka_err)?;
        if high <= 0 {
            return Ok(None);
        }
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, KafkaOffset::Beginning)
            .map_err(kafka_err)?;
        c.assign(&tpl).map_err(kafka_err)?;
        let key = partition.to_string();
        let mut latest = None;
        let deadline = Instant::now() + CALL_TIMEOUT * 3;
        loop {
            match c.poll(Duration::from_millis(500)) {
                Some(Ok(m)) => {
                    if m.key() == Some(key.as_bytes()) {
                        latest = m.payload().map(<[u8]>::to_vec);
                    }
                    if m.offset() + 1 >= high {
                        return Ok(latest);
                    }
                }
                // A fresh consumer reports a bootstrap broker that is away (a broker killed,
                // restarting) as an error while it reads on from the others: it is news, not
                // the read's end. Before, one failed the whole restore, and the acquire waited
                // out its retry pause.
                Some(Err(e)) if Instant::now() > deadline => return Err(kafka_err(e)),
                Some(Err(e)) => debug!(partition, error = %e, "snapshot read: passing over a consumer error"),
                None if Instant::now() > deadline => {
                    return Err(JournalError::Storage("timed out reading the snapshot topic".into()));
                }
                None => {}
            }
        }
    }

    /// The newest snapshot in `partition`'s history within `bound`: a binary search over the
    /// history partition, whose marks grow with its offsets.
    fn snapshot_before_blocking(&self, partition: u32, bound: SnapshotBound) -> Result<Option<Snapshot>, JournalError> {
        let topic = history_topic(&self.settings.topic);
        let c = snapshot_consumer(&self.settings.brokers, "frontrow-snapshot-history-reader")?;
        let (low, high) = c
            .fetch_watermarks(&topic, partition as i32, CALL_TIMEOUT)
            .map_err(kafka_err)?;
        let (mut lo, mut hi) = (low.max(0), high.max(0));
        let mut best = None;
        // Whether a record can be placed in the order: a snapshot without a time stamp says
        // nothing about a bound by time (nor does a key that is not a mark).
        let placed = |mark: &Option<SnapshotMark>| match (mark, bound) {
            (None, _) => false,
            (Some(m), SnapshotBound::StampedMs(_)) => m.stamped_ms.is_some(),
            (Some(_), SnapshotBound::Offset(_)) => true,
        };
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            // The first record at or after `mid` that can be placed, skipping (rare) others.
            let mut probe = mid;
            let found = loop {
                match history_record(&c, &topic, partition, probe)? {
                    Some((at, mark, bytes)) if at < hi && placed(&mark) => break mark.map(|m| (at, m, bytes)),
                    Some((at, _, _)) if at + 1 < hi => probe = at + 1,
                    // Nothing placeable in [mid, hi) (or retention ran): look lower.
                    _ => break None,
                }
            };
            match found {
                Some((at, mark, bytes)) if bound.admits(&mark) => {
                    best = Some(Snapshot { mark, bytes });
                    lo = at + 1;
                }
                _ => hi = mid,
            }
        }
        Ok(best)
    }

    fn read_blocking(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError> {
        let mut reader = self.readers[partition as usize]
            .lock()
            .map_err(|e| JournalError::Storage(e.to_string()))?;
        if reader.cursor != Some(from) {
            // A consumer learns a topic it was not told of on its next metadata scan, up to 1 s
            // after the assign (librdkafka's topic scan timer): on a failover that second is
            // most of the restore. Asking for the topic's metadata first makes the fetch start
            // at once. It is only a hint: without it the fetch starts on the next scan, so it
            // is given no longer than that scan would take (a broker may be away).
            if let Err(e) = reader
                .consumer
                .fetch_metadata(Some(&self.settings.topic), METADATA_HINT)
            {
                debug!(partition, error = %e, "no topic metadata before the assign");
            }
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(&self.settings.topic, partition as i32, KafkaOffset::Offset(from as i64))
                .map_err(kafka_err)?;
            reader.consumer.assign(&tpl).map_err(kafka_err)?;
            reader.cursor = Some(from);
        }
        let known_end = *self.ends[partition as usize].borrow();
        // Wait for a first record only if there should be one; then take what has arrived.
        let deadline = Instant::now()
            + if from < known_end {
                Duration::from_millis(1500)
            } else {
                Duration::from_millis(10)
            };
        let mut records = Vec::new();
        // Errors the consumer queued while the brokers were away (transport failures, "all
        // brokers down") come out of poll one at a time long after the brokers are back; librdkafka
        // reconnects by itself. Such an error fails the read only if no record arrives in time.
        let mut error = None;
        // Past the last record polled, returned or passed over (a claim's closing record).
        let mut passed = None;
        let position = |consumer: &BaseConsumer| {
            consumer.position().ok().and_then(|tpl| {
                match tpl.find_partition(&self.settings.topic, partition as i32)?.offset() {
                    KafkaOffset::Offset(o) if o >= 0 => Some(o as Offset),
                    _ => None,
                }
            })
        };
        while records.len() < max {
            let now = Instant::now();
            // While nothing has come, wait in short steps: the stretch up to the end may hold
            // only transaction markers (a writer's tail after its snapshot starts with its last
            // commit's), which the consumer passes over without returning anything.
            let wait = if records.is_empty() {
                deadline.saturating_duration_since(now).min(MARKER_STEP)
            } else {
                Duration::ZERO
            };
            match reader.consumer.poll(wait) {
                Some(Ok(m)) => {
                    passed = passed.max(Some(m.offset() as Offset + 1));
                    if m.key() != Some(CLOSING_KEY) {
                        records.push(StoredRecord {
                            partition,
                            offset: m.offset() as Offset,
                            key: m.key().unwrap_or_default().to_vec(),
                            value: m.payload().unwrap_or_default().to_vec(),
                        });
                    }
                }
                Some(Err(e)) if records.is_empty() => {
                    error = Some(e);
                    if Instant::now() >= deadline {
                        break;
                    }
                }
                None if records.is_empty()
                    && Instant::now() < deadline
                    && position(&reader.consumer).is_none_or(|at| at < known_end) => {}
                Some(Err(_)) | None => break,
            }
        }
        let position = position(&reader.consumer);
        // A queued error fails a read that got no record only if the consumer did not move
        // either: over aborted records, markers (a failed append's) and a claim's closing record
        // it moves without returning anything.
        if records.is_empty()
            && from < known_end
            && position.is_none_or(|at| at <= from)
            && let Some(e) = error
        {
            return Err(kafka_err(e));
        }
        let next = [Some(from), passed, position]
            .into_iter()
            .flatten()
            .max()
            .unwrap_or(from);
        reader.cursor = Some(next);
        Ok(Batch { records, next })
    }
}

#[async_trait]
impl Journal for KafkaJournal {
    fn partitions(&self) -> u32 {
        self.inner.settings.partitions
    }

    async fn claim(&self, partition: u32) -> Result<(), JournalError> {
        self.inner.check(partition)?;
        self.inner.forget_producer(partition).await;
        self.inner.producer(partition).await.map(|_| ())
    }

    async fn append(&self, partition: u32, records: Vec<Record>) -> Result<Vec<Offset>, JournalError> {
        self.inner.check(partition)?;
        if records.is_empty() {
            return Ok(Vec::new());
        }
        let _one_at_a_time = self.inner.appending[partition as usize].lock().await;
        let producer = self.inner.producer(partition).await?;
        let topic = &self.inner.settings.topic;
        if let Err(e) = producer.begin_transaction() {
            return Err(self.fail_async(partition, e).await);
        }
        let mut deliveries = Vec::with_capacity(records.len());
        for record in &records {
            let future_record = FutureRecord::to(topic)
                .partition(partition as i32)
                .key(&record.key[..])
                .payload(&record.value[..])
                .headers(cloudevents_headers(&record.value));
            match producer.send_result(future_record) {
                Ok(delivery) => deliveries.push(delivery),
                Err((e, _)) => {
                    let p = producer.clone();
                    let _ = tokio::task::spawn_blocking(move || p.abort_transaction(CALL_TIMEOUT)).await;
                    return Err(self.fail_async(partition, e).await);
                }
            }
        }
        let p = producer.clone();
        let committed = tokio::task::spawn_blocking(move || p.commit_transaction(CALL_TIMEOUT))
            .await
            .map_err(|e| JournalError::Storage(e.to_string()))?;
        if let Err(e) = committed {
            let p = producer.clone();
            let _ = tokio::task::spawn_blocking(move || p.abort_transaction(CALL_TIMEOUT)).await;
            return Err(self.fail_async(partition, e).await);
        }
        let mut offsets = Vec::with_capacity(deliveries.len());
        for delivery in deliveries {
            match delivery.await {
                Ok(Ok(d)) => offsets.push(d.offset as Offset),
                Ok(Err((e, _))) => return Err(kafka_err(e)),
                Err(_) => return Err(JournalError::Storage("delivery report lost".into())),
            }
        }
        if let Some(last) = offsets.last() {
            self.inner.ends[partition as usize].send_if_modified(|end| {
                let grew = last + 1 > *end;
                *end = (*end).max(last + 1);
                grew
            });
        }
        Ok(offsets)
    }

    async fn read(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError> {
        run_blocking(&self.inner, partition, move |inner| {
            inner.read_blocking(partition, from, max.max(1))
        })
        .await
    }

    fn writes_commit_markers(&self) -> bool {
        true
    }

    async fn end_offset(&self, partition: u32) -> Result<Offset, JournalError> {
        self.inner.check(partition)?;
        self.inner.clone().high_watermark(partition).await
    }

    async fn save_snapshot(&self, partition: u32, snapshot: Vec<u8>) -> Result<(), JournalError> {
        self.inner.check(partition)?;
        let topic = snapshot_topic(&self.inner.settings.topic);
        let key = partition.to_string();
        let record = FutureRecord::to(&topic).partition(0).key(&key).payload(&snapshot);
        self.inner
            .snapshots
            .send(record, CALL_TIMEOUT)
            .await
            .map(|_| ())
            .map_err(|(e, _)| kafka_err(e))
    }

    async fn load_snapshot(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        run_blocking(&self.inner, partition, move |inner| {
            inner.load_snapshot_blocking(partition)
        })
        .await
    }

    async fn save_snapshot_at(&self, partition: u32, snapshot: Snapshot) -> Result<(), JournalError> {
        self.inner.check(partition)?;
        let topic = history_topic(&self.inner.settings.topic);
        let key = serde_json::to_vec(&snapshot.mark).map_err(|e| JournalError::Storage(e.to_string()))?;
        let record = FutureRecord::to(&topic)
            .partition(partition as i32)
            .key(&key)
            .payload(&snapshot.bytes);
        self.inner
            .snapshots
            .send(record, CALL_TIMEOUT)
            .await
            .map_err(|(e, _)| kafka_err(e))?;
        self.save_snapshot(partition, snapshot.bytes).await
    }

    async fn snapshot_before(&self, partition: u32, bound: SnapshotBound) -> Result<Option<Snapshot>, JournalError> {
        run_blocking(&self.inner, partition, move |inner| {
            inner.snapshot_before_blocking(partition, bound)
        })
        .await
    }

    fn watch(&self, partition: u32) -> Result<watch::Receiver<Offset>, JournalError> {
        self.inner.check(partition)?;
        Ok(self.inner.ends[partition as usize].subscribe())
    }
}

impl KafkaJournal {
    fn fail(&self, partition: u32, e: KafkaError) -> JournalError {
        if is_fenced(&e) {
            warn!(partition, error = %e, "fenced: another writer owns this partition now");
            JournalError::Fenced(partition)
        } else {
            kafka_err(e)
        }
    }

    async fn fail_async(&self, partition: u32, e: KafkaError) -> JournalError {
        let err = self.fail(partition, e);
        if matches!(err, JournalError::Fenced(_)) {
            self.inner.forget_producer(partition).await;
        }
        err
    }
}

/// A record of the snapshot history: its offset, its mark (if the key is one), the snapshot.
type HistoryRecord = (i64, Option<SnapshotMark>, Vec<u8>);

/// The first record of history partition `partition` at or after `offset`: its offset, its mark
/// (`None` if the key is not one) and its snapshot. `None` when there is no such record.
fn history_record(
    c: &BaseConsumer,
    topic: &str,
    partition: u32,
    offset: i64,
) -> Result<Option<HistoryRecord>, JournalError> {
    let (_, high) = c
        .fetch_watermarks(topic, partition as i32, CALL_TIMEOUT)
        .map_err(kafka_err)?;
    if offset >= high {
        return Ok(None);
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(topic, partition as i32, KafkaOffset::Offset(offset))
        .map_err(kafka_err)?;
    c.assign(&tpl).map_err(kafka_err)?;
    let deadline = Instant::now() + CALL_TIMEOUT;
    loop {
        match c.poll(Duration::from_millis(200)) {
            Some(Ok(m)) if m.partition() == partition as i32 && m.offset() >= offset => {
                let mark = m.key().and_then(|k| serde_json::from_slice(k).ok());
                return Ok(Some((m.offset(), mark, m.payload().unwrap_or_default().to_vec())));
            }
            Some(Ok(_)) => {}
            // As in the snapshot read: a broker away is news until the deadline.
            Some(Err(e)) if Instant::now() > deadline => return Err(kafka_err(e)),
            Some(Err(_)) => {}
            None if Instant::now() > deadline => {
                return Err(JournalError::Storage("timed out reading the snapshot history".into()));
            }
            None => {}
        }
    }
}
