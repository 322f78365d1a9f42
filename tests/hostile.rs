//! Hostile input at the HTTP edge: requests built to make the server do unbounded work, abuse
//! limits and the startup decisions that keep demo mode off the internet.

mod common;

use common::TestApp;
use serde_json::Value;

/// A forged `Stripe-Signature` with tens of thousands of `v1=` entries and a 1 MB body once
/// made the handler hash the body per entry (two such requests stalled `/health` for 33 s).
/// Now the header is refused for its length before anything is hashed, and the server answers
/// other requests meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_signature_flood_is_refused_without_hashing_while_health_answers() {
    let app = TestApp::spawn().await;
    let header = format!("t={},{}", app.now().timestamp(), "v1=00,".repeat(40_000));
    let body = vec![b' '; 1 << 20];
    // Generous guard so a regression fails instead of hanging; nothing here asserts speed.
    let client = reqwest::Client::builder()
        .timeout(std::time::Duration::from_secs(120))
        .build()
        .unwrap();
    let forged: Vec<_> = (0..2)
        .map(|_| {
            let request = client
                .post(app.url("/webhooks/payments"))
                .header("content-type", "application/json")
                .header("stripe-signature", header.clone())
                .body(body.clone());
            tokio::spawn(request.send())
        })
        .collect();
    let health = client.get(app.url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200);
    for request in forged {
        let res = request.await.unwrap().unwrap();
        assert_eq!(res.status(), 400);
        assert_eq!(res.headers()["content-type"], "application/problem+json");
        let problem: Value = res.json().await.unwrap();
        assert_eq!(problem["type"], "urn:frontrow:problem:bad-signature");
        assert!(problem["detail"].as_str().unwrap().contains("longer than"), "{problem}");
    }
    app.stop().await;
}
