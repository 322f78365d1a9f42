//! `/metrics` after a scripted onsale: the counters agree with what the clients saw and with
//! the ledger. The process's metrics recorder is global, so this binary holds this one test
//! and nothing else records into it.

mod common;

use std::time::Duration;

use common::{AS_ORGANIZER, EventSales, TestApp, typed, wait_until};
use futures::future::join_all;
use serde_json::Value;

/// The sum of every sample of `name` whose labels include all of `labels`.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (series, value) = l.rsplit_once(' ')?;
            let (metric, rest) = series.split_once('{').unwrap_or((series, "}"));
            (metric == name).then_some((rest.trim_end_matches('}'), value))
        })
        .filter(|(set, _)| {
            labels
                .iter()
                .all(|(k, v)| set.split(',').any(|pair| pair == format!("{k}=\"{v}\"")))
        })
        .map(|(_, value)| value.parse::<f64>().unwrap())
        .sum()
}

async fn scrape(app: &TestApp) -> String {
    let res = app.client.get(app.url("/metrics")).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    res.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_after_an_onsale_match_the_clients_and_the_ledger() {
    // A one-place mailbox and one command per batch, so a burst is shed at the mailbox.
    let app = TestApp::spawn_with(|s| {
        s.mailbox = 1;
        s.batch = 1;
    })
    .await;
    let event = app.create_event().await;
    let before = scrape(&app).await;
    let route = "/events/{event_id}/reservations";
    let count = |text: &str, status: &str| {
        sample(
            text,
            "frontrow_http_requests_total",
            &[("method", "POST"), ("route", route), ("status", status)],
        )
    };

    // 26 seats, 60 fans each asking for one seat of the first ten of row A-1 at once: some
    // hold, some find the seat taken (409), some are shed (503 overloaded).
    let seats: Vec<String> = (1..=10).map(|n| format!("A-1-{n}")).collect();
    let answers = join_all((0..60).map(|i| {
        let (app, seat) = (&app, seats[i % seats.len()].clone());
        async move {
            let res = app.reserve_seats(&format!("fan{i}"), event, &[&seat]).await;
            let status = res.status().as_u16();
            let body: Value = res.json().await.unwrap();
            (status, body["type"].as_str().unwrap_or_default().to_owned())
        }
    }))
    .await;
    let held = answers.iter().filter(|(s, _)| *s == 201).count();
    let taken = answers.iter().filter(|(s, _)| *s == 409).count();
    let shed = answers
        .iter()
        .filter(|(s, t)| *s == 503 && t == "urn:frontrow:problem:overloaded")
        .count();
    assert_eq!(held + taken + shed, 60, "unexpected answers: {answers:?}");
    assert!((1..=10).contains(&held), "{held} holds of 10 seats");
    assert!(
        shed > 0,
        "a burst of 60 at a one-place mailbox shed nothing: {answers:?}"
    );

    let after = scrape(&app).await;
    assert_eq!(count(&after, "201") - count(&before, "201"), held as f64);
    assert_eq!(count(&after, "409") - count(&before, "409"), taken as f64);
    assert_eq!(count(&after, "503") - count(&before, "503"), shed as f64);
    let shed_metric = |t: &str| sample(t, "frontrow_writer_shed_total", &[("reason", "mailbox_full")]);
    assert_eq!(shed_metric(&after) - shed_metric(&before), shed as f64);
    // Each hold is one journal record at least; the append histogram saw the appends.
    let appended = |t: &str| sample(t, "frontrow_journal_appended_records_total", &[]);
    assert!(appended(&after) - appended(&before) >= held as f64);
    assert!(
        sample(
            &after,
            "frontrow_http_request_duration_seconds_count",
            &[("route", route)]
        ) >= 60.0
    );
    assert_eq!(sample(&after, "frontrow_partitions_owned", &[]), 4.0);

    // The ledger counts the same holds once its projector has caught up.
    let sales = format!("/events/{event}/sales");
    let ledger_held = || async {
        let res = app.get_with(&sales, AS_ORGANIZER).await;
        if res.status() == 200 {
            typed::<EventSales>(res.json().await.unwrap()).total.held
        } else {
            -1
        }
    };
    let message = format!("the ledger's holds are the {held} 201s");
    wait_until(Duration::from_secs(20), &message, ledger_held, |n| {
        (*n == held as i64).then_some(())
    })
    .await;
    let lag = scrape(&app).await;
    assert_eq!(
        sample(&lag, "frontrow_follower_lag_records", &[("reader", "ledger")]),
        0.0
    );
    assert_eq!(
        sample(&lag, "frontrow_follower_lag_seconds", &[("reader", "ledger")]),
        0.0
    );
    assert!(
        !lag.contains("reader=\"follower\""),
        "a lag series under no reader's name"
    );
    for reader in ["query", "search", "ledger"] {
        for metric in ["frontrow_follower_lag_records", "frontrow_follower_lag_seconds"] {
            assert!(
                lag.contains(&format!("{metric}{{reader=\"{reader}\"")),
                "no {metric} series for {reader}"
            );
        }
    }

    let unmatched = app.client.get(app.url("/no/such/route")).send().await.unwrap();
    assert_eq!(unmatched.status(), 404);
    let last = scrape(&app).await;
    assert!(
        sample(
            &last,
            "frontrow_http_requests_total",
            &[("route", "unmatched"), ("status", "404")]
        ) >= 1.0,
        "unmatched paths are counted under one label, not their raw path"
    );
    assert!(!last.contains("/no/such/route"));
    // Every series the node exports is one the dashboard may use (frontrow::metrics::METRICS).
    let listed: Vec<&str> = frontrow::metrics::METRICS.iter().map(|(n, ..)| *n).collect();
    for line in last.lines().filter(|l| l.starts_with("frontrow_")) {
        let name = line.split(['{', ' ']).next().unwrap();
        let base = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| name.strip_suffix(s))
            .unwrap_or(name);
        assert!(listed.contains(&base), "{name} is exported but not in METRICS");
    }
    app.stop().await;
}
