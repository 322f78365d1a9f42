//! The PostgreSQL ledger: one schema per generation, written set-wise through `UNNEST`.
//!
//! The serving ledger is the schema named by the configuration (`ledger` by default); every
//! connection's `search_path` is that name. A rebuild replays the log into a new schema
//! `<name>_v<n>` beside it, then [`PgLedger::promote`] swaps the two by renaming schemas in one
//! transaction: readers see the old tables or the new ones, never a mix, and tools that query
//! `ledger.*` need no change. The prepared-statement cache is off, so no connection keeps a
//! plan bound to the tables of the retired schema.
//!
//! Every batch transaction first locks its partition's position row, and a promotion first
//! locks the positions table exclusively: a batch runs entirely before or entirely after the
//! swap, and a batch after it finds the new generation's position (and is refused if it does
//! not match, so the projector resumes from there).

use std::collections::BTreeMap;
use std::str::FromStr;
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use frontrow_schema::{EventId, ReservationId};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions, PgRow};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Postgres, Row};
use tracing::{info, instrument};
use uuid::Uuid;

use crate::LedgerError;
use crate::dialect::{Dialect, fetch, fetch_together, ledger_migrator};
use crate::ledger::{Batch, Ledger, Lookup, Read};
use crate::rows::{ALL_TABLES, APPEND_ONLY, Col, Op, Ty, Val};

/// A schema name we are willing to put into SQL.
fn check_ident(name: &str) -> Result<(), LedgerError> {
    let ok = !name.is_empty()
        && name.len() <= 48
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if ok {
        Ok(())
    } else {
        Err(LedgerError::Config(format!(
            "{name:?} is not a ledger schema name (lowercase letters, digits and _, at most 48)"
        )))
    }
}

/// A PostgreSQL ledger in one schema.
pub struct PgLedger {
    url: String,
    /// The serving schema's name.
    base: String,
    /// The schema this handle writes: `base`, or a rebuild's `base_v<n>`.
    schema: String,
    pool: PgPool,
    /// The definitions of the indexes [`Ledger::defer_indexes`] dropped, until they are built.
    deferred: tokio::sync::Mutex<Vec<DeferredIndex>>,
}

impl std::fmt::Debug for PgLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgLedger")
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

impl PgLedger {
    /// Connects to the serving ledger in `schema` of the database at `url`, creating and
    /// migrating it if needed.
    pub async fn connect(url: &str, schema: &str) -> Result<Self, LedgerError> {
        Self::open(url, schema, schema, 8).await
    }

    async fn open(url: &str, base: &str, schema: &str, connections: u32) -> Result<Self, LedgerError> {
        check_ident(base)?;
        check_ident(schema)?;
        let options = PgConnectOptions::from_str(url)?;
        {
            let admin = PgPoolOptions::new()
                .max_connections(1)
                .connect_with(options.clone())
                .await?;
            sqlx::query(AssertSqlSafe(format!("CREATE SCHEMA IF NOT EXISTS {schema}")))
                .execute(&admin)
                .await?;
            admin.close().await;
        }
        let options = options.options([("search_path", schema)]).statement_cache_capacity(0);
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .connect_with(options)
            .await?;
        ledger_migrator!("postgres").run(&pool).await?;
        Ok(Self {
            url: url.to_owned(),
            base: base.to_owned(),
            schema: schema.to_owned(),
            pool,
            deferred: tokio::sync::Mutex::default(),
        })
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// Drops this ledger's schema and everything in it (tests, and retiring a rebuild).
    pub async fn drop_schema(self) -> Result<(), LedgerError> {
        self.pool.close().await;
        Self::drop_schema_at(&self.url, &self.schema).await
    }

    /// Drops ledger schema `schema` of the database at `url`, if it is there, without
    /// connecting to it as a ledger first (which would create and migrate it).
    pub async fn drop_schema_at(url: &str, schema: &str) -> Result<(), LedgerError> {
        check_ident(schema)?;
        let admin = PgPoolOptions::new()
            .max_connections(1)
            .connect_with(PgConnectOptions::from_str(url)?)
            .await?;
        sqlx::query(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {schema} CASCADE")))
            .execute(&admin)
            .await?;
        admin.close().await;
        Ok(())
    }
}

/// An index a fresh generation can do without while it is filled, and how to build it again.
#[derive(Debug)]
struct DeferredIndex {
    table: String,
    name: String,
    /// `CREATE INDEX …` for a plain index; for a key, the constraint (`PRIMARY KEY (…)`).
    definition: String,
    constraint: bool,
}

impl DeferredIndex {
    fn drop_sql(&self, schema: &str) -> String {
        if self.constraint {
            format!("ALTER TABLE {schema}.{} DROP CONSTRAINT {}", self.table, self.name)
        } else {
            format!("DROP INDEX {schema}.{}", self.name)
        }
    }

    fn create_sql(&self, schema: &str) -> String {
        if self.constraint {
            format!(
                "ALTER TABLE {schema}.{} ADD CONSTRAINT {} {}",
                self.table, self.name, self.definition
            )
        } else {
            self.definition.clone()
        }
    }
}

/// The indexes of `schema` that no write of the projector needs: every plain index, and the
/// keys of the tables it only appends to ([`APPEND_ONLY`]). The keys of the tables it updates,
/// deletes from or looks up stay.
async fn deferrable_indexes(pool: &PgPool, schema: &str) -> Result<Vec<DeferredIndex>, LedgerError> {
    let appended: Vec<String> = APPEND_ONLY.iter().map(|t| t.name.to_owned()).collect();
    let rows: Vec<(String, String, String, bool)> = sqlx::query_as(
        "SELECT i.tablename::text, i.indexname::text, i.indexdef, false FROM pg_indexes i
         WHERE i.schemaname = $1 AND NOT EXISTS (
             SELECT 1 FROM pg_constraint c
             JOIN pg_namespace n ON n.oid = c.connamespace
             WHERE n.nspname = i.schemaname AND c.conname = i.indexname)
         UNION ALL
         SELECT t.relname::text, c.conname::text, pg_get_constraintdef(c.oid), true FROM pg_constraint c
         JOIN pg_namespace n ON n.oid = c.connamespace
         JOIN pg_class t ON t.oid = c.conrelid
         WHERE n.nspname = $1 AND c.contype IN ('p', 'u') AND t.relname::text = ANY($2)
         ORDER BY 2",
    )
    .bind(schema)
    .bind(appended)
    .fetch_all(pool)
    .await?;
    let mut indexes = Vec::with_capacity(rows.len());
    for (table, name, definition, constraint) in rows {
        check_ident(&table)?;
        check_ident(&name)?;
        indexes.push(DeferredIndex {
            table,
            name,
            definition,
            constraint,
        });
    }
    Ok(indexes)
}

/// Binds one column of `rows` (column `i`, of type `ty`) as a PostgreSQL array.
fn bind_column<'q>(
    q: sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments>,
    rows: &[Vec<Val>],
    i: usize,
    ty: Ty,
) -> sqlx::query::Query<'q, Postgres, sqlx::postgres::PgArguments> {
    match ty {
        Ty::Uuid => q.bind(rows.iter().map(|r| r[i].as_uuid()).collect::<Vec<Option<Uuid>>>()),
        Ty::Text | Ty::Json => q.bind(rows.iter().map(|r| r[i].as_str()).collect::<Vec<Option<&str>>>()),
        Ty::Int => q.bind(rows.iter().map(|r| r[i].as_int()).collect::<Vec<Option<i64>>>()),
        Ty::Bool => q.bind(rows.iter().map(|r| r[i].as_bool()).collect::<Vec<Option<bool>>>()),
        Ty::Time => q.bind(
            rows.iter()
                .map(|r| r[i].as_time())
                .collect::<Vec<Option<DateTime<Utc>>>>(),
        ),
    }
}

/// `SELECT unnest($1::type[]) AS name, …`: one row per array element, the arrays read side by
/// side. Set-returning functions in the select list run in step without first copying the rows
/// into a tuple store, as `FROM UNNEST(…)` does.
fn unnest_select<'a>(cols: impl IntoIterator<Item = &'a Col>) -> String {
    let exprs: Vec<_> = cols
        .into_iter()
        .enumerate()
        .map(|(i, c)| {
            let cast = if c.ty == Ty::Json { "::jsonb" } else { "" };
            format!("unnest(${}::{}){cast} AS {}", i + 1, c.ty.pg_array(), c.name)
        })
        .collect();
    format!("SELECT {}", exprs.join(", "))
}

async fn write_op(conn: &mut sqlx::PgConnection, op: &Op) -> Result<(), LedgerError> {
    match op {
        Op::Insert { table, rows } => {
            let names: Vec<_> = table.cols.iter().map(|c| c.name).collect();
            let sql = format!(
                "INSERT INTO {t} ({cols}) {select}",
                t = table.name,
                cols = names.join(", "),
                select = unnest_select(table.cols),
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for (i, c) in table.cols.iter().enumerate() {
                q = bind_column(q, rows, i, c.ty);
            }
            q.execute(&mut *conn).await?;
        }
        Op::Update { table, key, set, rows } => {
            let cols: Vec<_> = key.iter().chain(set).collect();
            let sets: Vec<_> = set.iter().map(|c| format!("{0} = u.{0}", c.name)).collect();
            let wheres: Vec<_> = key.iter().map(|c| format!("t.{0} = u.{0}", c.name)).collect();
            let sql = format!(
                "UPDATE {tbl} AS t SET {sets} FROM ({select}) AS u WHERE {wheres}",
                tbl = table.name,
                sets = sets.join(", "),
                select = unnest_select(cols.iter().copied()),
                wheres = wheres.join(" AND "),
            );
            let mut q = sqlx::query(AssertSqlSafe(sql));
            for (i, c) in cols.iter().enumerate() {
                q = bind_column(q, rows, i, c.ty);
            }
            q.execute(&mut *conn).await?;
        }
        Op::Delete { table, col, values } => {
            let sql = format!(
                "DELETE FROM {} WHERE {} = ANY($1::{})",
                table.name,
                col.name,
                col.ty.pg_array()
            );
            let rows: Vec<Vec<Val>> = values.iter().map(|v| vec![v.clone()]).collect();
            bind_column(sqlx::query(AssertSqlSafe(sql)), &rows, 0, col.ty)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}

impl Dialect for Postgres {
    const ONE_SNAPSHOT: Option<&'static str> = Some("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY");

    fn bind(q: Query<'_, Self, Self::Arguments>, v: Val) -> Query<'_, Self, Self::Arguments> {
        match v {
            Val::Null => q.bind(None::<String>),
            Val::Uuid(u) => q.bind(u),
            Val::Text(s) => q.bind(s),
            Val::Int(i) => q.bind(i),
            Val::Bool(b) => q.bind(b),
            Val::Time(t) => q.bind(t),
        }
    }

    fn decode(row: &PgRow, i: usize, ty: Ty) -> Result<Val, LedgerError> {
        Ok(match ty {
            Ty::Uuid => Val::opt(row.try_get::<Option<Uuid>, _>(i)?),
            Ty::Text | Ty::Json => Val::opt(row.try_get::<Option<String>, _>(i)?),
            Ty::Int => Val::opt(row.try_get::<Option<i64>, _>(i)?),
            Ty::Bool => Val::opt(row.try_get::<Option<bool>, _>(i)?),
            Ty::Time => Val::opt(row.try_get::<Option<DateTime<Utc>>, _>(i)?),
        })
    }
}

#[async_trait]
impl Ledger for PgLedger {
    fn describe(&self) -> String {
        format!("postgres schema {}", self.schema)
    }

    fn generation(&self) -> String {
        self.schema.clone()
    }

    fn concurrent_writers(&self) -> usize {
        2
    }

    async fn positions(&self) -> Result<BTreeMap<u32, u64>, LedgerError> {
        let rows: Vec<(i32, i64)> = sqlx::query_as("SELECT partition, next_offset FROM projector_positions")
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(|(p, o)| (p as u32, o as u64)).collect())
    }

    async fn lookup(&self, events: &[EventId], reservations: &[ReservationId]) -> Result<Lookup, LedgerError> {
        let mut lookup = Lookup::default();
        if !events.is_empty() {
            let ids: Vec<Uuid> = events.iter().map(EventId::as_uuid).collect();
            let rows: Vec<(Uuid, String, String, String)> = sqlx::query_as(
                "SELECT event_id, organizer, currency, seat_map::text FROM events WHERE event_id = ANY($1)",
            )
            .bind(ids)
            .fetch_all(&self.pool)
            .await?;
            lookup.events = rows
                .into_iter()
                .map(|(id, o, c, m)| (EventId::from_uuid(id), o, c, m))
                .collect();
        }
        if !reservations.is_empty() {
            let ids: Vec<Uuid> = reservations.iter().map(ReservationId::as_uuid).collect();
            let rows: Vec<(Uuid, String)> =
                sqlx::query_as("SELECT reservation_id, seats FROM reservations WHERE reservation_id = ANY($1)")
                    .bind(ids)
                    .fetch_all(&self.pool)
                    .await?;
            lookup.reservations = rows
                .into_iter()
                .map(|(id, s)| (ReservationId::from_uuid(id), s))
                .collect();
        }
        Ok(lookup)
    }

    #[instrument(level = "debug", skip_all, fields(schema = %self.schema, partition = batch.partition, from = batch.from, to = batch.to))]
    async fn write(&self, batch: &Batch) -> Result<(), LedgerError> {
        let mut tx = self.pool.begin().await?;
        // First statement of the batch: it locks the position row (see the module docs).
        sqlx::query(
            "INSERT INTO projector_positions (partition, next_offset) VALUES ($1, 0)
             ON CONFLICT (partition) DO NOTHING",
        )
        .bind(batch.partition as i32)
        .execute(&mut *tx)
        .await?;
        let stored: i64 =
            sqlx::query_scalar("SELECT next_offset FROM projector_positions WHERE partition = $1 FOR UPDATE")
                .bind(batch.partition as i32)
                .fetch_one(&mut *tx)
                .await?;
        batch.check_from(stored as u64)?;
        if batch.ops.iter().any(|op| matches!(op, Op::Update { .. })) {
            // An update finds its rows by key. Without this the planner hashes the whole table
            // for a few thousand keys once it looks small enough (a fresh generation that
            // has no statistics yet), and scans all of it for every batch.
            sqlx::raw_sql("SET LOCAL enable_hashjoin = off; SET LOCAL enable_mergejoin = off")
                .execute(&mut *tx)
                .await?;
        }
        for op in &batch.ops {
            write_op(&mut tx, op).await?;
        }
        sqlx::query("UPDATE projector_positions SET next_offset = $2 WHERE partition = $1")
            .bind(batch.partition as i32)
            .bind(batch.to as i64)
            .execute(&mut *tx)
            .await?;
        batch.commit(tx).await
    }

    async fn query(&self, sql: &str, params: Vec<Val>, types: &[Ty]) -> Result<Vec<Vec<Val>>, LedgerError> {
        fetch(&self.pool, sql, params, types).await
    }

    async fn query_together(&self, reads: Vec<Read>) -> Result<Vec<Vec<Vec<Val>>>, LedgerError> {
        fetch_together(&self.pool, reads).await
    }

    async fn dump(&self) -> Result<BTreeMap<String, Vec<String>>, LedgerError> {
        let mut out = BTreeMap::new();
        let names = ALL_TABLES.iter().map(|t| t.name).chain(["projector_positions"]);
        for name in names {
            let rows: Vec<String> = sqlx::query_scalar(AssertSqlSafe(format!(
                "SELECT CAST(t AS text) FROM {name} t ORDER BY 1"
            )))
            .fetch_all(&self.pool)
            .await?;
            out.insert(name.to_owned(), rows);
        }
        Ok(out)
    }

    async fn next_generation(&self) -> Result<Arc<dyn Ledger>, LedgerError> {
        let pattern = format!("{}\\_v%", self.base);
        let names: Vec<String> = sqlx::query_scalar("SELECT nspname::text FROM pg_namespace WHERE nspname LIKE $1")
            .bind(pattern)
            .fetch_all(&self.pool)
            .await?;
        let prefix = format!("{}_v", self.base);
        let n = names
            .iter()
            .filter_map(|s| s.strip_prefix(&prefix)?.parse::<u32>().ok())
            .max()
            .unwrap_or(1)
            + 1;
        let schema = format!("{prefix}{n}");
        info!(%schema, "creating ledger generation");
        Ok(Arc::new(PgLedger::open(&self.url, &self.base, &schema, 4).await?))
    }

    async fn defer_indexes(&self) -> Result<(), LedgerError> {
        if self.schema == self.base {
            return Err(LedgerError::Config("the serving ledger keeps its indexes".into()));
        }
        let mut deferred = self.deferred.lock().await;
        for index in deferrable_indexes(&self.pool, &self.schema).await? {
            sqlx::query(AssertSqlSafe(index.drop_sql(&self.schema)))
                .execute(&self.pool)
                .await?;
            deferred.push(index);
        }
        info!(schema = %self.schema, indexes = deferred.len(), "indexes deferred until the tables are filled");
        Ok(())
    }

    async fn restore_indexes(&self) -> Result<(), LedgerError> {
        let mut deferred = self.deferred.lock().await;
        let started = std::time::Instant::now();
        let count = deferred.len();
        // The biggest tables' first: their builds are the longest, and the rest fit beside them.
        let mut sized = Vec::with_capacity(count);
        for index in deferred.drain(..) {
            let bytes: i64 = sqlx::query_scalar("SELECT pg_relation_size(to_regclass($1))")
                .bind(format!("{}.{}", self.schema, index.table))
                .fetch_one(&self.pool)
                .await?;
            sized.push((bytes, index));
        }
        sized.sort_by_key(|(bytes, _)| std::cmp::Reverse(*bytes));
        // Built side by side, as many at once as the pool has connections.
        let mut builds = tokio::task::JoinSet::new();
        for (_, index) in sized {
            let (pool, sql) = (self.pool.clone(), index.create_sql(&self.schema));
            builds.spawn(async move { sqlx::query(AssertSqlSafe(sql)).execute(&pool).await });
        }
        while let Some(built) = builds.join_next().await {
            built.map_err(|e| LedgerError::Config(format!("an index build failed: {e}")))??;
        }
        info!(schema = %self.schema, indexes = count, seconds = started.elapsed().as_secs_f64(), "deferred indexes built");
        Ok(())
    }

    #[instrument(skip(self), fields(serving = %self.base))]
    async fn promote(&self, generation: &str) -> Result<(), LedgerError> {
        check_ident(generation)?;
        if !generation.starts_with(&format!("{}_v", self.base)) {
            return Err(LedgerError::Config(format!(
                "{generation} is not a generation of ledger {}",
                self.base
            )));
        }
        let retired = format!("{}_retired", self.base);
        sqlx::query(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {retired} CASCADE")))
            .execute(&self.pool)
            .await?;
        let mut tx = self.pool.begin().await?;
        sqlx::query("SET LOCAL lock_timeout = '60s'").execute(&mut *tx).await?;
        // Waits for the batch in flight, and holds every later batch until the swap commits.
        sqlx::query(AssertSqlSafe(format!(
            "LOCK TABLE {}.projector_positions IN ACCESS EXCLUSIVE MODE",
            self.base
        )))
        .execute(&mut *tx)
        .await?;
        sqlx::query(AssertSqlSafe(format!("ALTER SCHEMA {} RENAME TO {retired}", self.base)))
            .execute(&mut *tx)
            .await?;
        sqlx::query(AssertSqlSafe(format!(
            "ALTER SCHEMA {generation} RENAME TO {}",
            self.base
        )))
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        sqlx::query(AssertSqlSafe(format!("DROP SCHEMA IF EXISTS {retired} CASCADE")))
            .execute(&self.pool)
            .await?;
        info!(%generation, "ledger generation promoted");
        Ok(())
    }
}
