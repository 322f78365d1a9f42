//! `TestApp`: the real server on port 0 with a temporary data directory and a manual clock,
//! plus typed helpers for the requests the tests make, and [`wait_until`] for waiting on what
//! runs behind them (the query side, the projectors, the writer's timers).

#![allow(dead_code, unused_imports)] // each test binary uses a different subset of the helpers and answers

mod answers;
pub use answers::*;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Display;
use std::sync::Arc;

use chrono::{DateTime, Duration, Utc};
use frontrow::{App, Settings};
use frontrow_command::clock::{Clock, ManualClock};
use frontrow_command::domain::EventState;
use frontrow_http::auth::Auth;
use frontrow_journal::Journal;
pub use frontrow_schema::testsuite::wait_until;
use frontrow_schema::testsuite::{seat_map_json, seated, standing};
use frontrow_schema::{CustomerId, EventId};
use secrecy::SecretString;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

pub const ORGANIZER_KEY: &str = "acme-key-0123456789abcdef0123456789";
pub const OTHER_ORGANIZER_KEY: &str = "other-key-0123456789abcdef0123456789";
pub const WEBHOOK_SECRET: &str = "whsec_test_secret_0123456789abcdef";
pub const TOKEN_SECRET: &str = "test-token-secret-0123456789abcdef";
/// The header that makes a request the demo organizer's.
pub const AS_ORGANIZER: (&str, &str) = ("x-api-key", ORGANIZER_KEY);

/// How long a test waits for what runs behind a request (the query side, the projectors, the
/// writer's timers) before it fails.
pub const WAIT: std::time::Duration = std::time::Duration::from_secs(10);

pub struct TestApp {
    pub base: String,
    pub client: reqwest::Client,
    pub clock: Arc<ManualClock>,
    pub journal: Arc<dyn Journal>,
    pub auth: Arc<Auth>,
    pub dir: tempfile::TempDir,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
}

pub fn settings(dir: &std::path::Path) -> Settings {
    let mut organizers = BTreeMap::new();
    organizers.insert("acme".to_owned(), SecretString::from(ORGANIZER_KEY));
    organizers.insert("other".to_owned(), SecretString::from(OTHER_ORGANIZER_KEY));
    Settings {
        data_dir: dir.to_path_buf(),
        partitions: 4,
        token_secret: Some(SecretString::from(TOKEN_SECRET)),
        webhook_secret: Some(SecretString::from(WEBHOOK_SECRET)),
        organizers,
        sample_event: false,
        // Tests send bursts from 127.0.0.1; those about the limits turn them on.
        limits: frontrow_http::limits::Limits::off(),
        ..Settings::default()
    }
}

/// A `kafka://` journal setting on a topic of its own (broker from `FRONTROW_KAFKA_BROKERS`).
pub fn kafka_journal() -> frontrow::settings::JournalChoice {
    frontrow::settings::JournalChoice::Kafka {
        brokers: std::env::var("FRONTROW_KAFKA_BROKERS").unwrap_or_else(|_| "127.0.0.1:9092".into()),
        topic: format!("frontrow.test.app.{}", uuid::Uuid::new_v4().simple()),
    }
}

impl TestApp {
    pub async fn spawn() -> Self {
        Self::spawn_with(|_| {}).await
    }

    /// [`Self::spawn`], with the small test event on sale ([`Self::create_event`]).
    pub async fn spawn_with_event() -> (Self, EventId) {
        let app = Self::spawn().await;
        let event = app.create_event().await;
        (app, event)
    }

    /// A server with the small test event on sale ([`Self::create_event`]) and `customer`
    /// holding `seats` of it: the app, the event and the reservation's id.
    pub async fn spawn_holding(customer: &str, seats: &[&str]) -> (Self, EventId, ReservationId) {
        let (app, event) = Self::spawn_with_event().await;
        let held = app.reserve_seats_ok(customer, event, seats).await;
        (app, event, held.reservation.reservation_id)
    }

    pub async fn spawn_with(configure: impl FnOnce(&mut Settings)) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let mut settings = settings(dir.path());
        configure(&mut settings);
        let clock = Arc::new(ManualClock::new(Utc::now()));
        let app = App::build(settings, clock.clone() as Arc<dyn Clock>).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let journal = app.journal.clone();
        let auth = app.auth.clone();
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let server = tokio::spawn(app.run(listener, async move {
            let _ = rx.await;
        }));
        let client = reqwest::Client::builder().pool_max_idle_per_host(64).build().unwrap();
        Self {
            base,
            client,
            clock,
            journal,
            auth,
            dir,
            shutdown: Some(tx),
            server: Some(server),
        }
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(server) = self.server.take() {
            server.await.unwrap().unwrap();
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn now(&self) -> DateTime<Utc> {
        self.clock.now()
    }

    pub fn token(&self, customer: &str) -> String {
        let now = Utc::now();
        self.auth
            .mint(&CustomerId::parse(customer).unwrap(), now, now + Duration::hours(1))
    }

    /// `customer` pays reservation `rid` through the demo provider, with `key` as its
    /// `Idempotency-Key` when given.
    pub async fn demo_pay(
        &self,
        customer: &str,
        event: EventId,
        rid: &ReservationId,
        key: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(self.url("/demo/payments"))
            .bearer_auth(self.token(customer));
        if let Some(key) = key {
            request = request.header("idempotency-key", key);
        }
        send(request.json(&json!({"event_id": event, "reservation_id": rid}))).await
    }

    /// A small event: sections A (rows 1-2, 10 seats, GOLD 100.00) and B (row 1, 6 seats, STD 50.00).
    pub fn event_body(&self, onsale_in: Duration) -> Value {
        let now = self.now();
        json!({
            "title": "Test Night", "artist": "The Testers", "venue": "Hall", "city": "Utrecht",
            "starts_at": now + Duration::days(30), "onsale_at": now + onsale_in,
            "hold_minutes": 10, "max_seats_per_order": 4, "currency": "EUR",
            "seat_map": seat_map_json(
                &[("GOLD", "Gold", 10000), ("STD", "Standard", 5000)],
                vec![
                    seated("A", "Stalls", &[("1", 10, "GOLD"), ("2", 10, "GOLD")]),
                    seated("B", "Balcony", &[("1", 6, "STD")]),
                ],
            )
        })
    }

    pub async fn create_event_with(&self, key: &str, body: &Value) -> reqwest::Response {
        send(
            self.client
                .post(self.url("/events"))
                .header("x-api-key", key)
                .json(body),
        )
        .await
    }

    /// Creates an on-sale event and returns its id.
    pub async fn create_event(&self) -> EventId {
        self.create_event_from(&self.event_body(Duration::minutes(-1))).await
    }

    /// Creates the event `body` describes (as the demo organizer) and returns its id once the
    /// query side has seen it.
    pub async fn create_event_from(&self, body: &Value) -> EventId {
        self.create_event_written(body).await.0
    }

    /// [`Self::create_event_from`], also returning the position of the event's first record.
    pub async fn create_event_written(&self, body: &Value) -> (EventId, String) {
        let written: EventWritten = answer(self.create_event_with(ORGANIZER_KEY, body).await, 201).await;
        let position = written.position.expect("a create answers its position");
        // Read your own write: return once the query side has seen the new event.
        self.availability(written.event_id, Some(&position)).await;
        (written.event_id, position)
    }

    /// Creates the small test event ([`Self::event_body`], on sale `onsale_in` from now) changed by
    /// `change`, as [`Self::create_event_from`] does.
    pub async fn create_event_changed(&self, onsale_in: Duration, change: impl FnOnce(&mut Value)) -> EventId {
        let mut body = self.event_body(onsale_in);
        change(&mut body);
        self.create_event_from(&body).await
    }

    /// The event as `GET /events/{event}` answers it.
    pub async fn event_details(&self, event: EventId) -> EventDetails {
        typed(self.get_json(&format!("/events/{event}")).await)
    }

    /// Opens the event's waiting room with `settings` (as the demo organizer).
    pub async fn open_queue(&self, event: EventId, settings: Value) -> reqwest::Response {
        let request = self.client.put(self.url(&format!("/events/{event}/queue")));
        send(request.header("x-api-key", ORGANIZER_KEY).json(&settings)).await
    }

    pub async fn reserve(&self, customer: &str, event: EventId, key: &str, body: Value) -> reqwest::Response {
        self.client
            .post(self.url(&format!("/events/{event}/reservations")))
            .bearer_auth(self.token(customer))
            .header("idempotency-key", key)
            .json(&body)
            .send()
            .await
            .unwrap()
    }

    pub async fn reserve_seats(&self, customer: &str, event: EventId, seats: &[&str]) -> reqwest::Response {
        self.reserve(
            customer,
            event,
            &uuid::Uuid::new_v4().to_string(),
            json!({ "seats": seats }),
        )
        .await
    }

    /// The hold [`Self::reserve_seats`] answers; fails unless it is a 201.
    pub async fn reserve_seats_ok(&self, customer: &str, event: EventId, seats: &[&str]) -> ReservationResponse {
        answer(self.reserve_seats(customer, event, seats).await, 201).await
    }

    /// The customer's reservation `rid` as `GET /events/{event}/reservations/{rid}` answers it.
    pub async fn reservation(&self, customer: &str, event: EventId, rid: &ReservationId) -> ReservationResponse {
        typed(
            self.get_json_as(customer, &format!("/events/{event}/reservations/{rid}"))
                .await,
        )
    }

    /// Polls the customer's reservation until its status is `status`; fails after [`WAIT`].
    pub async fn reservation_until(
        &self,
        customer: &str,
        event: EventId,
        rid: &ReservationId,
        status: &str,
    ) -> ReservationResponse {
        wait_until(
            WAIT,
            &format!("{customer}'s reservation {rid} is {status}"),
            || self.reservation(customer, event, rid),
            |r| (r.reservation.status == status).then(|| r.clone()),
        )
        .await
    }

    /// Pays reservation `rid` through a `payment_intent.succeeded` webhook (provider event id
    /// `evt`); returns the webhook's answer.
    pub async fn pay(&self, event: EventId, evt: &str, rid: &ReservationId, amount: i64) -> WebhookAnswer {
        let paid = self.payment_event("payment_intent.succeeded", evt, event, rid, amount);
        typed(self.webhook(&paid).await.json().await.unwrap())
    }

    pub async fn post_as(&self, customer: &str, path: &str) -> reqwest::Response {
        send(self.client.post(self.url(path)).bearer_auth(self.token(customer))).await
    }

    /// An anonymous `GET`.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        send(self.client.get(self.url(path))).await
    }

    /// A `GET` with one extra header (`("x-api-key", key)`, `("last-event-id", id)`, ...).
    pub async fn get_with(&self, path: &str, header: (&str, &str)) -> reqwest::Response {
        send(self.client.get(self.url(path)).header(header.0, header.1)).await
    }

    /// An anonymous `GET`'s body as JSON (whatever its status).
    pub async fn get_json(&self, path: &str) -> Value {
        send_json(self.client.get(self.url(path))).await
    }

    pub async fn get_as(&self, customer: &str, path: &str) -> reqwest::Response {
        send(self.client.get(self.url(path)).bearer_auth(self.token(customer))).await
    }

    /// [`Self::get_as`]'s body as JSON (whatever its status).
    pub async fn get_json_as(&self, customer: &str, path: &str) -> Value {
        self.get_as(customer, path).await.json().await.unwrap()
    }

    /// A Stripe-shaped payment event for a reservation.
    /// (`reservation` is any text, so a test can send one that names no reservation.)
    pub fn payment_event(
        &self,
        kind: &str,
        evt: &str,
        event: EventId,
        reservation: impl Display,
        amount: i64,
    ) -> Value {
        json!({
            "id": evt, "object": "event", "type": kind, "created": self.now().timestamp(),
            "data": {"object": {
                "id": format!("pi_{evt}"), "object": "payment_intent", "amount": amount, "currency": "eur",
                "metadata": {"event_id": event.to_string(), "reservation_id": reservation.to_string()},
                "last_payment_error": if kind.ends_with("failed") { json!({"message": "Your card was declined."}) } else { Value::Null }
            }}
        })
    }

    /// Delivers a webhook signed with `secret` at `timestamp`.
    pub async fn webhook_signed(&self, body: &Value, secret: &str, timestamp: i64) -> reqwest::Response {
        let bytes = serde_json::to_vec(body).unwrap();
        let header = frontrow_command::payments::sign(&SecretString::from(secret), timestamp, &bytes);
        self.client
            .post(self.url("/webhooks/payments"))
            .header("content-type", "application/json")
            .header("stripe-signature", header)
            .body(bytes)
            .send()
            .await
            .unwrap()
    }

    pub async fn webhook(&self, body: &Value) -> reqwest::Response {
        self.webhook_signed(body, WEBHOOK_SECRET, self.now().timestamp()).await
    }

    /// The availability map, read after `position` (if given) is visible.
    pub async fn availability(&self, event: EventId, after: Option<&str>) -> AvailabilityMap {
        typed(self.availability_json(event, after).await)
    }

    /// [`Self::availability`] as the raw JSON, for a test of what the map leaves out.
    pub async fn availability_json(&self, event: EventId, after: Option<&str>) -> Value {
        let mut url = self.url(&format!("/events/{event}/availability"));
        if let Some(p) = after {
            url.push_str(&format!("?after={p}"));
        }
        ok_json(send(self.client.get(url)).await).await
    }

    /// The map's letter for `seat` (`A`, `H`, `B` or `W`), as the query side has it now.
    pub async fn seat_letter(&self, event: EventId, seat: &str) -> char {
        seat_letters(&self.availability(event, None).await)[seat]
    }

    /// The availability map once the write that answered `res` (its `frontrow-position`) is
    /// visible.
    pub async fn map_after(&self, event: EventId, res: &reqwest::Response) -> AvailabilityMap {
        self.availability(event, Some(&position(res))).await
    }

    /// Every event's state rebuilt from scratch by replaying the journal through the domain.
    pub async fn replay(&self) -> HashMap<EventId, EventState> {
        replay(self.journal.as_ref()).await
    }
}

/// Sends a request the test expects to be answered (a transport error fails).
pub async fn send(request: reqwest::RequestBuilder) -> reqwest::Response {
    request.send().await.unwrap()
}

/// Sends a request and reads its answer's body as JSON (whatever its status).
pub async fn send_json(request: reqwest::RequestBuilder) -> Value {
    send(request).await.json().await.unwrap()
}

/// [`send_json`]'s answer read as a `T`.
pub async fn send_typed<T: DeserializeOwned>(request: reqwest::RequestBuilder) -> T {
    typed(send_json(request).await)
}

/// The JSON body of an answer that must be a 200.
pub async fn ok_json(res: reqwest::Response) -> Value {
    assert_eq!(res.status(), 200);
    res.json().await.unwrap()
}

/// The body of an answer that must be a 200, read as a `T`.
pub async fn ok<T: DeserializeOwned>(res: reqwest::Response) -> T {
    typed(ok_json(res).await)
}

/// The body of an answer that must have `status` (else fails with the body), read as a `T`.
pub async fn answer<T: DeserializeOwned>(res: reqwest::Response, status: u16) -> T {
    let got = res.status();
    let body = res.text().await.unwrap();
    assert_eq!(got, status, "{body}");
    typed(serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}")))
}

/// The `frontrow-position` header of a write's answer: where its record is in the log.
pub fn position(res: &reqwest::Response) -> String {
    res.headers()["frontrow-position"].to_str().unwrap().to_owned()
}

/// The answer to a `GET`, read as a `T` once it is a 200, polled until `check` accepts it.
async fn answer_until<T: DeserializeOwned + Clone + std::fmt::Debug, Get: Future<Output = reqwest::Response>>(
    message: &str,
    timeout: std::time::Duration,
    get: impl Fn() -> Get,
    check: impl Fn(&T) -> bool,
) -> T {
    let look = || async {
        let res = get().await;
        if res.status() == 200 {
            Some(typed::<T>(res.json().await.unwrap()))
        } else {
            None
        }
    };
    wait_until(timeout, message, look, |v| v.as_ref().filter(|v| check(v)).cloned()).await
}

/// The fan's status on the query side, polled until `check` holds.
pub async fn status_until(
    app: &TestApp,
    event: EventId,
    who: &str,
    check: impl Fn(&QueueStatus) -> bool,
) -> QueueStatus {
    let path = format!("/events/{event}/queue/me");
    let message = format!("{who}'s status matches");
    answer_until(
        &message,
        std::time::Duration::from_secs(5),
        || app.get_as(who, &path),
        check,
    )
    .await
}

/// Polls a GET until `check` accepts its answer as a `T` (the ledger projector runs behind the
/// log).
pub async fn get_until<T: DeserializeOwned + Clone + std::fmt::Debug>(
    app: &TestApp,
    path: &str,
    header: (&str, &str),
    check: impl Fn(&T) -> bool,
) -> T {
    let message = format!("{path} satisfies the check");
    answer_until(&message, WAIT, || app.get_with(path, header), check).await
}

/// Checks that an answer is an `application/problem+json` of `status` and type `kind`; returns
/// its body.
pub async fn problem(res: reqwest::Response, status: u16, kind: &str) -> Problem {
    assert_eq!(res.status(), status, "status");
    assert_eq!(res.headers()["content-type"], "application/problem+json");
    let body: Problem = typed(res.json().await.unwrap());
    assert_eq!(body.kind, format!("urn:frontrow:problem:{kind}"), "{body:?}");
    assert_eq!(body.status, status);
    body
}

/// Every partition's end offset: equal before and after a request that must write nothing.
pub async fn ends(journal: &dyn Journal) -> Vec<u64> {
    let mut ends = Vec::new();
    for p in 0..journal.partitions() {
        ends.push(journal.end_offset(p).await.unwrap());
    }
    ends
}

/// Every event's state replayed from the journal (see [`frontrow_command::replay`]).
pub async fn replay(journal: &dyn Journal) -> HashMap<EventId, EventState> {
    frontrow_command::replay::replay(journal)
        .await
        .expect("the journal replays")
}

/// The seat letters of an availability map, keyed by seat id.
pub fn seat_letters(map: &AvailabilityMap) -> BTreeMap<String, char> {
    let mut seats = BTreeMap::new();
    for section in &map.sections {
        for row in &section.rows {
            for (i, c) in row.seats.chars().enumerate() {
                seats.insert(format!("{}-{}-{}", section.code, row.name, i + 1), c);
            }
        }
    }
    seats
}

/// The seats an availability map shows as `letter` (`'H'`: held, ...).
pub fn seats_lettered(map: &AvailabilityMap, letter: char) -> BTreeSet<String> {
    seat_letters(map)
        .into_iter()
        .filter(|(_, c)| *c == letter)
        .map(|(seat, _)| seat)
        .collect()
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct Sse {
    pub id: Option<String>,
    pub event: Option<String>,
    pub data: String,
}

/// Reads a `text/event-stream` response frame by frame.
pub struct SseReader {
    res: reqwest::Response,
    buf: String,
}

impl SseReader {
    pub async fn open(app: &TestApp, path: &str, customer: Option<&str>, last_id: Option<&str>) -> Self {
        let mut req = app.client.get(app.url(path));
        if let Some(c) = customer {
            req = req.bearer_auth(app.token(c));
        }
        if let Some(id) = last_id {
            req = req.header("last-event-id", id);
        }
        Self::from_response(req.send().await.unwrap())
    }

    /// Reads `res`, which must be an open stream (`200`, `text/event-stream`).
    pub fn from_response(res: reqwest::Response) -> Self {
        assert_eq!(res.status(), 200, "{}", res.url());
        assert_eq!(res.headers()["content-type"], "text/event-stream");
        Self {
            res,
            buf: String::new(),
        }
    }

    /// The next event (comments, e.g. heartbeats, skipped); `None` after `wait` without one.
    pub async fn next(&mut self, wait: std::time::Duration) -> Option<Sse> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let frame: String = self.buf.drain(..end + 2).collect();
                let mut sse = Sse {
                    id: None,
                    event: None,
                    data: String::new(),
                };
                for line in frame.lines() {
                    if let Some(v) = line.strip_prefix("id:") {
                        sse.id = Some(v.trim_start().to_owned());
                    } else if let Some(v) = line.strip_prefix("event:") {
                        sse.event = Some(v.trim_start().to_owned());
                    } else if let Some(v) = line.strip_prefix("data:") {
                        sse.data.push_str(v.strip_prefix(' ').unwrap_or(v));
                    }
                }
                if sse.event.is_some() || !sse.data.is_empty() {
                    return Some(sse);
                }
                continue;
            }
            let chunk = tokio::time::timeout_at(deadline, self.res.chunk())
                .await
                .ok()?
                .unwrap()?;
            self.buf.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    }
}

/// Polls `GET /search` until `check` accepts the answer (the projector indexes asynchronously).
pub async fn search_until(app: &TestApp, query: &str, check: impl Fn(&SearchResponse) -> bool) -> SearchResponse {
    let look = || async { ok::<SearchResponse>(app.get(&format!("/search?{query}")).await).await };
    wait_until(WAIT, &format!("search?{query} satisfies the check"), look, |v| {
        check(v).then(|| v.clone())
    })
    .await
}

/// A seat's (or place's) history from `GET /events/{id}/seats/{seat}/history`, polled until it
/// has `entries` entries.
pub async fn history_until(app: &TestApp, event: EventId, seat: &str, entries: usize) -> SeatHistory {
    get_until(
        app,
        &format!("/events/{event}/seats/{seat}/history"),
        AS_ORGANIZER,
        |v: &SeatHistory| v.history.len() == entries,
    )
    .await
}

/// The organizer's `GET /events/{id}/sales`, polled until `check` accepts it (the projector
/// writes the ledger asynchronously).
pub async fn sales_until(app: &TestApp, event: EventId, check: impl Fn(&EventSales) -> bool) -> EventSales {
    get_until(app, &format!("/events/{event}/sales"), AS_ORGANIZER, check).await
}

/// `customer`'s `GET /me/bookings`, polled until the ledger has one (the projector writes it
/// asynchronously).
pub async fn bookings_until(app: &TestApp, customer: &str) -> CustomerBookings {
    let bearer = format!("Bearer {}", app.token(customer));
    get_until(
        app,
        "/me/bookings",
        ("authorization", &bearer),
        |v: &CustomerBookings| !v.bookings.is_empty(),
    )
    .await
}

/// The kinds of a seat history's entries, in order (`held`, `booked`, `expired`, ...).
pub fn history_kinds(history: &SeatHistory) -> Vec<&str> {
    history.history.iter().map(|h| h.kind.as_str()).collect()
}

/// Runs the real `frontrow analytics ARGS` on the app's data directory; fails on a non-zero exit.
pub fn analytics_cli(app: &TestApp, args: &[&str]) -> std::process::Output {
    run_ok(
        std::process::Command::new(env!("CARGO_BIN_EXE_frontrow"))
            .arg("--data-dir")
            .arg(app.dir.path())
            .arg("analytics")
            .args(args)
            .env("FRONTROW_PARTITIONS", "4")
            .env("FRONTROW_LOG", "warn"),
        &format!("frontrow analytics {args:?}"),
    )
}

/// Runs `command` to its end; fails, with its stderr, on a non-zero exit.
pub fn run_ok(command: &mut std::process::Command, what: &str) -> std::process::Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{what}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// A loopback port that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A mixed venue's seat map: section `A`, one row of `seats` seats at 80.00, and `FLOOR`, a
/// standing zone of `capacity` places at 30.00.
pub fn mixed_seat_map(seats: u16, capacity: u32) -> Value {
    seat_map_json(
        &[("SEAT", "Seated", 8000), ("GA", "General admission", 3000)],
        vec![
            seated("A", "Stalls", &[("1", seats, "SEAT")]),
            standing("FLOOR", "Standing floor", capacity, "GA"),
        ],
    )
}

/// Starts the real binary `command` describes (stdout is piped here) and returns it with the
/// base URL it prints once it listens; its further output is drained so it never blocks.
pub fn spawn_listening(command: &mut std::process::Command) -> (std::process::Child, String) {
    use std::io::{BufRead, BufReader};
    let mut child = command
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("the frontrow binary starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let base = loop {
        let line = lines.next().expect("the process prints its address").unwrap();
        if let Some(addr) = line.strip_prefix("FrontRow listening on ") {
            break addr.trim().to_owned();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    (child, base)
}
