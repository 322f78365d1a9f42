//! The `frontrow` command: thin — parse the configuration, build, run, report how it ended.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand};
use frontrow::app::{App, Role, Secrets, demo_organizer_key, open_journal, open_ledger, open_search, openapi_document};
use frontrow::sample::SAMPLE_EVENT_ID;
use frontrow::settings::Settings;
use frontrow_command::clock::SystemClock;
use frontrow_http::auth::Auth;
use frontrow_schema::CustomerId;

/// jemalloc, with the options `.cargo/config.toml` builds in: a node's RSS follows its live
/// heap (README "The catalogue, compact").
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(
    name = "frontrow",
    version = frontrow::VERSION,
    about = "Ticket booking for onsales everyone wants at once"
)]
struct Cli {
    /// TOML configuration file (also FRONTROW_CONFIG).
    #[arg(long, global = true, env = "FRONTROW_CONFIG")]
    config: Option<PathBuf>,
    /// Data directory (overrides FRONTROW_DATA_DIR and the file).
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Run everything in one process on the embedded defaults (SQLite journal in the data dir).
    Serve(NodeArgs),
    /// Run a command node: writers and the command API for the partitions the Kafka consumer
    /// group assigns; requests for other partitions are forwarded to their owners (needs a
    /// `kafka://` journal).
    Command(NodeArgs),
    /// Run a query node: availability maps and the read API, following the journal.
    Query(NodeArgs),
    /// Run the projectors alone (the search index), or rebuild a projection.
    Projector {
        #[command(flatten)]
        node: NodeArgs,
        #[command(subcommand)]
        action: Option<ProjectorAction>,
    },
    /// Print a customer bearer token signed with this installation's secret.
    Token {
        #[arg(long)]
        customer: String,
        /// Validity in minutes.
        #[arg(long, default_value_t = 720)]
        ttl_minutes: i64,
    },
    /// Print the OpenAPI document.
    Openapi,
    /// Replay the log (read-only) into onsale figures: report.json, per_second.csv, report.html.
    Analytics(frontrow::analytics_cli::AnalyticsArgs),
}

/// Where a node listens and which journal it uses, over the settings.
#[derive(clap::Args)]
struct NodeArgs {
    /// Address to listen on (overrides FRONTROW_LISTEN and the file).
    #[arg(long)]
    listen: Option<std::net::SocketAddr>,
    /// The journal: `sqlite` (embedded) or `kafka://HOST:PORT[,HOST:PORT][/TOPIC]` (overrides
    /// FRONTROW_JOURNAL and the file).
    #[arg(long)]
    journal: Option<String>,
}

impl NodeArgs {
    /// The settings with these overrides applied.
    fn settings(&self, cli: &Cli) -> anyhow::Result<Settings> {
        let mut settings = settings(cli)?;
        if let Some(listen) = self.listen {
            settings.listen = listen;
        }
        if let Some(journal) = &self.journal {
            settings.journal = journal.parse()?;
        }
        Ok(settings)
    }
}

#[derive(Subcommand)]
enum ProjectorAction {
    /// Replay the whole log into a fresh projection and switch to it when caught up.
    Rebuild {
        #[arg(value_enum)]
        projection: Projection,
    },
}

#[derive(Clone, Copy, clap::ValueEnum)]
enum Projection {
    /// The search index (a new versioned index, then the alias swap).
    Search,
    /// The ledger (a new schema or file generation, then the switch).
    Ledger,
}

fn settings(cli: &Cli) -> anyhow::Result<Settings> {
    let mut settings = Settings::load(cli.config.as_deref()).context("loading configuration")?;
    if let Some(dir) = &cli.data_dir {
        settings.data_dir = dir.clone();
    }
    Ok(settings)
}

/// SIGINT or SIGTERM, whichever comes first. The handlers are installed when this is called, not
/// when the future is first polled (the server polls it only once it serves): called before
/// the "listening" line, a stop asked for as soon as that line appears is a graceful one, where
/// otherwise the signal's default action would end the process at once.
fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()> + Send + 'static> {
    #[cfg(unix)]
    let stopped = {
        use tokio::signal::unix::{SignalKind, signal};
        let mut interrupt = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
        let mut terminate = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
        async move {
            tokio::select! { _ = interrupt.recv() => {}, _ = terminate.recv() => {} }
        }
    };
    #[cfg(not(unix))]
    let stopped = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    Ok(async move {
        stopped.await;
        tracing::info!("shutdown requested");
    })
}

/// Builds and runs one process in `role` until SIGINT/SIGTERM.
async fn run(cli: &Cli, role: Role, node: &NodeArgs) -> anyhow::Result<()> {
    let settings = node.settings(cli)?;
    let tracing = frontrow::telemetry::init(&settings.telemetry, role.name())?;
    let served = serve(settings, role).await;
    tracing.shutdown();
    served
}

async fn serve(settings: Settings, role: Role) -> anyhow::Result<()> {
    // Refuse a bad configuration before anything listens.
    frontrow::guard::check_exposure(&settings, role)?;
    frontrow::guard::check_secrets(&settings)?;
    let listener = frontrow::net::listen(settings.listen, settings.listen_backlog)
        .with_context(|| format!("binding {}", settings.listen))?;
    if let Some(granted) =
        frontrow::net::granted_backlog(settings.listen_backlog).filter(|granted| *granted < settings.listen_backlog)
    {
        tracing::warn!(
            asked = settings.listen_backlog,
            granted,
            "net.core.somaxconn caps the accept queue: raise it for a flash crowd's connections"
        );
    }
    let addr = listener.local_addr()?;
    let organizer_key = demo_organizer_key(&settings)?;
    let node_url = settings.public_url.clone().unwrap_or_else(|| format!("http://{addr}"));
    let app = App::build_role(settings, Arc::new(SystemClock::new()), role, node_url).await?;
    let stop = shutdown_signal()?;
    println!("FrontRow listening on http://{addr}");
    if app.settings.sample_event && role == Role::All {
        println!("  sample event:  http://{addr}/events/{SAMPLE_EVENT_ID}/availability");
    }
    if let Some(key) = organizer_key.filter(|_| role != Role::Query) {
        println!("  demo organizer API key (X-Api-Key): {key}");
    }
    if app.settings.demo && role != Role::Query {
        println!(
            "  customer token: curl -s -X POST http://{addr}/demo/tokens -H 'content-type: application/json' -d '{{\"customer\":\"alice\"}}'"
        );
    }
    println!("  API description: http://{addr}/openapi.json");
    app.run(listener, stop).await?;
    tracing::info!("stopped cleanly");
    Ok(())
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    // A serving role sets up its logs and traces once its settings are read.
    let tracing = match &cli.command {
        Cmd::Serve(_) | Cmd::Command(_) | Cmd::Query(_) | Cmd::Projector { action: None, .. } => None,
        _ => Some(frontrow::telemetry::init_logs()?),
    };
    let done = command(&cli).await;
    if let Some(tracing) = tracing {
        tracing.shutdown();
    }
    done
}

async fn command(cli: &Cli) -> anyhow::Result<()> {
    match &cli.command {
        Cmd::Serve(node) => run(cli, Role::All, node).await?,
        Cmd::Command(node) => run(cli, Role::Command, node).await?,
        Cmd::Query(node) => run(cli, Role::Query, node).await?,
        Cmd::Projector { node, action: None } => run(cli, Role::Projector, node).await?,
        Cmd::Projector {
            node,
            action: Some(ProjectorAction::Rebuild { projection }),
        } => {
            let settings = node.settings(cli)?;
            let journal = open_journal(&settings).await?;
            match projection {
                Projection::Ledger => {
                    let ledger = open_ledger(&settings).await?;
                    let r = frontrow_projector::rebuild(journal, ledger.as_ref(), 5000).await?;
                    println!(
                        "ledger rebuilt: {} records into {} in {:.1}s ({:.0} events/s)",
                        r.records,
                        r.generation,
                        r.elapsed.as_secs_f64(),
                        r.records_per_second()
                    );
                }
                Projection::Search => {
                    let rebuilt = frontrow_search::projector::rebuild(open_search(&settings)?, journal).await?;
                    println!(
                        "search index rebuilt into {} at {:?}",
                        rebuilt.version, rebuilt.positions
                    );
                }
            }
        }
        Cmd::Token { customer, ttl_minutes } => {
            let settings = settings(cli)?;
            let secrets = Secrets::resolve(&settings)?;
            let customer = CustomerId::parse(customer)?;
            let auth = Auth::new(secrets.token_secret, []);
            let now = chrono::Utc::now();
            println!(
                "{}",
                auth.mint(&customer, now, now + chrono::Duration::minutes(*ttl_minutes))
            );
        }
        Cmd::Analytics(args) => {
            let settings = settings(cli)?;
            frontrow::analytics_cli::run(&settings, args).await?;
        }
        Cmd::Openapi => {
            println!("{}", serde_json::to_string_pretty(&openapi_document())?);
        }
    }
    Ok(())
}
