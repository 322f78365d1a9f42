//! The HAProxy balancer of `deploy/local` (the config `balancer-config.sh` writes, which the
//! chaos run uses too): it passes a ready node's answers through, and when no node is ready its
//! own answer is a `problem+json` like FrontRow's, with `Retry-After`, not HAProxy's HTML page.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;

/// The config `deploy/local/balancer-config.sh PORT NODES` prints, from the function it calls
/// (the script itself would install HAProxy first).
fn config(port: u16, nodes: &str) -> String {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy/local/lib.sh");
    let out = run_ok(
        Command::new("bash")
            .args(["-c", r#". "$0"; balancer_config "$1" "$2""#])
            .arg(lib)
            .arg(port.to_string())
            .arg(nodes),
        "balancer_config",
    );
    String::from_utf8(out.stdout).unwrap()
}

/// `haproxy -db` on `config`, killed when dropped.
struct Balancer {
    child: Child,
    _dir: tempfile::TempDir,
}

impl Balancer {
    fn start(config: &str) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("haproxy.cfg");
        std::fs::write(&file, config).unwrap();
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("haproxy (deploy/local/up.sh balancer installs it)");
        Self { child, _dir: dir }
    }
}

impl Drop for Balancer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The balancer's own error answers (`http-error` lines) are problems whose status is theirs.
#[test]
fn every_answer_of_the_balancer_itself_is_a_problem_of_its_status() {
    let config = config(18000, "127.0.0.1:1");
    let mut seen = Vec::new();
    for line in config.lines().map(str::trim).filter(|l| l.starts_with("http-error ")) {
        let status: u16 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
        assert!(line.contains("content-type application/problem+json"), "{line}");
        assert!(line.contains("hdr Retry-After "), "{line}");
        let body = &line[line.find("string '").unwrap() + 8..line.len() - 1];
        let problem: Problem = typed(serde_json::from_str(body).unwrap_or_else(|e| panic!("{line}: {e}")));
        assert_eq!(problem.status, status, "{line}");
        assert!(problem.kind.starts_with("urn:frontrow:problem:"), "{line}");
        assert!(!problem.detail.is_empty(), "{line}");
        seen.push(status);
    }
    seen.sort_unstable();
    assert_eq!(seen, [502, 503, 504]);
}

#[tokio::test]
#[ignore = "needs haproxy (deploy/local/up.sh balancer)"]
async fn with_no_node_ready_the_balancer_answers_a_problem_not_an_html_page() {
    let app = TestApp::spawn().await;
    let node = app.base.trim_start_matches("http://").to_owned();
    let port = free_port();
    // One live node and one that refuses connections.
    let _balancer = Balancer::start(&config(port, &format!("{node},127.0.0.1:{}", free_port())));
    let client = reqwest::Client::new();
    let url = format!("http://127.0.0.1:{port}/health");
    let health = || async {
        match client.get(&url).send().await {
            Ok(res) => Some((res.status().as_u16(), res.headers().clone(), res.text().await.unwrap())),
            Err(_) => None,
        }
    };
    // The live node answers through the balancer, again and again (the dead one is skipped).
    wait_until(Duration::from_secs(10), "the balancer listens", health, |r| {
        r.as_ref().filter(|(status, ..)| *status == 200).map(|_| ())
    })
    .await;
    for _ in 0..10 {
        assert_eq!(health().await.unwrap().0, 200);
    }

    app.stop().await;
    let (headers, body) = wait_until(
        Duration::from_secs(10),
        "the balancer answers 503 itself",
        health,
        |r| {
            r.as_ref()
                .filter(|(status, ..)| *status == 503)
                .map(|(_, headers, body)| (headers.clone(), body.clone()))
        },
    )
    .await;
    assert_eq!(headers["content-type"], "application/problem+json");
    assert_eq!(headers["retry-after"], "1");
    let problem: Problem = typed(serde_json::from_str(&body).unwrap());
    assert_eq!(problem.kind, "urn:frontrow:problem:no-node-ready");
    assert_eq!(problem.status, 503);
}
