//! Acknowledged writes survive `kill -9` of the real `frontrow` process.

mod common;

use std::collections::HashSet;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::{
    AvailabilityMap, ReservationId, ReservationResponse, SeatId, WAIT, WebhookAnswer, seats_lettered, send_typed,
    spawn_listening, typed, wait_until,
};
use serde_json::{Value, json};

const SAMPLE: &str = "5a3b1e00-0000-4000-8000-000000000001";

struct Server {
    child: Child,
    base: String,
}

fn start(data_dir: &std::path::Path, journal: &str) -> Server {
    let (child, base) = spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_frontrow"))
            .args(["serve", "--listen", "127.0.0.1:0", "--journal", journal, "--data-dir"])
            .arg(data_dir)
            .env("FRONTROW_LOG", "warn")
            // Load from one loopback address: no rate limits.
            .env("FRONTROW_LIMITS__CUSTOMER_PER_SECOND", "0")
            .env("FRONTROW_LIMITS__ADDRESS_PER_SECOND", "0")
            .stderr(Stdio::inherit()),
    );
    Server { child, base }
}

/// A demo token for `customer`, or `None` once the server is gone.
async fn token(client: &reqwest::Client, base: &str, customer: &str) -> Option<String> {
    let res: Value = client
        .post(format!("{base}/demo/tokens"))
        .json(&json!({ "customer": customer }))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    Some(res["token"].as_str()?.to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_reservations_survive_kill_dash_nine() {
    kill_dash_nine("sqlite").await;
}

/// On Kafka the restarted node claims every partition, which fences the killed one's producers
/// and aborts whatever transaction it left open, before it restores.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn acknowledged_reservations_survive_kill_dash_nine_on_kafka() {
    let brokers = std::env::var("FRONTROW_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into());
    kill_dash_nine(&format!(
        "kafka://{brokers}/frontrow.test.restart.{}",
        uuid::Uuid::new_v4().simple()
    ))
    .await;
}

async fn kill_dash_nine(journal: &str) {
    let dir = tempfile::tempdir().unwrap();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap();
    let mut server = start(dir.path(), journal);
    let base = server.base.clone();

    // Reservations stream in from 8 clients; the process is killed while they are in flight.
    let acknowledged = std::sync::Arc::new(std::sync::Mutex::new(Vec::<(ReservationId, Vec<SeatId>, String)>::new()));
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let (client, base, acknowledged) = (client.clone(), base.clone(), acknowledged.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..200 {
                // A fan per reservation: one customer may hold only one order's worth of seats.
                let Some(token) = token(&client, &base, &format!("loadfan{worker}-{i}")).await else {
                    break;
                };
                let section = 201 + (worker * 2 + i % 2);
                let res = client
                    .post(format!("{base}/events/{SAMPLE}/reservations"))
                    .bearer_auth(&token)
                    .header("idempotency-key", format!("w{worker}-{i}"))
                    .json(&json!({"best_available": {"section": section.to_string(), "count": 2}}))
                    .send()
                    .await;
                let Ok(res) = res else { break };
                if res.status() == 201 {
                    let Ok(body) = res.json::<Value>().await else { break };
                    let held: ReservationResponse = typed(body);
                    acknowledged
                        .lock()
                        .unwrap()
                        .push((held.reservation.reservation_id, held.reservation.seats, token));
                }
            }
        }));
    }
    // Let some reservations land, then kill -9 (SIGKILL: no graceful shutdown, no flush).
    let landed = || async { acknowledged.lock().unwrap().len() };
    let message = "150 reservations are acknowledged";
    wait_until(Duration::from_secs(120), message, landed, |n| (*n >= 150).then_some(())).await;
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    for t in tasks {
        t.await.unwrap();
    }
    let acknowledged = acknowledged.lock().unwrap().clone();
    assert!(acknowledged.len() >= 150);

    let mut server = start(dir.path(), journal);
    let base = server.base.clone();
    for (rid, seats, token) in &acknowledged {
        let res = client
            .get(format!("{base}/events/{SAMPLE}/reservations/{rid}"))
            .bearer_auth(token)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "acknowledged reservation {rid} lost");
        let body: ReservationResponse = typed(res.json().await.unwrap());
        assert_eq!(body.reservation.status, "held");
        assert_eq!(&body.reservation.seats, seats);
    }
    // Every acknowledged seat is held on the map after the restart, and no seat twice.
    let ready = || async { client.get(format!("{base}/ready")).send().await.unwrap().status() };
    wait_until(WAIT, "the restarted server is ready", ready, |s| {
        (*s == 200).then_some(())
    })
    .await;
    let map: AvailabilityMap = send_typed(client.get(format!("{base}/events/{SAMPLE}/availability"))).await;
    let held = seats_lettered(&map, 'H');
    let mut seen = HashSet::new();
    for (_, seats, _) in &acknowledged {
        for s in seats {
            assert!(seen.insert(s.clone()), "seat {s} acknowledged twice");
            assert!(
                held.contains(&s.to_string()),
                "acknowledged seat {s} not held after restart"
            );
        }
    }
    // Unacknowledged but durable reservations may exist; nothing else may.
    assert!(held.len() >= seen.len());

    // A webhook is applied once, forever: its provider event id survives another kill -9.
    let (rid, _, _) = &acknowledged[0];
    let booked = deliver(&client, &base, dir.path(), rid).await;
    assert_eq!(booked.outcome, "booked");
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut server = start(dir.path(), journal);
    let again = deliver(&client, &server.base, dir.path(), rid).await;
    assert_eq!(again.outcome, "duplicate");
    assert_eq!(again.reservation_status.as_deref(), Some("booked"));
    server.child.kill().unwrap();
    server.child.wait().unwrap();
}

/// Delivers the same signed `payment_intent.succeeded` (id `evt_restart`) for a reservation,
/// signed with the webhook secret the server generated into its data directory.
async fn deliver(
    client: &reqwest::Client,
    base: &str,
    data_dir: &std::path::Path,
    rid: &ReservationId,
) -> WebhookAnswer {
    let secrets: Value = serde_json::from_slice(&std::fs::read(data_dir.join("secrets.json")).unwrap()).unwrap();
    let secret = secrecy::SecretString::from(secrets["webhook_secret"].as_str().unwrap());
    let body = serde_json::to_vec(&json!({
        "id": "evt_restart", "object": "event", "type": "payment_intent.succeeded",
        "created": chrono::Utc::now().timestamp(),
        "data": {"object": {"id": "pi_restart", "object": "payment_intent", "amount": 11800, "currency": "eur",
                            "metadata": {"event_id": SAMPLE, "reservation_id": rid}}}
    }))
    .unwrap();
    let signature = frontrow_command::payments::sign(&secret, chrono::Utc::now().timestamp(), &body);
    let res = client
        .post(format!("{base}/webhooks/payments"))
        .header("content-type", "application/json")
        .header("stripe-signature", signature)
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    typed(res.json().await.unwrap())
}
