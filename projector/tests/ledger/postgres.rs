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

/// The indexes and key or unique constraints of `schema`, with the schema's name taken out of
/// their definitions, sorted.
async fn schema_indexes(pool: &sqlx::PgPool, schema: &str) -> Vec<String> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT 'index ' || indexname::text, indexdef FROM pg_indexes WHERE schemaname = $1
         UNION ALL
         SELECT 'constraint ' || c.conname::text || ' ' || c.contype::text, pg_get_constraintdef(c.oid)
         FROM pg_constraint c JOIN pg_namespace n ON n.oid = c.connamespace
         WHERE n.nspname = $1 AND c.contype IN ('p', 'u')",
    )
    .bind(schema)
    .fetch_all(pool)
    .await
    .unwrap();
    let mut all: Vec<String> = rows
        .into_iter()
        .map(|(what, def)| format!("{what}: {}", def.replace(&format!("{schema}."), "")))
        .collect();
    all.sort();
    all
}

/// A rebuild fills its generation without the indexes no write needs and builds them before
/// the switch: the promoted ledger has every index and key a freshly migrated one has.
#[tokio::test]
#[ignore = "needs postgres: run the README's test command"]
async fn a_rebuilt_generation_has_every_index_and_key_of_a_fresh_one() {
    let (_dir, mut g) = crate::conformance::generated(2, 3, 300, 7).await;
    g.step(100).await;
    let h = Postgres::default();
    let serving_schema = unique_schema("idxserving");
    h.schemas.lock().unwrap().push(serving_schema.clone());
    let serving = PgLedger::connect(&database_url(), &serving_schema).await.unwrap();
    let fresh = h.ledger("idxfresh").await;
    let report = frontrow_projector::rebuild(g.journal.clone(), &serving, 100)
        .await
        .unwrap();
    assert!(report.records > 0);
    let pool = sqlx::PgPool::connect(&database_url()).await.unwrap();
    let rebuilt = schema_indexes(&pool, &serving_schema).await;
    let want = schema_indexes(&pool, &fresh.generation()).await;
    assert!(
        want.iter().any(|i| i.starts_with("constraint seat_history_pkey p")),
        "{want:#?}"
    );
    assert_eq!(rebuilt, want);
}
