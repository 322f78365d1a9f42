//! The Kafka broker goes away mid-load and comes back: requests are refused with 503 while it
//! is gone, nothing acknowledged is lost, and service resumes by itself.
//!
//! The broker stopped and started here is a private one, run by `deploy/local`'s scripts under
//! a temporary directory on ports of its own: a restarted broker spends a while loading its
//! group and transaction coordinators, which would slow down whatever test uses the shared
//! broker next.

mod common;

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::*;
use serde_json::{Value, json};

/// A single-node Kafka of this test's own, stopped (and its data deleted) when dropped.
struct PrivateBroker {
    dir: tempfile::TempDir,
    cache: PathBuf,
    port: u16,
    controller_port: u16,
}

impl PrivateBroker {
    fn start() -> Self {
        // The downloaded jars are shared with deploy/local's services (see deploy/local/lib.sh).
        let cache = match (
            std::env::var_os("FRONTROW_SERVICES_CACHE"),
            std::env::var_os("FRONTROW_SERVICES_DIR"),
        ) {
            (Some(cache), _) => PathBuf::from(cache),
            (None, Some(dir)) => PathBuf::from(dir).join("cache"),
            (None, None) => {
                PathBuf::from(std::env::var_os("HOME").expect("HOME is set")).join(".frontrow-services/cache")
            }
        };
        let broker = Self {
            dir: tempfile::tempdir().unwrap(),
            cache,
            port: free_port(),
            controller_port: free_port(),
        };
        broker.script("up.sh");
        broker
    }

    fn brokers(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn script(&self, script: &str) {
        let path = format!("{}/deploy/local/{script}", env!("CARGO_MANIFEST_DIR"));
        let status = Command::new("bash")
            .arg(path)
            .arg("kafka")
            .env("FRONTROW_SERVICES_DIR", self.dir.path())
            .env("FRONTROW_SERVICES_CACHE", &self.cache)
            .env("FRONTROW_KAFKA_PORT", self.port.to_string())
            .env("FRONTROW_KAFKA_CONTROLLER_PORT", self.controller_port.to_string())
            .status()
            .expect("the script runs");
        assert!(status.success(), "{script} kafka failed");
    }
}

impl Drop for PrivateBroker {
    fn drop(&mut self) {
        self.script("down.sh");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_broker_restart_loses_nothing_acknowledged_and_service_resumes() {
    // What the writers and the group did is the first thing to read when this fails.
    if std::env::var_os("RUST_LOG").is_some() {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
    }
    let broker = Arc::new(tokio::task::spawn_blocking(PrivateBroker::start).await.unwrap());
    let journal = format!("kafka://{}/frontrow.test.restart", broker.brokers());
    let app = Arc::new(TestApp::spawn_with(|s| s.journal = journal.parse().unwrap()).await);
    let event = app.create_event().await;
    let seats: Vec<String> = (1..=2)
        .flat_map(|r| (1..=10).map(move |n| format!("A-{r}-{n}")))
        .collect();

    let acked: Arc<Mutex<HashMap<String, ReservationId>>> = Arc::default();
    let statuses: Arc<Mutex<Vec<u16>>> = Arc::default();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let load = {
        let (app, acked, statuses, stop, seats) = (
            app.clone(),
            acked.clone(),
            statuses.clone(),
            stop.clone(),
            seats.clone(),
        );
        tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) && i < seats.len() {
                let fan = format!("fan{i}");
                let res = app
                    .reserve(&fan, event, &format!("k{i}"), json!({ "seats": [seats[i]] }))
                    .await;
                let status = res.status().as_u16();
                statuses.lock().unwrap().push(status);
                match status {
                    201 => {
                        let held: ReservationResponse = typed(res.json().await.unwrap());
                        acked.lock().unwrap().insert(fan, held.reservation.reservation_id);
                        i += 1;
                    }
                    503 => tokio::time::sleep(Duration::from_millis(200)).await,
                    other => panic!("unexpected status {other}"),
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let acknowledged = || async { acked.lock().unwrap().len() };
    let message = "3 reservations are acknowledged";
    wait_until(Duration::from_secs(60), message, acknowledged, |n| {
        (*n >= 3).then_some(())
    })
    .await;
    let b = broker.clone();
    tokio::task::spawn_blocking(move || b.script("down.sh")).await.unwrap();
    // While the broker is gone, reserves are refused with 503 (after the append times out).
    let refused = || async { statuses.lock().unwrap().iter().filter(|s| **s == 503).count() };
    let refused_before = refused().await;
    let message = "a 503 while the broker is down";
    wait_until(Duration::from_secs(60), message, refused, |n| {
        (*n > refused_before).then_some(())
    })
    .await;
    let b = broker.clone();
    tokio::task::spawn_blocking(move || b.script("up.sh")).await.unwrap();
    // Service resumes by itself: a new reservation (a seat the load never asks for, so it cannot
    // have run out of seats on a slow machine) is acknowledged again, retried while it gets 503.
    let reserve = || async {
        let res = app
            .reserve("after-restart", event, "after-restart", json!({ "seats": ["B-1-1"] }))
            .await;
        let status = res.status().as_u16();
        assert!(
            [201, 503].contains(&status),
            "unexpected status {status} after the broker came back"
        );
        (status, res.json::<Value>().await.unwrap_or_default())
    };
    let message = "service resumes after the broker came back";
    let resumed = wait_until(Duration::from_secs(90), message, reserve, |(status, body)| {
        (*status == 201).then(|| body.clone())
    })
    .await;
    let resumed: ReservationResponse = typed(resumed);
    acked
        .lock()
        .unwrap()
        .insert("after-restart".into(), resumed.reservation.reservation_id);
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    load.await.unwrap();

    // Every acknowledged reservation is still there, and the log holds no seat twice.
    let acked = acked.lock().unwrap().clone();
    for (fan, rid) in &acked {
        let res = app.get_as(fan, &format!("/events/{event}/reservations/{rid}")).await;
        assert_eq!(res.status(), 200, "acknowledged reservation {rid} lost");
    }
    let states = app.replay().await;
    let state = &states[&event];
    let held = state
        .seats
        .iter()
        .filter(|s| !matches!(s, frontrow_command::domain::SeatState::Available))
        .count();
    assert!(held >= acked.len());
    let mut owners = HashMap::new();
    for r in state.reservations.values() {
        if r.status == frontrow_command::domain::ReservationStatus::Held {
            for seat in &r.seats {
                assert!(owners.insert(*seat, r.id).is_none(), "seat {seat} in two holds");
            }
        }
    }
}
