//! Which command node writes which partition, decided by a Kafka consumer group.
//!
//! Every command node joins the group `frontrow-command.<topic>` over the events topic. The group
//! coordinator gives each partition to exactly one member; on assignment the node acquires the
//! partition (fencing the previous owner through the journal's transactional producer, then
//! restoring its state) and announces itself in the compacted topic `<events>.owners`
//! (key: partition, value: the node's URL). On revocation it stops the partition's writer,
//! which finishes the batch in hand. The node never consumes events through the group: its
//! assigned partitions stay paused, the membership is only the lease.
//!
//! Every node tails `<events>.owners`, so any node can forward a request to the partition's
//! owner ([`crate::forward`]). A stale entry (a dead owner) only costs a failed forward and a
//! `503`; fencing keeps the log correct whatever the directory says.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use frontrow_journal::client_config;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Offset, TopicPartitionList};
use tokio::runtime::Handle;
use tracing::{info, warn};

use crate::writer::Writers;

/// How a command node joins the group.
#[derive(Debug, Clone)]
pub struct OwnershipSettings {
    pub brokers: String,
    /// The events topic; the directory is `<topic>.owners`.
    pub topic: String,
    pub group: String,
    /// This node's base URL, where other nodes forward requests for its partitions.
    pub node_url: String,
    /// How long a silent node keeps its partitions before the group moves them: the failover
    /// time after a crash. The broker must allow it (`group.min.session.timeout.ms`, 6 s by
    /// default; deploy/local sets 1 s); if it refuses, the node joins with
    /// [`BROKER_DEFAULT_MIN_SESSION`] instead and says so.
    pub session_timeout: Duration,
    /// How often the node tells the coordinator it is alive. librdkafka sends heartbeats from
    /// its own thread, so a node busy with requests still beats; a few must be lost in a row
    /// before the session expires.
    pub heartbeat_interval: Duration,
    /// Replication factor of the owner directory topic (`None`: as for the journal's topics).
    pub replication: Option<i32>,
    /// Join as a static member ([`instance_id`] of the node's URL): a member that rejoins
    /// under its instance id while the group is stable gets its partitions back without a
    /// rebalance (KIP-345). Every member rejoins that way when the group's coordinator has
    /// moved to another broker, so the partitions stay where they were.
    pub static_membership: bool,
}

impl OwnershipSettings {
    /// The heartbeat interval the member asks for with a session of `session`: the configured
    /// one, but at most a third of the session.
    fn heartbeat(&self, session: Duration) -> Duration {
        self.heartbeat_interval.min(session / 3)
    }
}

/// The `group.instance.id` of the node at `node_url`: readable (the URL with every character
/// Kafka does not take in an instance id, which are ASCII letters and digits, `.`, `_` and `-`,
/// as `_`, at most 160 of them) and unique (the first 8 bytes of the URL's SHA-256 in hex, so
/// URLs that differ only where characters were replaced, or past the cut, still differ). The
/// same URL gives the same id in every version: a node restarted under its URL is the same
/// member. Node URLs are unique in a deployment (requests are forwarded by them).
pub fn instance_id(node_url: &str) -> String {
    use sha2::{Digest, Sha256};
    let readable: String = node_url
        .chars()
        .take(160)
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let digest = Sha256::digest(node_url.as_bytes());
    format!("frontrow-command-{readable}-{}", hex::encode(&digest[..8]))
}

/// How long a revocation waits for its writers to drain before the rebalance goes on.
const REVOKE_WAIT: Duration = Duration::from_secs(1);

/// The smallest session timeout a broker with default settings accepts.
pub const BROKER_DEFAULT_MIN_SESSION: Duration = Duration::from_secs(6);

/// The partition -> owner URL directory, as last read from `<topic>.owners`.
#[derive(Debug)]
pub struct Owners {
    map: RwLock<HashMap<u32, String>>,
    pub node_url: String,
    /// Bumped on every entry read, so a forward in flight learns that a partition moved.
    changes: tokio::sync::watch::Sender<u64>,
}

impl Owners {
    fn new(node_url: String) -> Self {
        Self {
            map: RwLock::default(),
            node_url,
            changes: tokio::sync::watch::Sender::new(0),
        }
    }

    pub fn owner_of(&self, partition: u32) -> Option<String> {
        self.map
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&partition)
            .cloned()
    }

    /// Records that `url` now owns `partition`, and wakes whoever waits for a move.
    fn set(&self, partition: u32, url: &str) {
        self.map
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(partition, url.to_owned());
        self.changes.send_modify(|n| *n += 1);
    }

    /// Returns the new owner once the directory names another owner of `partition` than
    /// `from` (a forward to `from` that has not answered is then moot: `from` was replaced,
    /// and fencing refuses its writes).
    pub async fn moved_from(&self, partition: u32, from: &str) -> String {
        let mut changes = self.changes.subscribe();
        loop {
            match self.owner_of(partition) {
                Some(now) if now != from => return now,
                _ => {}
            }
            if changes.changed().await.is_err() {
                return std::future::pending().await;
            }
        }
    }
}

/// One entry of the owner directory as written: `url` began serving `partition` at `at_ms`
/// (the record's creation time, milliseconds since the Unix epoch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    pub partition: u32,
    pub url: String,
    pub at_ms: i64,
}

/// The owner directory's topic for the events topic `topic`.
pub fn directory_topic(topic: &str) -> String {
    format!("{topic}.owners")
}

/// Every announcement in the owner directory of the events topic `topic`, oldest first (a
/// compacted topic: once the broker has compacted it, only the newest per partition remain).
/// Blocking; for the harness's failover figures.
pub fn directory_history(brokers: &str, topic: &str, timeout: Duration) -> anyhow::Result<Vec<Announcement>> {
    let directory = directory_topic(topic);
    let reader: BaseConsumer = client_config(brokers)
        .set("group.id", "frontrow-owner-history")
        .set("enable.auto.commit", "false")
        .create()?;
    let (low, high) = reader.fetch_watermarks(&directory, 0, timeout)?;
    let mut history = Vec::new();
    if high <= low {
        return Ok(history);
    }
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&directory, 0, Offset::Beginning)?;
    reader.assign(&tpl)?;
    let deadline = std::time::Instant::now() + timeout;
    while std::time::Instant::now() < deadline {
        let Some(Ok(m)) = reader.poll(Duration::from_millis(100)) else {
            continue;
        };
        if let (Some((partition, url)), Some(at_ms)) = (entry(&m), m.timestamp().to_millis()) {
            history.push(Announcement {
                partition,
                url: url.to_owned(),
                at_ms,
            });
        }
        if m.offset() + 1 >= high {
            return Ok(history);
        }
    }
    anyhow::bail!("the owner directory {directory} was not read to its end within {timeout:?}")
}

/// A directory record's partition (its key) and owner URL (its value).
fn entry(m: &impl Message) -> Option<(u32, &str)> {
    let partition = std::str::from_utf8(m.key()?).ok()?.parse().ok()?;
    Some((partition, std::str::from_utf8(m.payload()?).ok()?))
}

/// A running group membership; dropping it leaves the group.
pub struct Membership {
    pub owners: Arc<Owners>,
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Membership {
    /// Leaves the group (its partitions are released first) and stops tailing the directory.
    pub async fn leave(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let threads = std::mem::take(&mut self.threads);
        let _ = tokio::task::spawn_blocking(move || {
            for t in threads {
                let _ = t.join();
            }
        })
        .await;
    }
}

#[derive(Clone)]
struct GroupContext {
    writers: Writers,
    runtime: Handle,
    announce: Arc<ThreadedProducer<DefaultProducerContext>>,
    directory: String,
    node_url: String,
}

impl ClientContext for GroupContext {}

impl ConsumerContext for GroupContext {
    fn pre_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            let partitions: Vec<u32> = tpl.elements().iter().map(|e| e.partition() as u32).collect();
            if consumer.assignment_lost() {
                // This node's session lapsed (the coordinator away, or this process paused):
                // nobody else has the partitions yet. Serve on until the group decides; a
                // claim elsewhere fences these writers first (Writers::lapse).
                metrics::counter!("frontrow_rebalances_total", "kind" => "lapsed").increment(1);
                warn!(
                    ?partitions,
                    "the group session lapsed; serving these partitions on until the group assigns them again"
                );
                for &partition in &partitions {
                    self.writers.lapse(partition);
                }
                return;
            }
            metrics::counter!("frontrow_rebalances_total", "kind" => "revoke").increment(1);
            // All at once: the group's rebalance (every partition's next owner) waits for this.
            info!(?partitions, "partitions revoked; draining their writers");
            let drains: Vec<_> = partitions
                .iter()
                .map(|&partition| {
                    let writers = self.writers.clone();
                    self.runtime.spawn(async move { writers.release(partition).await })
                })
                .collect();
            // A drain finishes the batch in hand; with a broker away that batch's append can
            // stall for seconds, and the whole group's next assignment would wait for it. Past
            // REVOKE_WAIT the drains go on by themselves: the next owner's claim fences this
            // node's producer, so a stalled append either landed before the claim (and the
            // next owner restores it) or fails, and this process starts no second writer of a
            // partition before the first has ended (Writers::release).
            let drained = self.runtime.block_on(async {
                tokio::time::timeout(REVOKE_WAIT, async {
                    for drain in drains {
                        let _ = drain.await;
                    }
                })
                .await
            });
            if drained.is_err() {
                warn!(
                    ?partitions,
                    "revoked writers still draining; the rebalance goes on without them"
                );
            }
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        let Rebalance::Assign(tpl) = rebalance else { return };
        metrics::counter!("frontrow_rebalances_total", "kind" => "assign").increment(1);
        // The membership is the lease; this consumer never reads the events themselves.
        if let Err(e) = consumer.pause(tpl) {
            warn!(error = %e, "could not pause assigned partitions");
        }
        let partitions: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
        info!(?partitions, "partitions assigned; acquiring them");
        // The group has formed again: what this node served on a lapsed lease and was not
        // given back is someone else's (or will be, in the next round) and stops here.
        for partition in self.writers.lapsed() {
            if !partitions.contains(&(partition as i32)) {
                info!(
                    partition,
                    "a partition served on a lapsed lease went elsewhere; releasing it"
                );
                let writers = self.writers.clone();
                self.runtime.spawn(async move { writers.release(partition).await });
            }
        }
        for e in tpl.elements() {
            let partition = e.partition() as u32;
            // Taken here, in the callback, so a revocation that arrives before the spawned
            // acquire runs cancels it (see Writers::assign).
            let assignment = self.writers.assign(partition);
            let writers = self.writers.clone();
            let announce = self.announce.clone();
            let (directory, url) = (self.directory.clone(), self.node_url.clone());
            self.runtime.spawn(async move {
                // Released again before it was served: the new owner announces itself.
                if writers.acquire_until_served(partition, assignment).await {
                    let key = partition.to_string();
                    let record = BaseRecord::to(&directory).key(&key).payload(&url);
                    if let Err((e, _)) = announce.send(record) {
                        warn!(partition, error = %e, "could not announce ownership");
                    }
                    info!(partition, "partition acquired");
                }
            });
        }
    }
}

/// The group consumer: cooperative-sticky assignment, so a member joining or leaving moves only
/// the partitions that must move (the others keep serving through the rebalance).
fn group_member(
    settings: &OwnershipSettings,
    session_timeout: Duration,
    context: GroupContext,
) -> anyhow::Result<BaseConsumer<GroupContext>> {
    let mut member = client_config(&settings.brokers)
        .set("group.id", &settings.group)
        .set("enable.auto.commit", "false")
        .set("session.timeout.ms", session_timeout.as_millis().to_string())
        .set(
            "heartbeat.interval.ms",
            settings.heartbeat(session_timeout).as_millis().to_string(),
        )
        .set("partition.assignment.strategy", "cooperative-sticky")
        .clone();
    if settings.static_membership {
        member.set("group.instance.id", instance_id(&settings.node_url));
    }
    let member: BaseConsumer<GroupContext> = member.create_with_context(context)?;
    member.subscribe(&[&settings.topic])?;
    Ok(member)
}

/// How long the member thread polls at a time: a quarter of the heartbeat interval, so that
/// [`wake_for_heartbeats`] runs often enough for every heartbeat to go out on time.
fn member_poll_step(heartbeat_interval: Duration) -> Duration {
    (heartbeat_interval / 4).clamp(Duration::from_millis(10), Duration::from_millis(100))
}

/// Wakes librdkafka's main thread, which sends the group's heartbeats. It sends one only when
/// it wakes for something else (an answer, an operation, one of its timers) and finds the
/// interval passed; with nothing else to do it slept up to 500 ms, so heartbeats set to 200 ms
/// went out about every 500 ms: two per 1 s session for a node under load, and the survivors of
/// a dead member learned of the rebalance up to half a second late (0.28-0.51 s from the
/// member's removal to the group's new generation in the brokers' logs of the chaos runs; with
/// this, 0.06-0.18 s). Asking for the assignment is an operation on that thread's queue.
fn wake_for_heartbeats(member: &BaseConsumer<GroupContext>) {
    let _ = member.assignment();
}

/// How long a stopping member waits for its revocation and its leave to be served.
const LEAVE_WAIT: Duration = Duration::from_secs(3);

/// Polls an unsubscribed member until its revocation has been served, and a moment more, so that
/// librdkafka sends the leave before the consumer closes: the group then moves the partitions at
/// once. A static member that closes first does not leave (KIP-345), and its partitions wait out
/// the session (measured: 1.2-1.3 s from SIGTERM to the other node's assignment, against
/// 0.2-0.6 s for a member that left).
fn serve_the_leave(member: &BaseConsumer<GroupContext>) {
    let deadline = std::time::Instant::now() + LEAVE_WAIT;
    let assigned = || member.assignment().is_ok_and(|a| a.count() > 0);
    while assigned() && std::time::Instant::now() < deadline {
        let _ = member.poll(Duration::from_millis(50));
    }
    // The leave goes out from librdkafka's own thread once the revocation is served.
    for _ in 0..4 {
        let _ = member.poll(Duration::from_millis(50));
    }
}

fn admin(brokers: &str) -> anyhow::Result<AdminClient<DefaultClientContext>> {
    Ok(client_config(brokers).create()?)
}

/// Joins the command group and starts tailing the owner directory.
pub async fn join(settings: OwnershipSettings, writers: Writers) -> anyhow::Result<Membership> {
    let directory = directory_topic(&settings.topic);
    let replication = match settings.replication {
        Some(r) => r,
        None => frontrow_journal::default_replication(&settings.brokers).await?,
    };
    let topic = NewTopic::new(&directory, 1, TopicReplication::Fixed(replication)).set("cleanup.policy", "compact");
    let options = AdminOptions::new().operation_timeout(Some(Duration::from_secs(10)));
    for result in admin(&settings.brokers)?.create_topics([&topic], &options).await? {
        if let Err((name, code)) = result
            && code != RDKafkaErrorCode::TopicAlreadyExists
        {
            anyhow::bail!("creating {name}: {code}");
        }
    }
    let owners = Arc::new(Owners::new(settings.node_url.clone()));
    let stop = Arc::new(AtomicBool::new(false));

    let tail: BaseConsumer = client_config(&settings.brokers)
        .set("group.id", "frontrow-owner-directory")
        .set("enable.auto.commit", "false")
        .set("fetch.wait.max.ms", "50")
        .create()?;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&directory, 0, Offset::Beginning)?;
    tail.assign(&tpl)?;
    let tail_thread = {
        let (owners, stop) = (owners.clone(), stop.clone());
        let (writers, runtime) = (writers.clone(), Handle::current());
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match tail.poll(Duration::from_millis(100)) {
                    Some(Ok(m)) => {
                        if let Some((partition, url)) = entry(&m) {
                            owners.set(partition, url);
                            // Another node serves it now (its claim has fenced this node's
                            // writer): a writer on a lapsed lease stops without waiting for
                            // a request to find out.
                            if url != owners.node_url && writers.is_lapsed(partition) {
                                info!(
                                    partition,
                                    owner = url,
                                    "a partition served on a lapsed lease is served elsewhere; releasing it"
                                );
                                let writers = writers.clone();
                                runtime.spawn(async move { writers.release(partition).await });
                            }
                        }
                    }
                    Some(Err(e)) => warn!(error = %e, "owner directory read failed"),
                    None => {}
                }
            }
        })
    };

    let announce: ThreadedProducer<DefaultProducerContext> = client_config(&settings.brokers)
        .set("acks", "all")
        .set("linger.ms", "0")
        .create()?;
    let context = GroupContext {
        writers,
        runtime: Handle::current(),
        announce: Arc::new(announce),
        directory,
        node_url: settings.node_url.clone(),
    };
    info!(
        session_ms = settings.session_timeout.as_millis(),
        heartbeat_ms = settings.heartbeat(settings.session_timeout).as_millis(),
        group = %settings.group,
        "joining the command group"
    );
    let member = group_member(&settings, settings.session_timeout, context)?;
    let member_thread = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut member = member;
            let step = member_poll_step(settings.heartbeat(settings.session_timeout));
            while !stop.load(Ordering::SeqCst) {
                let polled = member.poll(step);
                wake_for_heartbeats(&member);
                match polled {
                    Some(Err(e)) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::InvalidSessionTimeout) => {
                        warn!(
                            asked_ms = settings.session_timeout.as_millis(),
                            using_ms = BROKER_DEFAULT_MIN_SESSION.as_millis(),
                            "the broker refuses this session timeout (group.min.session.timeout.ms): \
                             joining with the broker default; failover takes that long"
                        );
                        let context = GroupContext::clone(member.context());
                        drop(member);
                        member = match group_member(&settings, BROKER_DEFAULT_MIN_SESSION, context) {
                            Ok(m) => m,
                            Err(e) => {
                                warn!(error = %e, "could not rejoin the command group");
                                return;
                            }
                        };
                    }
                    Some(Err(e)) => warn!(error = %e, "command group poll failed"),
                    _ => {}
                }
            }
            // Leaving revokes (and drains) every partition this node still owns.
            member.unsubscribe();
            serve_the_leave(&member);
            let _ = member.context().announce.flush(Duration::from_secs(5));
        })
    };
    Ok(Membership {
        owners,
        stop,
        threads: vec![tail_thread, member_thread],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_instance_id_is_the_node_url_in_the_characters_kafka_takes() {
        let id = instance_id("http://127.0.0.1:18081");
        assert!(id.starts_with("frontrow-command-http___127.0.0.1_18081-"), "{id}");
        assert_eq!(
            id,
            instance_id("http://127.0.0.1:18081"),
            "the same URL, the same member"
        );
        // URLs that differ only where characters were replaced, or past the readable part.
        assert_ne!(instance_id("http://a:b"), instance_id("http://a_b"));
        let long = format!("http://{}", "n".repeat(300));
        assert_ne!(instance_id(&format!("{long}1")), instance_id(&format!("{long}2")));
        for url in ["http://a:b", "https://cmd-2.tickets.example/x?y=ü", long.as_str()] {
            let id = instance_id(url);
            assert!(id.len() <= 249, "Kafka takes at most 249 characters: {}", id.len());
            assert!(
                id.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
                "{id}"
            );
        }
    }

    #[tokio::test]
    async fn a_wait_for_a_move_ends_when_the_partition_names_another_owner() {
        let owners = Arc::new(Owners::new("http://me".into()));
        owners.set(3, "http://a");
        let waiting = {
            let owners = owners.clone();
            tokio::spawn(async move { owners.moved_from(3, "http://a").await })
        };
        // Other partitions moving, or the same owner announced again, are not a move of 3.
        owners.set(4, "http://b");
        owners.set(3, "http://a");
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert!(!waiting.is_finished(), "woke without a move");
        owners.set(3, "http://c");
        let moved = tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(moved, "http://c");
        // Already moved: answers at once.
        assert_eq!(owners.moved_from(3, "http://a").await, "http://c");
    }
}
