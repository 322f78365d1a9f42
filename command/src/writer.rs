//! One writer task per journal partition: the single serialisation point for its events.
//!
//! A writer owns the state of every event in its partition. It takes a command from its bounded
//! mailbox, drains whatever else is waiting (up to a batch limit), decides them one after the
//! other against the evolving state, appends all resulting events in one durable journal write
//! (group commit), and only then answers every caller. Hold deadlines fire from a timer inside
//! the same loop, so an expiry is just another command. A full mailbox is refused at once
//! ([`CommandError::Overloaded`]) rather than queued without bound.
//!
//! If an append fails, nothing of the batch was acknowledged: every caller gets
//! [`CommandError::Unavailable`] and the writer rebuilds its state from the journal before it
//! decides anything else, so the in-memory state never runs ahead of the log. Until it has, it
//! stores no snapshot either (not even at a graceful stop): a snapshot is only ever of a state
//! the log has.
//!
//! Nor may it fall behind the log. Fencing makes a superseded writer's *appends* fail, but a
//! batch that appends nothing (refusals, retries of finished commands, reads) is answered from
//! memory, and a writer that another node has fenced without its knowing would answer those
//! from a past state: "no such event" for an event created since, a seat "free" that was sold.
//! So before answering such a batch the writer checks that the partition's end is still where
//! its own last write or restore left it; if anyone else has written since, it answers
//! [`CommandError::NotOwner`] (the caller forwards or retries) and stops, exactly as when an
//! append finds it fenced.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use chrono::{DateTime, Utc};
use frontrow_journal::{Journal, JournalError, Offset, Position, Record, Scan, Snapshot};
use frontrow_schema::partition::partition_of;
use frontrow_schema::snapshot::SnapshotError;
use frontrow_schema::*;
use tokio::sync::{mpsc, oneshot};
use tracing::{error, info, warn};
use uuid::Uuid;

use self::snapshot::PartitionSnapshot;
use crate::clock::Clock;
use crate::domain::{self, Command, EventState, Rejection, ReservationStatus};
use crate::views::{QueueTicketView, ReservationView};

/// Metadata a command carries into its envelopes.
#[derive(Debug, Clone, Default)]
pub struct Meta {
    pub idempotency_key: Option<String>,
    pub correlation_id: Option<Uuid>,
    pub causation_id: Option<Uuid>,
}

impl Meta {
    /// Stamps `event` in envelope `id`: number `sequence` of `event_id`'s stream, written at
    /// `now` with this metadata.
    pub fn envelope(&self, id: Uuid, event_id: EventId, sequence: u64, now: DateTime<Utc>, event: Event) -> Envelope {
        Envelope {
            causation_id: self.causation_id,
            correlation_id: self.correlation_id,
            idempotency_key: self.idempotency_key.clone(),
            ..Envelope::with_id(id, event_id, sequence, now, event)
        }
    }
}

/// The sequence of the next event of a stream whose state is `state`: from 1.
fn next_sequence(state: Option<&EventState>) -> u64 {
    state.map_or(1, |s| s.sequence + 1)
}

/// Records `events`, decided for `event_id` at `now`, as a writer does: stamps each in its
/// envelope (ids from `new_id`), applies it to `state` and appends its journal record to
/// `records`. For simulations and tools that write a journal without running a writer.
pub fn record(
    state: &mut Option<EventState>,
    event_id: EventId,
    events: &[Event],
    now: DateTime<Utc>,
    meta: &Meta,
    mut new_id: impl FnMut() -> Uuid,
    records: &mut Vec<Record>,
) {
    for event in events {
        let env = meta.envelope(new_id(), event_id, next_sequence(state.as_ref()), now, event.clone());
        domain::apply(state, event, meta.idempotency_key.as_deref());
        records.push(Record {
            key: env.key(),
            value: encode(&env),
        });
    }
}

/// What callers ask a writer.
#[derive(Debug, Clone)]
pub enum Request {
    Command {
        event_id: EventId,
        command: Command,
        meta: Meta,
    },
    /// Read one reservation of its own customer (the writer's state is the freshest there is).
    GetReservation {
        event_id: EventId,
        customer: CustomerId,
        reservation_id: ReservationId,
    },
}

impl Request {
    fn event_id(&self) -> EventId {
        match self {
            Request::Command { event_id, .. } | Request::GetReservation { event_id, .. } => *event_id,
        }
    }
}

/// A writer's answer to an accepted request.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub event_id: EventId,
    /// The kinds of the events this command recorded; empty when it was already done (a retry).
    pub recorded: Vec<EventKind>,
    /// The journal position of the last event this command wrote, or when it wrote nothing,
    /// the newest position of the partition the writer knows to be durable.
    pub position: Option<Position>,
    /// The reservation the command was about, as it is now.
    pub reservation: Option<ReservationView>,
    /// The caller's queue ticket, for waiting-room commands, as it is now.
    pub queue: Option<QueueTicketView>,
}

#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    #[error(transparent)]
    Rejected(#[from] Rejection),
    #[error("the writer for this event is busy; retry shortly")]
    Overloaded,
    #[error("the journal is unavailable: {0}")]
    Unavailable(String),
    /// This process does not serve the event's partition (another node does, or nobody yet).
    #[error("this node does not own partition {0}")]
    NotOwner(u32),
}

#[derive(Debug, Clone)]
pub struct WriterConfig {
    /// Requests waiting per writer before new ones are refused.
    pub mailbox: usize,
    /// Most requests decided and appended in one group commit.
    pub batch: usize,
    /// Store a snapshot of the partition's state after this many new records (0: never), so a
    /// restart replays only the tail of the log. One is also stored at a graceful stop.
    pub snapshot_every: u64,
}

impl Default for WriterConfig {
    fn default() -> Self {
        Self {
            mailbox: 4096,
            batch: 1024,
            snapshot_every: 50_000,
        }
    }
}

struct Msg {
    request: Request,
    reply: Option<oneshot::Sender<Result<Outcome, CommandError>>>,
    /// When it was put in the mailbox.
    sent: std::time::Instant,
}

/// The partition writers of this process: routes each request to its event's writer.
///
/// A process writes only the partitions it has acquired ([`Writers::acquire`]): all of them for
/// a single node, the ones the consumer group assigned for a command node. A request for any
/// other partition is answered [`CommandError::NotOwner`] so the caller can forward it.
#[derive(Clone)]
pub struct Writers {
    inner: Arc<WritersInner>,
}

struct WritersInner {
    journal: Arc<dyn Journal>,
    clock: Arc<dyn Clock>,
    config: WriterConfig,
    mailboxes: Vec<std::sync::RwLock<Option<mpsc::Sender<Msg>>>>,
    tasks: std::sync::Mutex<HashMap<u32, tokio::task::JoinHandle<()>>>,
    /// Bumped by every release, so an acquire that was still restoring knows it lost the race.
    generations: Vec<std::sync::atomic::AtomicU64>,
    /// Partitions this process is meant to serve (acquired and not released since).
    assigned: Vec<std::sync::atomic::AtomicBool>,
    /// A re-acquire after fencing is under way.
    reacquiring: Vec<std::sync::atomic::AtomicBool>,
    /// The partition's writer serves on a lapsed lease ([`Writers::lapse`]): the group no
    /// longer counts this process as its owner, but has not given it to anyone else yet.
    lapsed: Vec<Arc<AtomicBool>>,
    /// Held through each acquire of the partition, from the ownership check to serving, and
    /// through each release until its writer has ended. Two acquires at once (the group's
    /// assignment and a re-acquire after fencing) would each restore a writer, and both writers
    /// would append through the process's one producer of the partition: the journal fences
    /// other processes, not this process's own writers, so the second writer's decisions would
    /// miss the first one's records.
    acquiring: Vec<tokio::sync::Mutex<()>>,
    /// The process is stopping ([`Writers::begin_shutdown`]): a writer that ends now waits
    /// longer for its last snapshot, since no rebalance waits on it and the next start reads it.
    stopping: Arc<AtomicBool>,
}

impl Writers {
    /// Writers for `journal` that own no partition yet.
    pub fn new(journal: Arc<dyn Journal>, clock: Arc<dyn Clock>, config: WriterConfig) -> Self {
        let mailboxes = (0..journal.partitions())
            .map(|_| std::sync::RwLock::new(None))
            .collect();
        Self {
            inner: Arc::new(WritersInner {
                generations: (0..journal.partitions()).map(|_| Default::default()).collect(),
                assigned: (0..journal.partitions()).map(|_| Default::default()).collect(),
                reacquiring: (0..journal.partitions()).map(|_| Default::default()).collect(),
                lapsed: (0..journal.partitions()).map(|_| Default::default()).collect(),
                acquiring: (0..journal.partitions()).map(|_| Default::default()).collect(),
                stopping: Arc::default(),
                journal,
                clock,
                config,
                mailboxes,
                tasks: Default::default(),
            }),
        }
    }

    /// Acquires every partition: restores each one's state and starts its writer. Returns once
    /// all are ready to serve.
    pub async fn start(
        journal: Arc<dyn Journal>,
        clock: Arc<dyn Clock>,
        config: WriterConfig,
    ) -> Result<Self, JournalError> {
        let writers = Self::new(journal, clock, config);
        for partition in 0..writers.partitions() {
            writers.acquire(partition).await?;
        }
        Ok(writers)
    }

    /// Takes ownership of `partition`: fences any earlier writer, restores the partition's
    /// state from the journal, then starts serving it.
    pub async fn acquire(&self, partition: u32) -> Result<bool, JournalError> {
        let assignment = self.assign(partition);
        self.acquire_assigned(partition, assignment).await
    }

    /// Marks `partition` as given to this process and returns the assignment's generation, for
    /// [`acquire_assigned`](Self::acquire_assigned). Called where the assignment is learnt (the
    /// group's rebalance callback), so that a revocation that comes before the acquire runs
    /// cancels it rather than being undone by it.
    pub fn assign(&self, partition: u32) -> u64 {
        let inner = &self.inner;
        inner.assigned[partition as usize].store(true, Ordering::SeqCst);
        // A writer still serving on a lapsed lease serves this one: the acquire finds it.
        inner.lapsed[partition as usize].store(false, Ordering::SeqCst);
        inner.generations[partition as usize].load(Ordering::SeqCst)
    }

    /// The group's lease on `partition` lapsed without the group giving it to anyone else yet:
    /// this process lost its session (the group's coordinator went away, or the process was
    /// paused). Its writer, if it runs, goes on serving until the group decides: the next
    /// assignment gives the partition back ([`assign`](Self::assign) keeps the writer) or
    /// elsewhere ([`release`](Self::release)), and a claim by another node fences it before
    /// that node serves. A writer on a lapsed lease never claims the partition again: one whose
    /// append fails stops instead of restoring. An acquire still under way for the lapsed lease
    /// does not serve.
    ///
    /// Stopping at once, as a revocation does, would stop every writer of the cluster whenever
    /// the broker that coordinates the group dies, for as long as the group takes to form again
    /// on another broker (9-10 s in the chaos runs), while fencing already keeps a superseded
    /// writer from writing.
    pub fn lapse(&self, partition: u32) {
        let inner = &self.inner;
        inner.assigned[partition as usize].store(false, Ordering::SeqCst);
        inner.generations[partition as usize].fetch_add(1, Ordering::SeqCst);
        inner.lapsed[partition as usize].store(self.owns(partition), Ordering::SeqCst);
    }

    /// The partitions whose writers serve on a lapsed lease ([`lapse`](Self::lapse)).
    pub fn lapsed(&self) -> Vec<u32> {
        (0..self.partitions()).filter(|&p| self.is_lapsed(p)).collect()
    }

    /// Whether `partition`'s writer serves on a lapsed lease right now.
    pub fn is_lapsed(&self, partition: u32) -> bool {
        self.inner.lapsed[partition as usize].load(Ordering::SeqCst) && self.owns(partition)
    }

    /// [`acquire`](Self::acquire) for the assignment `assignment` returned by
    /// [`assign`](Self::assign): does nothing if the partition was released since. Says
    /// whether this process serves the partition now.
    pub async fn acquire_assigned(&self, partition: u32, assignment: u64) -> Result<bool, JournalError> {
        let inner = &self.inner;
        let _one_at_a_time = inner.acquiring[partition as usize].lock().await;
        if self.owns(partition) {
            return Ok(true);
        }
        if inner.generations[partition as usize].load(Ordering::SeqCst) != assignment {
            info!(partition, "partition released before it was acquired; not acquiring it");
            return Ok(false);
        }
        let (tx, rx) = mpsc::channel(inner.config.mailbox.max(1));
        let mut writer = Writer {
            partition,
            journal: inner.journal.clone(),
            clock: inner.clock.clone(),
            events: HashMap::new(),
            deadlines: BinaryHeap::new(),
            queue_timers: BinaryHeap::new(),
            last: None,
            last_time: None,
            known_end: 0,
            marker_pending: false,
            rx,
            batch: inner.config.batch.max(1),
            needs_restore: false,
            fenced: false,
            lapsed: inner.lapsed[partition as usize].clone(),
            since_snapshot: 0,
            snapshot_every: inner.config.snapshot_every,
            saving: None,
            stopping: inner.stopping.clone(),
        };
        let generation = assignment;
        writer.restore().await?;
        let mut mailbox = inner.mailboxes[partition as usize]
            .write()
            .unwrap_or_else(|e| e.into_inner());
        // Released (revoked) while restoring: another node may own the partition by now, and this
        // state may already be stale. Serving it would answer reads and refusals from the past.
        if inner.generations[partition as usize].load(Ordering::SeqCst) != generation {
            info!(partition, "partition released while restoring; not serving it");
            return Ok(false);
        }
        let task = tokio::spawn(writer.run());
        *mailbox = Some(tx);
        drop(mailbox);
        metrics::gauge!("frontrow_partitions_owned").increment(1.0);
        if let Some(old) = inner
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(partition, task)
        {
            old.abort();
        }
        Ok(true)
    }

    /// [`acquire_assigned`](Self::acquire_assigned), tried again after each failure (the
    /// brokers away, a leader moving) for as long as the assignment stands: a partition the
    /// group gave this process is served as soon as the journal lets it be, not at the next
    /// rebalance. Says whether this process serves the partition; `false` once it was
    /// released.
    pub async fn acquire_until_served(&self, partition: u32, assignment: u64) -> bool {
        let mut pause = Duration::from_millis(250);
        loop {
            match self.acquire_assigned(partition, assignment).await {
                Ok(served) => return served,
                Err(e) => {
                    warn!(partition, error = %e, retry_in = ?pause, "could not acquire assigned partition; retrying");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(2));
                }
            }
        }
    }

    /// Stops serving `partition`: new requests are refused, the writer finishes the batch in
    /// hand (appended and answered) and exits.
    pub async fn release(&self, partition: u32) {
        self.inner.assigned[partition as usize].store(false, Ordering::SeqCst);
        self.inner.lapsed[partition as usize].store(false, Ordering::SeqCst);
        self.inner.generations[partition as usize].fetch_add(1, Ordering::SeqCst);
        // An acquire waits until the released writer has ended: its last append must not go
        // through the producer the next writer of this process claims.
        let _one_at_a_time = self.inner.acquiring[partition as usize].lock().await;
        self.inner.mailboxes[partition as usize]
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        let task = self
            .inner
            .tasks
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&partition);
        if let Some(task) = task {
            metrics::gauge!("frontrow_partitions_owned").decrement(1.0);
            if let Err(e) = task.await {
                warn!(partition, error = %e, "writer task ended abnormally");
            }
        }
    }

    /// Says that the process is stopping: the writers released from now on (by leaving the
    /// group, or by [`shutdown`](Self::shutdown)) wait up to 3 s for their last snapshot
    /// instead of a rebalance's 0.5 s.
    pub fn begin_shutdown(&self) {
        self.inner.stopping.store(true, Ordering::SeqCst);
    }

    /// Releases every partition (graceful shutdown).
    pub async fn shutdown(&self) {
        self.begin_shutdown();
        for partition in 0..self.partitions() {
            self.release(partition).await;
        }
    }

    /// Whether this process is serving `partition` right now.
    pub fn owns(&self, partition: u32) -> bool {
        self.inner.mailboxes[partition as usize]
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|tx| !tx.is_closed())
    }

    pub fn partitions(&self) -> u32 {
        self.inner.mailboxes.len() as u32
    }

    /// Whether this process serves what it was given: `Ok(n)` when it serves all `n > 0`
    /// partitions assigned to it (or still served on a lapsed lease), else why not (none
    /// assigned yet, or some still restoring or re-acquiring after fencing). A load balancer
    /// sends writes only to a ready node.
    pub fn readiness(&self) -> Result<usize, String> {
        let assigned: Vec<u32> = (0..self.partitions())
            .filter(|&p| self.inner.assigned[p as usize].load(Ordering::SeqCst))
            .collect();
        let lapsed = self.lapsed().len();
        if assigned.is_empty() && lapsed == 0 {
            return Err("this node has no partition assigned yet".into());
        }
        let waiting: Vec<String> = assigned
            .iter()
            .filter(|&&p| !self.owns(p))
            .map(u32::to_string)
            .collect();
        if waiting.is_empty() {
            Ok(assigned.len() + lapsed)
        } else {
            Err(format!(
                "partitions {} are assigned but not served yet",
                waiting.join(", ")
            ))
        }
    }

    /// A request found no writer for a partition this process is meant to own: its acquire is
    /// still under way (the common case, right after an assignment), or its writer stopped
    /// because it was fenced (a late claim from an acquire that lost a rebalance race). Take it
    /// (back); an acquire under way finishes first, and this one then finds it served.
    fn reacquire_if_assigned(&self, partition: u32) {
        let inner = &self.inner;
        if !inner.assigned[partition as usize].load(Ordering::SeqCst)
            || inner.reacquiring[partition as usize].swap(true, Ordering::SeqCst)
        {
            return;
        }
        let writers = self.clone();
        tokio::spawn(async move {
            info!(
                partition,
                "a request found the assigned partition unserved (acquiring, or fenced); acquiring it"
            );
            writers.inner.mailboxes[partition as usize]
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .take();
            // Keep trying while the partition is still ours (e.g. the brokers are away); a
            // release in between ends the assignment this acquires for.
            let assignment = writers.inner.generations[partition as usize].load(Ordering::SeqCst);
            if writers.inner.assigned[partition as usize].load(Ordering::SeqCst) {
                writers.acquire_until_served(partition, assignment).await;
            }
            writers.inner.reacquiring[partition as usize].store(false, Ordering::SeqCst);
        });
    }

    /// The partition that owns an event.
    pub fn partition_of(&self, event_id: &EventId) -> u32 {
        partition_of(event_id, self.partitions())
    }

    /// Sends a request to its event's writer and waits for the answer. Refuses at once with
    /// [`CommandError::Overloaded`] when that writer's mailbox is full, and with
    /// [`CommandError::NotOwner`] when this process does not serve the event's partition.
    pub async fn send(&self, request: Request) -> Result<Outcome, CommandError> {
        let partition = self.partition_of(&request.event_id());
        let (reply, answer) = oneshot::channel();
        let mailbox = self.inner.mailboxes[partition as usize]
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        let Some(mailbox) = mailbox else {
            self.reacquire_if_assigned(partition);
            return Err(CommandError::NotOwner(partition));
        };
        mailbox
            .try_send(Msg {
                request,
                reply: Some(reply),
                sent: std::time::Instant::now(),
            })
            .map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => {
                    metrics::counter!("frontrow_writer_shed_total", "reason" => "mailbox_full").increment(1);
                    CommandError::Overloaded
                }
                mpsc::error::TrySendError::Closed(_) => {
                    self.reacquire_if_assigned(partition);
                    CommandError::NotOwner(partition)
                }
            })?;
        answer.await.map_err(|_| CommandError::NotOwner(partition))?
    }
}

struct Writer {
    partition: u32,
    journal: Arc<dyn Journal>,
    clock: Arc<dyn Clock>,
    events: HashMap<EventId, EventState>,
    /// Hold deadlines, soonest first; stale entries (booked, released) are skipped when popped.
    deadlines: BinaryHeap<Reverse<(DateTime<Utc>, EventId, ReservationId)>>,
    /// When a waiting room needs moving on without a command: its onsale instant (the lottery)
    /// and each admission's expiry. Stale entries just advance a queue that has nothing to do.
    queue_timers: BinaryHeap<Reverse<(DateTime<Utc>, EventId)>>,
    /// The offset of the newest record this writer has written or read, and that record's
    /// time when known (a snapshot's time stamp in the snapshot history).
    last: Option<Offset>,
    last_time: Option<DateTime<Utc>>,
    /// The partition's end offset as this writer last left or found it (after its own append or
    /// its restore), and whether a transaction marker of its own may still land right after it
    /// (Kafka writes a commit's marker after the commit returns). The partition's end may only
    /// be beyond that if some other writer has written since.
    known_end: Offset,
    marker_pending: bool,
    rx: mpsc::Receiver<Msg>,
    batch: usize,
    needs_restore: bool,
    /// Another node claimed the partition (or may have: an append failed on a lapsed lease):
    /// this writer must not write again.
    fenced: bool,
    /// Set while it serves on a lapsed lease (see [`Writers::lapse`]).
    lapsed: Arc<AtomicBool>,
    /// Records written since the last snapshot, and the snapshot interval (0: never).
    since_snapshot: u64,
    snapshot_every: u64,
    /// The snapshot being stored in the background, if any.
    saving: Option<tokio::task::JoinHandle<()>>,
    /// See [`WritersInner::stopping`].
    stopping: Arc<AtomicBool>,
}

/// The format of a partition snapshot's current version: the one the query side reads
/// (`frontrow_schema::snapshot`), pinned by `tests/golden/partition_snapshot_v2.bin`.
const SNAPSHOT_VERSION: u32 = frontrow_schema::snapshot::PARTITION_SNAPSHOT_VERSION;
/// How long a writer that ends because the process stops waits for its last snapshot to be
/// stored before it lets the store finish in the background.
const SNAPSHOT_AT_STOP: Duration = Duration::from_secs(3);
/// The same wait for a writer released in a rebalance: the group's next assignment waits for
/// it, so it is no longer than a store takes with the brokers well (0.1-0.4 s in the chaos
/// runs; 2 s and more while a broker is away). A store that takes longer still lands: the next
/// owner then restores from the snapshot before it and reads a longer tail.
const SNAPSHOT_AT_HANDOVER: Duration = Duration::from_millis(500);

/// A decided request waiting for its batch to be durable.
struct Pending {
    reply: Option<oneshot::Sender<Result<Outcome, CommandError>>>,
    answer: Result<Decided, CommandError>,
}

struct Decided {
    event_id: EventId,
    recorded: Vec<EventKind>,
    /// Index in the batch's records of this command's last event.
    last_record: Option<usize>,
    reservation: Option<(CustomerId, ReservationId)>,
    /// The customer whose queue ticket to answer with.
    queue_customer: Option<CustomerId>,
    /// A read, not a command: a reservation that is not the customer's is not found.
    is_read: bool,
}

impl Decided {
    /// A read of one customer's reservation: nothing recorded.
    fn read(event_id: EventId, customer: CustomerId, reservation_id: ReservationId) -> Self {
        Self {
            event_id,
            recorded: vec![],
            last_record: None,
            reservation: Some((customer, reservation_id)),
            queue_customer: None,
            is_read: true,
        }
    }
}

impl Writer {
    async fn restore(&mut self) -> Result<(), JournalError> {
        // Fence any earlier writer first, so nothing lands behind the state restored here. The
        // snapshot is read meanwhile: any stored snapshot is a true state of the log up to its
        // mark, whoever stored it and whenever, so it need not wait for the claim.
        let (claimed, snapshot) = tokio::join!(
            self.journal.claim(self.partition),
            self.journal.load_snapshot(self.partition)
        );
        claimed?;
        let snapshot = snapshot?;
        self.events.clear();
        self.deadlines.clear();
        self.queue_timers.clear();
        self.last = None;
        self.last_time = None;
        self.since_snapshot = 0;
        let end = self.journal.end_offset(self.partition).await?;
        let mut from = 0;
        match snapshot.map(|bytes| PartitionSnapshot::decode(&bytes)) {
            // A snapshot past the end of the log belongs to another log (a recreated topic).
            Some(Ok(snapshot)) if snapshot.next > end => {
                warn!(
                    partition = self.partition,
                    next = snapshot.next,
                    end,
                    "snapshot ahead of the log ignored"
                )
            }
            Some(Ok(snapshot)) => {
                from = snapshot.next;
                self.last = snapshot.last;
                for event in snapshot.events {
                    let state = EventState::from_snapshot(event);
                    for r in state
                        .reservations
                        .values()
                        .filter(|r| r.status == ReservationStatus::Held)
                    {
                        self.deadlines.push(Reverse((r.hold_until, state.event_id(), r.id)));
                    }
                    if let Some(queue) = &state.queue {
                        if !queue.shuffled {
                            self.queue_timers
                                .push(Reverse((state.info.onsale_at, state.event_id())));
                        }
                        for &(at, _) in &queue.live {
                            self.queue_timers.push(Reverse((at, state.event_id())));
                        }
                    }
                    self.events.insert(state.event_id(), state);
                }
                info!(partition = self.partition, next = from, "snapshot loaded");
            }
            Some(Err(SnapshotError::Version(version))) => {
                warn!(
                    partition = self.partition,
                    version, "snapshot of another version ignored"
                )
            }
            // A snapshot is only a shortcut: without a readable one, replay the whole log.
            Some(Err(e)) => warn!(partition = self.partition, error = %e, "unreadable snapshot ignored"),
            None => {}
        }
        // Every record before the end is committed: read again until Kafka shows the last ones.
        let journal = self.journal.clone();
        let mut scan = Scan::new(journal.as_ref(), self.partition, from, end, 10_000).retrying();
        while let Some(records) = scan.next_batch().await? {
            // What is replayed after the snapshot counts towards the next one.
            self.since_snapshot += records.len() as u64;
            for record in &records {
                self.last = Some(record.offset);
                self.last_time = None;
                match decode(&record.value) {
                    Ok(env) => {
                        self.last_time = Some(env.time);
                        self.apply(&env)
                    }
                    // A record this version cannot read is skipped loudly rather than
                    // stopping the partition; it cannot be one this version wrote.
                    Err(e) => {
                        error!(partition = self.partition, offset = record.offset, error = %e, "undecodable journal record")
                    }
                }
            }
        }
        self.known_end = end;
        self.marker_pending = false;
        self.needs_restore = false;
        info!(
            partition = self.partition,
            events = self.events.len(),
            end,
            "writer restored"
        );
        Ok(())
    }

    fn apply(&mut self, env: &Envelope) {
        let mut state = self.events.remove(&env.event_id);
        domain::apply(&mut state, &env.event, env.idempotency_key.as_deref());
        if let Some(state) = state {
            match &env.event {
                Event::SeatsReserved(e) => {
                    self.deadlines
                        .push(Reverse((e.hold_until, env.event_id, e.reservation_id)));
                }
                Event::Queue(QueueEvent::Opened(_)) if state.queue.as_ref().is_some_and(|q| !q.shuffled) => {
                    self.queue_timers.push(Reverse((state.info.onsale_at, env.event_id)));
                }
                Event::Queue(
                    QueueEvent::Admitted(FanAdmitted { expires_at, .. })
                    | QueueEvent::WaitlistOffered(WaitlistOffered { expires_at, .. }),
                ) => self.queue_timers.push(Reverse((*expires_at, env.event_id))),
                _ => {}
            }
            self.events.insert(env.event_id, state);
        }
    }

    async fn run(mut self) {
        let mut jumps = self.clock.jumps();
        while !self.fenced {
            let next_deadline = [
                self.deadlines.peek().map(|Reverse((at, ..))| *at),
                self.queue_timers.peek().map(|Reverse((at, _))| *at),
            ]
            .into_iter()
            .flatten()
            .min();
            let wait = next_deadline
                .map(|at| (at - self.clock.now()).to_std().unwrap_or(Duration::ZERO))
                .unwrap_or(Duration::from_secs(3600));
            tokio::select! {
                msg = self.rx.recv() => {
                    let Some(msg) = msg else { break };
                    let mut batch = vec![msg];
                    while batch.len() < self.batch {
                        match self.rx.try_recv() {
                            Ok(msg) => batch.push(msg),
                            Err(_) => break,
                        }
                    }
                    let started = std::time::Instant::now();
                    let size = batch.len();
                    let waited = |m: &Msg| started.saturating_duration_since(m.sent).as_secs_f64();
                    let wait = metrics::histogram!("frontrow_writer_wait_seconds");
                    batch.iter().for_each(|m| wait.record(waited(m)));
                    self.process(batch).await;
                    self.observe_batch(size, started.elapsed());
                }
                _ = tokio::time::sleep(wait), if next_deadline.is_some() => self.expire_due().await,
                Ok(()) = async { match jumps.as_mut() { Some(j) => j.changed().await, None => std::future::pending().await } } => {
                    self.expire_due().await;
                }
            }
        }
        // A graceful stop leaves a fresh snapshot, so the next start replays nothing (unless
        // an append failed since the last restore: then the next start replays the tail).
        if !self.fenced && self.since_snapshot > 0 && self.snapshot_every > 0 {
            self.snapshot();
        }
        // The save may wait on a broker that is away; a release (a rebalance waits for it) must
        // not. It goes on in the background: a snapshot is a cache, and one stored late is still
        // a true state of the log up to its mark.
        let wait = if self.stopping.load(Ordering::SeqCst) {
            SNAPSHOT_AT_STOP
        } else {
            SNAPSHOT_AT_HANDOVER
        };
        if let Some(saving) = self.saving.take()
            && tokio::time::timeout(wait, saving).await.is_err()
        {
            info!(
                partition = self.partition,
                "writer stopped; its last snapshot is still being stored"
            );
            return;
        }
        info!(partition = self.partition, "writer stopped");
    }

    /// Reports one batch to the metrics: its size, how long deciding and appending it took,
    /// and what still waits in the mailbox behind it.
    fn observe_batch(&self, size: usize, took: Duration) {
        let partition = self.partition.to_string();
        metrics::histogram!("frontrow_writer_batch_size").record(size as f64);
        metrics::histogram!("frontrow_writer_batch_seconds").record(took.as_secs_f64());
        metrics::gauge!("frontrow_writer_mailbox_depth", "partition" => partition).set(self.rx.len() as f64);
    }

    /// Turns every due hold into an `Expire` command and every due waiting-room timer into an
    /// `AdvanceQueue`, decided in one batch.
    async fn expire_due(&mut self) {
        let now = self.clock.now();
        let now_instant = std::time::Instant::now();
        let mut batch = Vec::new();
        let mut queues = Vec::new();
        while let Some(Reverse((at, event_id))) = self.queue_timers.peek().copied() {
            if at > now {
                break;
            }
            self.queue_timers.pop();
            if !queues.contains(&event_id) {
                queues.push(event_id);
            }
        }
        for event_id in queues {
            batch.push(Msg {
                request: Request::Command {
                    event_id,
                    command: Command::AdvanceQueue { seed: rand::random() },
                    meta: Meta::default(),
                },
                reply: None,
                sent: now_instant,
            });
        }
        while let Some(Reverse((at, event_id, reservation_id))) = self.deadlines.peek().copied() {
            if at > now {
                break;
            }
            self.deadlines.pop();
            let held = self
                .events
                .get(&event_id)
                .and_then(|s| s.reservations.get(&reservation_id))
                .is_some_and(|r| r.status == ReservationStatus::Held);
            if held {
                batch.push(Msg {
                    request: Request::Command {
                        event_id,
                        command: Command::Expire { reservation_id },
                        meta: Meta::default(),
                    },
                    reply: None,
                    sent: now_instant,
                });
            }
        }
        if !batch.is_empty() {
            self.process(batch).await;
        }
    }

    /// Stores a snapshot of the partition's current (durable) state in the background; skipped
    /// while the previous one is still being stored.
    ///
    /// Never after a failed append until the state is restored: the memory then still holds
    /// the refused batch's events, which the log does not have. A snapshot of it would bring
    /// them back on the next start (a retried webhook answered "duplicate" for a sale the log
    /// never recorded).
    fn snapshot(&mut self) {
        if self.needs_restore {
            warn!(
                partition = self.partition,
                "snapshot skipped: the state has not been restored since a failed append"
            );
            return;
        }
        if self.saving.as_ref().is_some_and(|t| !t.is_finished()) {
            return;
        }
        let Some(last) = self.last else { return };
        let snapshot = PartitionSnapshot {
            version: SNAPSHOT_VERSION,
            last: Some(last),
            next: last + 1,
            events: self.events.values().map(EventState::snapshot).collect(),
        };
        self.since_snapshot = 0;
        let (journal, partition) = (self.journal.clone(), self.partition);
        // The history is searched by time too: stamp the snapshot with its last record's time.
        let stamped_ms = self.last_time.map(frontrow_schema::snapshot::ceil_millis);
        self.saving = Some(tokio::spawn(async move {
            // Encoded off the writer's task: appends go on while a large partition serialises.
            let bytes = match tokio::task::spawn_blocking(move || snapshot.encode()).await {
                Ok(Ok(bytes)) => bytes,
                Ok(Err(e)) => return warn!(partition, error = %e, "snapshot not serialisable"),
                Err(e) => return warn!(partition, error = %e, "snapshot encoding did not finish"),
            };
            let size = bytes.len();
            let mark = frontrow_journal::SnapshotMark { last, stamped_ms };
            match journal.save_snapshot_at(partition, Snapshot { mark, bytes }).await {
                Ok(()) => info!(partition, last, size, "snapshot stored"),
                Err(e) => warn!(partition, error = %e, "snapshot not stored"),
            }
        }));
    }

    /// Checks that nobody else has written to the partition since this writer's own last append
    /// or restore, so that answers taken from its memory are answers about the log as it is.
    /// Fails with [`JournalError::Fenced`] when someone has (this writer is superseded, whether
    /// or not its producer has been told yet), or with the journal's error when it cannot tell.
    async fn confirm_current(&mut self) -> Result<(), JournalError> {
        let end = self.journal.end_offset(self.partition).await?;
        let allowed = self.known_end + u64::from(self.marker_pending);
        if end > allowed {
            warn!(
                partition = self.partition,
                end,
                known_end = self.known_end,
                "the partition was written by another writer since this one last wrote"
            );
            return Err(JournalError::Fenced(self.partition));
        }
        if end == allowed && self.marker_pending {
            // The marker has landed: from now on the end must not move at all.
            self.known_end = end;
            self.marker_pending = false;
        }
        Ok(())
    }

    /// Answers requests whose batch could not be recorded. A fenced writer has lost the
    /// partition to another node: it answers `NotOwner` (so the request can be forwarded to
    /// the new owner; nothing was written) and stops.
    fn refuse(
        &mut self,
        replies: impl Iterator<Item = oneshot::Sender<Result<Outcome, CommandError>>>,
        e: &JournalError,
    ) {
        let fenced = matches!(e, JournalError::Fenced(_));
        if fenced {
            warn!(partition = self.partition, "writer fenced by a newer owner; stopping");
            self.fenced = true;
        }
        for reply in replies {
            let answer = if fenced {
                CommandError::NotOwner(self.partition)
            } else {
                CommandError::Unavailable(e.to_string())
            };
            let _ = reply.send(Err(answer));
        }
    }

    /// One batch, in three steps: decide every request against the memory (and move on the
    /// waiting rooms it touched), make the batch's records durable in one append, then answer
    /// each request from the state as it now is.
    #[tracing::instrument(name = "writer_batch", skip_all, fields(partition = self.partition, size = batch.len()))]
    async fn process(&mut self, batch: Vec<Msg>) {
        if self.needs_restore && self.lapsed.load(Ordering::SeqCst) {
            // A restore claims the partition: on a lapsed lease that would take it from
            // whoever the group gave it to. Stop; the group's next assignment decides.
            warn!(
                partition = self.partition,
                "append failed on a lapsed lease; the writer stops instead of claiming again"
            );
            self.fenced = true;
            for reply in batch.into_iter().filter_map(|m| m.reply) {
                let _ = reply.send(Err(CommandError::NotOwner(self.partition)));
            }
            return;
        }
        if self.needs_restore
            && let Err(e) = self.restore().await
        {
            warn!(partition = self.partition, error = %e, "writer cannot restore; refusing batch");
            self.refuse(batch.into_iter().filter_map(|m| m.reply), &e);
            return;
        }
        let now = self.clock.now();
        let (pending, records) = self.decide_batch(batch, now);
        let answers_wanted = pending.iter().any(|p| p.reply.is_some());
        match self.commit(records, answers_wanted, now).await {
            Ok(offsets) => self.reply(pending, &offsets),
            Err(e) => self.refuse(pending.into_iter().filter_map(|p| p.reply), &e),
        }
    }

    /// Decides every request of a batch in order, each seeing the state the ones before it
    /// left, and collects the records to append.
    fn decide_batch(&mut self, batch: Vec<Msg>, now: DateTime<Utc>) -> (Vec<Pending>, Vec<Record>) {
        let deciding = std::time::Instant::now();
        let mut records = Vec::new();
        let mut pending = Vec::with_capacity(batch.len());
        // Events with a waiting room this batch touched, and whether it advanced them already.
        let mut touched: Vec<(EventId, bool)> = Vec::new();
        for msg in batch {
            let answer = match msg.request {
                Request::GetReservation {
                    event_id,
                    customer,
                    reservation_id,
                } => Ok(Decided::read(event_id, customer, reservation_id)),
                Request::Command {
                    event_id,
                    command,
                    meta,
                } => {
                    let advanced = matches!(command, Command::AdvanceQueue { .. });
                    let answer = self.decide_one(event_id, &command, meta, now, &mut records);
                    if self.events.get(&event_id).is_some_and(|s| s.queue.is_some()) {
                        match touched.iter_mut().find(|(id, _)| *id == event_id) {
                            Some((_, done)) => *done |= advanced,
                            None => touched.push((event_id, advanced)),
                        }
                    }
                    answer
                }
            };
            pending.push(Pending {
                reply: msg.reply,
                answer,
            });
        }
        self.advance_queues(touched, now, &mut records);
        metrics::histogram!("frontrow_writer_decide_seconds").record(deciding.elapsed().as_secs_f64());
        (pending, records)
    }

    /// Whatever a batch did to an event with a waiting room (a join, a hold that ended, a
    /// booking) may let fans in: moves each such queue on in the same group commit, unless the
    /// batch advanced it already.
    fn advance_queues(&mut self, touched: Vec<(EventId, bool)>, now: DateTime<Utc>, records: &mut Vec<Record>) {
        for (event_id, advanced) in touched {
            if !advanced {
                let advance = Command::AdvanceQueue { seed: rand::random() };
                if let Err(e) = self.decide_one(event_id, &advance, Meta::default(), now, records) {
                    warn!(partition = self.partition, %event_id, error = %e, "queue not advanced");
                }
            }
        }
    }

    /// Makes a batch's records durable and returns their offsets. A batch that recorded
    /// nothing still confirms that this writer is current before its answers go out (they are
    /// read from memory). A failed append marks the state for a restore: the memory holds
    /// events the log does not.
    async fn commit(
        &mut self,
        records: Vec<Record>,
        answers_wanted: bool,
        now: DateTime<Utc>,
    ) -> Result<Vec<Offset>, JournalError> {
        if records.is_empty() {
            if answers_wanted {
                self.confirm_current().await?;
            }
            return Ok(Vec::new());
        }
        let offsets = match self.journal.append(self.partition, records).await {
            Ok(offsets) => offsets,
            Err(e) => {
                error!(partition = self.partition, error = %e, "append failed; batch refused, state will be restored");
                self.needs_restore = true;
                return Err(e);
            }
        };
        self.last = offsets.last().copied().or(self.last);
        if let Some(&last) = offsets.last() {
            // Every envelope of the batch was stamped `now`.
            self.last_time = Some(now);
            self.known_end = last + 1;
            self.marker_pending = self.journal.writes_commit_markers();
        }
        self.since_snapshot += offsets.len() as u64;
        if self.snapshot_every > 0 && self.since_snapshot >= self.snapshot_every {
            self.snapshot();
        }
        Ok(offsets)
    }

    /// Answers every request of a durable batch.
    fn reply(&self, pending: Vec<Pending>, offsets: &[Offset]) {
        for p in pending {
            let Some(reply) = p.reply else { continue };
            let _ = reply.send(p.answer.and_then(|d| self.outcome(d, offsets)));
        }
    }

    /// What a decided request answers once its batch is durable: where its last record landed
    /// (or the newest durable position when it wrote nothing), and the reservation or queue
    /// ticket it was about, as they are now.
    fn outcome(&self, d: Decided, offsets: &[Offset]) -> Result<Outcome, CommandError> {
        let offset = match d.last_record {
            Some(i) => offsets.get(i).copied(),
            None => self.last,
        };
        let state = self.events.get(&d.event_id);
        let target = d.reservation.as_ref().map(|(_, id)| *id);
        let reservation = d.reservation.and_then(|(customer, id)| {
            let state = state?;
            let r = state.reservations.get(&id)?;
            (r.customer == customer).then(|| ReservationView::of(state, r))
        });
        if let (true, Some(id), None) = (d.is_read, target, &reservation) {
            return Err(Rejection::UnknownReservation(id).into());
        }
        let queue = d
            .queue_customer
            .and_then(|customer| QueueTicketView::of(state?, &customer));
        Ok(Outcome {
            event_id: d.event_id,
            recorded: d.recorded,
            position: offset.map(|offset| Position {
                partition: self.partition,
                offset,
            }),
            reservation,
            queue,
        })
    }

    fn decide_one(
        &mut self,
        event_id: EventId,
        command: &Command,
        meta: Meta,
        now: DateTime<Utc>,
        records: &mut Vec<Record>,
    ) -> Result<Decided, CommandError> {
        let events = domain::decide(self.events.get(&event_id), event_id, command, now)?;
        let mut recorded = Vec::with_capacity(events.len());
        let mut last_record = None;
        let key = event_id.to_string().into_bytes();
        for event in events {
            let sequence = next_sequence(self.events.get(&event_id));
            let env = meta.envelope(Uuid::now_v7(), event_id, sequence, now, event);
            recorded.push(env.event.kind());
            records.push(Record {
                key: key.clone(),
                value: encode(&env),
            });
            last_record = Some(records.len() - 1);
            self.apply(&env);
        }
        let reservation = match command {
            Command::Reserve {
                customer,
                idempotency_key,
                ..
            } => self
                .events
                .get(&event_id)
                .and_then(|s| s.idempotency.get(&(customer.clone(), idempotency_key.clone())))
                .map(|id| (customer.clone(), *id)),
            Command::Release {
                customer,
                reservation_id,
            }
            | Command::Cancel {
                customer,
                reservation_id,
            } => Some((customer.clone(), *reservation_id)),
            Command::PaymentSucceeded { reservation_id, .. } | Command::PaymentFailed { reservation_id, .. } => {
                let state = self.events.get(&event_id);
                state
                    .and_then(|s| s.reservations.get(reservation_id))
                    .map(|r| (r.customer.clone(), *reservation_id))
            }
            _ => None,
        };
        let queue_customer = match command {
            Command::JoinQueue { customer } | Command::LeaveQueue { customer } | Command::JoinWaitlist { customer } => {
                Some(customer.clone())
            }
            _ => None,
        };
        Ok(Decided {
            event_id,
            recorded,
            last_record,
            reservation,
            queue_customer,
            is_read: false,
        })
    }
}

#[cfg(test)]
mod golden;
pub(crate) mod snapshot;
