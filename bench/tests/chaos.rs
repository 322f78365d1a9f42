//! The short chaos run (about a minute): the deployment of `frontrow-bench chaos` on the
//! three-broker cluster, fans reserving and paying through HAProxy while a seeded schedule
//! kills and pauses nodes and brokers (two or three faults in a minute, no two in a row of the
//! same kind). Nothing acknowledged may be lost, no seat sold twice, and the
//! query node and the PostgreSQL ledger must equal the log. Failover times are reported (the
//! README has the measured ones), never asserted.

use std::time::Duration;

use frontrow_bench::chaos::{CLUSTER_BROKERS, ChaosConfig, FAULT_KINDS, deploy_dir, run};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs kafka-cluster: run the README's test command"]
async fn a_minute_of_faults_loses_nothing_and_sells_no_seat_twice() {
    let out = tempfile::tempdir().unwrap();
    let config = ChaosConfig {
        seed: 3,
        duration: Duration::from_secs(60),
        fans: 6,
        frontrow_bin: frontrow_bench::child::default_binary()
            .expect("the frontrow binary (cargo build --bin frontrow)"),
        database_url: std::env::var("FRONTROW_BENCH_DATABASE_URL")
            .unwrap_or_else(|_| "postgres://frontrow:frontrow@127.0.0.1:5432/frontrow".into()),
        brokers: CLUSTER_BROKERS.into(),
        deploy_dir: deploy_dir(),
        out_dir: out.path().to_path_buf(),
        kinds: FAULT_KINDS.to_vec(),
    };
    let report = run(&config).await.unwrap();
    // The run's ledger schemas are gone with it (its topics are deleted likewise).
    assert!(report.ledger_schema.starts_with("chaos_"), "{}", report.ledger_schema);
    let db = sqlx::PgPool::connect(&config.database_url).await.unwrap();
    let left: i64 = sqlx::query_scalar("SELECT count(*) FROM pg_namespace WHERE nspname IN ($1, $1 || '_check')")
        .bind(&report.ledger_schema)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(
        left, 0,
        "the run's ledger schemas {} were left behind",
        report.ledger_schema
    );
    eprintln!("{report:#?}\n{}\n{}", report.handover_summary(), report.summary());
    assert!(report.faults.len() >= 2, "fewer than two faults: {:?}", report.faults);
    assert!(report.reservations_acknowledged > 0, "nobody got a seat");
    assert!(report.payments_acknowledged > 0, "nobody paid");
    assert_eq!(report.lost, 0, "acknowledged reservations missing from the log");
    assert_eq!(report.sold_twice, 0, "seats acknowledged to two reservations");
    assert!(report.map_equals_log, "the query node's maps differ from the log");
    assert!(report.ledger_equals_log, "the PostgreSQL ledger differs from the log");
    // Every partition of a node that was killed or paused got another owner (how fast is
    // reported, not asserted).
    assert!(
        report.handovers.iter().all(|h| h.served_again_s.is_some()),
        "a stopped node's partition was never served by another: {:?}",
        report.handovers
    );
}
