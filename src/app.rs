//! Assembling one FrontRow process: journal, writers, query node and the HTTP API.
//!
//! [`App::build`] opens everything on the configured data directory and restores state from
//! the journal; [`App::run`] serves on a listener the caller bound (tests bind port 0) until
//! the shutdown future resolves, then lets every writer finish its batch before returning.

use std::collections::BTreeMap;
use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::routing::get;
use axum::{Extension, Json, Router};
use frontrow_command::api::{CommandApi, CommandState, Demo};
use frontrow_command::clock::Clock;
use frontrow_command::domain::Rejection;
use frontrow_command::forward::Forwarder;
use frontrow_command::ownership::{self, Membership, OwnershipSettings};
use frontrow_command::payments::Simulator;
use frontrow_command::writer::{CommandError, Meta, Request, WriterConfig, Writers};
use frontrow_http::Problem;
use frontrow_http::auth::Auth;
use frontrow_http::limits::{ClientAddresses, RateLimits, client_address, rate_limit};
use frontrow_journal::{Journal, KafkaJournal, KafkaSettings, Metered, SqliteJournal};
use frontrow_projector::{Ledger, ProjectorHandle};
use frontrow_query::streams::StreamSlots;
use frontrow_query::{Catalog, QueryApi};
use frontrow_schema::OrganizerId;
use frontrow_search::{OpenSearchIndex, SearchIndex, TantivyIndex};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tower_http::compression::Predicate as _;
use tracing::{info, warn};
use utoipa::OpenApi;

use crate::budget::Budget;
use crate::sample;
use crate::settings::{JournalChoice, SearchChoice, Settings};

/// Secrets generated on first start and kept in the data directory (mode 0600), so tokens and
/// keys stay valid across restarts when none are configured.
#[derive(Serialize, Deserialize)]
struct GeneratedSecrets {
    token_secret: String,
    webhook_secret: String,
    demo_organizer_key: String,
}

fn random_secret(prefix: &str) -> String {
    let mut bytes = [0u8; 24];
    rand::rng().fill_bytes(&mut bytes);
    format!("{prefix}{}", hex::encode(bytes))
}

fn generated_secrets(data_dir: &Path) -> anyhow::Result<GeneratedSecrets> {
    let path = data_dir.join("secrets.json");
    if path.exists() {
        let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
        return serde_json::from_slice(&bytes).with_context(|| format!("parsing {}", path.display()));
    }
    let secrets = GeneratedSecrets {
        token_secret: random_secret(""),
        webhook_secret: random_secret("whsec_"),
        demo_organizer_key: random_secret("org_demo_"),
    };
    write_private(&path, &serde_json::to_vec_pretty(&secrets)?)
        .with_context(|| format!("writing {}", path.display()))?;
    Ok(secrets)
}

/// Writes `bytes` to `path` durably and readable by this user alone: a temporary file created
/// with mode 0600 (never wider, not even for an instant), fsynced, renamed into place, and the
/// directory fsynced so the rename survives a crash.
fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let tmp = path.with_extension("tmp");
    // Left behind by a start that crashed before its rename.
    let _ = std::fs::remove_file(&tmp);
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    #[cfg(unix)]
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// The secrets in force: configured ones, else the generated ones.
pub struct Secrets {
    pub token_secret: SecretString,
    pub webhook_secret: SecretString,
    pub organizers: BTreeMap<String, SecretString>,
}

impl Secrets {
    pub fn resolve(settings: &Settings) -> anyhow::Result<Self> {
        crate::guard::check_secrets(settings)?;
        std::fs::create_dir_all(&settings.data_dir)
            .with_context(|| format!("creating data directory {}", settings.data_dir.display()))?;
        let generated = generated_secrets(&settings.data_dir)?;
        let mut organizers = settings.organizers.clone();
        if organizers.is_empty() {
            organizers.insert(
                sample::DEMO_ORGANIZER.into(),
                SecretString::from(generated.demo_organizer_key),
            );
        }
        Ok(Self {
            token_secret: settings
                .token_secret
                .clone()
                .unwrap_or_else(|| SecretString::from(generated.token_secret)),
            webhook_secret: settings
                .webhook_secret
                .clone()
                .unwrap_or_else(|| SecretString::from(generated.webhook_secret)),
            organizers,
        })
    }
}

/// Opens the configured journal: `sqlite` (the embedded file in the data directory) or
/// `kafka://HOST:PORT[,HOST:PORT...][/TOPIC]` (topic `frontrow.events` by default), reporting
/// its appends to the metrics.
pub async fn open_journal(settings: &Settings) -> anyhow::Result<Arc<dyn Journal>> {
    let journal = open_journal_backend(settings, Reads::Copied).await?;
    Ok(Arc::new(Metered::new(journal)))
}

/// [`open_journal`] for a process that reads the whole log once and serves nothing (`frontrow
/// analytics`): the embedded journal's reads go through a memory map of the file
/// ([`SqliteJournal::map_reads`]).
pub async fn open_journal_to_replay(settings: &Settings) -> anyhow::Result<Arc<dyn Journal>> {
    open_journal_backend(settings, Reads::Mapped).await
}

/// How the embedded journal's reads reach the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reads {
    /// Page by page through the kernel's cache, so the process's memory stays its own.
    Copied,
    /// Through a memory map of the file.
    Mapped,
}

async fn open_journal_backend(settings: &Settings, reads: Reads) -> anyhow::Result<Arc<dyn Journal>> {
    Ok(match &settings.journal {
        JournalChoice::Sqlite => {
            let path = settings.data_dir.join("journal.db");
            let journal = SqliteJournal::open(&path, settings.partitions).context("opening the embedded journal")?;
            journal.keep_snapshots(settings.snapshot_history);
            if reads == Reads::Mapped {
                journal.map_reads().context("mapping the embedded journal")?;
            }
            Arc::new(journal)
        }
        JournalChoice::Kafka { brokers, topic } => {
            let kafka = KafkaSettings {
                topic: topic.clone(),
                replication: settings.kafka.replication,
                min_insync_replicas: settings.kafka.min_insync_replicas,
                snapshot_history_retention: std::time::Duration::from_secs(
                    settings.kafka.snapshot_history_hours.saturating_mul(3600),
                ),
                ..KafkaSettings::new(brokers.clone(), settings.partitions)
            };
            let journal = KafkaJournal::connect(kafka)
                .await
                .with_context(|| format!("connecting to Kafka at {brokers}"))?;
            Arc::new(journal)
        }
    })
}

/// Opens the configured search index: `tantivy` (embedded) or `opensearch`.
pub fn open_search(settings: &Settings) -> anyhow::Result<Arc<dyn SearchIndex>> {
    let relevance = frontrow_search::relevance::Relevance {
        typos: settings.search_typos.typos(),
    };
    Ok(match settings.search {
        SearchChoice::Tantivy => Arc::new(
            TantivyIndex::open(&settings.data_dir.join("search"))
                .context("opening the embedded search index")?
                .with_relevance(relevance),
        ),
        SearchChoice::OpenSearch => Arc::new(
            OpenSearchIndex::new(&settings.opensearch_url, &settings.search_alias)
                .context("connecting to OpenSearch")?
                .with_relevance(relevance),
        ),
    })
}

/// Opens the ledger: PostgreSQL when `database_url` is set, else SQLite in the data directory.
pub async fn open_ledger(settings: &Settings) -> anyhow::Result<Arc<dyn Ledger>> {
    let url = settings.database_url.as_ref().map(|u| u.expose_secret().to_owned());
    frontrow_projector::open(url.as_deref(), &settings.ledger_schema, &settings.data_dir)
        .await
        .context("opening the ledger")
}

/// Which sides a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Everything in one process, owning every partition (`frontrow serve`).
    All,
    /// Writers and the command API; partitions come from the Kafka consumer group and requests
    /// for other partitions are forwarded to their owners (`frontrow command`).
    Command,
    /// The availability maps and the read API, including search (`frontrow query`).
    Query,
    /// The projectors alone: the ledger and the search index (`frontrow projector`).
    Projector,
}

impl Role {
    /// The subcommand that runs this role.
    pub fn name(self) -> &'static str {
        match self {
            Role::All => "serve",
            Role::Command => "command",
            Role::Query => "query",
            Role::Projector => "projector",
        }
    }
}

/// Everything one process runs.
pub struct App {
    pub settings: Settings,
    pub role: Role,
    pub journal: Arc<dyn Journal>,
    pub writers: Option<Writers>,
    pub catalog: Option<Arc<Catalog>>,
    /// The search index this process serves or projects into.
    pub search: Option<Arc<dyn SearchIndex>>,
    /// The ledger this process serves or projects into.
    pub ledger: Option<Arc<dyn Ledger>>,
    ledger_projector: Option<ProjectorHandle>,
    /// The projections' runtime in a node that serves requests (see [`crate::budget`]).
    budget: Option<Budget>,
    pub auth: Arc<Auth>,
    pub clock: Arc<dyn Clock>,
    membership: Option<Membership>,
    query_tasks: Vec<JoinHandle<()>>,
    webhook_secret: SecretString,
}

impl App {
    /// Everything in one process (see [`App::build_role`]).
    pub async fn build(settings: Settings, clock: Arc<dyn Clock>) -> anyhow::Result<Self> {
        let url = format!("http://{}", settings.listen);
        Self::build_role(settings, clock, Role::All, url).await
    }

    /// Opens the journal and starts the sides `role` runs, restoring their state; creates the
    /// sample event if asked to (single process only). `node_url` is where other nodes reach
    /// this one. The returned app is ready to serve.
    pub async fn build_role(
        settings: Settings,
        clock: Arc<dyn Clock>,
        role: Role,
        node_url: String,
    ) -> anyhow::Result<Self> {
        crate::guard::check_exposure(&settings, role)?;
        // Installed before anything records, so nothing from the start is lost. Without it
        // every `metrics::` call is a no-op (the recorder is the process's, set once).
        if settings.metrics {
            crate::metrics::handle();
        }
        let secrets = Secrets::resolve(&settings)?;
        let journal = open_journal(&settings).await?;
        let (writers, membership) = start_command_side(&settings, &journal, &clock, role, &node_url).await?;
        let (catalog, mut query_tasks) = if matches!(role, Role::All | Role::Query) {
            let (catalog, tasks) = Catalog::start(journal.clone())
                .await
                .context("starting the query node")?;
            (Some(catalog), tasks)
        } else {
            (None, Vec::new())
        };
        let search = if role == Role::Command {
            None
        } else {
            Some(open_search(&settings)?)
        };
        let ledger = if role == Role::Command {
            None
        } else {
            Some(open_ledger(&settings).await?)
        };
        // A node that serves requests gives its projections a lower share of the CPU.
        let budget = match role {
            Role::All | Role::Query => Some(Budget::new(settings.projections_nice.into())?),
            Role::Command | Role::Projector => None,
        };
        let projections = Projections {
            settings: &settings,
            role,
            journal: &journal,
            budget: budget.as_ref(),
        };
        query_tasks.extend(projections.search(search.as_ref()).await?);
        let ledger_projector = projections.ledger(ledger.as_ref()).await?;
        if let Some(budget) = &budget {
            budget.watch_threads();
        }
        let organizers = secrets
            .organizers
            .iter()
            .map(|(id, key)| Ok((OrganizerId::parse(id)?, key.clone())))
            .collect::<Result<Vec<_>, frontrow_schema::InvalidId>>()
            .context("organizer ids in the configuration")?;
        let auth = Arc::new(Auth::new(secrets.token_secret, organizers));
        let app = Self {
            settings,
            role,
            journal,
            writers,
            catalog,
            search,
            ledger,
            ledger_projector,
            budget,
            auth,
            clock,
            membership,
            query_tasks,
            webhook_secret: secrets.webhook_secret,
        };
        if app.settings.sample_event && role == Role::All {
            app.create_sample_event().await?;
        }
        Ok(app)
    }

    async fn create_sample_event(&self) -> anyhow::Result<()> {
        let Some(writers) = &self.writers else { return Ok(()) };
        let info = sample::event(self.clock.now());
        let request = Request::Command {
            event_id: info.event_id,
            command: frontrow_command::domain::Command::Schedule(Box::new(info)),
            meta: Meta {
                idempotency_key: Some("sample-event".into()),
                ..Meta::default()
            },
        };
        match writers.send(request).await {
            Ok(outcome) if outcome.recorded.is_empty() => {}
            Ok(_) => info!(event_id = %sample::SAMPLE_EVENT_ID, "sample event created"),
            // It was created on an earlier start (with that start's dates).
            Err(CommandError::Rejected(Rejection::EventExists(_))) => {}
            Err(e) => return Err(e).context("creating the sample event"),
        }
        Ok(())
    }

    /// The HTTP API of the sides this process runs.
    pub fn router(&self, listen: std::net::SocketAddr) -> Router {
        let mut router = Router::new();
        if let Some(writers) = &self.writers {
            let base = self
                .settings
                .public_url
                .clone()
                .unwrap_or_else(|| format!("http://{listen}"));
            let demo = self.settings.demo.then(|| {
                Arc::new(Demo {
                    auth: self.auth.clone(),
                    simulator: Simulator::new(
                        format!("{}/webhooks/payments", base.trim_end_matches('/')),
                        self.webhook_secret.clone(),
                    ),
                    token_ttl: chrono::Duration::hours(12),
                })
            });
            let forwarder = self
                .membership
                .as_ref()
                .map(|m| Arc::new(Forwarder::new(m.owners.clone(), self.settings.max_body_bytes)));
            let command = CommandState {
                writers: writers.clone(),
                clock: self.clock.clone(),
                webhook_secret: self.webhook_secret.clone(),
                webhook_tolerance_secs: self.settings.webhook_tolerance_secs,
                demo,
                forwarder,
                auth: self.auth.clone(),
            };
            // Writes and joins: per-address and per-customer rates, before any writer is asked.
            let rates = Arc::new(RateLimits::new(&self.settings.limits));
            router = router.merge(
                frontrow_command::api::router(command).layer(axum::middleware::from_fn_with_state(rates, rate_limit)),
            );
        }
        if let Some(catalog) = &self.catalog {
            let streams = StreamSlots::new(&self.settings.limits);
            router = router.merge(frontrow_query::router_with_streams(catalog.clone(), streams));
            // A seat's history is read from the log, so the role with a journal reader serves it.
            router = router.merge(frontrow_analytics::api::router(catalog.journal().clone()));
            // The fan web app is served wherever its reads are.
            router = router.merge(frontrow_web::router());
        }
        if let (Some(search), true) = (&self.search, self.role != Role::Projector) {
            router = router.merge(frontrow_search::router(search.clone()));
        }
        if let (Some(ledger), true) = (&self.ledger, self.role != Role::Projector) {
            router = router.merge(frontrow_projector::router(ledger.clone(), self.journal.partitions()));
        }
        if self.settings.metrics {
            router = router.route("/metrics", get(crate::metrics::scrape));
        }
        router
            .merge(
                Router::new()
                    .route("/health", get(health))
                    .route("/ready", get(ready))
                    .route("/openapi.json", get(openapi))
                    .with_state(Readiness {
                        catalog: self.catalog.clone(),
                        writers: self.writers.clone(),
                    }),
            )
            .fallback(frontrow_http::fallback)
            .method_not_allowed_fallback(frontrow_http::method_not_allowed)
            .layer(Extension(self.auth.clone()))
            .layer(axum::middleware::from_fn_with_state(
                Arc::new(ClientAddresses::new(&self.settings.limits.trusted_proxies)),
                client_address,
            ))
            .layer(DefaultBodyLimit::max(self.settings.max_body_bytes))
            // JSON answers of 1 KiB and more compressed as the client accepts (a reserve's few
            // hundred bytes are not worth the CPU); server-sent events and answers that already
            // carry a `Content-Encoding` (the precompressed map) pass through.
            .layer(
                tower_http::compression::CompressionLayer::new().compress_when(
                    tower_http::compression::DefaultPredicate::new()
                        .and(tower_http::compression::predicate::SizeAbove::new(1024)),
                ),
            )
            // One span and log line per request, its id, and the HTTP metrics; 5xx answers are
            // also logged with their cause where they arise (Problem).
            .layer(axum::middleware::from_fn(frontrow_http::observe::observe))
    }

    /// The webhook secret in force (for tests and the CLI).
    pub fn webhook_secret(&self) -> &SecretString {
        &self.webhook_secret
    }

    /// Serves until `shutdown` resolves, then drains: in-flight requests finish, the node leaves
    /// its group, each writer finishes its batch (appended and answered), the query node stops.
    pub async fn run(
        self,
        listener: TcpListener,
        shutdown: impl Future<Output = ()> + Send + 'static,
    ) -> anyhow::Result<()> {
        let addr = listener.local_addr()?;
        let router = self.router(addr);
        let self_catalog = self.catalog.clone();
        let Self {
            writers,
            membership,
            query_tasks,
            ledger_projector,
            budget,
            ..
        } = self;
        info!(%addr, "listening");
        // SSE clients never hang up by themselves: end their streams when the stop begins.
        let streams = self_catalog;
        let shutdown = async move {
            shutdown.await;
            if let Some(catalog) = streams {
                catalog.close_streams();
            }
        };
        // The peer's address is what the rate limits and stream caps key on.
        let service = router.into_make_service_with_connect_info::<std::net::SocketAddr>();
        let served = axum::serve(listener, service).with_graceful_shutdown(shutdown).await;
        // Leaving the group releases this node's partitions: they are stopping, not handed
        // over in a rebalance, so their writers take the time to store a last snapshot.
        if let Some(writers) = &writers {
            writers.begin_shutdown();
        }
        if let Some(membership) = membership {
            membership.leave().await;
        }
        if let Some(writers) = writers {
            writers.shutdown().await;
        }
        // The ledger projector finishes its batch and stores its position; the search projector
        // and the query node keep nothing that a restart would not rebuild.
        if let Some(projector) = ledger_projector
            && let Err(e) = projector.stop().await
        {
            warn!(error = %e, "ledger projector ended with an error");
        }
        for task in query_tasks {
            task.abort();
        }
        drop(budget);
        served.context("serving HTTP")
    }
}

/// The writers `role` runs: every partition's in one process; in a command node, the ones the
/// Kafka group assigns it, with its membership of the group. `None` for the other roles.
async fn start_command_side(
    settings: &Settings,
    journal: &Arc<dyn Journal>,
    clock: &Arc<dyn Clock>,
    role: Role,
    node_url: &str,
) -> anyhow::Result<(Option<Writers>, Option<Membership>)> {
    let config = WriterConfig {
        mailbox: settings.mailbox,
        batch: settings.batch,
        snapshot_every: settings.snapshot_every,
    };
    Ok(match role {
        Role::All => {
            let writers = Writers::start(journal.clone(), clock.clone(), config)
                .await
                .context("restoring the writers")?;
            (Some(writers), None)
        }
        Role::Command => {
            let JournalChoice::Kafka { brokers, topic } = settings.journal.clone() else {
                anyhow::bail!("a command node shares partitions through Kafka: use --journal kafka://...");
            };
            let writers = Writers::new(journal.clone(), clock.clone(), config);
            let ownership = OwnershipSettings {
                brokers,
                // One group per events topic: installations (or test runs) sharing a Kafka
                // cluster never rebalance each other.
                group: format!("frontrow-command.{topic}"),
                topic,
                node_url: node_url.trim_end_matches('/').to_owned(),
                session_timeout: std::time::Duration::from_millis(settings.kafka.session_timeout_ms),
                heartbeat_interval: std::time::Duration::from_millis(settings.kafka.heartbeat_interval_ms),
                static_membership: settings.kafka.static_membership,
                replication: settings.kafka.replication,
            };
            let membership = ownership::join(ownership, writers.clone())
                .await
                .context("joining the command group")?;
            (Some(writers), Some(membership))
        }
        Role::Query | Role::Projector => (None, None),
    })
}

/// What a node needs to start the projections it keeps, on the projections' runtime when it
/// serves requests (`budget`).
struct Projections<'a> {
    settings: &'a Settings,
    role: Role,
    journal: &'a Arc<dyn Journal>,
    budget: Option<&'a Budget>,
}

impl Projections<'_> {
    /// The search projector's tasks, when this node projects into `index`.
    async fn search(&self, index: Option<&Arc<dyn SearchIndex>>) -> anyhow::Result<Vec<JoinHandle<()>>> {
        // The embedded index lives in this node's data directory, so a query node on tantivy
        // projects into it itself; a shared OpenSearch index is fed by `frontrow projector`.
        let projects = match self.role {
            Role::All | Role::Projector => true,
            Role::Query => self.settings.search == SearchChoice::Tantivy,
            Role::Command => false,
        };
        let Some(index) = index.filter(|_| projects) else {
            return Ok(Vec::new());
        };
        let start =
            frontrow_search::projector::start(index.clone(), self.journal.clone(), self.settings.projector_interval());
        on_budget(self.budget, start)
            .await?
            .context("starting the search projector")
    }

    /// The ledger projector, when this node projects into `ledger`.
    async fn ledger(&self, ledger: Option<&Arc<dyn Ledger>>) -> anyhow::Result<Option<ProjectorHandle>> {
        // Same rule as search: an embedded ledger is projected by the node that has it; a shared
        // PostgreSQL ledger by `frontrow projector` (or `serve`).
        let projects = match self.role {
            Role::All | Role::Projector => true,
            Role::Query => self.settings.database_url.is_none(),
            Role::Command => false,
        };
        let Some(ledger) = ledger.filter(|_| projects) else {
            return Ok(None);
        };
        let (journal, ledger, batch) = (self.journal.clone(), ledger.clone(), self.settings.projector_batch);
        let pace = self.settings.projector_interval();
        let spawn = async move { frontrow_projector::spawn(journal, ledger, batch, pace) };
        Ok(Some(on_budget(self.budget, spawn).await?))
    }
}

/// Runs `work` (which starts projectors, spawning their tasks) on the projections' runtime
/// when the node has one, so their tasks live there; otherwise here.
async fn on_budget<T: Send + 'static>(
    budget: Option<&Budget>,
    work: impl Future<Output = T> + Send + 'static,
) -> anyhow::Result<T> {
    Ok(match budget {
        Some(budget) => budget.handle().spawn(work).await?,
        None => work.await,
    })
}

/// The full OpenAPI document: command and query sides, generated from the handlers.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    let mut doc = CommandApi::openapi();
    doc.merge(QueryApi::openapi());
    doc.merge(frontrow_search::SearchApi::openapi());
    doc.merge(frontrow_projector::LedgerApi::openapi());
    doc.merge(frontrow_analytics::api::SeatHistoryApi::openapi());
    doc.merge(OpsApi::openapi());
    doc.info.title = "FrontRow".into();
    doc.info.description = Some(
        "Ticket booking for onsales everyone wants at once.\n\n\
         Every refusal is an RFC 9457 problem (`application/problem+json`) whose `type` \
         (`urn:frontrow:problem:...`) says what went wrong; a `429` or `503` carries `Retry-After`. \
         A read with `?after=PARTITION:OFFSET` that names a position this node has not applied yet \
         answers `503 position-not-visible` with `Retry-After` once `wait_ms` has passed."
            .into(),
    );
    doc.info.version = env!("CARGO_PKG_VERSION").into();
    doc
}

#[derive(OpenApi)]
#[openapi(paths(health, ready, openapi, crate::metrics::scrape))]
struct OpsApi;

#[derive(Serialize, utoipa::ToSchema)]
struct Health {
    status: &'static str,
}

/// Alive: the process answers.
#[utoipa::path(get, path = "/health", tag = "operations", responses((status = 200, description = "alive", body = Health)))]
async fn health() -> Json<Health> {
    Json(Health { status: "ok" })
}

/// What `/ready` looks at: the writers this node runs and its query side.
#[derive(Clone)]
struct Readiness {
    catalog: Option<Arc<Catalog>>,
    writers: Option<Writers>,
}

frontrow_http::problems! {
    /// What `/ready` answers while the node is not ready.
    NotReady = [&[Cause::new(503, "`not-serving`: a command node has no partition assigned yet, or is still restoring one; `catching-up`: the query node is still reading the journal; retry after `Retry-After` seconds")]];
}

/// Ready: every partition assigned to this node is restored and served by its writer (a
/// command node with none assigned yet is not ready), and the query side has caught up with
/// the journal. A load balancer's health check should use this, not `/health`.
#[utoipa::path(get, path = "/ready", tag = "operations", responses((status = 200, description = "ready", body = Health), NotReady))]
async fn ready(State(node): State<Readiness>) -> Result<Json<Health>, Problem> {
    let not_ready =
        |kind: &'static str, detail: String| Problem::new(StatusCode::SERVICE_UNAVAILABLE, kind, detail).retry_after(1);
    if let Some(writers) = &node.writers {
        writers.readiness().map_err(|why| not_ready("not-serving", why))?;
    }
    if node.catalog.is_some_and(|c| !c.is_caught_up()) {
        return Err(not_ready(
            "catching-up",
            "the query node is still reading the journal".into(),
        ));
    }
    Ok(Json(Health { status: "ready" }))
}

/// This API as OpenAPI 3.
#[utoipa::path(get, path = "/openapi.json", tag = "operations",
    responses((status = 200, description = "the OpenAPI 3.1 document", body = Object)))]
async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi_document())
}

/// The demo organizer's key, printed at startup: only in demo mode, and only when no
/// organizers are configured (the key is then generated).
pub fn demo_organizer_key(settings: &Settings) -> anyhow::Result<Option<String>> {
    if !settings.demo || !settings.organizers.is_empty() {
        return Ok(None);
    }
    let secrets = Secrets::resolve(settings)?;
    Ok(secrets
        .organizers
        .get(sample::DEMO_ORGANIZER)
        .map(|k| k.expose_secret().to_owned()))
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::openapi_document;

    /// Every operation of the document, as (`METHOD path`, operation).
    fn operations(doc: &Value) -> Vec<(String, &Value)> {
        let paths = doc["paths"].as_object().expect("paths");
        paths
            .iter()
            .flat_map(|(path, ops)| {
                let ops = ops.as_object().expect("path item");
                ops.iter()
                    .map(move |(method, op)| (format!("{} {path}", method.to_uppercase()), op))
            })
            .collect()
    }

    #[test]
    fn every_refusal_is_documented_as_a_problem_with_retry_after_where_due() {
        let doc = serde_json::to_value(openapi_document()).unwrap();
        assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
        let schemes = doc["components"]["securitySchemes"].as_object().unwrap();
        for (label, op) in operations(&doc) {
            let responses = op["responses"].as_object().unwrap();
            for (status, response) in responses {
                let code: u16 = status.parse().unwrap();
                if code >= 400 {
                    let content = response["content"].as_object().unwrap();
                    assert_eq!(
                        content.keys().collect::<Vec<_>>(),
                        ["application/problem+json"],
                        "{label} {status}"
                    );
                    assert_eq!(
                        content["application/problem+json"]["schema"]["$ref"],
                        "#/components/schemas/Problem"
                    );
                    let retry = response["headers"].get("Retry-After").is_some();
                    assert_eq!(retry, code == 429 || code == 503, "{label} {status}: Retry-After");
                }
            }
            let has = |code: &str| responses.contains_key(code);
            if op["requestBody"]["content"].get("application/json").is_some() {
                for code in ["400", "413", "422"] {
                    assert!(has(code), "{label} takes JSON but does not document {code}");
                }
            }
            for requirement in op["security"].as_array().into_iter().flatten() {
                for name in requirement.as_object().unwrap().keys() {
                    assert!(schemes.contains_key(name), "{label}: unknown security scheme {name}");
                }
                assert!(has("401"), "{label} needs credentials but does not document 401");
            }
            let in_path = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|p| p["in"] == "path");
            if in_path {
                assert!(has("404"), "{label} has path ids but does not document 404");
            }
        }
    }

    #[test]
    fn event_streams_document_their_events() {
        let doc = serde_json::to_value(openapi_document()).unwrap();
        for path in ["/events/{event_id}/seats/stream", "/events/{event_id}/queue/me/stream"] {
            let ok = &doc["paths"][path]["get"]["responses"]["200"]["content"];
            let schema = &ok["text/event-stream"]["schema"];
            let events: Vec<&Value> = match schema["oneOf"].as_array() {
                Some(all) => all.iter().collect(),
                None => vec![schema],
            };
            for event in events {
                assert_eq!(
                    event["properties"]["data"]["contentMediaType"], "application/json",
                    "{path}"
                );
                assert!(event["properties"]["event"]["enum"].is_array(), "{path}");
            }
        }
    }
}
