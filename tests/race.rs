//! A thousand fans race for the same hundred seats: nobody gets a seat twice.

mod common;

use std::collections::{BTreeMap, HashSet};

use chrono::Duration;
use common::*;
use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_clients_racing_for_a_hundred_seats_never_share_one() {
    race(TestApp::spawn().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn the_race_on_the_kafka_journal() {
    race(TestApp::spawn_with(|s| s.journal = kafka_journal()).await).await;
}

async fn race(app: TestApp) {
    let mut body = app.event_body(Duration::minutes(-1));
    body["max_seats_per_order"] = json!(4);
    // Fans pick random seats and every refusal here is `seats-unavailable`: the no-orphan rule,
    // which would refuse some picks, is off (tests/seating_orphans.rs covers it).
    body["allow_orphan_seats"] = json!(true);
    body["seat_map"] = json!({
        "tiers": [{"code": "STD", "name": "Standard", "price": 5000}],
        "sections": [{"code": "A", "name": "Stalls", "rows": [
            {"name": "1", "seats": 25, "tier": "STD"}, {"name": "2", "seats": 25, "tier": "STD"},
            {"name": "3", "seats": 25, "tier": "STD"}, {"name": "4", "seats": 25, "tier": "STD"}]}]
    });
    let written: EventWritten = answer(app.create_event_with(ORGANIZER_KEY, &body).await, 201).await;
    let event = written.event_id;

    let all: Vec<String> = (1..=4)
        .flat_map(|r| (1..=25).map(move |n| format!("A-{r}-{n}")))
        .collect();
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let requests: Vec<(String, Vec<String>)> = (0..1000)
        .map(|i| {
            let n = rng.random_range(1..=4);
            let seats: Vec<String> = all.choose_multiple(&mut rng, n).cloned().collect();
            (format!("fan{i}"), seats)
        })
        .collect();
    // Tokens are minted up front so the race is only the reservations.
    let tokens: Vec<String> = requests.iter().map(|(fan, _)| app.token(fan)).collect();
    let url = app.url(&format!("/events/{event}/reservations"));
    let start = std::sync::Arc::new(tokio::sync::Barrier::new(requests.len()));
    let tasks: Vec<_> = requests
        .into_iter()
        .zip(tokens)
        .map(|((fan, seats), token)| {
            let client = app.client.clone();
            let url = url.clone();
            let start = start.clone();
            tokio::spawn(async move {
                start.wait().await;
                let res = client
                    .post(url)
                    .bearer_auth(token)
                    .header("idempotency-key", format!("race-{fan}"))
                    .json(&json!({ "seats": seats }))
                    .send()
                    .await
                    .unwrap();
                let status = res.status().as_u16();
                (status, res.json::<Value>().await.unwrap())
            })
        })
        .collect();

    let mut won: BTreeMap<String, ReservationId> = BTreeMap::new();
    let mut successes = 0;
    let mut last_position = None;
    for task in tasks {
        let (status, body) = task.await.unwrap();
        match status {
            201 => {
                successes += 1;
                let held: ReservationResponse = typed(body);
                for seat in held.reservation.seats {
                    let previous = won.insert(seat.to_string(), held.reservation.reservation_id);
                    assert!(previous.is_none(), "seat {seat} acknowledged to two reservations");
                }
                let position: frontrow_journal::Position = held.position.as_deref().unwrap().parse().unwrap();
                last_position = last_position.max(Some(position));
            }
            409 => assert_eq!(typed::<Problem>(body).kind, "urn:frontrow:problem:seats-unavailable"),
            // Overload shedding is allowed; it must not have written anything (checked below).
            503 => {}
            other => panic!("unexpected status {other}: {body}"),
        }
    }
    assert!(successes > 0);

    let map = app
        .availability(event, last_position.map(|p| p.to_string()).as_deref())
        .await;
    let letters = seat_letters(&map);
    let held: HashSet<&String> = letters.iter().filter(|(_, c)| **c == 'H').map(|(s, _)| s).collect();
    let acknowledged: HashSet<&String> = won.keys().collect();
    assert_eq!(held, acknowledged, "the map holds exactly the acknowledged seats");
    assert_eq!(map.seats.held as usize, won.len());
    assert_eq!(map.seats.available as usize, 100 - won.len());

    // The log agrees: replaying it gives the same map and exactly `successes` reservations.
    let replayed = app.replay().await;
    let state = &replayed[&event];
    assert_eq!(state.seat_letters(), letters);
    assert_eq!(state.reservations.len(), successes);
    app.stop().await;
}
