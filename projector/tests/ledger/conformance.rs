//! The one test suite every [`Ledger`] implementation passes.
//!
//! An implementation provides a [`Harness`] that opens a fresh, empty ledger per name; the
//! [`ledger_conformance!`] macro generates one `#[tokio::test]` per case.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use frontrow_command::domain::{ReservationStatus, SeatState};
use frontrow_journal::{Journal, SqliteJournal};
use frontrow_projector::rows::{Ty, Val};
use frontrow_projector::{
    Batch, BookingCursor, BookingStatus, CustomerBooking, Ledger, LedgerError, LedgerReads, Lookup, Projector,
    ProjectorError, Read, booking_cursor,
};
use frontrow_schema::{CustomerId, EventId, ReleaseReason, ReservationId};

use crate::generate::Generator;

/// Opens ledgers for the suite.
#[async_trait]
pub trait Harness: Send + Sync {
    /// A new, empty ledger of this implementation, unique to `name`.
    async fn ledger(&self, name: &str) -> Arc<dyn Ledger>;
}

/// A journal in a temporary directory, filled by the domain.
pub async fn generated(partitions: u32, events: usize, commands: usize, seed: u64) -> (tempfile::TempDir, Generator) {
    let dir = tempfile::tempdir().unwrap();
    let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&dir.path().join("journal.db"), partitions).unwrap());
    let mut g = Generator::new(journal, events, 4, 12, seed).await;
    g.step(commands).await;
    (dir, g)
}

/// Projects all of `journal` into `ledger`, `batch` records at a time.
async fn catch_up(journal: &Arc<dyn Journal>, ledger: &Arc<dyn Ledger>, batch: usize) {
    Projector::new(journal.clone(), ledger.clone(), batch)
        .catch_up()
        .await
        .unwrap();
}

async fn ends(journal: &dyn Journal) -> BTreeMap<u32, u64> {
    let mut ends = BTreeMap::new();
    for p in 0..journal.partitions() {
        let end = journal.end_offset(p).await.unwrap();
        if end > 0 {
            ends.insert(p, end);
        }
    }
    ends
}

/// The projected ledger says what the domain says: seat states, revenue, bookings.
pub async fn projects_a_generated_log(h: &dyn Harness) {
    let (_dir, g) = generated(3, 5, 1500, 1).await;
    let ledger = h.ledger("projects_a_generated_log").await;
    let mut projector = Projector::new(g.journal.clone(), ledger.clone(), 97);
    assert_eq!(projector.catch_up().await.unwrap(), g.records);
    assert_eq!(ledger.positions().await.unwrap(), ends(g.journal.as_ref()).await);

    // The generated log has organizer holds in it (seeded, so always the same log).
    assert!(g.states().any(|s| s.counts.withheld > 0), "no seat is withheld");
    let mut kinds = BTreeMap::<&str, usize>::new();
    let mut zone_booked = 0;
    for state in g.states() {
        let sales = ledger
            .event_sales(state.event_id())
            .await
            .unwrap()
            .expect("event in the ledger");
        let t = &sales.total;
        assert_eq!(t.seats as usize, state.seats.len());
        assert_eq!(t.available_now as u32, state.counts.available);
        assert_eq!(t.held_now as u32, state.counts.held);
        assert_eq!(t.booked_now as u32, state.counts.booked);
        assert_eq!(t.withheld_now as u32, state.counts.withheld);
        let revenue: i64 = state
            .reservations
            .values()
            .filter(|r| r.status == ReservationStatus::Booked)
            .map(|r| r.amount.amount)
            .sum();
        assert_eq!(t.revenue, revenue, "net revenue of {}", state.event_id());
        for line in &sales.lines {
            assert_eq!(line.revenue, line.booked_value, "revenue of section {:?}", line.section);
        }
        // The standing zone's places are counted like seats, in a line of their own.
        let zone = state.layout.zone_span(3).expect("FLOOR is a standing zone");
        let places = &state.seats[zone.start as usize..(zone.start + u32::from(zone.seats)) as usize];
        let floor: Vec<_> = sales
            .lines
            .iter()
            .filter(|l| l.section.as_deref() == Some("FLOOR"))
            .collect();
        assert_eq!(floor.iter().map(|l| l.seats).sum::<i64>(), 30);
        let booked_now = places.iter().filter(|s| matches!(s, SeatState::Booked)).count() as i64;
        assert_eq!(floor.iter().map(|l| l.booked_now).sum::<i64>(), booked_now);
        assert!(floor.iter().all(|l| l.tier.as_deref() == Some("GA")), "{floor:?}");
        zone_booked += booked_now;
        for r in state.reservations.values() {
            let k = match r.status {
                ReservationStatus::Held => "held",
                ReservationStatus::Booked => "booked",
                ReservationStatus::Released(ReleaseReason::Expired) => "expired",
                ReservationStatus::Released(ReleaseReason::Refunded) => "refunded",
                ReservationStatus::Released(_) => "released",
            };
            *kinds.entry(k).or_default() += 1;
        }
        // Every seat's state, and one seat's whole history.
        for (i, s) in state.seats.iter().enumerate().step_by(7) {
            let seat = state.layout.seat_at(i as u32);
            let h = ledger.seat_history(state.event_id(), &seat).await.unwrap().unwrap();
            let want = match s {
                SeatState::Available => "available",
                SeatState::Held => "held",
                SeatState::Booked => "booked",
                SeatState::Withheld => "withheld",
            };
            assert_eq!(h.state, want, "{seat}");
            if let SeatState::Held | SeatState::Booked = s {
                let r = state
                    .holder_of(i as u32)
                    .expect("a held or booked seat has a live reservation");
                assert_eq!(h.history.last().unwrap().reservation_id, Some(r.as_uuid()));
            }
            assert!(h.history.windows(2).all(|w| w[0].sequence < w[1].sequence));
        }
    }
    assert!(zone_booked > 0, "the generated log books standing places");
    // The generated log exercises every outcome.
    for k in ["held", "booked", "expired", "refunded", "released"] {
        assert!(
            kinds.get(k).copied().unwrap_or(0) > 0,
            "no {k} reservation in {kinds:?}"
        );
    }
    // A customer's bookings are the domain's booked and cancelled reservations.
    let fan = CustomerId::parse("fan3").unwrap();
    let (mine, _) = ledger.customer_bookings_and_counts(&fan, None, 10_000).await.unwrap();
    let want = g
        .states()
        .flat_map(|s| s.reservations.values())
        .filter(|r| r.customer == fan && r.payment.is_some())
        .count();
    assert_eq!(mine.len(), want);
    assert!(mine.windows(2).all(|w| w[0].booked_at >= w[1].booked_at));
}

/// A customer's bookings read a page at a time, each page from just after the last one ended,
/// are all of them, in the same order, whatever the page size: none twice, none left out.
pub async fn bookings_page_through_without_gaps(h: &dyn Harness) {
    let (_dir, g) = generated(2, 4, 1200, 2).await;
    let ledger = h.ledger("bookings_page_through_without_gaps").await;
    catch_up(&g.journal, &ledger, 64).await;
    let (fan, want) = g.busiest_customer();
    assert!(want >= 4, "the busiest customer has {want} bookings");
    let (all, counts) = ledger.customer_bookings_and_counts(&fan, None, 10_000).await.unwrap();
    assert_eq!(all.len(), want);
    let order = |b: &CustomerBooking| (std::cmp::Reverse(b.booked_at), b.reservation_id);
    assert!(
        all.windows(2).all(|w| order(&w[0]) < order(&w[1])),
        "newest first, then by id"
    );
    let ids = |bookings: &[CustomerBooking]| bookings.iter().map(|b| b.reservation_id).collect::<Vec<_>>();
    for limit in [1, 2, 3, want - 1, want, want + 1] {
        let (mut read, mut cursor) = (Vec::new(), None);
        loop {
            let (page, _) = ledger.customer_bookings_and_counts(&fan, cursor, limit).await.unwrap();
            assert!(page.len() <= limit);
            read.extend(page.iter().cloned());
            match page.last() {
                Some(last) if page.len() == limit => cursor = Some(booking_cursor(last)),
                _ => break,
            }
        }
        assert_eq!(ids(&read), ids(&all), "pages of {limit}");
    }
    // The cursor as a client carries it reads back as itself.
    let cursor = booking_cursor(&all[0]);
    assert_eq!(cursor.to_string().parse::<BookingCursor>(), Ok(cursor));
    let cancelled = all.iter().filter(|b| b.status == BookingStatus::Cancelled).count() as i64;
    assert_eq!(counts, (want as i64 - cancelled, cancelled));
    // A short page comes with the counts of all the bookings.
    let (page, together) = ledger.customer_bookings_and_counts(&fan, None, 3).await.unwrap();
    assert_eq!((ids(&page), together), (ids(&all[..3]), counts));
}

/// Money reconciles: every transaction balances; per event, revenue is bookings minus
/// cancelled bookings; refunds payable are the refunds; each booking has exactly one payment.
pub async fn money_reconciles(h: &dyn Harness) {
    let (_dir, g) = generated(2, 4, 1200, 2).await;
    let ledger = h.ledger("money_reconciles").await;
    catch_up(&g.journal, &ledger, 64).await;
    let audit = ledger.audit().await.unwrap();
    assert_eq!(audit.len(), 4);
    let mut refunds = 0;
    for a in &audit {
        assert_eq!(a.revenue, a.bookings - a.cancelled, "{a:?}");
        assert_eq!(a.refunds_payable, a.refunds, "{a:?}");
        assert_eq!(a.balance, 0, "{a:?}");
        assert_eq!(a.unbalanced_transactions, 0, "{a:?}");
        assert_eq!(a.bookings_without_one_payment, 0, "{a:?}");
        let state = g.states().find(|s| s.event_id().as_uuid() == a.event_id).unwrap();
        let paid: i64 = state
            .reservations
            .values()
            .filter_map(|r| r.payment.as_ref())
            .map(|p| p.amount.amount)
            .sum();
        assert_eq!(a.bookings, paid, "bookings of {}", a.event_id);
        let refunded: i64 = state
            .reservations
            .values()
            .flat_map(|r| &r.refunds)
            .map(|(p, _)| p.amount.amount)
            .sum();
        assert_eq!(a.refunds, refunded);
        refunds += a.refunds;
    }
    assert!(refunds > 0, "the log has refunds");
}

/// A projector killed in the middle of a batch and restarted leaves the ledger equal, row for
/// row, to a fresh replay; so do different batch sizes.
pub async fn crash_mid_batch_then_restart_equals_fresh_replay(h: &dyn Harness) {
    let (_dir, g) = generated(2, 3, 800, 3).await;
    let crashed = h.ledger("crash_restarted").await;
    {
        let mut p = Projector::new(g.journal.clone(), crashed.clone(), 50);
        for _ in 0..3 {
            let read = g
                .journal
                .read(0, crashed.positions().await.unwrap().get(&0).copied().unwrap_or(0), 50);
            let read = read.await.unwrap();
            let from = crashed.positions().await.unwrap().get(&0).copied().unwrap_or(0);
            p.apply(0, from, &read, false).await.unwrap();
        }
        let from = crashed.positions().await.unwrap()[&0];
        let read = g.journal.read(0, from, 50).await.unwrap();
        let before = crashed.dump().await.unwrap();
        let err = p.apply(0, from, &read, true).await.unwrap_err();
        assert!(
            matches!(err, ProjectorError::Ledger(LedgerError::InjectedCrash)),
            "{err}"
        );
        assert_eq!(
            crashed.dump().await.unwrap(),
            before,
            "nothing of the abandoned batch is visible"
        );
        // The process dies here; its projector and caches with it.
    }
    // More deaths at arbitrary points: the projector's future is dropped wherever it is,
    // mid-transaction included, and a new one starts from what the ledger holds.
    let want_positions = ends(g.journal.as_ref()).await;
    for attempt in 0u64..200 {
        if crashed.positions().await.unwrap() == want_positions {
            break;
        }
        let mut p = Projector::new(g.journal.clone(), crashed.clone(), 50);
        let _ = tokio::time::timeout(Duration::from_millis(1 + attempt % 7), p.catch_up()).await;
    }
    catch_up(&g.journal, &crashed, 50).await;

    let fresh = h.ledger("crash_fresh").await;
    catch_up(&g.journal, &fresh, 1000).await;
    let small = h.ledger("crash_small_batches").await;
    catch_up(&g.journal, &small, 7).await;
    // Reads of 1000 records cut into ledger batches of about 100 rows: an event scheduled
    // (78 seats) is about one batch of its own.
    let cut = h.ledger("crash_cut_batches").await;
    Projector::new(g.journal.clone(), cut.clone(), 1000)
        .with_rows_per_batch(100)
        .catch_up()
        .await
        .unwrap();
    let want = fresh.dump().await.unwrap();
    assert!(want["money_entries"].len() > 10 && want["seat_history"].len() > 100);
    assert_eq!(crashed.dump().await.unwrap(), want);
    assert_eq!(small.dump().await.unwrap(), want);
    assert_eq!(cut.dump().await.unwrap(), want);
    assert_eq!(cut.positions().await.unwrap(), want_positions);
}

/// A batch that does not start where the last one ended is refused and writes nothing.
pub async fn refuses_out_of_order_batches(h: &dyn Harness) {
    let (_dir, g) = generated(1, 2, 200, 4).await;
    let ledger = h.ledger("refuses_out_of_order_batches").await;
    let mut p = Projector::new(g.journal.clone(), ledger.clone(), 40);
    let first = g.journal.read(0, 0, 40).await.unwrap();
    let at = p.apply(0, 0, &first, false).await.unwrap();
    let before = ledger.dump().await.unwrap();
    // Replaying the same batch, skipping ahead, or going back: all refused.
    for from in [0, at + 1, at - 1] {
        let read = g.journal.read(0, from, 40).await.unwrap();
        let err = p.apply(0, from, &read, false).await.unwrap_err();
        assert!(
            matches!(err, ProjectorError::Ledger(LedgerError::OutOfOrder { stored, batch_from, .. }) if stored == at && batch_from == from),
            "{err}"
        );
    }
    let empty = Batch {
        partition: 0,
        from: at + 5,
        to: at + 6,
        ops: vec![],
        crash_before_commit: false,
    };
    assert!(matches!(
        ledger.write(&empty).await,
        Err(LedgerError::OutOfOrder { .. })
    ));
    assert_eq!(ledger.dump().await.unwrap(), before);
    // The right batch is accepted.
    let next = g.journal.read(0, at, 40).await.unwrap();
    p.apply(0, at, &next, false).await.unwrap();
}

/// Text, JSON and times are stored as written, whatever characters the text holds (tabs,
/// newlines, backslashes, quotes, the escapes of PostgreSQL's `COPY` format, non-ASCII).
pub async fn awkward_text_is_stored_as_written(h: &dyn Harness) {
    use frontrow_projector::rows::{EventRow, insert};
    let ledger = h.ledger("awkward_text_is_stored_as_written").await;
    let awkward = "tab\there, new\nline, cr\r, back\\slash \\N \\t, 'quote' \"dq\", ümlaut, 🎫, ,comma";
    let seat_map = serde_json::json!({"note": awkward, "n": [1, 2.5, null]}).to_string();
    let time = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().to_utc();
    let row = EventRow {
        event_id: uuid::Uuid::from_u128(7),
        organizer: "\\".into(),
        title: awkward.into(),
        artist: String::new(),
        venue: "\\N".into(),
        city: "line\n".into(),
        starts_at: time("2027-06-01T19:30:00.123456Z"),
        onsale_at: time("1999-12-31T23:59:59.5Z"),
        hold_minutes: -3,
        max_seats_per_order: 10,
        currency: "EUR".into(),
        seat_map: seat_map.clone(),
        scheduled_at: time("2026-01-01T00:00:00Z"),
        seat_map_at: time("2026-01-01T00:00:00.000001Z"),
    };
    let batch = Batch {
        partition: 0,
        from: 0,
        to: 1,
        ops: vec![insert([row.clone()])],
        crash_before_commit: false,
    };
    ledger.write(&batch).await.unwrap();
    // Cast so that both dialects answer the types asked for (PostgreSQL's columns are `int4`
    // and `jsonb`).
    let sql = "SELECT organizer, title, artist, venue, city, starts_at, onsale_at, \
               CAST(hold_minutes AS BIGINT), CAST(max_seats_per_order AS BIGINT), CAST(seat_map AS TEXT), \
               seat_map_at FROM events";
    let types = [
        Ty::Text,
        Ty::Text,
        Ty::Text,
        Ty::Text,
        Ty::Text,
        Ty::Time,
        Ty::Time,
        Ty::Int,
        Ty::Int,
        Ty::Text,
        Ty::Time,
    ];
    let got = ledger.query(sql, vec![], &types).await.unwrap();
    assert_eq!(got.len(), 1);
    let got = &got[0];
    let want = [
        Val::text("\\"),
        Val::text(awkward),
        Val::text(""),
        Val::text("\\N"),
        Val::text("line\n"),
        Val::Time(row.starts_at),
        Val::Time(row.onsale_at),
        Val::Int(-3),
        Val::Int(10),
    ];
    assert_eq!(got[..9], want);
    let stored: serde_json::Value = serde_json::from_str(got[9].as_str().unwrap()).unwrap();
    assert_eq!(stored, serde_json::from_str::<serde_json::Value>(&seat_map).unwrap());
    assert_eq!(got[10], Val::Time(row.seat_map_at));
}

/// A ledger whose first positions read answers what another projector has since moved past:
/// what a new projector sees when a cancelled one's commit lands just after it has looked.
struct MovedUnderneath {
    inner: Arc<dyn Ledger>,
    stale: std::sync::Mutex<Option<BTreeMap<u32, u64>>>,
}

#[async_trait]
impl Ledger for MovedUnderneath {
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn generation(&self) -> String {
        self.inner.generation()
    }
    async fn positions(&self) -> Result<BTreeMap<u32, u64>, LedgerError> {
        let stale = self.stale.lock().unwrap().take();
        match stale {
            Some(stale) => Ok(stale),
            None => self.inner.positions().await,
        }
    }
    async fn lookup(&self, events: &[EventId], reservations: &[ReservationId]) -> Result<Lookup, LedgerError> {
        self.inner.lookup(events, reservations).await
    }
    async fn write(&self, batch: &Batch) -> Result<(), LedgerError> {
        self.inner.write(batch).await
    }
    async fn query(&self, sql: &str, params: Vec<Val>, types: &[Ty]) -> Result<Vec<Vec<Val>>, LedgerError> {
        self.inner.query(sql, params, types).await
    }
    async fn query_together(&self, reads: Vec<Read>) -> Result<Vec<Vec<Vec<Val>>>, LedgerError> {
        self.inner.query_together(reads).await
    }
    async fn dump(&self) -> Result<BTreeMap<String, Vec<String>>, LedgerError> {
        self.inner.dump().await
    }
    async fn next_generation(&self) -> Result<Arc<dyn Ledger>, LedgerError> {
        self.inner.next_generation().await
    }
    async fn promote(&self, generation: &str) -> Result<(), LedgerError> {
        self.inner.promote(generation).await
    }
}

/// A catch-up that finds the ledger ahead of where it started resumes from the ledger's
/// position instead of failing, and ends equal to a fresh replay.
pub async fn catch_up_resumes_where_the_ledger_moved(h: &dyn Harness) {
    let (_dir, g) = generated(1, 2, 300, 6).await;
    let ledger = h.ledger("catch_up_moved").await;
    let mut first = Projector::new(g.journal.clone(), ledger.clone(), 40);
    let read = g.journal.read(0, 0, 40).await.unwrap();
    first.apply(0, 0, &read, false).await.unwrap();
    let stale = ledger.positions().await.unwrap();
    let read = g.journal.read(0, stale[&0], 40).await.unwrap();
    let moved = first.apply(0, stale[&0], &read, false).await.unwrap();
    assert!(moved > stale[&0]);

    let underneath: Arc<dyn Ledger> = Arc::new(MovedUnderneath {
        inner: ledger.clone(),
        stale: std::sync::Mutex::new(Some(stale)),
    });
    let applied = Projector::new(g.journal.clone(), underneath, 40)
        .catch_up()
        .await
        .expect("the catch-up resumes from the ledger's position");
    assert_eq!(
        applied,
        g.records - moved,
        "the records past the moved position, once each"
    );
    let fresh = h.ledger("catch_up_moved_fresh").await;
    catch_up(&g.journal, &fresh, 1000).await;
    assert_eq!(ledger.dump().await.unwrap(), fresh.dump().await.unwrap());
}

/// A rebuild while the fans keep writing and the live projector keeps projecting: once the
/// live projector has caught up, the switched ledger equals a fresh replay of everything.
pub async fn rebuild_while_writes_continue(h: &dyn Harness) {
    let (_dir, mut g) = generated(3, 4, 600, 5).await;
    let serving = h.ledger("rebuild_serving").await;
    let journal = g.journal.clone();
    let live = frontrow_projector::spawn(journal.clone(), serving.clone(), 64, Duration::ZERO);
    let (promoted_tx, promoted) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn(async move {
        // Fans keep buying while the rebuild replays...
        for _ in 0..10 {
            g.step(40).await;
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        // ...and after it is promoted.
        let _ = promoted.await;
        for _ in 0..5 {
            g.step(40).await;
        }
        g
    });
    let sales_before = serving.event_sales(first_event(serving.as_ref()).await).await.unwrap();
    assert!(sales_before.is_some(), "the serving ledger answers during the rebuild");
    let before = serving.generation();
    let report = frontrow_projector::rebuild(journal.clone(), serving.as_ref(), 50)
        .await
        .unwrap();
    assert!(report.records > 0);
    assert_ne!(report.generation, before);
    promoted_tx.send(()).unwrap();
    let g = writer.await.unwrap();
    let want = ends(journal.as_ref()).await;
    let positions = || async { serving.positions().await.unwrap() };
    let message = "the live projector catches up after the rebuild";
    frontrow_schema::testsuite::wait_until(Duration::from_secs(30), message, positions, |p| {
        (*p == want).then_some(())
    })
    .await;
    live.stop().await.unwrap();

    let fresh = h.ledger("rebuild_fresh").await;
    catch_up(&journal, &fresh, 500).await;
    assert_eq!(serving.dump().await.unwrap(), fresh.dump().await.unwrap());
    assert_eq!(fresh.audit().await.unwrap().len(), g.states().count());
}

/// A batch one of whose statements breaks a constraint fails as a whole: nothing of it is
/// stored, the position stays, and the ledger takes the next good batch (on every connection
/// it pools).
pub async fn a_batch_that_breaks_a_constraint_leaves_nothing(h: &dyn Harness) {
    use frontrow_projector::rows::{EventRow, insert};
    let ledger = h.ledger("a_batch_that_breaks_a_constraint_leaves_nothing").await;
    let time = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
    let event = |id: u128, title: &str| EventRow {
        event_id: uuid::Uuid::from_u128(id),
        organizer: "acme".into(),
        title: title.into(),
        artist: "a".into(),
        venue: "v".into(),
        city: "c".into(),
        starts_at: time,
        onsale_at: time,
        hold_minutes: 15,
        max_seats_per_order: 4,
        currency: "EUR".into(),
        seat_map: "{}".into(),
        scheduled_at: time,
        seat_map_at: time,
    };
    let batch = |from: u64, ops| Batch {
        partition: 0,
        from,
        to: from + 1,
        ops,
        crash_before_commit: false,
    };
    ledger
        .write(&batch(0, vec![insert([event(1, "first")])]))
        .await
        .unwrap();
    let before = ledger.dump().await.unwrap();
    for attempt in 0..6 {
        // A new event, then the first one again: the second insert breaks the primary key.
        let ops = vec![insert([event(2 + attempt, "new")]), insert([event(1, "again")])];
        let err = ledger.write(&batch(1, ops)).await.unwrap_err();
        assert!(!matches!(err, LedgerError::OutOfOrder { .. }), "{err}");
        assert_eq!(
            ledger.dump().await.unwrap(),
            before,
            "attempt {attempt} left rows behind"
        );
    }
    ledger.write(&batch(1, vec![insert([event(9, "next")])])).await.unwrap();
    assert_eq!(ledger.positions().await.unwrap(), BTreeMap::from([(0, 2)]));
    let titles = ledger
        .query("SELECT title FROM events ORDER BY title", vec![], &[Ty::Text])
        .await
        .unwrap();
    assert_eq!(titles, vec![vec![Val::text("first")], vec![Val::text("next")]]);
}

/// A following projector with a pace: one that is behind reads batch after batch without
/// waiting, the first records after a quiet spell are written at once, and records that arrive
/// soon after a batch that found the end wait for the pace.
pub async fn a_following_projector_paces_its_batches(h: &dyn Harness) {
    const PACE: Duration = Duration::from_secs(3);
    let (_dir, mut g) = generated(1, 2, 400, 9).await;
    let ledger = h.ledger("paced").await;
    let journal = g.journal.clone();
    let positions = || async { ledger.positions().await.unwrap() };
    let reaches = |want: BTreeMap<u32, u64>| move |p: &BTreeMap<u32, u64>| (*p == want).then_some(());
    // Hundreds of records behind, ten a batch: paced, this would take a minute or more.
    let live = frontrow_projector::spawn(journal.clone(), ledger.clone(), 10, PACE);
    let behind = format!("a projector {} records behind catches up without waiting", g.records);
    let want = ends(journal.as_ref()).await;
    frontrow_schema::testsuite::wait_until(PACE * 3, &behind, positions, reaches(want)).await;

    // After a quiet spell longer than the pace, new records are written at once...
    tokio::time::sleep(PACE + Duration::from_millis(500)).await;
    g.step(5).await;
    let want = ends(journal.as_ref()).await;
    let quiet = "the first records after a quiet spell are written at once";
    frontrow_schema::testsuite::wait_until(PACE / 2, quiet, positions, reaches(want.clone())).await;

    // ...and the next ones wait until the pace has passed since that batch began.
    g.step(5).await;
    let later = ends(journal.as_ref()).await;
    assert_ne!(later, want, "the second step appended records");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(positions().await, want, "records right after a batch wait for the pace");
    let paced = "records right after a batch are written once the pace has passed";
    frontrow_schema::testsuite::wait_until(PACE * 3, paced, positions, reaches(later)).await;
    live.stop().await.unwrap();
}

async fn first_event(ledger: &dyn Ledger) -> EventId {
    let audit = || async { ledger.audit().await.unwrap() };
    let first = |a: &Vec<_>| {
        a.first()
            .map(|a: &frontrow_projector::EventAudit| EventId::from_uuid(a.event_id))
    };
    frontrow_schema::testsuite::wait_until(
        Duration::from_secs(4),
        "the live projector writes an event",
        audit,
        first,
    )
    .await
}

/// Sales read while a projector commits batch after batch come from one state of the ledger:
/// in every answer the seats' states agree with their history (seats booked now are the seats
/// booked less those refunded; every seat is in one state), and a customer's bookings agree with
/// their counts, however reads and commits interleave.
/// (Read statement by statement, a commit between the seats' read and the history's paired the
/// states before it with the history after it.)
pub async fn sales_are_read_from_one_state_while_batches_land(h: &dyn Harness) {
    let (_dir, g) = generated(1, 2, 4000, 7).await;
    let ledger = h.ledger("sales_one_state").await;
    let events: Vec<EventId> = g.states().map(|s| s.event_id()).collect();
    let consistent = |sales: &frontrow_projector::EventSales| {
        let t = &sales.total;
        assert_eq!(t.booked_now, t.booked - t.refunded, "{t:?}");
        assert_eq!(
            t.available_now + t.held_now + t.booked_now + t.withheld_now,
            t.seats,
            "{t:?}"
        );
    };
    let writer = {
        let (journal, ledger) = (g.journal.clone(), ledger.clone());
        tokio::spawn(async move { Projector::new(journal, ledger, 5).catch_up().await.unwrap() })
    };
    let (fan, _) = g.busiest_customer();
    let mut answered = 0;
    while !writer.is_finished() {
        for event in &events {
            if let Some(sales) = ledger.event_sales(*event).await.unwrap() {
                consistent(&sales);
                answered += 1;
            }
        }
        let (all, (booked, cancelled)) = ledger.customer_bookings_and_counts(&fan, None, 10_000).await.unwrap();
        assert_eq!(
            all.len() as i64,
            booked + cancelled,
            "{fan}'s bookings and their counts"
        );
    }
    assert_eq!(writer.await.unwrap(), g.records);
    for event in &events {
        consistent(&ledger.event_sales(*event).await.unwrap().expect("event in the ledger"));
    }
    assert!(answered > 10, "only {answered} reads while the batches landed");
}

/// Generates one test per conformance case for a harness expression; attributes given after
/// it (e.g. `#[ignore = "needs postgres"]`) go on every generated test.
#[macro_export]
macro_rules! ledger_conformance {
    ($harness:expr $(, #[$attr:meta])* $(,)?) => {
        frontrow_journal::conformance_tests!([$(#[$attr])*] $harness; {$crate::conformance};
            projects_a_generated_log, money_reconciles, crash_mid_batch_then_restart_equals_fresh_replay,
            refuses_out_of_order_batches, catch_up_resumes_where_the_ledger_moved, rebuild_while_writes_continue,
            awkward_text_is_stored_as_written, a_batch_that_breaks_a_constraint_leaves_nothing,
            a_following_projector_paces_its_batches, bookings_page_through_without_gaps,
            sales_are_read_from_one_state_while_batches_land);
    };
}
