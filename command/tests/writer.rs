//! The partition writer against the real SQLite journal: overload shedding, append failures,
//! hold expiry under paused time, and restore on start.
//!
//! `Gate` wraps the real journal to hold appends back or make the next one fail, which is how
//! a slow disk or a lost broker looks to a writer; everything else is the real thing.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use async_trait::async_trait;
use chrono::Duration;
use frontrow_command::clock::{Clock, SystemClock};
use frontrow_command::domain::{Command, SeatSelection};
use frontrow_command::writer::{CommandError, Meta, Outcome, Request, WriterConfig, Writers};
use frontrow_journal::{Batch, Journal, JournalError, Offset, Record, SqliteJournal};
use frontrow_schema::testsuite::{self, seated};
use frontrow_schema::*;
use tokio::sync::{Semaphore, watch};

/// How long a test waits for what a writer does behind a call.
const SECS_10: std::time::Duration = std::time::Duration::from_secs(10);

struct Gate {
    inner: SqliteJournal,
    /// Appends wait for a permit while `closed`.
    permits: Semaphore,
    /// Appends currently held at the gate.
    waiting: AtomicUsize,
    closed: AtomicBool,
    fail_next: AtomicBool,
    /// Claims of a partition so far (each restore of a writer makes one).
    claims: AtomicUsize,
    /// Claims still to fail, as while the brokers are away.
    failing_claims: AtomicUsize,
}

#[async_trait]
impl Journal for Gate {
    fn partitions(&self) -> u32 {
        self.inner.partitions()
    }
    async fn claim(&self, partition: u32) -> Result<(), JournalError> {
        self.claims.fetch_add(1, Ordering::SeqCst);
        // As slow as fencing through a Kafka coordinator, so that acquires overlap.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        let failing = self
            .failing_claims
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
        if failing.is_ok() {
            return Err(JournalError::Storage("brokers away".into()));
        }
        self.inner.claim(partition).await
    }
    async fn append(&self, partition: u32, records: Vec<Record>) -> Result<Vec<Offset>, JournalError> {
        if self.closed.load(Ordering::SeqCst) {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            self.permits.acquire().await.expect("gate open").forget();
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
        if self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(JournalError::Storage("disk on fire".into()));
        }
        self.inner.append(partition, records).await
    }
    async fn read(&self, partition: u32, from: Offset, max: usize) -> Result<Batch, JournalError> {
        self.inner.read(partition, from, max).await
    }
    async fn end_offset(&self, partition: u32) -> Result<Offset, JournalError> {
        self.inner.end_offset(partition).await
    }
    fn watch(&self, partition: u32) -> Result<watch::Receiver<Offset>, JournalError> {
        self.inner.watch(partition)
    }
    async fn save_snapshot(&self, partition: u32, snapshot: Vec<u8>) -> Result<(), JournalError> {
        self.inner.save_snapshot(partition, snapshot).await
    }
    async fn load_snapshot(&self, partition: u32) -> Result<Option<Vec<u8>>, JournalError> {
        self.inner.load_snapshot(partition).await
    }
}

fn gate(dir: &tempfile::TempDir) -> Arc<Gate> {
    Arc::new(Gate {
        inner: SqliteJournal::open(&dir.path().join("j.db"), 1).unwrap(),
        permits: Semaphore::new(0),
        waiting: AtomicUsize::new(0),
        closed: AtomicBool::new(false),
        fail_next: AtomicBool::new(false),
        claims: AtomicUsize::new(0),
        failing_claims: AtomicUsize::new(0),
    })
}

fn event(clock: &dyn Clock) -> EventScheduled {
    let map = testsuite::seat_map(
        &[("STD", "Standard", 5000)],
        vec![seated("A", "Stalls", &[("1", 10, "STD")])],
    );
    EventScheduled {
        starts_at: clock.now() + Duration::days(1),
        // Seats are picked at random here, whatever they leave alone: the no-orphan rule is off.
        allow_orphan_seats: true,
        ..testsuite::sample_event(EventId::new(), clock.now() - Duration::minutes(1), map)
    }
}

/// The system clock, and an [`event`] on sale by it.
fn system_clock_event() -> (Arc<dyn Clock>, EventScheduled) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let info = event(clock.as_ref());
    (clock, info)
}

/// Writers on `journal` and `clock`, every partition acquired.
async fn start(journal: Arc<dyn Journal>, clock: &Arc<dyn Clock>, config: WriterConfig) -> Writers {
    Writers::start(journal, clock.clone(), config).await.unwrap()
}

async fn schedule(writers: &Writers, info: EventScheduled) {
    let request = Request::Command {
        event_id: info.event_id,
        command: Command::Schedule(Box::new(info)),
        meta: Meta::default(),
    };
    writers.send(request).await.unwrap();
}

/// Writers on a fresh gated journal in `dir`, on the system clock, with one [`event`]
/// scheduled: the journal, the writers and the event's id.
async fn scheduled(dir: &tempfile::TempDir, config: WriterConfig) -> (Arc<Gate>, Writers, EventId) {
    let journal = gate(dir);
    let (clock, info) = system_clock_event();
    let writers = start(journal.clone(), &clock, config).await;
    let id = info.event_id;
    schedule(&writers, info).await;
    (journal, writers, id)
}

fn reserve(event_id: EventId, customer: &str, seats: &[&str], key: &str) -> Request {
    Request::Command {
        event_id,
        command: Command::Reserve {
            customer: CustomerId::parse(customer).unwrap(),
            reservation_id: ReservationId::new(),
            selection: SeatSelection::Explicit(seats.iter().map(|s| s.parse().unwrap()).collect()),
            idempotency_key: key.into(),
            admission: None,
        },
        meta: Meta {
            idempotency_key: Some(key.into()),
            ..Meta::default()
        },
    }
}

/// Each of `seats` held by a customer of its own, `{who}{i}`, under the key `{key}{i}`: the
/// customers and the answers.
async fn hold_one_each(writers: &Writers, id: EventId, seats: &[&str], who: &str, key: &str) -> Vec<(String, Outcome)> {
    let mut answered = Vec::new();
    for (i, seat) in seats.iter().enumerate() {
        let customer = format!("{who}{i}");
        let outcome = writers
            .send(reserve(id, &customer, &[seat], &format!("{key}{i}")))
            .await
            .unwrap();
        answered.push((customer, outcome));
    }
    answered
}

fn get(event_id: EventId, customer: &str, outcome: &Outcome) -> Request {
    Request::GetReservation {
        event_id,
        customer: CustomerId::parse(customer).unwrap(),
        reservation_id: outcome.reservation.as_ref().unwrap().reservation_id,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_mailbox_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let config = WriterConfig {
        mailbox: 2,
        batch: 1,
        ..WriterConfig::default()
    };
    let (journal, writers, id) = scheduled(&dir, config).await;

    journal.closed.store(true, Ordering::SeqCst);
    // One request is taken and blocks in its append; two more fill the mailbox.
    let first = tokio::spawn({
        let w = writers.clone();
        async move { w.send(reserve(id, "a", &["A-1-1"], "k1")).await }
    });
    let waiting = || async { journal.waiting.load(Ordering::SeqCst) };
    let blocked = |n: &usize| (*n > 0).then_some(());
    testsuite::wait_until(SECS_10, "the first request blocks in its append", waiting, blocked).await;
    // `send` puts the request in the mailbox on its first poll.
    let mut queued: Vec<_> = ["A-1-2", "A-1-3"]
        .into_iter()
        .enumerate()
        .map(|(i, seat)| Box::pin(writers.send(reserve(id, "b", &[seat], &format!("q{i}")))))
        .collect();
    for q in &mut queued {
        assert!(futures::poll!(q).is_pending());
    }
    let refused = writers.send(reserve(id, "c", &["A-1-9"], "k9")).await;
    assert!(matches!(refused, Err(CommandError::Overloaded)), "{refused:?}");

    journal.permits.add_permits(10);
    assert!(first.await.unwrap().is_ok());
    for q in queued {
        assert!(q.await.is_ok());
    }
    // The refused command wrote nothing: its seat is still free.
    journal.closed.store(false, Ordering::SeqCst);
    assert!(writers.send(reserve(id, "d", &["A-1-9"], "k10")).await.is_ok());
    writers.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_append_acknowledges_nothing_and_state_follows_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, writers, id) = scheduled(&dir, WriterConfig::default()).await;

    journal.fail_next.store(true, Ordering::SeqCst);
    let failed = writers.send(reserve(id, "a", &["A-1-1"], "k1")).await;
    assert!(matches!(failed, Err(CommandError::Unavailable(_))), "{failed:?}");
    // The writer's memory did not keep the unrecorded hold: someone else can take the seat.
    let ok = writers.send(reserve(id, "b", &["A-1-1"], "k2")).await.unwrap();
    assert_eq!(ok.recorded, vec![EventKind::SeatsReserved]);
    // And the retry of the failed command is a fresh attempt that now meets a taken seat.
    let retry = writers.send(reserve(id, "a", &["A-1-1"], "k1")).await;
    assert!(matches!(retry, Err(CommandError::Rejected(_))), "{retry:?}");
}

#[tokio::test(start_paused = true)]
async fn holds_expire_on_the_writers_timer() {
    let dir = tempfile::tempdir().unwrap();
    let (_journal, writers, id) = scheduled(&dir, WriterConfig::default()).await;
    let held = writers.send(reserve(id, "a", &["A-1-1", "A-1-2"], "k1")).await.unwrap();
    let other = writers.send(reserve(id, "b", &["A-1-3"], "k2")).await.unwrap();

    tokio::time::advance(std::time::Duration::from_secs(9 * 60 + 59)).await;
    let r = writers.send(get(id, "a", &held)).await.unwrap();
    assert_eq!(r.reservation.unwrap().status, "held");

    tokio::time::advance(std::time::Duration::from_secs(2)).await;
    // Let the writer's timer run.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    let r = writers.send(get(id, "a", &held)).await.unwrap();
    assert_eq!(r.reservation.unwrap().status, "expired");
    let r = writers.send(get(id, "b", &other)).await.unwrap();
    assert_eq!(r.reservation.unwrap().status, "expired");
    // Freed seats can be held again.
    assert!(writers.send(reserve(id, "c", &["A-1-1"], "k3")).await.is_ok());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_writer_rebuilds_its_state_from_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, info) = system_clock_event();
    let id = info.event_id;
    let held = {
        let journal = gate(&dir);
        let writers = start(journal, &clock, WriterConfig::default()).await;
        schedule(&writers, info).await;
        let held = writers.send(reserve(id, "a", &["A-1-5"], "k1")).await.unwrap();
        writers.shutdown().await;
        held
    };
    let journal = gate(&dir);
    let writers = start(journal, &clock, WriterConfig::default()).await;
    let again = writers.send(get(id, "a", &held)).await.unwrap();
    assert_eq!(again.reservation, held.reservation);
    // The idempotency key survived too: the retry answers the same reservation.
    let retry = writers.send(reserve(id, "a", &["A-1-5"], "k1")).await.unwrap();
    assert!(retry.recorded.is_empty());
    assert_eq!(retry.reservation, held.reservation);
    let taken = writers.send(reserve(id, "b", &["A-1-5"], "k2")).await;
    assert!(matches!(taken, Err(CommandError::Rejected(_))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_from_a_snapshot_and_the_tail_equals_a_full_replay() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, info) = system_clock_event();
    let id = info.event_id;
    let every = |n| WriterConfig {
        snapshot_every: n,
        ..WriterConfig::default()
    };
    let mut answered = Vec::new();

    // Snapshots every 4 records, and one more at the graceful stop.
    let writers = start(gate(&dir), &clock, every(4)).await;
    schedule(&writers, info).await;
    let seats = ["A-1-1", "A-1-2", "A-1-3", "A-1-4", "A-1-5", "A-1-6"];
    answered.extend(hold_one_each(&writers, id, &seats, "c", "k").await);
    let released = Request::Command {
        event_id: id,
        command: Command::Release {
            customer: CustomerId::parse("c0").unwrap(),
            reservation_id: answered[0].1.reservation.as_ref().unwrap().reservation_id,
        },
        meta: Meta::default(),
    };
    writers.send(released).await.unwrap();
    writers.shutdown().await;
    let journal = gate(&dir);
    assert!(
        journal.load_snapshot(0).await.unwrap().is_some(),
        "a snapshot was stored"
    );

    // A tail after the snapshot, written by writers that never snapshot.
    let writers = start(journal.clone(), &clock, every(0)).await;
    answered.extend(hold_one_each(&writers, id, &["A-1-7", "A-1-8"], "t", "tail").await);
    writers.shutdown().await;

    // Snapshot + tail, and a full replay (the snapshot made unreadable), give the same answers.
    let views = |writers: Writers| {
        let answered = answered.clone();
        async move {
            let mut views = Vec::new();
            for (customer, outcome) in &answered {
                let got = writers.send(get(id, customer, outcome)).await;
                views.push(got.unwrap_or_else(|e| panic!("{customer}: {e}")).reservation.unwrap());
            }
            // The idempotency keys came back too: a retry answers the same reservation.
            let retry = writers.send(reserve(id, "c1", &["A-1-2"], "k1")).await.unwrap();
            assert!(retry.recorded.is_empty());
            let taken = writers.send(reserve(id, "z", &["A-1-8"], "z")).await;
            assert!(
                matches!(taken, Err(CommandError::Rejected(_))),
                "the tail's hold is restored"
            );
            let freed = writers.send(reserve(id, "z", &["A-1-1"], "z1")).await;
            assert!(freed.is_ok(), "the released seat is free");
            writers.shutdown().await;
            views
        }
    };
    let from_snapshot = views(start(gate(&dir), &clock, every(0)).await).await;
    assert_eq!(from_snapshot[1].status, "held");
    assert_eq!(from_snapshot[0].status, "released");
    let (_copy, replay_journal) = replay_copy(&dir).await;
    let replayed = views(start(replay_journal, &clock, every(0)).await).await;
    assert_eq!(from_snapshot, replayed);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restored_writer_draws_the_lottery_and_lapses_admissions_on_its_timers() {
    use frontrow_command::clock::ManualClock;
    use frontrow_command::domain::QueueSettings;

    let dir = tempfile::tempdir().unwrap();
    let manual = Arc::new(ManualClock::new(chrono::Utc::now()));
    let clock: Arc<dyn Clock> = manual.clone();
    let mut info = event(clock.as_ref());
    info.onsale_at = clock.now() + Duration::minutes(10);
    let id = info.event_id;
    let command = |command| Request::Command {
        event_id: id,
        command,
        meta: Meta::default(),
    };
    let join = |who: &str| {
        command(Command::JoinQueue {
            customer: CustomerId::parse(who).unwrap(),
        })
    };
    {
        let writers = start(gate(&dir), &clock, WriterConfig::default()).await;
        schedule(&writers, info).await;
        let open = Command::OpenQueue {
            organizer: OrganizerId::parse("acme").unwrap(),
            settings: QueueSettings {
                max_size: None,
                max_shoppers: 1,
                admission_secs: 60,
            },
        };
        writers.send(command(open)).await.unwrap();
        for who in ["ann", "ben", "cat"] {
            let ticket = writers.send(join(who)).await.unwrap().queue.unwrap();
            assert_eq!(ticket.status, "waiting");
        }
        // A graceful stop stores a snapshot: the restart below starts from it.
        writers.shutdown().await;
    }
    let journal = gate(&dir);
    assert!(journal.load_snapshot(0).await.unwrap().is_some());
    let writers = start(journal.clone(), &clock, WriterConfig::default()).await;
    // What the log says: (joined tickets, the lottery's seed, admitted tickets, lapsed tickets).
    let facts = || async {
        let (mut joined, mut seed, mut admitted, mut lapsed) = (Vec::new(), None, Vec::new(), Vec::new());
        for record in frontrow_journal::conformance::read_all(journal.as_ref(), 0).await {
            match decode(&record.value).unwrap().event {
                Event::Queue(QueueEvent::Joined(j)) => joined.push(j.ticket),
                Event::Queue(QueueEvent::Shuffled(s)) => seed = Some(s.seed),
                Event::Queue(QueueEvent::Admitted(a)) => admitted.push(a.ticket),
                Event::Queue(QueueEvent::Lapsed(l)) => lapsed.push(l.ticket),
                _ => {}
            }
        }
        (joined, seed, admitted, lapsed)
    };
    let wait_for = |admissions: usize, lapses: usize| async move {
        let message = format!("{admissions} admissions and {lapses} lapses");
        testsuite::wait_until(SECS_10, &message, facts, |(_, _, admitted, lapsed)| {
            ((admitted.len(), lapsed.len()) == (admissions, lapses)).then_some(())
        })
        .await
    };
    // The onsale timer, restored from the snapshot, draws the lottery and lets one fan in.
    manual.advance(Duration::minutes(10));
    wait_for(1, 0).await;
    // The admission runs out unused: it lapses on its timer and the next fan comes in.
    manual.advance(Duration::seconds(60));
    wait_for(2, 1).await;
    writers.shutdown().await;

    // Who was let in, in the order the recorded seed gives.
    let (mut joined, seed, admitted, lapsed) = facts().await;
    lottery_order(seed.expect("the lottery was drawn"), &mut joined);
    assert_eq!(admitted, joined[..2]);
    assert_eq!(lapsed, joined[..1]);
}

/// What the superseded writer is asked.
#[derive(Clone, Copy, Debug)]
enum Stale {
    /// To hold a seat of an event created since it last wrote.
    EventCreatedSince,
    /// For a reservation made since it last wrote.
    ReservationMadeSince,
}

/// Two writers of one partition, the second taking over after the first last wrote: the first,
/// still believing itself the owner, must answer nothing from its memory of the past (on Kafka
/// it is fenced but does not know it until it appends; on one SQLite file only the end of the
/// log gives the takeover away).
async fn a_superseded_writer_answers_nothing_from_the_past(
    first: Arc<dyn Journal>,
    second: Arc<dyn Journal>,
    ask: Stale,
) {
    let (clock, known) = system_clock_event();
    let old = start(first, &clock, WriterConfig::default()).await;
    schedule(&old, known.clone()).await;
    let mine = old.send(reserve(known.event_id, "a", &["A-1-1"], "k1")).await.unwrap();

    let new = start(second, &clock, WriterConfig::default()).await;
    let created_since = event(clock.as_ref());
    schedule(&new, created_since.clone()).await;
    let theirs = new.send(reserve(known.event_id, "b", &["A-1-2"], "k2")).await.unwrap();

    // From memory these would be "no such event" and "no such reservation": answers from the past.
    let stale = match ask {
        Stale::EventCreatedSince => old.send(reserve(created_since.event_id, "c", &["A-1-1"], "k3")).await,
        Stale::ReservationMadeSince => old.send(get(known.event_id, "b", &theirs)).await,
    };
    assert!(matches!(stale, Err(CommandError::NotOwner(0))), "{ask:?}: {stale:?}");
    // The revocation reaches the old node (in a cluster, the group's rebalance).
    old.release(0).await;

    // The new writer answers all of it from the log as it is.
    assert!(new.send(get(known.event_id, "a", &mine)).await.is_ok());
    assert!(new.send(get(known.event_id, "b", &theirs)).await.is_ok());
    let taken = new
        .send(reserve(created_since.event_id, "c", &["A-1-1"], "k3"))
        .await
        .unwrap();
    assert_eq!(taken.recorded, vec![EventKind::SeatsReserved]);
    new.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_superseded_writer_on_sqlite_sees_the_log_moved_on() {
    for ask in [Stale::EventCreatedSince, Stale::ReservationMadeSince] {
        let dir = tempfile::tempdir().unwrap();
        let journal = gate(&dir);
        a_superseded_writer_answers_nothing_from_the_past(journal.clone(), journal, ask).await;
    }
}

/// The race the cluster test met: a node whose writer another node fenced, with no append of
/// its own since to tell it so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_superseded_writer_on_kafka_answers_nothing_from_the_past() {
    use frontrow_journal::{KafkaJournal, KafkaSettings};
    let brokers = std::env::var("FRONTROW_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    for ask in [Stale::EventCreatedSince, Stale::ReservationMadeSince] {
        let settings = KafkaSettings {
            topic: format!("frontrow.test.superseded.{}", uuid::Uuid::new_v4().simple()),
            ..KafkaSettings::new(brokers.clone(), 1)
        };
        let connect = || async {
            let journal = KafkaJournal::connect(settings.clone())
                .await
                .expect("Kafka is reachable");
            Arc::new(journal) as Arc<dyn Journal>
        };
        a_superseded_writer_answers_nothing_from_the_past(connect().await, connect().await, ask).await;
    }
}

/// A copy of the journal in `dir` whose snapshot is unreadable, so a writer started on it
/// replays the whole log. The journal is in WAL mode: its recent pages live in the -wal file.
async fn replay_copy(dir: &tempfile::TempDir) -> (tempfile::TempDir, Arc<Gate>) {
    let copy = tempfile::tempdir().unwrap();
    for file in ["j.db", "j.db-wal"] {
        if dir.path().join(file).exists() {
            std::fs::copy(dir.path().join(file), copy.path().join(file)).unwrap();
        }
    }
    let journal = gate(&copy);
    journal.save_snapshot(0, b"not a snapshot".to_vec()).await.unwrap();
    (copy, journal)
}

fn paid(event_id: EventId, held: &Outcome, provider_event_id: &str) -> Request {
    let r = held.reservation.as_ref().unwrap();
    Request::Command {
        event_id,
        command: Command::PaymentSucceeded {
            reservation_id: r.reservation_id,
            payment: Payment {
                provider_event_id: provider_event_id.into(),
                payment_intent: "pi_1".into(),
                amount: r.amount,
            },
        },
        meta: Meta::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_graceful_stop_after_a_failed_append_snapshots_only_what_the_log_has() {
    let dir = tempfile::tempdir().unwrap();
    let (clock, info) = system_clock_event();
    let id = info.event_id;
    let journal = gate(&dir);
    let writers = start(journal.clone(), &clock, WriterConfig::default()).await;
    schedule(&writers, info).await;
    let held = writers.send(reserve(id, "a", &["A-1-1"], "k1")).await.unwrap();
    // The webhook's booking is decided (and applied in memory) but its append fails.
    journal.fail_next.store(true, Ordering::SeqCst);
    let failed = writers.send(paid(id, &held, "evt_1")).await;
    assert!(matches!(failed, Err(CommandError::Unavailable(_))), "{failed:?}");
    // Stopped before any other command made it restore: the stop must not store the booking.
    writers.shutdown().await;

    let writers = start(gate(&dir), &clock, WriterConfig::default()).await;
    let restarted = writers.send(get(id, "a", &held)).await.unwrap().reservation.unwrap();
    let (_copy, replay_journal) = replay_copy(&dir).await;
    let replayer = start(replay_journal, &clock, WriterConfig::default()).await;
    let replayed = replayer.send(get(id, "a", &held)).await.unwrap().reservation.unwrap();
    replayer.shutdown().await;
    assert_eq!(restarted, replayed, "the restarted state is a replay of the log");
    assert_eq!(restarted.status, "held", "the log has no booking");

    // The provider retries the webhook: it is applied now, not answered as a duplicate.
    let retried = writers.send(paid(id, &held, "evt_1")).await.unwrap();
    assert_eq!(retried.recorded, vec![EventKind::SeatsBooked]);
    assert_eq!(retried.reservation.unwrap().status, "booked");
    writers.shutdown().await;
}

/// The group's assignment and a re-acquire after fencing can acquire one partition at the same
/// time. They must end with one writer restored once: two writers of one partition in one
/// process would both append through its one producer (the journal fences other processes, not
/// this one's own writers), the second deciding without the first one's records. The chaos run
/// on a Kafka cluster wrote the same event sequences twice that way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_acquires_of_a_partition_at_once_restore_one_writer() {
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let journal = gate(&dir);
    let writers = Writers::new(journal.clone(), clock.clone(), WriterConfig::default());
    let (a, b) = tokio::join!(writers.acquire(0), writers.acquire(0));
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        (true, true),
        "both say the partition is served"
    );
    assert_eq!(journal.claims.load(Ordering::SeqCst), 1, "one writer was restored");
    assert!(writers.owns(0));
    // And it serves: a reservation on the one writer, read back through it.
    let info = event(clock.as_ref());
    let id = info.event_id;
    schedule(&writers, info).await;
    let held = writers.send(reserve(id, "a", &["A-1-5"], "k1")).await.unwrap();
    let again = writers.send(get(id, "a", &held)).await.unwrap();
    assert_eq!(again.reservation, held.reservation);
}

/// An assigned partition whose acquire fails (the brokers away) is acquired as soon as the
/// journal lets it, without waiting for the next rebalance; a release ends the retries.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_assigned_partition_is_acquired_once_the_journal_lets_it() {
    let dir = tempfile::tempdir().unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let journal = gate(&dir);
    journal.failing_claims.store(2, Ordering::SeqCst);
    let writers = Writers::new(journal.clone(), clock.clone(), WriterConfig::default());
    let assignment = writers.assign(0);
    assert!(writers.acquire_until_served(0, assignment).await);
    assert_eq!(
        journal.claims.load(Ordering::SeqCst),
        3,
        "two failed claims, then the one that served"
    );
    assert!(writers.owns(0));

    // Released while the journal still refuses: the retries stop and nothing is served.
    writers.release(0).await;
    journal.failing_claims.store(usize::MAX, Ordering::SeqCst);
    let assignment = writers.assign(0);
    let retrying = {
        let writers = writers.clone();
        tokio::spawn(async move { writers.acquire_until_served(0, assignment).await })
    };
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    writers.release(0).await;
    assert!(!retrying.await.unwrap(), "a released assignment is not served");
    assert!(!writers.owns(0));
}

/// The group's lease on a partition lapses (its coordinator went away, or the process was
/// paused) without the group giving the partition to anyone else: the writer serves on, and
/// an assignment back to this process keeps it without claiming or restoring again. On a
/// lapsed lease a failed append stops the writer rather than claiming the partition back from
/// whoever the group may have given it to; a later assignment claims and restores as usual.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lapsed_lease_serves_on_until_the_group_decides() {
    let dir = tempfile::tempdir().unwrap();
    let (journal, writers, id) = scheduled(&dir, WriterConfig::default()).await;
    let claims = || journal.claims.load(Ordering::SeqCst);
    assert_eq!(claims(), 1);

    writers.lapse(0);
    assert!(writers.is_lapsed(0));
    assert_eq!(
        writers.readiness(),
        Ok(1),
        "a node serving on a lapsed lease stays ready"
    );
    let held = writers.send(reserve(id, "a", &["A-1-1"], "k1")).await.unwrap();
    assert_eq!(held.recorded, vec![EventKind::SeatsReserved]);

    // Given back: the same writer goes on, with what it decided meanwhile.
    let assignment = writers.assign(0);
    assert!(writers.acquire_until_served(0, assignment).await);
    assert!(!writers.is_lapsed(0));
    assert_eq!(claims(), 1, "no claim, no restore");
    let again = writers.send(get(id, "a", &held)).await.unwrap();
    assert_eq!(again.reservation, held.reservation);

    // Lapsed again, and an append fails: the writer stops without claiming.
    writers.lapse(0);
    journal.fail_next.store(true, Ordering::SeqCst);
    let failed = writers.send(reserve(id, "b", &["A-1-2"], "k2")).await;
    assert!(matches!(failed, Err(CommandError::Unavailable(_))), "{failed:?}");
    let stopped = writers.send(reserve(id, "b", &["A-1-2"], "k2")).await;
    assert!(matches!(stopped, Err(CommandError::NotOwner(0))), "{stopped:?}");
    // Its task ends right after that answer.
    let serving = || async { (writers.owns(0), writers.is_lapsed(0)) };
    let stopped = |state: &(bool, bool)| (*state == (false, false)).then_some(());
    testsuite::wait_until(SECS_10, "the lapsed writer stops", serving, stopped).await;
    // Nothing assigned and nothing lapsed: not ready, and no request brings the writer back.
    assert!(writers.readiness().is_err());
    let refused = writers.send(get(id, "a", &held)).await;
    assert!(matches!(refused, Err(CommandError::NotOwner(0))), "{refused:?}");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    assert_eq!(claims(), 1, "a lapsed writer never claims again");

    // Assigned once more: claimed and restored from the log, which has the first hold only.
    let assignment = writers.assign(0);
    assert!(writers.acquire_until_served(0, assignment).await);
    assert_eq!(claims(), 2);
    let restored = writers.send(get(id, "a", &held)).await.unwrap();
    assert_eq!(restored.reservation, held.reservation);
    let taken = writers.send(reserve(id, "b", &["A-1-2"], "k2")).await.unwrap();
    assert_eq!(taken.recorded, vec![EventKind::SeatsReserved]);

    // A release ends a lapsed writer too.
    writers.lapse(0);
    writers.release(0).await;
    assert!(!writers.owns(0) && !writers.is_lapsed(0));
}
