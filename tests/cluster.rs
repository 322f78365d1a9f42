//! Several processes in front of one Kafka log: two command nodes sharing the partitions
//! through the consumer group, forwarding to each other, and a query node.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use chrono::Utc;
use common::{
    AvailabilityMap, EventWritten, ORGANIZER_KEY, Problem, ReservationResponse, TOKEN_SECRET, WEBHOOK_SECRET, answer,
    replay, seat_letters, seats_lettered, send_typed, spawn_listening, typed, wait_until,
};
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

/// The cluster's topic, read directly (4 partitions).
async fn log(topic: &str) -> KafkaJournal {
    KafkaJournal::connect(KafkaSettings {
        topic: topic.to_owned(),
        ..KafkaSettings::new(brokers(), 4)
    })
    .await
    .unwrap()
}

/// The node request `i` of a load goes through: A for even `i`, B for odd.
fn half_and_half<'n>(i: usize, a: &'n Node, b: &'n Node) -> &'n Node {
    if i.is_multiple_of(2) { a } else { b }
}

/// How long a request may be retried while it is answered 503 (see [`until_served`]).
const SERVED: Duration = Duration::from_secs(60);

/// `POST {base}/events/{event}/reservations` as the customer of `token`, with `key` as its
/// Idempotency-Key.
fn reservation(
    client: &reqwest::Client,
    base: &str,
    event: EventId,
    token: &str,
    key: &str,
    body: &Value,
) -> reqwest::RequestBuilder {
    client
        .post(format!("{base}/events/{event}/reservations"))
        .bearer_auth(token)
        .header("idempotency-key", key)
        .json(body)
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

/// Creates the test event through `base` with an Idempotency-Key (the id is fixed, so the node
/// forwards if the other one owns it), retried while it is answered 503.
async fn create_event(client: &reqwest::Client, base: &str, key: &str) -> EventId {
    let create = || {
        client
            .post(format!("{base}/events"))
            .header("x-api-key", ORGANIZER_KEY)
            .header("idempotency-key", key)
            .json(&event_body())
    };
    let res = until_served(create, SERVED).await;
    answer::<EventWritten>(res, 201).await.event_id
}

/// Creates the test event through A ([`create_event`]), then waits until the group has settled:
/// through both nodes, a reserve of a seat that does not exist reaches a writer that knows the
/// event (422 unknown seat; nothing is written), where a missing owner answers 503 and a stale
/// one would say the event does not exist.
async fn create_settled(
    client: &reqwest::Client,
    a: &Node,
    b: &Node,
    token: &impl Fn(&str) -> String,
    key: &str,
) -> EventId {
    let event = create_event(client, &a.base, key).await;
    let probe = json!({"seats": ["A-9-9"]});
    for (n, base) in [&a.base, &b.base].into_iter().enumerate() {
        let key = format!("probe-{n}");
        let res = until_served(
            || reservation(client, base, event, &token("probe"), &key, &probe),
            SERVED,
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
            let base = half_and_half(i, &a, &b).base.clone();
            let seats: Vec<String> = (0..2).map(|k| all[(i * 7 + k * 13) % 100].clone()).collect();
            let (client, token) = (client.clone(), token(&format!("fan{i}")));
            tokio::spawn(async move {
                let fan = format!("fan{i}");
                // A 503 leaves the outcome open (e.g. the owner changed mid-append): the client
                // asks again with the same Idempotency-Key until it gets the answer.
                let (key, body) = (format!("k{i}"), json!({ "seats": seats }));
                let res = until_served(|| reservation(&client, &base, event, &token, &key, &body), SERVED).await;
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
                let held: ReservationResponse = typed(body);
                for seat in held.reservation.seats {
                    let rid = held.reservation.reservation_id;
                    assert!(won.insert(seat.to_string(), (fan.clone(), rid)).is_none());
                }
                let p: frontrow_journal::Position = held.position.as_deref().unwrap().parse().unwrap();
                last = last.max(Some(p));
            }
            409 => {}
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(!won.is_empty());

    // The query node, once it has seen the last write, shows exactly the acknowledged holds.
    let after = last.unwrap();
    let map: AvailabilityMap = send_typed(client.get(format!(
        "{}/events/{event}/availability?after={after}&wait_ms=10000",
        q.base
    )))
    .await;
    assert_eq!(seats_lettered(&map, 'H'), won.keys().cloned().collect::<BTreeSet<_>>());
    // And a replay of the topic agrees with the map.
    let states = replay(&log(&topic).await).await;
    assert_eq!(states[&event].seat_letters(), seat_letters(&map));

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
    let killed = std::time::Instant::now();
    drop(owner);
    let b = survivor;
    for (n, (fan, rid)) in won.values().step_by(3).enumerate() {
        let url = format!("{}/events/{event}/reservations/{rid}", b.base);
        let res = until_served(|| client.get(&url).bearer_auth(token(fan)), SERVED).await;
        assert_eq!(res.status(), 200, "acknowledged reservation {rid} lost in the failover");
        assert_eq!(
            typed::<ReservationResponse>(res.json().await.unwrap())
                .reservation
                .status,
            "held"
        );
        if n == 0 {
            // A figure, not a check (retries are 200 ms apart): see "Running at scale".
            eprintln!(
                "the survivor served the partition {:?} after the kill",
                killed.elapsed()
            );
        }
    }
    let free: Vec<String> = all.iter().filter(|s| !won.contains_key(*s)).cloned().collect();
    let (client, b_base) = (&client, &b.base);
    let late = |fan: &'static str, key: &'static str, seat: &String| {
        let body = json!({ "seats": [seat] });
        until_served(
            move || reservation(client, b_base, event, &token(fan), key, &body),
            SERVED,
        )
    };
    if let Some(seat) = free.first() {
        let res = late("late", "after-failover", seat).await;
        assert_eq!(res.status(), 201, "B serves the event after A died");
    }
    let taken = won.keys().next().unwrap().clone();
    let res = late("late2", "taken-after-failover", &taken).await;
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
            let base = half_and_half(i, &a, &b).base.clone();
            let (client, token) = (client.clone(), token("mallory"));
            tokio::spawn(async move {
                let (key, body) = (
                    format!("flood-{i}"),
                    json!({"best_available": {"section": "A", "count": 4}}),
                );
                let res = until_served(|| reservation(&client, &base, event, &token, &key, &body), SERVED).await;
                (res.status().as_u16(), res.json::<Value>().await.unwrap())
            })
        })
        .collect();
    let mut held = 0;
    for t in tasks {
        match t.await.unwrap() {
            (201, body) => held += typed::<ReservationResponse>(body).reservation.seats.len(),
            (409, body) => assert_eq!(
                typed::<Problem>(body.clone()).kind,
                "urn:frontrow:problem:customer-limit",
                "{body}"
            ),
            (status, body) => panic!("unexpected {status}: {body}"),
        }
    }
    assert_eq!(held, 4, "one order's worth, whichever node answered");
    // The log says the same.
    let states = replay(&log(&topic).await).await;
    assert_eq!(states[&event].live_seats_of(&CustomerId::parse("mallory").unwrap()), 4);
}

/// The status of `GET url` (0 when it is not answered).
async fn status(client: &reqwest::Client, url: &str) -> u16 {
    client.get(url).send().await.map(|r| r.status().as_u16()).unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn readiness_follows_the_rebalance_and_request_ids_cross_the_forward() {
    let mut cluster = Cluster::new();
    let (client, topic) = (cluster.client.clone(), cluster.topic.clone());
    let a = cluster.node("command");
    let ready = |base: &str| format!("{base}/ready");
    let a_ready = ready(&a.base);
    let look = || status(&client, &a_ready);
    wait_until(SERVED, "A is ready", look, |s| (*s == 200).then_some(())).await;
    assert_eq!(total(&client, &a.base, "frontrow_partitions_owned").await, 4.0);

    // A second node joins: once both are ready each serves part of the partitions, and together
    // all of them.
    let b = cluster.node("command");
    let look = || async {
        let (ra, rb) = (
            status(&client, &ready(&a.base)).await,
            status(&client, &ready(&b.base)).await,
        );
        let (oa, ob) = (
            total(&client, &a.base, "frontrow_partitions_owned").await,
            total(&client, &b.base, "frontrow_partitions_owned").await,
        );
        (ra, rb, oa, ob)
    };
    let shared = |&(ra, rb, oa, ob): &(u16, u16, f64, f64)| {
        (ra == 200 && rb == 200 && oa + ob == 4.0 && oa > 0.0 && ob > 0.0).then_some((oa, ob))
    };
    let message = "both nodes ready, sharing the partitions";
    let (oa, ob) = wait_until(Duration::from_secs(90), message, look, shared).await;
    eprintln!("partitions after the rebalance: A {oa}, B {ob}");

    // A reservation through each node with its own request id: one of the two is forwarded to
    // the owner. Each answer echoes its id, and the log's envelope carries it as correlation id.
    let token = cluster.token("ops");
    let event = create_event(&client, &a.base, "ops-event").await;
    let mut ids = Vec::new();
    for (n, base) in [&a.base, &b.base].into_iter().enumerate() {
        let id = uuid::Uuid::now_v7();
        let (key, body) = (format!("ops-{n}"), json!({"seats": [format!("A-1-{}", n + 1)]}));
        let reserve = || reservation(&client, base, event, &token, &key, &body).header("x-request-id", id.to_string());
        let res = until_served(reserve, SERVED).await;
        assert_eq!(res.status(), 201);
        assert_eq!(res.headers()["x-request-id"], id.to_string().as_str());
        ids.push(id);
    }
    let journal = log(&topic).await;
    let partition = frontrow_schema::partition::partition_of(&event, 4);
    let mut correlations = Vec::new();
    for r in frontrow_journal::conformance::read_all(&journal, partition).await {
        let env = frontrow_schema::decode(&r.value).unwrap();
        if matches!(env.event, frontrow_schema::Event::SeatsReserved(_)) {
            correlations.extend(env.correlation_id);
        }
    }
    assert_eq!(
        correlations, ids,
        "the request ids as the reservations' correlation ids"
    );

    // The second node dies: the first takes every partition back and is ready again.
    drop(b);
    let look = || async {
        let up = status(&client, &a_ready).await;
        (up, total(&client, &a.base, "frontrow_partitions_owned").await)
    };
    let message = "the survivor serves every partition again";
    wait_until(SERVED, message, look, |&(up, owned)| {
        (up == 200 && owned == 4.0).then_some(())
    })
    .await;
}

/// The sum of every series of `name` in a node's `/metrics` (0 when it has none yet).
async fn total(client: &reqwest::Client, base: &str, name: &str) -> f64 {
    let text = client
        .get(format!("{base}/metrics"))
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| l.starts_with(&format!("{name}{{")) || l.starts_with(&format!("{name} ")))
        .filter_map(|l| l.rsplit_once(' ')?.1.parse::<f64>().ok())
        .sum()
}

/// Busy threads at normal priority for `for_how_long`: a machine with no CPU to spare.
fn hog_the_cpu(threads: usize, for_how_long: Duration) -> Vec<std::thread::JoinHandle<u64>> {
    (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let (start, mut spins) = (std::time::Instant::now(), 0u64);
                while start.elapsed() < for_how_long {
                    spins = std::hint::black_box(spins.wrapping_add(1));
                }
                spins
            })
        })
        .collect()
}

/// A node that is slow, not dead, keeps its partitions: B runs at nice 10 (a tenth of a normal share of the CPU) while
/// the machine is saturated (two busy threads per core's worth at normal priority, and a load of
/// reserves through both nodes), so it answers slowly; the group must not move its partitions,
/// since its heartbeats come from librdkafka's own thread and need very little CPU.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka: run the README's test command"]
async fn a_node_slowed_by_a_saturated_machine_keeps_its_partitions() {
    let mut cluster = Cluster::new();
    let client = cluster.client.clone();
    let (a, b) = (cluster.node("command"), cluster.node("command"));
    let token = |customer: &str| cluster.token(customer);
    let event = create_settled(&client, &a, &b, &token, "slow-event").await;
    let owned = |base: String| {
        let client = client.clone();
        async move { total(&client, &base, "frontrow_partitions_owned").await }
    };
    let rebalances = |base: String| {
        let client = client.clone();
        async move { total(&client, &base, "frontrow_rebalances_total").await }
    };
    let state = || async {
        (
            owned(a.base.clone()).await,
            owned(b.base.clone()).await,
            rebalances(a.base.clone()).await,
            rebalances(b.base.clone()).await,
            status(&client, &format!("{}/ready", a.base)).await,
            status(&client, &format!("{}/ready", b.base)).await,
        )
    };
    // The event's partition is served; the group may still be acquiring the others.
    let settled = |&(oa, ob, ra, rb, ready_a, ready_b): &(f64, f64, f64, f64, u16, u16)| {
        (oa + ob == 4.0 && oa > 0.0 && ob > 0.0 && ready_a == 200 && ready_b == 200).then_some((oa, ob, ra, rb))
    };
    let before = wait_until(SERVED, "A and B both ready, sharing the 4 partitions", state, settled).await;

    let renice = Command::new("renice")
        .args(["-n", "10", "-p", &b.child.id().to_string()])
        .output()
        .unwrap();
    assert!(renice.status.success(), "renice: {renice:?}");
    const LOAD: Duration = Duration::from_secs(15);
    let hogs = hog_the_cpu(4, LOAD);
    let started = std::time::Instant::now();
    let load = (0..32).map(|fan| {
        let (client, a, b) = (client.clone(), a.base.clone(), b.base.clone());
        let token = cluster.token(&format!("slow-fan-{fan}"));
        tokio::spawn(async move {
            let mut answers = BTreeMap::<(bool, u16), u32>::new();
            let mut n = 0usize;
            while started.elapsed() < LOAD {
                let through_b = (fan + n).is_multiple_of(2);
                let base = if through_b { &b } else { &a };
                let seat = format!("A-{}-{}", n % 4 + 1, (fan + n) % 25 + 1);
                let key = format!("slow-{fan}-{n}");
                let body = json!({"seats": [seat]});
                let status = match reservation(&client, base, event, &token, &key, &body).send().await {
                    Ok(res) => res.status().as_u16(),
                    Err(_) => 0,
                };
                *answers.entry((through_b, status)).or_default() += 1;
                n += 1;
            }
            answers
        })
    });
    let mut answers = BTreeMap::<(bool, u16), u32>::new();
    for fan in futures::future::join_all(load).await {
        for (k, v) in fan.unwrap() {
            *answers.entry(k).or_default() += v;
        }
    }
    let spins: u64 = hogs.into_iter().map(|h| h.join().unwrap()).sum();
    eprintln!("answers (through B, status) -> count: {answers:?}; {spins} spins");

    let (oa, ob, ra, rb, ..) = state().await;
    assert_eq!(
        (oa, ob, ra, rb),
        before,
        "(owned A, owned B, rebalances A, rebalances B) moved"
    );
    let served_by_b: u32 = answers
        .iter()
        .filter(|((through_b, status), _)| *through_b && matches!(status, 201 | 409))
        .map(|(_, n)| n)
        .sum();
    assert!(served_by_b > 0, "B answered nothing: {answers:?}");
    let unserved: u32 = answers
        .iter()
        .filter(|((_, status), _)| !matches!(status, 201 | 409))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(unserved, 0, "requests not served under load: {answers:?}");
}
