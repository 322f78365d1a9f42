//! The conformance suite on the PostgreSQL ledger: each test gets its own schemas in the
//! database at `FRONTROW_DATABASE_URL` (default: the one `deploy/local/up.sh postgres` makes).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use frontrow_projector::{Ledger, PgLedger};

use crate::conformance::Harness;
use crate::ledger_conformance;

pub fn database_url() -> String {
    std::env::var("FRONTROW_DATABASE_URL")
        .unwrap_or_else(|_| "postgres://frontrow:frontrow@127.0.0.1:5432/frontrow".to_owned())
}

/// A schema name no other test run uses at the same time.
pub fn unique_schema(name: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .subsec_nanos();
    let short: String = name.chars().filter(|c| c.is_ascii_lowercase()).take(12).collect();
    format!(
        "t_{short}_{}_{}_{}x",
        std::process::id(),
        nanos % 100_000,
        N.fetch_add(1, Ordering::Relaxed)
    )
}

/// Opens ledgers in fresh schemas and drops them when the test ends.
#[derive(Default)]
pub struct Postgres {
    schemas: Mutex<Vec<String>>,
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let schemas = std::mem::take(&mut *self.schemas.lock().unwrap());
        if schemas.is_empty() {
            return;
        }
        // Drop runs inside the test's runtime: clean up from a thread with a runtime of its own.
        let cleanup = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                let Ok(pool) = sqlx::PgPool::connect(&database_url()).await else {
                    return;
                };
                for schema in schemas {
                    let names: Vec<String> =
                        sqlx::query_scalar("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE $1")
                            .bind(format!("{}%", schema.replace('_', "\\_")))
                            .fetch_all(&pool)
                            .await
                            .unwrap_or_default();
                    for name in names {
                        let sql = format!("DROP SCHEMA IF EXISTS {name} CASCADE");
                        let _ = sqlx::query(sqlx::AssertSqlSafe(sql)).execute(&pool).await;
                    }
                }
            });
        });
        let _ = cleanup.join();
    }
}

#[async_trait]
impl Harness for Postgres {
    async fn ledger(&self, name: &str) -> Arc<dyn Ledger> {
        let schema = unique_schema(name);
        self.schemas.lock().unwrap().push(schema.clone());
        let ledger = PgLedger::connect(&database_url(), &schema).await.unwrap_or_else(|e| {
            panic!(
                "PostgreSQL at {} (run deploy/local/up.sh postgres): {e}",
                database_url()
            )
        });
        Arc::new(ledger)
    }
}

ledger_conformance!(Postgres::default(), #[ignore = "needs postgres: run the README's test command"]);

#[tokio::test]
#[ignore = "needs postgres: run the README's test command"]
async fn bad_schema_names_are_refused() {
    for bad in ["", "Ledger", "ledger; drop table x", "1ledger"] {
        assert!(PgLedger::connect(&database_url(), bad).await.is_err(), "{bad:?}");
    }
}
