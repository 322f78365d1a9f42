//! The chaos run (`frontrow-bench chaos`): a production-shaped deployment on loopback — three
//! command nodes behind HAProxy, a query node, a projector into PostgreSQL, all on the
//! three-broker Kafka cluster of `deploy/local/up.sh kafka-cluster` — while fans reserve and pay
//! through the balancer and a seeded schedule breaks something every 10–20 s: `kill -9` of a
//! command node, SIGKILL of a broker, or SIGSTOP of a command node, each brought back a few
//! seconds later.
//!
//! At the end the log is the judge: every acknowledged reservation holds (or, paid, books) its
//! seats in a replay of the log; no seat was acknowledged to two reservations; the query node's
//! maps equal the replay; the PostgreSQL ledger equals a ledger projected afresh from the log.
//! Each fan's longest run of unanswered requests (503s, 5xx, refused connections) is its
//! outage, attributed to the fault it started under. Every process the run starts is its child
//! (killed on drop); a broker it killed is started again before it returns.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use frontrow::Settings;
use frontrow::settings::JournalChoice;
use frontrow_command::domain::{EventState, ReservationStatus, SeatState};
use frontrow_command::ownership::Announcement;
use frontrow_http::auth::Auth;
use frontrow_projector::{Ledger, PgLedger, Projector};
use frontrow_schema::{EventId, ReservationId, SeatId};
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use secrecy::SecretString;
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::frontrow::{ORGANIZER_KEY, map_letters, replay_journal};
use crate::workload::tokens;

/// The three brokers of `deploy/local/up.sh kafka-cluster`.
pub const CLUSTER_BROKERS: &str = "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094";
const PARTITIONS: u32 = 8;
const COMMAND_NODES: usize = 3;
/// Enough events that every command node owns the partition of some (8 partitions, 3 nodes).
const EVENTS: usize = 12;
/// How long a node may take to say where it listens.
const START_TIMEOUT: Duration = Duration::from_secs(90);
/// How long after the load stops the checks wait for the query node and the ledger.
const SETTLE: Duration = Duration::from_secs(90);
/// A request in flight when the run ends may still retry this long.
const GRACE: Duration = Duration::from_secs(30);

/// What a chaos run is given.
#[derive(Debug, Clone)]
pub struct ChaosConfig {
    pub seed: u64,
    pub duration: Duration,
    pub fans: usize,
    /// The `frontrow` binary the nodes run.
    pub frontrow_bin: PathBuf,
    /// PostgreSQL for the ledger (loopback).
    pub database_url: String,
    pub brokers: String,
    /// `deploy/local`: `kafka-broker.sh` and `balancer-config.sh`.
    pub deploy_dir: PathBuf,
    /// Where the nodes' logs go (kept after the run).
    pub out_dir: PathBuf,
    /// The kinds of fault the schedule injects ([`FAULT_KINDS`], or some of them).
    pub kinds: Vec<&'static str>,
}

/// Every kind of fault the schedule knows: `kill -9` of a command node, SIGKILL of a broker,
/// SIGSTOP of a command node.
pub const FAULT_KINDS: [&str; 3] = ["kill-command", "kill-broker", "pause-command"];

/// The fault kind named `name`, if the schedule knows it.
pub fn fault_kind(name: &str) -> Option<&'static str> {
    FAULT_KINDS.into_iter().find(|&k| k == name)
}

/// One fault the schedule injected, seconds from the start of the load.
#[derive(Debug, Clone, Serialize)]
pub struct Fault {
    pub kind: &'static str,
    pub target: String,
    pub at_s: f64,
    pub restored_s: f64,
}

/// What a chaos run found.
#[derive(Debug, Clone, Serialize)]
pub struct ChaosReport {
    pub seed: u64,
    pub duration_s: f64,
    pub reservations_acknowledged: usize,
    pub payments_acknowledged: usize,
    pub requests: u64,
    /// Acknowledged reservations (or payments) the log does not show.
    pub lost: usize,
    /// Seats acknowledged to more than one reservation.
    pub sold_twice: usize,
    pub map_equals_log: bool,
    pub ledger_equals_log: bool,
    /// The PostgreSQL schema of the run's ledger (dropped with its check's when the run stops).
    pub ledger_schema: String,
    /// The longest time one fan saw only unanswered requests, per fault kind (`none`: outside
    /// any fault's window).
    pub worst_outage_s: BTreeMap<&'static str, f64>,
    /// Every outage longer than a second: `(kind, began_s, lasted_s)`.
    pub outages: Vec<(&'static str, f64, f64)>,
    /// Per fault that stopped a command node (`kill-command`, `pause-command`): seconds from
    /// the fault until every partition the node owned was served by another node, as the owner
    /// directory records it (`None`: some partition was not announced by another node).
    pub handovers: Vec<Handover>,
    pub faults: Vec<Fault>,
}

/// How long the partitions of a stopped command node went unserved.
#[derive(Debug, Clone, Serialize)]
pub struct Handover {
    pub kind: &'static str,
    pub target: String,
    pub at_s: f64,
    pub partitions: Vec<u32>,
    pub served_again_s: Option<f64>,
}

impl ChaosReport {
    pub fn passed(&self) -> bool {
        self.lost == 0 && self.sold_twice == 0 && self.map_equals_log && self.ledger_equals_log
    }

    /// The worst outage under any fault.
    pub fn worst_failover_s(&self) -> f64 {
        self.worst_outage_s
            .iter()
            .filter(|(k, _)| **k != "none")
            .map(|(_, v)| *v)
            .fold(0.0, f64::max)
    }

    /// The longest a stopped node's partitions went unserved, over the faults that moved any
    /// (`None` if one was never served again).
    pub fn worst_handover_s(&self) -> Option<f64> {
        self.handovers
            .iter()
            .filter(|h| !h.partitions.is_empty())
            .map(|h| h.served_again_s)
            .try_fold(0.0, |worst, s| s.map(|s| f64::max(worst, s)))
    }

    /// `chaos: partitions of a stopped node served again within S s at worst (N node faults)`.
    pub fn handover_summary(&self) -> String {
        let moved = self.handovers.iter().filter(|h| !h.partitions.is_empty()).count();
        match self.worst_handover_s() {
            Some(s) => format!(
                "chaos: partitions of a stopped node served again within {s:.2} s at worst ({moved} node faults)"
            ),
            None => format!("chaos: a stopped node's partition was never served again ({moved} node faults)"),
        }
    }

    /// `chaos: lost N, sold twice N, worst failover S s, K faults`.
    pub fn summary(&self) -> String {
        format!(
            "chaos: lost {}, sold twice {}, worst failover {:.1} s, {} faults",
            self.lost,
            self.sold_twice,
            self.worst_failover_s(),
            self.faults.len()
        )
    }
}

/// One FrontRow process of the deployment.
struct Node {
    name: String,
    role: &'static str,
    port: u16,
    config: PathBuf,
    data_dir: PathBuf,
    log: PathBuf,
    child: Option<Child>,
}

impl Node {
    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn pid(&self) -> Option<u32> {
        self.child.as_ref().and_then(Child::id)
    }

    /// Starts the node on its port and waits until it listens.
    async fn start(&mut self, binary: &Path) -> anyhow::Result<()> {
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("opening {}", self.log.display()))?;
        let mut command = crate::child::clean_command(binary);
        command
            .env("FRONTROW_LOG", node_log_filter())
            .arg("--config")
            .arg(&self.config)
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg(self.role)
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", self.port))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(log)
            .kill_on_drop(true);
        let mut child = command
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        let mut lines = BufReader::new(child.stdout.take().context("the node's stdout")?).lines();
        let listening = tokio::time::timeout(START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if line.starts_with("FrontRow listening on ") {
                    return Ok(());
                }
            }
            anyhow::bail!("it ended before it listened")
        })
        .await;
        match listening {
            Ok(Ok(())) => {}
            failed => {
                let _ = child.start_kill();
                let _ = child.wait().await;
                let cause = match failed {
                    Ok(Err(e)) => e,
                    _ => anyhow::anyhow!("it did not listen within {START_TIMEOUT:?}"),
                };
                // The log may be in a directory that goes with the run: say its end here.
                let text = std::fs::read_to_string(&self.log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = lines[lines.len().saturating_sub(10)..].join("\n");
                return Err(cause.context(format!(
                    "{} did not start (log: {}, ending:\n{tail})",
                    self.name,
                    self.log.display()
                )));
            }
        }
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        self.child = Some(child);
        Ok(())
    }

    async fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }

    fn signal(&self, signal: rustix::process::Signal) {
        if let Some(pid) = self.pid().and_then(|p| rustix::process::Pid::from_raw(p as i32)) {
            let _ = rustix::process::kill_process(pid, signal);
        }
    }
}

/// `deploy/local` of this checkout.
pub fn deploy_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/local")
}

/// A free loopback port (bound and released; the node binds it a moment later).
fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

fn secret(rng: &mut StdRng) -> String {
    (0..48).map(|_| rng.sample(rand::distr::Alphanumeric) as char).collect()
}

/// What the nodes log: ownership and claims, or `FRONTROW_CHAOS_LOG` (`EnvFilter` syntax) when a
/// run is read closer (e.g. `frontrow_journal=debug,librdkafka=warn` shows every try of a claim).
fn node_log_filter() -> String {
    std::env::var("FRONTROW_CHAOS_LOG").unwrap_or_else(|_| {
        "warn,sqlx=error,librdkafka=error,rdkafka=error,frontrow_command::ownership=info,\
         frontrow_command::writer=info,frontrow_journal::kafka=info"
            .into()
    })
}

/// The deployment: nodes, the balancer, the brokers this run killed.
struct Deployment {
    commands: Vec<Node>,
    query: Node,
    projector: Node,
    balancer: Option<Child>,
    balancer_port: u16,
    journal: JournalChoice,
    schema: String,
    auth: Arc<Auth>,
    killed_brokers: Vec<u32>,
}

impl Deployment {
    /// Starts the nodes (data in `dir`, logs in `logs`) and the balancer.
    async fn start(config: &ChaosConfig, dir: &Path, logs: &Path, rng: &mut StdRng) -> anyhow::Result<Self> {
        let run = uuid::Uuid::new_v4().simple().to_string();
        let journal = JournalChoice::Kafka {
            brokers: config.brokers.clone(),
            topic: format!("frontrow.chaos.{run}"),
        };
        let schema = format!("chaos_{}", &run[..12]);
        let token_secret = secret(rng);
        let webhook_secret = secret(rng);
        let common = format!(
            "partitions = {PARTITIONS}\njournal = \"{journal}\"\nsample_event = false\ndemo = true\n\
             token_secret = \"{token_secret}\"\nwebhook_secret = \"{webhook_secret}\"\n\
             search = \"tantivy\"\nledger_schema = \"{schema}\"\n\n[organizers]\nbench = \"{ORGANIZER_KEY}\"\n\n\
             # The fans come from one loopback address: no rate limits.\n\
             [limits]\ncustomer_per_second = 0\naddress_per_second = 0\n"
        );
        let command_config = dir.join("command.toml");
        std::fs::write(&command_config, &common)?;
        let ledger_config = dir.join("ledger.toml");
        std::fs::write(
            &ledger_config,
            format!("database_url = \"{}\"\n{common}", config.database_url),
        )?;
        let node = |name: String, role, config: &Path| -> anyhow::Result<Node> {
            Ok(Node {
                data_dir: dir.join(&name),
                log: logs.join(format!("{name}.log")),
                name,
                role,
                port: free_port()?,
                config: config.to_path_buf(),
                child: None,
            })
        };
        let mut commands = Vec::new();
        for i in 1..=COMMAND_NODES {
            commands.push(node(format!("command-{i}"), "command", &command_config)?);
        }
        let mut deployment = Self {
            commands,
            query: node("query".into(), "query", &ledger_config)?,
            projector: node("projector".into(), "projector", &ledger_config)?,
            balancer: None,
            balancer_port: free_port()?,
            journal,
            schema,
            auth: Arc::new(Auth::new(SecretString::from(token_secret), [])),
            killed_brokers: Vec::new(),
        };
        // The first command node creates the topics; the others join its group.
        deployment.commands[0].start(&config.frontrow_bin).await?;
        for i in 1..COMMAND_NODES {
            deployment.commands[i].start(&config.frontrow_bin).await?;
        }
        deployment.query.start(&config.frontrow_bin).await?;
        deployment.projector.start(&config.frontrow_bin).await?;
        deployment.balancer = Some(deployment.start_balancer(config, dir, logs).await?);
        Ok(deployment)
    }

    /// `haproxy -db` on the config `deploy/local/balancer-config.sh` writes for the nodes.
    async fn start_balancer(&self, config: &ChaosConfig, dir: &Path, logs: &Path) -> anyhow::Result<Child> {
        let nodes: Vec<String> = self.commands.iter().map(|n| format!("127.0.0.1:{}", n.port)).collect();
        let generated = Command::new(config.deploy_dir.join("balancer-config.sh"))
            .arg(self.balancer_port.to_string())
            .arg(nodes.join(","))
            .stderr(Stdio::inherit())
            .output()
            .await
            .context("running balancer-config.sh")?;
        anyhow::ensure!(generated.status.success(), "balancer-config.sh failed");
        let cfg = dir.join("haproxy.cfg");
        std::fs::write(&cfg, &generated.stdout)?;
        let log = std::fs::File::create(logs.join("haproxy.log"))?;
        let child = Command::new("haproxy")
            .arg("-db")
            .arg("-f")
            .arg(&cfg)
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .context("starting haproxy")?;
        Ok(child)
    }

    fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.balancer_port)
    }

    async fn broker(&mut self, config: &ChaosConfig, action: &str, n: u32) -> anyhow::Result<()> {
        let status = Command::new(config.deploy_dir.join("kafka-broker.sh"))
            .arg(action)
            .arg(n.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .await
            .with_context(|| format!("kafka-broker.sh {action} {n}"))?;
        anyhow::ensure!(status.success(), "kafka-broker.sh {action} {n} failed");
        match action {
            "kill" => self.killed_brokers.push(n),
            _ => self.killed_brokers.retain(|&b| b != n),
        }
        Ok(())
    }

    /// Stops everything this run started; brokers it killed are started again.
    async fn stop(&mut self, config: &ChaosConfig) {
        for node in self.commands.iter_mut().chain([&mut self.query, &mut self.projector]) {
            node.signal(rustix::process::Signal::CONT);
            node.kill().await;
        }
        if let Some(mut b) = self.balancer.take() {
            let _ = b.start_kill();
            let _ = b.wait().await;
        }
        for n in self.killed_brokers.clone() {
            if let Err(e) = self.broker(config, "start", n).await {
                tracing::warn!(broker = n, error = %e, "could not start a killed broker again");
            }
        }
        // The run's log is checked by now: its topics go, or every later run's broker restarts
        // load them all (they had piled up to 358 partitions a broker, and a broker starting
        // again took 40-100 s and was fenced anew for missed heartbeats while loading them).
        if let JournalChoice::Kafka { brokers, topic } = &self.journal {
            let directory = frontrow_command::ownership::directory_topic(topic);
            if let Err(e) = frontrow_journal::delete_log(brokers, topic, &[directory]).await {
                tracing::warn!(%topic, error = %e, "could not delete the run's topics");
            }
        }
        // Its ledgers go too: the serving one and the check's fresh replay (about 50 MB each;
        // a hundred of them had piled up in the local cluster).
        for schema in [self.schema.clone(), check_schema(&self.schema)] {
            if let Err(e) = PgLedger::drop_schema_at(&config.database_url, &schema).await {
                tracing::warn!(%schema, error = %e, "could not drop the run's ledger schema");
            }
        }
    }
}

/// The schema the check replays the run's log into, beside the serving ledger's `schema`.
fn check_schema(schema: &str) -> String {
    format!("{schema}_check")
}

/// What one fan's requests were answered, for the outage windows.
#[derive(Default)]
struct Timeline {
    /// `(sent, answered, served)`: seconds from the start; served = neither 5xx nor no answer.
    attempts: Vec<(f64, f64, bool)>,
}

/// A reservation the deployment acknowledged with `201`, and whether its payment was
/// acknowledged as booked.
#[derive(Debug, Clone)]
struct Acked {
    event: String,
    reservation: String,
    seats: Vec<String>,
    paid: bool,
}

/// The fans' shared state.
struct Fans {
    client: reqwest::Client,
    base: String,
    events: Vec<String>,
    sections: Vec<String>,
    tokens: Vec<String>,
    acked: Mutex<Vec<Acked>>,
    timelines: Mutex<Vec<Timeline>>,
    start: Instant,
    requests: std::sync::atomic::AtomicU64,
}

impl Fans {
    /// Sends `build()` until it is served (not 5xx, answered), or `give_up` passes.
    async fn until_served(
        &self,
        fan: usize,
        give_up: Instant,
        build: impl Fn() -> reqwest::RequestBuilder,
    ) -> Option<(u16, Value)> {
        loop {
            let sent = self.start.elapsed().as_secs_f64();
            self.requests.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let answer = match build().send().await {
                Ok(res) => {
                    let status = res.status().as_u16();
                    res.json::<Value>().await.ok().map(|v| (status, v))
                }
                Err(_) => None,
            };
            let served = answer.as_ref().is_some_and(|(s, _)| *s < 500);
            let answered = self.start.elapsed().as_secs_f64();
            self.timelines.lock().expect("timelines")[fan]
                .attempts
                .push((sent, answered, served));
            if served {
                return answer;
            }
            if Instant::now() > give_up {
                return None;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// One fan until `until`: reserve 1–2 best-available seats in a random event and section
    /// (retrying with the same Idempotency-Key), then pay for them.
    async fn fan(self: Arc<Self>, fan: usize, until: Instant, seed: u64) {
        let mut rng = StdRng::seed_from_u64(seed);
        let token = &self.tokens[fan];
        while Instant::now() < until {
            let event = self.events[rng.random_range(0..self.events.len())].clone();
            let section = self.sections[rng.random_range(0..self.sections.len())].clone();
            let count = rng.random_range(1..=2u8);
            let key = uuid::Uuid::new_v4().to_string();
            let body = json!({ "best_available": { "section": section, "count": count } });
            let url = format!("{}/events/{event}/reservations", self.base);
            let answer = self
                .until_served(fan, until + GRACE, || {
                    self.client
                        .post(&url)
                        .bearer_auth(token)
                        .header("idempotency-key", &key)
                        .json(&body)
                })
                .await;
            let Some((201, answer)) = answer else { continue };
            let (Some(reservation), Some(seats)) = (answer["reservation_id"].as_str(), answer["seats"].as_array())
            else {
                continue;
            };
            let index = {
                let mut acked = self.acked.lock().expect("acknowledged");
                acked.push(Acked {
                    event: event.clone(),
                    reservation: reservation.to_owned(),
                    seats: seats.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect(),
                    paid: false,
                });
                acked.len() - 1
            };
            // Keyed like the reserve: a retry delivers the same provider event, which a
            // forward re-sends to a new owner and the webhook answers `duplicate` once applied.
            let pay = json!({ "event_id": event, "reservation_id": reservation });
            let key = format!("pay-{reservation}");
            let paid = self
                .until_served(fan, until + GRACE, || {
                    self.client
                        .post(format!("{}/demo/payments", self.base))
                        .bearer_auth(token)
                        .header("idempotency-key", &key)
                        .json(&pay)
                })
                .await;
            if let Some((200, answer)) = paid
                && answer["reservation_status"] == "booked"
            {
                self.acked.lock().expect("acknowledged")[index].paid = true;
            }
        }
    }
}

/// The fault schedule: every 10–20 s one fault, held 2–6 s, then undone (a killed broker or
/// node is started again; a paused node continued). Returns what it did.
async fn schedule(
    deployment: &mut Deployment,
    config: &ChaosConfig,
    start: Instant,
    until: Instant,
) -> anyhow::Result<Vec<Fault>> {
    let mut rng = StdRng::seed_from_u64(config.seed);
    let mut faults = Vec::new();
    let mut kinds = Vec::new();
    let (first_node, first_broker) = (rng.random_range(0..COMMAND_NODES), rng.random_range(0..3usize));
    loop {
        // The kinds come in rounds of all of them, each round in a seeded order: with all
        // three, any two faults in a row differ, and a run of three faults has every kind.
        if kinds.is_empty() {
            kinds = config.kinds.clone();
            anyhow::ensure!(!kinds.is_empty(), "no fault kinds to inject");
            kinds.shuffle(&mut rng);
        }
        let wait = Duration::from_millis(rng.random_range(10_000..=20_000));
        let hold = Duration::from_millis(rng.random_range(2_000..=6_000));
        let kind = kinds.pop().expect("a round of kinds");
        // Targets take turns from a seeded start, so every node and broker gets its faults.
        let node = (first_node + faults.len()) % COMMAND_NODES;
        let broker = ((first_broker + faults.len()) % 3) as u32 + 1;
        if Instant::now() + wait + hold > until {
            break;
        }
        tokio::time::sleep(wait).await;
        let at_s = start.elapsed().as_secs_f64();
        let target = match kind {
            "kill-command" => {
                deployment.commands[node].kill().await;
                tokio::time::sleep(hold).await;
                deployment.commands[node].start(&config.frontrow_bin).await?;
                deployment.commands[node].name.clone()
            }
            "kill-broker" => {
                deployment.broker(config, "kill", broker).await?;
                tokio::time::sleep(hold).await;
                deployment.broker(config, "start", broker).await?;
                format!("broker-{broker}")
            }
            _ => {
                deployment.commands[node].signal(rustix::process::Signal::STOP);
                tokio::time::sleep(hold).await;
                deployment.commands[node].signal(rustix::process::Signal::CONT);
                deployment.commands[node].name.clone()
            }
        };
        let fault = Fault {
            kind,
            target,
            at_s,
            restored_s: start.elapsed().as_secs_f64(),
        };
        tracing::info!(?fault, "fault undone");
        eprintln!(
            "chaos: {} {} at {:.1} s, back at {:.1} s",
            fault.kind, fault.target, fault.at_s, fault.restored_s
        );
        faults.push(fault);
    }
    Ok(faults)
}

/// Each fan's runs of unserved requests, from the first one's sending to the next served
/// answer, attributed to the fault that overlaps them (or was undone at most 15 s before): the
/// worst per kind, and all those longer than a second.
type Outages = (BTreeMap<&'static str, f64>, Vec<(&'static str, f64, f64)>);

fn outages(timelines: &[Timeline], faults: &[Fault]) -> Outages {
    let mut worst: BTreeMap<&'static str, f64> = BTreeMap::new();
    let mut long = Vec::new();
    for t in timelines {
        let mut began: Option<f64> = None;
        for &(sent, answered, served) in &t.attempts {
            match (served, began) {
                (false, None) => began = Some(sent),
                (true, Some(b)) => {
                    let kind = charged_to(faults, b, answered);
                    let w = worst.entry(kind).or_default();
                    *w = w.max(answered - b);
                    if answered - b > 1.0 {
                        long.push((kind, b, answered - b));
                    }
                    began = None;
                }
                _ => {}
            }
        }
    }
    long.sort_by(|a, b| a.1.total_cmp(&b.1));
    (worst, long)
}

/// The kind of fault an outage from `began` to `ended` is charged to: of the faults that overlap
/// it (or ended at most 15 s before it: a node coming back moves partitions too), the latest one
/// that had begun when the outage began (a second's slack: a fault's start is taken once its
/// command returned); failing that, the first one that began during the outage. An outage that
/// outlasts several faults is the first one's, not the last one's.
fn charged_to(faults: &[Fault], began: f64, ended: f64) -> &'static str {
    let overlaps = |f: &&Fault| f.at_s <= ended && began <= f.restored_s + 15.0;
    faults
        .iter()
        .rev()
        .filter(overlaps)
        .find(|f| f.at_s <= began + 1.0)
        .or_else(|| faults.iter().find(overlaps))
        .map_or("none", |f| f.kind)
}

/// Acknowledged reservations whose seats the replayed log does not hold (or, paid, book) for
/// them.
fn lost(acked: &[Acked], states: &HashMap<EventId, EventState>) -> usize {
    acked.iter().filter(|a| !kept(a, states)).count()
}

/// The replayed log holds every seat of this acknowledged reservation for it (booked if it was
/// paid, held or booked if not).
fn kept(a: &Acked, states: &HashMap<EventId, EventState>) -> bool {
    let Some(state) = a.event.parse().ok().and_then(|e: EventId| states.get(&e)) else {
        return false;
    };
    let reservation = a
        .reservation
        .parse()
        .ok()
        .and_then(|id: ReservationId| state.reservations.get(&id));
    let Some(r) = reservation else {
        return false;
    };
    let wanted = match r.status {
        ReservationStatus::Booked => SeatState::Booked,
        ReservationStatus::Held if !a.paid => SeatState::Held,
        _ => return false,
    };
    a.seats.iter().all(|seat| {
        let index = seat.parse().ok().and_then(|s: SeatId| state.layout.index_of(&s));
        index.is_some_and(|i| r.seats.contains(&i) && state.seats[i as usize] == wanted)
    })
}

/// Seats acknowledged to more than one reservation of the same event.
fn sold_twice(acked: &[Acked]) -> usize {
    let mut holders: HashMap<(&str, &str), usize> = HashMap::new();
    for a in acked {
        for seat in &a.seats {
            *holders.entry((a.event.as_str(), seat.as_str())).or_default() += 1;
        }
    }
    holders.values().filter(|&&n| n > 1).count()
}

/// Waits until `check` holds or `timeout` passes; returns whether it held.
async fn eventually<F, Fut>(timeout: Duration, mut check: F) -> anyhow::Result<bool>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        if check().await? {
            return Ok(true);
        }
        if Instant::now() > deadline {
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Creates the run's events through the balancer (retrying with one Idempotency-Key each until
/// the group has settled), and waits until the query node shows them.
async fn create_events(fans: &Fans, query: &str) -> anyhow::Result<Vec<String>> {
    let mut events = Vec::new();
    for i in 0..EVENTS {
        let key = uuid::Uuid::new_v4().to_string();
        let body = json!({
            "title": format!("Chaos Night {i}"), "artist": "The Faults", "venue": "Riverside Arena",
            "city": "Delft", "starts_at": chrono::Utc::now() + chrono::Duration::days(30),
            "onsale_at": chrono::Utc::now() - chrono::Duration::minutes(1),
            "hold_minutes": 15, "max_seats_per_order": 8, "max_seats_per_customer": 1000,
            "currency": "EUR", "seat_map": frontrow::sample::arena(),
        });
        let give_up = Instant::now() + Duration::from_secs(60);
        let answer = fans
            .until_served(0, give_up, || {
                fans.client
                    .post(format!("{}/events", fans.base))
                    .header("x-api-key", ORGANIZER_KEY)
                    .header("idempotency-key", &key)
                    .json(&body)
            })
            .await;
        let Some((201, written)) = answer else {
            anyhow::bail!("creating event {i} through the balancer: {answer:?}");
        };
        let event = written["event_id"].as_str().context("no event_id")?.to_owned();
        let position = written["position"].as_str().unwrap_or_default().to_owned();
        let url = format!("{query}/events/{event}/availability?after={position}&wait_ms=10000");
        let seen = eventually(Duration::from_secs(60), || async {
            Ok(fans.client.get(&url).send().await.is_ok_and(|r| r.status() == 200))
        })
        .await?;
        anyhow::ensure!(seen, "the query node does not show event {event}");
        events.push(event);
    }
    // Before the load: every event's writer answers (a reserve of a seat that does not exist
    // is refused without writing anything).
    for event in &events {
        let url = format!("{}/events/{event}/reservations", fans.base);
        let give_up = Instant::now() + Duration::from_secs(60);
        let answer = fans
            .until_served(0, give_up, || {
                fans.client
                    .post(&url)
                    .bearer_auth(&fans.tokens[0])
                    .header("idempotency-key", uuid::Uuid::new_v4().to_string())
                    .json(&json!({ "seats": ["NO-SUCH-1"] }))
            })
            .await;
        anyhow::ensure!(answer.is_some(), "event {event} has no writer");
    }
    fans.timelines.lock().expect("timelines")[0].attempts.clear();
    Ok(events)
}

/// Runs the chaos run; the deployment is stopped whatever happens.
pub async fn run(config: &ChaosConfig) -> anyhow::Result<ChaosReport> {
    crate::serve::require_loopback(&config.database_url)?;
    std::fs::create_dir_all(&config.out_dir)?;
    let dir = tempfile::tempdir().context("creating the run's directory")?;
    let logs = config.out_dir.join(format!("chaos-{}", config.seed));
    std::fs::create_dir_all(&logs)?;
    let mut rng = StdRng::seed_from_u64(config.seed ^ 0x5eed);
    let mut deployment = Deployment::start(config, dir.path(), &logs, &mut rng).await;
    let result = match &mut deployment {
        Ok(d) => run_on(config, d).await,
        Err(e) => Err(anyhow::anyhow!("{e:#}")),
    };
    if let Ok(d) = &mut deployment {
        d.stop(config).await;
    }
    result
}

async fn run_on(config: &ChaosConfig, d: &mut Deployment) -> anyhow::Result<ChaosReport> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(config.fans)
        .build()?;
    let sections = frontrow::sample::arena()
        .sections
        .iter()
        .map(|s| s.code.to_string())
        .collect();
    let fans = Arc::new(Fans {
        client,
        base: d.base(),
        events: Vec::new(),
        sections,
        tokens: tokens(&d.auth, config.fans),
        acked: Mutex::default(),
        timelines: Mutex::new((0..config.fans).map(|_| Timeline::default()).collect()),
        start: Instant::now(),
        requests: Default::default(),
    });
    let events = create_events(&fans, &d.query.url()).await?;
    let mut fans = Arc::into_inner(fans).context("fans shared before the load")?;
    fans.events = events.clone();
    let fans = Arc::new(fans);
    let start = fans.start;
    let load_start = Instant::now();
    let until = load_start + config.duration;
    let tasks: Vec<_> = (0..config.fans)
        .map(|i| tokio::spawn(fans.clone().fan(i, until, config.seed.wrapping_add(i as u64 + 1))))
        .collect();
    let faults = schedule(d, config, start, until).await;
    for t in tasks {
        let _ = t.await;
    }
    let faults = faults?;
    let elapsed = load_start.elapsed();
    check(config, d, &fans, &events, faults, elapsed).await
}

async fn check(
    config: &ChaosConfig,
    d: &Deployment,
    fans: &Fans,
    events: &[String],
    faults: Vec<Fault>,
    elapsed: Duration,
) -> anyhow::Result<ChaosReport> {
    let settings = Settings {
        journal: d.journal.clone(),
        partitions: PARTITIONS,
        ..Settings::default()
    };
    let journal = frontrow::app::open_journal(&settings).await?;
    let states = replay_journal(journal.as_ref()).await?;
    let acked = fans.acked.lock().expect("acknowledged").clone();

    let mut map_equals_log = true;
    for event in events {
        let id: EventId = event.parse().map_err(|e| anyhow::anyhow!("{e:?}"))?;
        let want = states
            .get(&id)
            .map(EventState::seat_letters)
            .context("an event missing from the log")?;
        let url = format!("{}/events/{event}/availability", d.query.url());
        let equal = eventually(SETTLE, || async {
            let Ok(res) = fans.client.get(&url).send().await else {
                return Ok(false);
            };
            let Ok(map) = res.json::<Value>().await else {
                return Ok(false);
            };
            Ok(map_letters(&map).is_ok_and(|m| m == want))
        })
        .await?;
        map_equals_log &= equal;
    }

    let serving = PgLedger::connect(&config.database_url, &d.schema).await?;
    let mut ends = BTreeMap::new();
    for p in 0..PARTITIONS {
        ends.insert(p, journal.end_offset(p).await?);
    }
    let caught_up = eventually(SETTLE, || async {
        let positions = serving.positions().await?;
        Ok(ends
            .iter()
            .all(|(p, end)| positions.get(p).copied().unwrap_or(0) >= *end))
    })
    .await?;
    let fresh: Arc<dyn Ledger> = Arc::new(PgLedger::connect(&config.database_url, &check_schema(&d.schema)).await?);
    Projector::new(journal.clone(), fresh.clone(), 1000).catch_up().await?;
    let ledger_equals_log = caught_up && serving.dump().await? == fresh.dump().await?;

    let handovers = handovers_of(d, fans, &faults).await?;
    let timelines = fans.timelines.lock().expect("timelines");
    let (worst_outage_s, outages) = outages(&timelines, &faults);
    Ok(ChaosReport {
        seed: config.seed,
        duration_s: elapsed.as_secs_f64(),
        reservations_acknowledged: acked.len(),
        payments_acknowledged: acked.iter().filter(|a| a.paid).count(),
        requests: fans.requests.load(std::sync::atomic::Ordering::Relaxed),
        lost: lost(&acked, &states),
        sold_twice: sold_twice(&acked),
        map_equals_log,
        ledger_equals_log,
        ledger_schema: d.schema.clone(),
        worst_outage_s,
        outages,
        handovers,
        faults,
    })
}

/// The handover of every node fault, from the owner directory the command nodes wrote.
async fn handovers_of(d: &Deployment, fans: &Fans, faults: &[Fault]) -> anyhow::Result<Vec<Handover>> {
    let JournalChoice::Kafka { brokers, topic } = d.journal.clone() else {
        anyhow::bail!("a chaos run is on Kafka");
    };
    let history = tokio::task::spawn_blocking(move || {
        frontrow_command::ownership::directory_history(&brokers, &topic, Duration::from_secs(30))
    })
    .await??;
    // The run's clock in the directory's: milliseconds since the epoch at `fans.start`.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_millis() as i64;
    let start_ms = now_ms - fans.start.elapsed().as_millis() as i64;
    let urls: HashMap<&str, String> = d.commands.iter().map(|n| (n.name.as_str(), n.url())).collect();
    Ok(faults
        .iter()
        .filter_map(|f| Some((f, urls.get(f.target.as_str())?)))
        .map(|(f, url)| handover(&history, f, url, start_ms))
        .collect())
}

/// How long after `fault` (on the node at `url`) every partition the directory said `url`
/// owned was announced by another node.
fn handover(history: &[Announcement], fault: &Fault, url: &str, start_ms: i64) -> Handover {
    let at_ms = start_ms + (fault.at_s * 1000.0) as i64;
    let mut owner: BTreeMap<u32, &str> = BTreeMap::new();
    for a in history.iter().filter(|a| a.at_ms <= at_ms) {
        owner.insert(a.partition, &a.url);
    }
    let partitions: Vec<u32> = owner.iter().filter(|(_, u)| **u == url).map(|(p, _)| *p).collect();
    let served_again_ms = partitions
        .iter()
        .map(|p| {
            history
                .iter()
                .find(|a| a.partition == *p && a.at_ms > at_ms && a.url != url)
                .map(|a| a.at_ms - at_ms)
        })
        .try_fold(0, |worst, ms| ms.map(|ms| worst.max(ms)));
    Handover {
        kind: fault.kind,
        target: fault.target.clone(),
        at_s: fault.at_s,
        partitions,
        served_again_s: served_again_ms.map(|ms| ms as f64 / 1000.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(kind: &'static str, at_s: f64, restored_s: f64) -> Fault {
        Fault {
            kind,
            target: String::new(),
            at_s,
            restored_s,
        }
    }

    #[test]
    fn a_handover_lasts_until_the_last_partition_of_the_stopped_node_is_announced_elsewhere() {
        let at = |partition, url: &str, at_ms| Announcement {
            partition,
            url: url.into(),
            at_ms,
        };
        let history = [
            at(0, "a", 1_000),
            at(1, "b", 1_000),
            at(2, "a", 1_000),
            // The fault is at 10 s; a's partitions move to b and c, and then 2 comes back to a.
            at(0, "b", 11_200),
            at(2, "c", 11_800),
            at(2, "a", 16_000),
        ];
        let h = handover(&history, &fault("kill-command", 9.0, 12.0), "a", 1_000);
        assert_eq!(h.partitions, [0, 2]);
        assert_eq!(h.served_again_s, Some(1.8));
        // A partition nobody else announced is no handover.
        let h = handover(&history[..4], &fault("kill-command", 9.0, 12.0), "a", 1_000);
        assert_eq!(h.served_again_s, None);
        // A node that owned nothing hands nothing over.
        let h = handover(&history, &fault("pause-command", 9.0, 12.0), "d", 1_000);
        assert!(h.partitions.is_empty() && h.served_again_s == Some(0.0));
    }

    #[test]
    fn an_outage_is_charged_to_the_fault_it_began_under() {
        // Seed 21's long outage: it began as broker 3 was killed and lasted past a broker kill
        // and a node kill that came later.
        let faults = [
            fault("kill-command", 132.3, 138.5),
            fault("kill-broker", 173.6, 212.6),
            fault("kill-broker", 227.5, 257.0),
            fault("kill-command", 273.9, 278.2),
        ];
        assert_eq!(charged_to(&faults, 173.2, 282.0), "kill-broker");
        // Within a fault's window, or up to 15 s after it, the fault it falls in.
        assert_eq!(charged_to(&faults, 275.0, 279.0), "kill-command");
        assert_eq!(charged_to(&faults, 150.0, 152.0), "kill-command");
        // Beginning before any fault it overlaps: the first fault that began during it.
        assert_eq!(charged_to(&faults, 160.0, 240.0), "kill-broker");
        // Far from every fault.
        assert_eq!(charged_to(&faults, 10.0, 12.0), "none");
    }

    #[test]
    fn outages_are_timed_per_fan_from_the_first_unanswered_request() {
        let faults = [fault("pause-command", 10.0, 14.0)];
        let fan = Timeline {
            attempts: vec![
                (9.0, 9.1, true),
                (10.5, 11.0, false),
                (11.5, 12.0, false),
                (12.5, 16.0, true),
            ],
        };
        let (worst, long) = outages(&[fan], &faults);
        assert_eq!(worst["pause-command"], 16.0 - 10.5);
        assert_eq!(long, vec![("pause-command", 10.5, 16.0 - 10.5)]);
    }
}
