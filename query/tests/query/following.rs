//! The catalog follows the journal: seat states, counts, versions, catching up, waiting.

use std::time::Duration;

use chrono::{DateTime, Utc};
use frontrow_journal::Position;
use frontrow_query::{AvailabilityMap, Catalog, EventFilter, SeatCounts, SeatStatus};
use frontrow_schema::partition::partition_of;
use frontrow_schema::{Event, EventId, ReleaseReason, ReservationId, SeatMapChanged};

use crate::support::*;

/// The counts of a 9-seat map (such as [`small_map`]) with no seat withheld.
fn nine_seats(available: u32, held: u32, booked: u32) -> SeatCounts {
    SeatCounts {
        total: 9,
        available,
        held,
        booked,
        withheld: 0,
    }
}

/// Every section's counts match its letters, and the sections add up to the totals.
fn assert_consistent(map: &AvailabilityMap) {
    let mut sum = SeatCounts::default();
    for section in &map.sections {
        let letters: String = section.rows.iter().map(|r| r.seats.as_str()).collect();
        let count = |c| letters.chars().filter(|&l| l == c).count() as u32;
        assert_eq!(
            (count('A'), count('H'), count('B')),
            (section.available, section.held, section.booked),
            "section {}",
            section.code
        );
        assert_eq!(
            letters.len(),
            (section.available + section.held + section.booked) as usize
        );
        sum.total += letters.len() as u32;
        sum.available += section.available;
        sum.held += section.held;
        sum.booked += section.booked;
    }
    assert_eq!(sum, map.seats);
}

#[tokio::test]
async fn the_map_follows_schedule_reserve_book_and_release() {
    let log = TestLog::new();
    let event = EventId::new();
    // Written before the node starts: it catches up by replaying them.
    log.append(event, scheduled(event, "Night", at(1), small_map())).await;
    let (r1, r2) = (ReservationId::new(), ReservationId::new());
    log.append(event, reserved(r1, &["A-1-1", "A-1-2", "B-1-2"])).await;

    let catalog = log.catalog().await;
    let last = log.append(event, reserved(r2, &["A-2-3"])).await;
    assert!(catalog.wait_for(last, WAIT).await);
    let status = |seat: &str| catalog.seat_status(&event, &seat.parse().unwrap());
    assert_eq!(status("A-1-1"), Some(SeatStatus::Held));
    assert_eq!(status("A-1-3"), Some(SeatStatus::Available));
    assert_eq!(status("Z-1-1"), None);
    assert_eq!(catalog.counts(&event), Some(nine_seats(5, 4, 0)));

    log.append(event, booked(r1, &["A-1-1", "A-1-2", "B-1-2"])).await;
    let last = log
        .append(event, released(r2, &["A-2-3"], ReleaseReason::Expired))
        .await;
    assert!(catalog.wait_for(last, WAIT).await);
    let map = catalog.availability(&event).unwrap();
    assert_eq!(map.seats, nine_seats(6, 0, 3));
    assert_eq!(map.position, last.to_string());
    let rows: Vec<&str> = map
        .sections
        .iter()
        .flat_map(|s| s.rows.iter().map(|r| r.seats.as_str()))
        .collect();
    assert_eq!(rows, ["BBAA", "AAA", "AB"]);
    assert_eq!((map.sections[0].booked, map.sections[1].booked), (2, 1));
    assert_consistent(&map);

    // A refund releases booked seats back to the next fan.
    let last = log
        .append(event, released(r1, &["B-1-2"], ReleaseReason::Refunded))
        .await;
    assert!(catalog.wait_for(last, WAIT).await);
    assert_eq!(status("B-1-2"), Some(SeatStatus::Available));
    assert_consistent(&catalog.availability(&event).unwrap());
}

#[tokio::test]
async fn counts_stay_consistent_across_many_changes_and_a_new_seat_map() {
    let log = TestLog::new();
    let catalog = log.catalog().await;
    let event = EventId::new();
    log.append(event, scheduled(event, "Big", at(2), stadium(3, 4, 10)))
        .await;
    let mut last = None;
    for i in 1..=10u32 {
        let r = ReservationId::new();
        let seats: Vec<String> = (1..=i % 4 + 1)
            .map(|n| format!("S{}-R{}-{}", i % 3 + 1, i % 4 + 1, n + i % 5))
            .collect();
        let seats: Vec<&str> = seats.iter().map(String::as_str).collect();
        log.append(event, reserved(r, &seats)).await;
        let fact = if i % 2 == 0 {
            booked(r, &seats)
        } else {
            released(r, &seats, ReleaseReason::Released)
        };
        if i % 3 != 0 {
            last = Some(log.append(event, fact).await);
        }
    }
    assert!(catalog.wait_for(last.unwrap(), WAIT).await);
    let map = catalog.availability(&event).unwrap();
    assert_eq!(map.seats.total, 120);
    assert!(map.seats.booked > 0 && map.seats.held > 0);
    assert_consistent(&map);

    let last = log
        .append(
            event,
            frontrow_schema::Event::SeatMapChanged(SeatMapChanged {
                seat_map: small_map().into(),
            }),
        )
        .await;
    assert!(catalog.wait_for(last, WAIT).await);
    assert_eq!(catalog.counts(&event), Some(nine_seats(9, 0, 0)));
    assert_eq!(catalog.details(&event).unwrap().seat_map, small_map());
}

#[tokio::test]
async fn the_version_moves_only_when_the_event_changes() {
    let log = TestLog::new();
    let catalog = log.catalog().await;
    let (event, other) = (EventId::new(), EventId::new());
    let created = log.append(event, scheduled(event, "Night", at(1), small_map())).await;
    let r = ReservationId::new();
    let pos = log.append(event, payment_failed(r)).await;
    let other_pos = log.append(other, scheduled(other, "Other", at(3), small_map())).await;
    assert!(catalog.wait_for(pos, WAIT).await && catalog.wait_for(other_pos, WAIT).await);
    assert_eq!(catalog.version(&event), Some(created));
    let held = log.append(event, reserved(r, &["A-1-1"])).await;
    assert!(catalog.wait_for(held, WAIT).await);
    assert_eq!(catalog.version(&event), Some(held));
    assert_eq!(catalog.version(&other), Some(other_pos));
}

#[tokio::test]
async fn undecodable_and_orphan_records_are_skipped() {
    let log = TestLog::new();
    let event = EventId::new();
    let partition = partition_of(&event, PARTITIONS);
    log.append_raw(partition, b"junk".to_vec(), b"{not json".to_vec()).await;
    // A fact about an event that was never scheduled.
    log.append(EventId::new(), reserved(ReservationId::new(), &["A-1-1"]))
        .await;
    log.append(event, scheduled(event, "Night", at(1), small_map())).await;
    let last = log
        .append(event, reserved(ReservationId::new(), &["A-1-1", "Q-1-1"]))
        .await;
    let catalog = log.catalog().await;
    assert!(catalog.wait_for(last, WAIT).await);
    assert_eq!(catalog.counts(&event), Some(nine_seats(8, 1, 0)));
    assert_eq!(catalog.list(&EventFilter::default(), None, 10).total, 1);
}

#[tokio::test]
async fn readiness_waits_for_the_log_as_it_was_at_start() {
    let log = TestLog::new();
    let empty = log.catalog().await;
    assert!(empty.is_caught_up(), "an empty journal is caught up at once");

    let event = EventId::new();
    log.append(event, scheduled(event, "Night", at(1), small_map())).await;
    let mut last = Position {
        partition: 0,
        offset: 0,
    };
    for _ in 0..50 {
        last = log.append(event, reserved(ReservationId::new(), &["A-1-1"])).await;
    }
    let catalog = log.catalog().await;
    assert!(catalog.wait_for(last, WAIT).await);
    assert!(catalog.is_caught_up());
    assert_eq!(catalog.applied(last.partition), Some(last.offset + 1));
    assert!(catalog.is_visible(last));
}

#[tokio::test]
async fn wait_for_sees_a_position_written_after_it_started_and_gives_up_on_one_never_written() {
    let log = TestLog::new();
    let catalog = log.catalog().await;
    let event = EventId::new();
    let next = log.next_position(&event).await;
    assert!(!catalog.is_visible(next));
    let waiting = tokio::spawn({
        let catalog = catalog.clone();
        async move { catalog.wait_for(next, WAIT).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!waiting.is_finished());
    let written = log.append(event, scheduled(event, "Night", at(1), small_map())).await;
    assert_eq!(written, next);
    assert!(waiting.await.unwrap());
    // Once visible, the state it wrote is there.
    assert!(catalog.details(&event).is_some());

    let never = Position {
        partition: next.partition,
        offset: next.offset + 100,
    };
    assert!(!catalog.wait_for(never, Duration::from_millis(100)).await);
    assert!(
        !catalog
            .wait_for(
                Position {
                    partition: 99,
                    offset: 0
                },
                Duration::from_millis(10)
            )
            .await
    );
}

/// Every page of `filter`'s list at `limit` a page, in order, each page's `total` checked.
fn every_page(catalog: &Catalog, filter: &EventFilter, limit: usize, total: usize) -> Vec<EventId> {
    let mut listed = Vec::new();
    let mut cursor = None;
    loop {
        let page = catalog.list(filter, cursor, limit);
        assert_eq!(page.total, total, "limit {limit}");
        assert!(page.events.len() <= limit);
        listed.extend(page.events.iter().map(|e| e.event_id));
        match page.next {
            Some(next) => {
                assert_eq!(page.events.len(), limit, "a page before the last is full");
                // The cursor is what a client passes back as text.
                cursor = Some(next.to_string().parse().unwrap());
            }
            None => return listed,
        }
    }
}

/// An event as the list orders it (start, then id), with its id and city.
type Listed = (DateTime<Utc>, uuid::Uuid, EventId, &'static str);

#[tokio::test]
async fn events_page_through_soonest_first_across_partitions_and_filter() {
    let log = TestLog::new();
    let catalog = log.catalog().await;
    let cities = ["Lyon", "München", "Paris"];
    let mut all = Vec::new();
    let mut last = Vec::new();
    // 23 events on 7 days: many start at one instant, so ties are parted by id.
    for i in 0..23u32 {
        let event = EventId::new();
        let day = 1 + (i * 5) % 7;
        let city = cities[i as usize % 3];
        let mut fact = scheduled(event, &format!("Show {i}"), at(day), small_map());
        if let Event::EventScheduled(e) = &mut fact {
            e.city = city.into();
        }
        last.push(log.append(event, fact).await);
        all.push((at(day), event.as_uuid(), event, city));
    }
    for position in last {
        assert!(catalog.wait_for(position, WAIT).await);
    }
    all.sort();
    let ids =
        |keep: &dyn Fn(&Listed) -> bool| -> Vec<EventId> { all.iter().filter(|e| keep(e)).map(|e| e.2).collect() };

    let everything = ids(&|_| true);
    for limit in [1, 2, 5, 22, 23, 24, 100] {
        assert_eq!(
            every_page(&catalog, &EventFilter::default(), limit, 23),
            everything,
            "limit {limit}"
        );
    }
    // A city in any case, its non-ASCII letters too.
    let munich = ids(&|e| e.3 == "München");
    assert_eq!(munich.len(), 8);
    for city in ["München", "MÜNCHEN", "münchen"] {
        let filter = EventFilter::new(Some(city), None, None);
        assert_eq!(every_page(&catalog, &filter, 3, 8), munich, "{city}");
    }
    assert_eq!(
        every_page(&catalog, &EventFilter::new(Some("Munich"), None, None), 5, 0),
        Vec::<EventId>::new()
    );
    // Bounds are inclusive, and combine with the city.
    let (from, to) = (at(3), at(5));
    let dated = ids(&|e| e.0 >= from && e.0 <= to);
    assert!(!dated.is_empty() && dated.len() < 23);
    let filter = EventFilter::new(None, Some(from), Some(to));
    assert_eq!(every_page(&catalog, &filter, 4, dated.len()), dated);
    let lyon_dated = ids(&|e| e.0 >= from && e.0 <= to && e.3 == "Lyon");
    let filter = EventFilter::new(Some("lyon"), Some(from), Some(to));
    assert_eq!(every_page(&catalog, &filter, 2, lyon_dated.len()), lyon_dated);
    // A cursor past the end is an empty last page.
    let past = frontrow_http::page::Cursor {
        at: at(28),
        id: uuid::Uuid::nil(),
    };
    let page = catalog.list(&EventFilter::default(), Some(past), 10);
    assert_eq!((page.events.len(), page.total, page.next), (0, 23, None));
}
