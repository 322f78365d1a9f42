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
