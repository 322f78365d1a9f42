//! The no-orphan-seat rule and "sold out means sold out" over HTTP against the real server
//! (embedded journal): each refusal, the organizer's switch, and waiting rooms that sell a
//! venue to its last seat and tell every fan still waiting.

mod common;

use chrono::Duration;
use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

#[tokio::test]
async fn a_selection_that_strands_a_seat_is_refused_naming_it_and_changes_nothing() {
    let (app, event) = TestApp::spawn_with_event().await;
    assert!(
        !app.event_details(event).await.allow_orphan_seats,
        "the rule is on by default"
    );
    let map = app.availability_json(event, None).await;
    let before = ends(app.journal.as_ref()).await;
    for (seats, stranded) in [
        (vec!["A-1-2", "A-1-3"], vec!["A-1-1"]),
        (vec!["A-1-1", "A-1-3"], vec!["A-1-2"]),
        (vec!["A-1-2", "A-1-9"], vec!["A-1-1", "A-1-10"]),
        (vec!["A-2-1", "A-2-2", "B-1-5"], vec!["B-1-6"]),
    ] {
        let body = problem(app.reserve_seats("alice", event, &seats).await, 409, "orphan-seat").await;
        assert_eq!(body.seats(), stranded, "{seats:?}");
        let detail = &body.detail;
        assert!(stranded.iter().all(|s| detail.contains(s)), "{detail}");
    }
    assert_eq!(ends(app.journal.as_ref()).await, before, "refusals record nothing");
    assert_eq!(app.availability_json(event, None).await["sections"], map["sections"]);
    // The same pair at the row's end strands nothing.
    let res = app.reserve_seats("alice", event, &["A-1-1", "A-1-2"]).await;
    assert_eq!(res.status(), 201);
    app.stop().await;
}

#[tokio::test]
async fn a_selection_that_no_other_choice_of_its_size_can_improve_is_accepted() {
    let (app, event) = TestApp::spawn_with_event().await;
    // Row B-1 (6 seats): three held leaves three, and every pair of three leaves one.
    let res = app.reserve_seats("alice", event, &["B-1-1", "B-1-2", "B-1-3"]).await;
    assert_eq!(res.status(), 201);
    let res = app.reserve_seats("bob", event, &["B-1-4", "B-1-5"]).await;
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    let map = app
        .map_after(event, &app.reserve_seats("carol", event, &["B-1-6"]).await)
        .await;
    assert_eq!(seat_letters(&map)["B-1-6"], 'H', "the last seat sells to a single");
    app.stop().await;
}

#[tokio::test]
async fn an_organizer_can_turn_the_rule_off() {
    let app = TestApp::spawn().await;
    let event = app
        .create_event_changed(Duration::minutes(-1), |b| b["allow_orphan_seats"] = json!(true))
        .await;
    assert!(app.event_details(event).await.allow_orphan_seats);
    let res = app.reserve_seats("alice", event, &["A-1-2", "A-1-3"]).await;
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    let letters = seat_letters(&app.map_after(event, &res).await);
    assert_eq!((letters["A-1-1"], letters["A-1-2"]), ('A', 'H'));
    // A switch that is not a boolean is a bad body, and creates nothing.
    let mut body = app.event_body(Duration::minutes(-1));
    body["allow_orphan_seats"] = json!("yes");
    let before = ends(app.journal.as_ref()).await;
    problem(app.create_event_with(ORGANIZER_KEY, &body).await, 422, "invalid-body").await;
    assert_eq!(ends(app.journal.as_ref()).await, before);
    app.stop().await;
}

// ---------------------------------------------------------------------------------------------
// A waiting room selling a venue to its last seat
// ---------------------------------------------------------------------------------------------

/// Where fans ask for seats in a venue.
#[derive(Debug, Clone)]
enum Area {
    /// Best-available adjacent seats in a seated section.
    Seated(&'static str),
    /// A count of places from a standing zone.
    Standing(&'static str),
}

impl Area {
    /// The reservation body asking for `count` places here.
    fn selection(&self, count: u8) -> Value {
        match self {
            Area::Seated(section) => json!({"best_available": {"section": section, "count": count}}),
            Area::Standing(zone) => json!({"zone": zone, "count": count}),
        }
    }

    /// The refusal when this area cannot take the order.
    fn full(&self) -> &'static [&'static str] {
        match self {
            Area::Seated(_) => &["no-adjacent-seats"],
            Area::Standing(_) => &["zone-sold-out", "not-enough-places"],
        }
    }
}

/// A venue to sell out: its seat map, how many places it has, and its areas in the order a
/// fan tries them.
struct Venue {
    seat_map: Value,
    places: u32,
    areas: Vec<Area>,
}

/// Sections of rows of these lengths: `[("A", &[20, 20, 20])]` is three rows of 20 in `A`.
fn seated(sections: &[(&'static str, &[u16])]) -> Venue {
    let seat_map = json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 4000}],
        "sections": sections.iter().map(|(code, rows)| json!({
            "code": code, "name": format!("Section {code}"),
            "rows": rows.iter().enumerate()
                .map(|(r, seats)| json!({"name": (r + 1).to_string(), "seats": seats, "tier": "STD"}))
                .collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    });
    Venue {
        seat_map,
        places: sections
            .iter()
            .flat_map(|(_, rows)| rows.iter())
            .map(|&n| u32::from(n))
            .sum(),
        areas: sections.iter().map(|(code, _)| Area::Seated(code)).collect(),
    }
}

/// A seated venue of `sections` plus standing zones of these capacities, tried after the seats.
fn mixed(sections: &[(&'static str, &[u16])], zones: &[(&'static str, u32)]) -> Venue {
    let mut venue = seated(sections);
    for &(code, capacity) in zones {
        venue.seat_map["sections"].as_array_mut().unwrap().push(json!({
            "code": code, "name": format!("Standing {code}"),
            "standing": {"capacity": capacity, "tier": "STD"},
        }));
        venue.places += capacity;
        venue.areas.push(Area::Standing(code));
    }
    venue
}

/// What became of the fans of [`sell_out`].
#[derive(Debug, Default, PartialEq, Eq)]
struct Outcome {
    /// Fans who bought.
    bought: u32,
    /// Admitted fans who found no block of the size they wanted and gave their admission back.
    gave_up: u32,
    /// Fans still waiting when the venue sold out, each told "sold out".
    told_sold_out: u32,
}

/// `fans` join a waiting room (up to 4 shopping at once) after the onsale; in turn, each
/// admitted fan asks for `size(rng)` adjacent places in the venue's areas one after the other,
/// pays for the first hold it gets, or leaves when no area has them. Runs until every fan has
/// been let in or told "sold out", and checks the venue sold to its last place.
async fn sell_out(app: &TestApp, venue: &Venue, fans: u32, seed: u64, size: fn(&mut StdRng) -> u8) -> Outcome {
    let event = app
        .create_event_changed(Duration::minutes(10), |body| {
            body["seat_map"] = venue.seat_map.clone();
            body["max_seats_per_order"] = json!(6);
        })
        .await;
    let res = app
        .open_queue(event, json!({"max_shoppers": 4, "admission_secs": 600}))
        .await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    app.clock.advance(Duration::minutes(10));
    let name = |n: u32| format!("fan{n}");
    for n in 1..=fans {
        let res = app.post_as(&name(n), &format!("/events/{event}/queue/join")).await;
        assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    }
    let mut rng = StdRng::seed_from_u64(seed);
    let mut outcome = Outcome::default();
    for n in 1..=fans {
        let who = name(n);
        let status = status_until(app, event, &who, |s| s.status == "admitted" || s.status == "sold_out").await;
        if status.status == "sold_out" {
            outcome.told_sold_out += 1;
            continue;
        }
        let token = status.admission_token.expect("an admitted fan has a token");
        let count = size(&mut rng);
        let mut held = None;
        for area in &venue.areas {
            let res = app
                .client
                .post(app.url(&format!("/events/{event}/reservations")))
                .bearer_auth(app.token(&who))
                .header("idempotency-key", format!("{who}-{area:?}"))
                .header("frontrow-admission", &token)
                .json(&area.selection(count))
                .send()
                .await
                .unwrap();
            if res.status() == 201 {
                held = Some(typed::<ReservationResponse>(res.json().await.unwrap()));
                break;
            }
            let refusal: Problem = typed(res.json().await.unwrap());
            assert!(
                area.full()
                    .iter()
                    .any(|k| refusal.kind == format!("urn:frontrow:problem:{k}")),
                "{area:?}: {refusal:?}"
            );
        }
        match held {
            Some(h) => {
                let (rid, amount) = (&h.reservation.reservation_id, h.reservation.amount.amount);
                let paid = app
                    .webhook(&app.payment_event("payment_intent.succeeded", &format!("evt_{who}"), event, rid, amount))
                    .await;
                assert_eq!(paid.status(), 200);
                outcome.bought += 1;
            }
            None => {
                let res = app.post_as(&who, &format!("/events/{event}/queue/leave")).await;
                assert!(res.status().is_success());
                outcome.gave_up += 1;
            }
        }
    }
    let states = app.replay().await;
    let state = &states[&event];
    assert_eq!(state.counts.booked, venue.places, "sold to the last place");
    let queue = state.queue.as_ref().unwrap();
    assert!(queue.sold_out);
    let told = queue
        .tickets
        .values()
        .filter(|t| t.status == frontrow_command::domain::TicketStatus::SoldOut)
        .count();
    assert_eq!(told as u32, outcome.told_sold_out, "every fan still waiting was told");
    assert!(
        queue.tickets.values().all(|t| !t.status.is_live()),
        "nobody left waiting or shopping"
    );
    outcome
}

/// The reproduction over HTTP: 3 rows of 20 behind a waiting room, fans buying pairs.
/// Before the rule, 27 pairs left a single at each row's end and the rest waited forever.
#[tokio::test]
async fn a_waiting_room_sells_three_rows_of_twenty_to_pairs_and_says_sold_out() {
    let app = TestApp::spawn().await;
    let venue = seated(&[("A", &[20, 20, 20])]);
    let outcome = sell_out(&app, &venue, 45, 1, |_| 2).await;
    assert_eq!(
        outcome,
        Outcome {
            bought: 30,
            gave_up: 0,
            told_sold_out: 15
        }
    );
    app.stop().await;
}

#[tokio::test]
async fn a_waiting_room_sells_a_seated_venue_to_the_last_seat_with_random_order_sizes() {
    let app = TestApp::spawn().await;
    let venue = seated(&[("A", &[20, 20, 20]), ("B", &[15, 16, 9])]);
    let outcome = sell_out(&app, &venue, 250, 0x5EED, |rng| rng.random_range(1..=6)).await;
    assert!(outcome.bought >= venue.places / 6, "{outcome:?}");
    assert!(outcome.told_sold_out > 0, "{outcome:?}");
    app.stop().await;
}

/// The end-to-end case: a waiting room sells a mixed venue (seated sections and a
/// standing floor) to its last place with random order sizes, and every fan still waiting is
/// told "sold out".
#[tokio::test]
async fn a_waiting_room_sells_a_mixed_seated_and_standing_venue_to_the_last_place() {
    let app = TestApp::spawn().await;
    let venue = mixed(&[("A", &[20, 20, 20]), ("B", &[15, 9])], &[("FLOOR", 90)]);
    let outcome = sell_out(&app, &venue, 300, 0xF1002, |rng| rng.random_range(1..=6)).await;
    assert!(outcome.bought >= venue.places / 6, "{outcome:?}");
    assert!(outcome.told_sold_out > 0, "{outcome:?}");
    app.stop().await;
}
