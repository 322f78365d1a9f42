//! What an operator relies on, on one node: request ids, compressed answers, readiness and the
//! version a binary reports.

mod common;

use std::io::Read;

use common::{ReservationResponse, TestApp, typed};
use frontrow_schema::decode;
use serde_json::{Value, json};

fn gunzip(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    out
}

/// `GET url` through `client` with these headers.
async fn get(client: &reqwest::Client, url: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = client.get(url);
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    common::send(request).await
}

#[tokio::test]
async fn a_request_id_is_echoed_and_becomes_the_correlation_id() {
    let (app, event) = TestApp::spawn_with_event().await;

    // No id: one is made and answered.
    let res = app.get("/health").await;
    let made = res.headers()["x-request-id"].to_str().unwrap().to_owned();
    assert!(uuid::Uuid::try_parse(&made).is_ok(), "{made}");

    // The caller's UUID comes back and is the reservation's correlation id in the log.
    let id = uuid::Uuid::now_v7();
    let res = app
        .client
        .post(app.url(&format!("/events/{event}/reservations")))
        .bearer_auth(app.token("alice"))
        .header("idempotency-key", "rid-1")
        .header("x-request-id", id.to_string())
        .json(&json!({"seats": ["A-1-1"]}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 201);
    assert_eq!(res.headers()["x-request-id"], id.to_string().as_str());
    let held: ReservationResponse = typed(res.json().await.unwrap());
    let position: frontrow_journal::Position = held.position.as_deref().unwrap().parse().unwrap();
    let batch = app.journal.read(position.partition, position.offset, 1).await.unwrap();
    let envelope = decode(&batch.records[0].value).unwrap();
    assert_eq!(envelope.correlation_id, Some(id));

    // A caller's id that is not a UUID is echoed as it came; an unusable one is replaced.
    let res = app.get_with("/health", ("x-request-id", "checkout-42")).await;
    assert_eq!(res.headers()["x-request-id"], "checkout-42");
    let long = "x".repeat(500);
    let res = app.get_with("/health", ("x-request-id", &long)).await;
    assert_ne!(res.headers()["x-request-id"], long.as_str());
    app.stop().await;
}

#[tokio::test]
async fn the_compressed_map_decompresses_to_the_plain_one() {
    let (app, event) = TestApp::spawn_with_event().await;
    let url = app.url(&format!("/events/{event}/availability"));
    // A client that shows the bytes as sent (reqwest would otherwise inflate them itself).
    let client = reqwest::Client::builder().no_gzip().build().unwrap();
    let plain = get(&client, &url, &[]).await;
    assert!(plain.headers().get("content-encoding").is_none());
    let plain_tag = plain.headers()["etag"].to_str().unwrap().to_owned();
    let plain = plain.bytes().await.unwrap();

    let gz = get(&client, &url, &[("accept-encoding", "br;q=0, gzip")]).await;
    assert_eq!(gz.status(), 200);
    assert_eq!(gz.headers()["content-encoding"], "gzip");
    assert_eq!(gz.headers()["vary"], "accept-encoding");
    let gz_tag = gz.headers()["etag"].to_str().unwrap().to_owned();
    assert_ne!(gz_tag, plain_tag, "another representation has its own strong tag");
    let compressed = gz.bytes().await.unwrap();
    assert!(compressed.len() < plain.len());
    assert_eq!(gunzip(&compressed), plain.to_vec());

    // Revalidation of the compressed copy is a 304.
    let again = get(
        &client,
        &url,
        &[("accept-encoding", "gzip"), ("if-none-match", &gz_tag)],
    )
    .await;
    assert_eq!(again.status(), 304);

    // Refusing gzip gets the plain map; other JSON answers are compressed by the middleware.
    let refused = get(&client, &url, &[("accept-encoding", "gzip;q=0")]).await;
    assert!(refused.headers().get("content-encoding").is_none());
    let doc = get(&client, &app.url("/openapi.json"), &[("accept-encoding", "gzip")]).await;
    assert_eq!(doc.headers()["content-encoding"], "gzip");
    let doc: Value = serde_json::from_slice(&gunzip(&doc.bytes().await.unwrap())).unwrap();
    assert_eq!(doc["info"]["title"], "FrontRow");
    // A small answer is not worth compressing.
    let small = get(&client, &app.url("/health"), &[("accept-encoding", "gzip")]).await;
    assert!(small.headers().get("content-encoding").is_none());
    app.stop().await;
}

#[tokio::test]
async fn a_single_node_is_ready_once_it_serves_every_partition() {
    let app = TestApp::spawn().await;
    let res = app.get("/ready").await;
    assert_eq!(res.status(), 200, "{}", res.text().await.unwrap());
    app.stop().await;
}

/// With `metrics = false` nothing is served at `/metrics` (and no recorder is installed by it).
#[tokio::test]
async fn metrics_can_be_turned_off() {
    let app = TestApp::spawn_with(|s| s.metrics = false).await;
    let res = app.get("/metrics").await;
    common::problem(res, 404, "not-found").await;
    assert_eq!(app.get("/health").await.status(), 200);
    app.stop().await;
}

#[test]
fn the_binary_reports_the_commit_it_was_built_from() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_frontrow"))
        .arg("--version")
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(frontrow::BUILD_COMMIT), "{text}");
    let head = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if let Some(head) = head {
        assert!(text.contains(&head), "--version says {text}, HEAD is {head}");
    }
}

/// The offsets the snapshot history of `partition` covers, newest first.
async fn snapshot_history(journal: &dyn frontrow_journal::Journal, partition: u32) -> Vec<u64> {
    use frontrow_journal::SnapshotBound;
    let mut marks = Vec::new();
    let mut bound = u64::MAX;
    while let Some(snapshot) = journal
        .snapshot_before(partition, SnapshotBound::Offset(bound))
        .await
        .unwrap()
    {
        marks.push(snapshot.mark.last);
        match snapshot.mark.last.checked_sub(1) {
            Some(before) => bound = before,
            None => break,
        }
    }
    marks
}

/// `snapshot_history` sizes the embedded journal's snapshot history: with a snapshot after every
/// record, a partition keeps the newest two (48 by default).
#[tokio::test]
async fn the_snapshot_history_keeps_as_many_snapshots_as_configured() {
    let app = TestApp::spawn_with(|s| {
        s.snapshot_every = 1;
        s.snapshot_history = 2;
    })
    .await;
    let event = app.create_event().await;
    // The newest snapshot seen after each record. A writer skips a snapshot while its last one
    // is still being stored (the next record's then covers both), so records go on until three
    // different snapshots were seen, one at a time.
    let mut seen = std::collections::BTreeSet::new();
    let mut partition = 0;
    for n in 1..=10 {
        if seen.len() >= 3 {
            break;
        }
        let held = app
            .reserve_seats_ok(&format!("fan{n}"), event, &[&format!("A-1-{n}")])
            .await;
        let position: frontrow_journal::Position = held.position.unwrap().parse().unwrap();
        partition = position.partition;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        while std::time::Instant::now() < deadline {
            let newest = snapshot_history(app.journal.as_ref(), partition).await.first().copied();
            if let Some(newest) = newest.filter(|&last| last >= position.offset) {
                seen.insert(newest);
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    assert!(seen.len() >= 3, "snapshots seen: {seen:?}");
    let newest_two: Vec<u64> = seen.iter().rev().take(2).copied().collect();
    assert_eq!(
        snapshot_history(app.journal.as_ref(), partition).await,
        newest_two,
        "seen {seen:?}"
    );
    app.stop().await;
}

/// `kafka.snapshot_history_hours` is the snapshot history topic's retention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn the_kafka_snapshot_history_keeps_snapshots_as_long_as_configured() {
    use rdkafka::admin::{AdminClient, AdminOptions, ResourceSpecifier};
    let journal = common::kafka_journal();
    let frontrow::settings::JournalChoice::Kafka { brokers, topic } = journal.clone() else {
        unreachable!("kafka_journal is a Kafka journal")
    };
    let app = TestApp::spawn_with(|s| {
        s.journal = journal;
        s.kafka.snapshot_history_hours = 30;
    })
    .await;
    let admin: AdminClient<rdkafka::client::DefaultClientContext> = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", &brokers)
        .create()
        .unwrap();
    let history = format!("{topic}.snapshot-history");
    let described = admin
        .describe_configs([&ResourceSpecifier::Topic(&history)], &AdminOptions::new())
        .await
        .unwrap();
    let config = described.into_iter().next().unwrap().unwrap();
    let retention = config.get("retention.ms").and_then(|e| e.value.clone());
    assert_eq!(retention.as_deref(), Some("108000000"), "{history}");
    app.stop().await;
    frontrow_journal::delete_log(&brokers, &topic, &[]).await.unwrap();
}
