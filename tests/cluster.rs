//! Several processes in front of one Kafka log: two command nodes sharing the partitions
//! through the consumer group, forwarding to each other, and a query node.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chrono::Utc;
use common::{ORGANIZER_KEY, TOKEN_SECRET, WEBHOOK_SECRET, replay, seat_letters, spawn_listening, state_letters};
use frontrow_http::auth::Auth;
use frontrow_journal::{KafkaJournal, KafkaSettings};
use frontrow_schema::{CustomerId, EventId};
use secrecy::SecretString;
use serde_json::{Value, json};

struct Node {
    child: Child,
    base: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn node(role: &str, journal: &str, dir: &std::path::Path) -> Node {
    let (child, base) = spawn_listening(
        Command::new(env!("CARGO_BIN_EXE_frontrow"))
            .args([role, "--listen", "127.0.0.1:0", "--journal", journal, "--data-dir"])
            .arg(dir)
            .env("FRONTROW_LOG", "warn")
            // Load from one loopback address: no rate limits.
            .env("FRONTROW_LIMITS__CUSTOMER_PER_SECOND", "0")
            .env("FRONTROW_LIMITS__ADDRESS_PER_SECOND", "0")
            .env("FRONTROW_PARTITIONS", "4")
            .env("FRONTROW_TOKEN_SECRET", TOKEN_SECRET)
            .env("FRONTROW_WEBHOOK_SECRET", WEBHOOK_SECRET)
            .env("FRONTROW_ORGANIZERS", format!("{{acme=\"{ORGANIZER_KEY}\"}}"))
            .stderr(Stdio::inherit()),
    );
    Node { child, base }
}

fn brokers() -> String {
    std::env::var("FRONTROW_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into())
}

fn event_body() -> Value {
    let now = Utc::now();
    json!({
        "title": "Cluster Night", "artist": "The Nodes", "venue": "Hall", "city": "Delft",
        "starts_at": now + chrono::Duration::days(30), "onsale_at": now - chrono::Duration::minutes(1),
        "max_seats_per_order": 4, "currency": "EUR",
        // Fans pick scattered seats during failovers; the no-orphan rule is not what is tested.
        "allow_orphan_seats": true,
        "seat_map": {"tiers": [{"code": "STD", "name": "Standard", "price": 5000}],
                     "sections": [{"code": "A", "name": "Stalls", "rows": [
                        {"name": "1", "seats": 25, "tier": "STD"}, {"name": "2", "seats": 25, "tier": "STD"},
                        {"name": "3", "seats": 25, "tier": "STD"}, {"name": "4", "seats": 25, "tier": "STD"}]}]}
    })
}

/// One test's cluster: a topic of its own, the nodes' data directories, an HTTP client and
/// customer tokens.
struct Cluster {
    topic: String,
    journal: String,
    dirs: Vec<tempfile::TempDir>,
    client: reqwest::Client,
    auth: Auth,
}

impl Cluster {
    fn new() -> Self {
        let topic = format!("frontrow.test.cluster.{}", uuid::Uuid::new_v4().simple());
        Self {
            journal: format!("kafka://{}/{topic}", brokers()),
            topic,
            dirs: Vec::new(),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .build()
                .unwrap(),
            auth: Auth::new(SecretString::from(TOKEN_SECRET), []),
        }
    }

    /// Starts a node of `role` on the cluster's topic.
    fn node(&mut self, role: &str) -> Node {
        let dir = tempfile::tempdir().unwrap();
        let node = node(role, &self.journal, dir.path());
        self.dirs.push(dir);
        node
    }

    fn token(&self, customer: &str) -> String {
        self.auth.mint(
            &CustomerId::parse(customer).unwrap(),
            Utc::now(),
            Utc::now() + chrono::Duration::hours(1),
        )
    }
}

/// Retries a request while the answer is a 503 (no owner yet, or a failover in progress).
async fn until_served(mut send: impl FnMut() -> reqwest::RequestBuilder, deadline: Duration) -> reqwest::Response {
    let start = std::time::Instant::now();
    loop {
        let res = send().send().await;
        match res {
            Ok(res) if res.status() != 503 => return res,
            Ok(res) => eprintln!("503, retrying: {}", res.text().await.unwrap_or_default()),
            Err(e) => eprintln!("not answered, retrying: {e}"),
        }
        if start.elapsed() > deadline {
            panic!("not served within {deadline:?}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Creates the test event through A (with an Idempotency-Key: the id is fixed, so A forwards if
/// B owns it), then waits until the group has settled: through both nodes, a reserve of a seat
/// that does not exist reaches a writer that knows the event (422 unknown seat; nothing is
/// written), where a missing owner answers 503 and a stale one would say the event does not
/// exist.
async fn create_settled(
    client: &reqwest::Client,
    a: &Node,
    b: &Node,
    token: &impl Fn(&str) -> String,
    key: &str,
) -> EventId {
    let res = until_served(
        || {
            client
                .post(format!("{}/events", a.base))
                .header("x-api-key", ORGANIZER_KEY)
                .header("idempotency-key", key)
                .json(&event_body())
        },
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(res.status(), 201, "{}", res.text().await.unwrap());
    let event: EventId = res.json::<Value>().await.unwrap()["event_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    for (n, base) in [&a.base, &b.base].into_iter().enumerate() {
        let res = until_served(
            || {
                client
                    .post(format!("{base}/events/{event}/reservations"))
                    .bearer_auth(token("probe"))
                    .header("idempotency-key", format!("probe-{n}"))
                    .json(&json!({"seats": ["A-9-9"]}))
            },
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(res.status(), 422, "{}", res.text().await.unwrap());
    }
    event
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn two_command_nodes_and_a_query_node_never_sell_a_seat_twice() {
    let mut cluster = Cluster::new();
    let (a, b, q) = (cluster.node("command"), cluster.node("command"), cluster.node("query"));
    let (client, topic) = (cluster.client.clone(), cluster.topic.clone());
    let token = |c: &str| cluster.token(c);

    let event = create_settled(&client, &a, &b, &token, "cluster-event").await;

    // 400 fans race through both nodes for 100 seats.
    let all: Vec<String> = (1..=4)
        .flat_map(|r| (1..=25).map(move |n| format!("A-{r}-{n}")))
        .collect();
    let tasks: Vec<_> = (0..400)
        .map(|i: usize| {
            let base = if i.is_multiple_of(2) {
                a.base.clone()
            } else {
                b.base.clone()
            };
            let seats: Vec<String> = (0..2).map(|k| all[(i * 7 + k * 13) % 100].clone()).collect();
            let (client, token) = (client.clone(), token(&format!("fan{i}")));
            tokio::spawn(async move {
                let fan = format!("fan{i}");
                // A 503 leaves the outcome open (e.g. the owner changed mid-append): the client
                // asks again with the same Idempotency-Key until it gets the answer.
                let res = until_served(
                    || {
                        client
                            .post(format!("{base}/events/{event}/reservations"))
                            .bearer_auth(&token)
                            .header("idempotency-key", format!("k{i}"))
                            .json(&json!({ "seats": seats }))
                    },
                    Duration::from_secs(60),
                )
                .await;
                let status = res.status().as_u16();
                (status, fan, res.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut won = BTreeMap::new();
    let mut last = None;
    for t in tasks {
        let (status, fan, body) = t.await.unwrap();
        match status {
            201 => {
                for seat in body["seats"].as_array().unwrap() {
                    let rid = body["reservation_id"].as_str().unwrap().to_owned();
                    assert!(
                        won.insert(seat.as_str().unwrap().to_owned(), (fan.clone(), rid))
                            .is_none()
                    );
                }
                let p: frontrow_journal::Position = body["position"].as_str().unwrap().parse().unwrap();
                last = last.max(Some(p));
            }
            409 => {}
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(!won.is_empty());

    // The query node, once it has seen the last write, shows exactly the acknowledged holds.
    let map: Value = client
        .get(format!(
            "{}/events/{event}/availability?after={}&wait_ms=10000",
            q.base,
            last.unwrap()
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let letters = seat_letters(&map);
    let held: HashSet<&String> = letters.iter().filter(|(_, c)| **c == 'H').map(|(s, _)| s).collect();
    assert_eq!(held, won.keys().collect::<HashSet<_>>());
    // And a replay of the topic agrees with the map.
    let log = KafkaJournal::connect(KafkaSettings {
        topic: topic.clone(),
        ..KafkaSettings::new(brokers(), 4)
    })
    .await
    .unwrap();
    let states = replay(&log).await;
    assert_eq!(state_letters(&states[&event]), letters);

    // kill -9 the node that owns the event's partition: the other takes the partition over
    // (after the group's session timeout) and keeps every acknowledged reservation. A request
    // marked as already forwarded is served only by the owner, which tells us who that is.
    let (probe_fan, probe_rid) = won.values().next().unwrap().clone();
    let a_owns = client
        .get(format!("{}/events/{event}/reservations/{probe_rid}", a.base))
        .bearer_auth(token(&probe_fan))
        .header("frontrow-forwarded", "1")
        .send()
        .await
        .unwrap()
        .status()
        == 200;
    let (owner, survivor) = if a_owns { (a, b) } else { (b, a) };
    drop(owner);
    let b = survivor;
    for (fan, rid) in won.values().step_by(3) {
        let res = until_served(
            || {
                client
                    .get(format!("{}/events/{event}/reservations/{rid}", b.base))
                    .bearer_auth(token(fan))
            },
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(res.status(), 200, "acknowledged reservation {rid} lost in the failover");
        assert_eq!(res.json::<Value>().await.unwrap()["status"], "held");
    }
    let free: Vec<String> = all.iter().filter(|s| !won.contains_key(*s)).cloned().collect();
    if let Some(seat) = free.first() {
        let res = until_served(
            || {
                client
                    .post(format!("{}/events/{event}/reservations", b.base))
                    .bearer_auth(token("late"))
                    .header("idempotency-key", "after-failover")
                    .json(&json!({ "seats": [seat] }))
            },
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(res.status(), 201, "B serves the event after A died");
    }
    let taken = won.keys().next().unwrap().clone();
    let res = until_served(
        || {
            client
                .post(format!("{}/events/{event}/reservations", b.base))
                .bearer_auth(token("late2"))
                .header("idempotency-key", "taken-after-failover")
                .json(&json!({ "seats": [taken] }))
        },
        Duration::from_secs(60),
    )
    .await;
    let status = res.status();
    let body = res.text().await.unwrap();
    assert_eq!(
        status, 409,
        "a seat held before the failover is still held after it: {body}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn one_customer_through_two_command_nodes_holds_at_most_the_limit() {
    let mut cluster = Cluster::new();
    let (a, b) = (cluster.node("command"), cluster.node("command"));
    let (client, topic) = (cluster.client.clone(), cluster.topic.clone());
    let token = |c: &str| cluster.token(c);
    let event = create_settled(&client, &a, &b, &token, "limit-event").await;

    // 60 best-available orders of 4 (the event's limit) by one customer, half through each
    // node, each with a fresh Idempotency-Key, all at once.
    let tasks: Vec<_> = (0..60)
        .map(|i: usize| {
            let base = if i.is_multiple_of(2) { &a.base } else { &b.base };
            let url = format!("{base}/events/{event}/reservations");
            let (client, token) = (client.clone(), token("mallory"));
            tokio::spawn(async move {
                let res = until_served(
                    || {
                        client
                            .post(&url)
                            .bearer_auth(&token)
                            .header("idempotency-key", format!("flood-{i}"))
                            .json(&json!({"best_available": {"section": "A", "count": 4}}))
                    },
                    Duration::from_secs(60),
                )
                .await;
                (res.status().as_u16(), res.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut held = 0;
    for t in tasks {
        match t.await.unwrap() {
            (201, body) => held += body["seats"].as_array().unwrap().len(),
            (409, body) => assert_eq!(body["type"], "urn:frontrow:problem:customer-limit", "{body}"),
            (status, body) => panic!("unexpected {status}: {body}"),
        }
    }
    assert_eq!(held, 4, "one order's worth, whichever node answered");
    // The log says the same.
    let log = KafkaJournal::connect(KafkaSettings {
        topic,
        ..KafkaSettings::new(brokers(), 4)
    })
    .await
    .unwrap();
    let states = replay(&log).await;
    assert_eq!(states[&event].live_seats_of(&CustomerId::parse("mallory").unwrap()), 4);
}

/// Polls `url` until it answers `want`, returning the last status seen.
async fn until_status(client: &reqwest::Client, url: &str, want: u16, deadline: Duration) -> u16 {
    let start = std::time::Instant::now();
    loop {
        let status = client.get(url).send().await.map(|r| r.status().as_u16()).unwrap_or(0);
        if status == want || start.elapsed() > deadline {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The value of an unlabelled gauge in a node's `/metrics`.
async fn gauge(client: &reqwest::Client, base: &str, name: &str) -> f64 {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn readiness_follows_the_rebalance_and_request_ids_cross_the_forward() {
    let topic = format!("frontrow.test.ops.{}", uuid::Uuid::new_v4().simple());
    let journal = format!("kafka://{}/{topic}", brokers());
    let dirs: Vec<_> = (0..2).map(|_| tempfile::tempdir().unwrap()).collect();
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(15))
        .build()
        .unwrap();
    let a = node("command", &journal, dirs[0].path());
    let ready = |base: &str| format!("{base}/ready");
    assert_eq!(
        until_status(&client, &ready(&a.base), 200, Duration::from_secs(60)).await,
        200
    );
    assert_eq!(gauge(&client, &a.base, "frontrow_partitions_owned").await, 4.0);

    // A second node joins: once both are ready each serves part of the partitions, and together
    // all of them.
    let b = node("command", &journal, dirs[1].path());
    let settled = async {
        loop {
            let (ra, rb) = (
                until_status(&client, &ready(&a.base), 200, Duration::from_secs(60)).await,
                until_status(&client, &ready(&b.base), 200, Duration::from_secs(60)).await,
            );
            let (oa, ob) = (
                gauge(&client, &a.base, "frontrow_partitions_owned").await,
                gauge(&client, &b.base, "frontrow_partitions_owned").await,
            );
            if ra == 200 && rb == 200 && oa + ob == 4.0 && oa > 0.0 && ob > 0.0 {
                return (oa, ob);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    let (oa, ob) = tokio::time::timeout(Duration::from_secs(90), settled)
        .await
        .expect("both nodes ready, sharing the partitions");
    eprintln!("partitions after the rebalance: A {oa}, B {ob}");

    // A reservation through each node with its own request id: one of the two is forwarded to
    // the owner. Each answer echoes its id, and the log's envelope carries it as correlation id.
    let auth = Auth::new(SecretString::from(TOKEN_SECRET), []);
    let token = auth.mint(
        &CustomerId::parse("ops").unwrap(),
        Utc::now(),
        Utc::now() + chrono::Duration::hours(1),
    );
    let res = until_served(
        || {
            client
                .post(format!("{}/events", a.base))
                .header("x-api-key", ORGANIZER_KEY)
                .header("idempotency-key", "ops-event")
                .json(&event_body())
        },
        Duration::from_secs(60),
    )
    .await;
    assert_eq!(res.status(), 201);
    let event: EventId = res.json::<Value>().await.unwrap()["event_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let mut ids = Vec::new();
    for (n, base) in [&a.base, &b.base].into_iter().enumerate() {
        let id = uuid::Uuid::now_v7();
        let res = until_served(
            || {
                client
                    .post(format!("{base}/events/{event}/reservations"))
                    .bearer_auth(&token)
                    .header("idempotency-key", format!("ops-{n}"))
                    .header("x-request-id", id.to_string())
                    .json(&json!({"seats": [format!("A-1-{}", n + 1)]}))
            },
            Duration::from_secs(60),
        )
        .await;
        assert_eq!(res.status(), 201);
        assert_eq!(res.headers()["x-request-id"], id.to_string().as_str());
        ids.push(id);
    }
    let log = KafkaJournal::connect(KafkaSettings {
        topic: topic.clone(),
        ..KafkaSettings::new(brokers(), 4)
    })
    .await
    .unwrap();
    let partition = frontrow_schema::partition::partition_of(&event, 4);
    let end = frontrow_journal::Journal::end_offset(&log, partition).await.unwrap();
    let mut correlations = Vec::new();
    let mut from = 0;
    while from < end {
        let batch = frontrow_journal::Journal::read(&log, partition, from, 1000)
            .await
            .unwrap();
        for r in &batch.records {
            let env = frontrow_schema::decode(&r.value).unwrap();
            if matches!(env.event, frontrow_schema::Event::SeatsReserved(_)) {
                correlations.extend(env.correlation_id);
            }
        }
        from = batch.next.max(from);
    }
    assert_eq!(
        correlations, ids,
        "the request ids as the reservations' correlation ids"
    );

    // The second node dies: the first takes every partition back and is ready again.
    drop(b);
    let back = async {
        loop {
            if until_status(&client, &ready(&a.base), 200, Duration::from_secs(5)).await == 200
                && gauge(&client, &a.base, "frontrow_partitions_owned").await == 4.0
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(60), back)
        .await
        .expect("the survivor serves every partition again");
}
