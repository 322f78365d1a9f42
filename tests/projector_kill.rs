//! `kill -9` of a real `frontrow projector` process in the middle of its batches: after a
//! restart the PostgreSQL ledger equals a fresh replay of the same log, row for row.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use sqlx::{PgPool, Row};

const TABLES: [&str; 9] = [
    "events",
    "seats",
    "reservations",
    "bookings",
    "payments",
    "refunds",
    "money_entries",
    "seat_history",
    "projector_positions",
];

fn database_url() -> String {
    std::env::var("FRONTROW_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://frontrow:frontrow@127.0.0.1:5432/frontrow".into())
}

/// A projector process on its own copy of the journal, writing the ledger into `schema`.
fn projector(journal_dir: &std::path::Path, schema: &str) -> (Child, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    for file in ["journal.db", "journal.db-wal"] {
        if journal_dir.join(file).exists() {
            std::fs::copy(journal_dir.join(file), dir.path().join(file)).unwrap();
        }
    }
    let child = Command::new(env!("CARGO_BIN_EXE_frontrow"))
        .args(["projector", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .env("FRONTROW_LOG", "warn")
        .env("FRONTROW_PARTITIONS", "4")
        .env("FRONTROW_DATABASE_URL", database_url())
        .env("FRONTROW_LEDGER_SCHEMA", schema)
        .env("FRONTROW_PROJECTOR_BATCH", "25")
        .stdout(Stdio::null())
        .spawn()
        .expect("the frontrow binary starts");
    (child, dir)
}

async fn projected(pool: &PgPool, schema: &str) -> i64 {
    let sql = format!("SELECT coalesce(sum(next_offset), 0)::bigint FROM {schema}.projector_positions");
    sqlx::query(sqlx::AssertSqlSafe(sql))
        .fetch_one(pool)
        .await
        .map(|r| r.get::<i64, _>(0))
        .unwrap_or(0)
}

async fn wait_for(pool: &PgPool, schema: &str, done: impl Fn(i64) -> bool) -> i64 {
    let message = format!("the projector of {schema} gets there");
    wait_until(
        Duration::from_secs(120),
        &message,
        || projected(pool, schema),
        |&n| done(n).then_some(n),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs postgres: run the README's test command"]
async fn a_projector_killed_mid_batch_resumes_to_the_same_ledger_as_a_fresh_replay() {
    // A log of a few thousand events: holds, bookings, releases.
    let app = TestApp::spawn().await;
    // Seats are taken one by one along the rows, leaving singles on the way: the no-orphan
    // rule is off (tests/seating_orphans.rs covers it).
    let mut body = app.event_body(chrono::Duration::minutes(-1));
    body["allow_orphan_seats"] = serde_json::json!(true);
    let event = app.create_event_from(&body).await;
    for round in 0..6 {
        let tasks: Vec<_> = (0..10)
            .map(|i| {
                let seat = format!("A-{}-{}", 1 + i / 10, 1 + i % 10);
                let fan = format!("fan{round}-{i}");
                (fan, seat)
            })
            .collect();
        for (fan, seat) in tasks {
            let rid = app
                .reserve_seats_ok(&fan, event, &[&seat])
                .await
                .reservation
                .reservation_id;
            if round % 3 == 2 {
                let paid = app.payment_event("payment_intent.succeeded", &format!("evt_{fan}"), event, rid, 10000);
                app.webhook(&paid).await;
                app.post_as(&fan, &format!("/events/{event}/reservations/{rid}/cancel"))
                    .await;
            } else {
                app.post_as(&fan, &format!("/events/{event}/reservations/{rid}/release"))
                    .await;
            }
        }
    }
    let mut end = 0;
    for p in 0..4 {
        end += app.journal.end_offset(p).await.unwrap() as i64;
    }
    assert!(end > 150, "a log of {end} records");
    // A copy of the (now idle) journal outlives the server.
    let journal = tempfile::tempdir().unwrap();
    for file in ["journal.db", "journal.db-wal"] {
        if app.dir.path().join(file).exists() {
            std::fs::copy(app.dir.path().join(file), journal.path().join(file)).unwrap();
        }
    }
    app.stop().await;
    let journal_dir = journal.path().to_path_buf();

    let pool = PgPool::connect(&database_url())
        .await
        .expect("PostgreSQL is reachable: run deploy/local/up.sh postgres");
    let run = uuid::Uuid::new_v4().simple().to_string();
    let (killed, fresh) = (format!("kill_{}", &run[..12]), format!("fresh_{}", &run[..12]));

    // Kill -9 three times while batches are going in, restarting on the same schema each time:
    // every restart resumes from the positions stored with the rows.
    let mut kills = Vec::new();
    for share in [0, 1, 2] {
        let (mut child, _dir) = projector(&journal_dir, &killed);
        let at = wait_for(&pool, &killed, |n| n > end * share / 3).await;
        child.kill().unwrap();
        child.wait().unwrap();
        kills.push(at);
    }
    println!("killed the projector at {kills:?} of {end} records");
    assert!(
        kills.iter().any(|&at| at < end),
        "at least one kill landed before the end"
    );
    let (mut child, _dir) = projector(&journal_dir, &killed);
    wait_for(&pool, &killed, |n| n >= end).await;
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut child, _dir3) = projector(&journal_dir, &fresh);
    wait_for(&pool, &fresh, |n| n >= end).await;
    child.kill().unwrap();
    child.wait().unwrap();

    for table in TABLES {
        for (a, b) in [(&killed, &fresh), (&fresh, &killed)] {
            let sql =
                format!("SELECT count(*) FROM (SELECT * FROM {a}.{table} EXCEPT ALL SELECT * FROM {b}.{table}) d");
            let diff: i64 = sqlx::query(sqlx::AssertSqlSafe(sql))
                .fetch_one(&pool)
                .await
                .unwrap()
                .get(0);
            assert_eq!(diff, 0, "{table}: {diff} rows of {a} are not in {b}");
        }
        let sql = format!("SELECT count(*) FROM {killed}.{table}");
        let rows: i64 = sqlx::query(sqlx::AssertSqlSafe(sql))
            .fetch_one(&pool)
            .await
            .unwrap()
            .get(0);
        assert!(rows > 0 || table == "refunds", "{table} is empty");
    }
    for schema in [&killed, &fresh] {
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
            .execute(&pool)
            .await
            .unwrap();
    }
}
