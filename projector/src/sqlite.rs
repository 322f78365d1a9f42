//! The embedded ledger: SQLite, one database file per generation.
//!
//! The serving generation is named by the pointer file `ledger.current` in the ledger's
//! directory (e.g. `ledger-1.db`). A rebuild replays the log into `ledger-<n>.db` beside it;
//! [`SqliteLedger::promote`] replaces the pointer file by an atomic rename and retires the old
//! file. Every operation of the serving handle starts by checking the pointer, so a rebuild
//! made by another process (`frontrow projector rebuild ledger`) is picked up by the server at
//! its next read or batch. Each batch is one `BEGIN IMMEDIATE` transaction with its position.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use frontrow_schema::{EventId, ReservationId};
use sqlx::query::Query;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteRow, SqliteSynchronous,
};
use sqlx::{AssertSqlSafe, Row, Sqlite};
use tracing::{info, instrument};
use uuid::Uuid;

use crate::LedgerError;
use crate::dialect::{Dialect, fetch, fetch_together, ledger_migrator};
use crate::ledger::{Batch, Ledger, Lookup, Read};
use crate::rows::{ALL_TABLES, Op, Ty, Val, sqlite_time};

/// SQLite's default limit on bound parameters per statement is 32766.
const MAX_PARAMS: usize = 32_000;

const POINTER: &str = "ledger.current";

/// A SQLite ledger: the serving generation of a directory, or one rebuild generation in it.
pub struct SqliteLedger {
    dir: PathBuf,
    /// `None` for the serving handle (follows the pointer file); a fixed file for a rebuild.
    pinned: Option<String>,
    current: Mutex<(String, SqlitePool)>,
}

impl std::fmt::Debug for SqliteLedger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteLedger")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

/// The name every connection thread of the SQLite ledger starts with, so a node can give them
/// a share of the CPU of their own (`frontrow serve` runs them below the request path).
pub const LEDGER_THREAD: &str = "ledger-sqlite";

async fn open_pool(path: &Path) -> Result<SqlitePool, LedgerError> {
    let options = SqliteConnectOptions::new()
        .thread_name(|id| format!("{LEDGER_THREAD}-{id}"))
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .synchronous(SqliteSynchronous::Normal)
        .busy_timeout(Duration::from_secs(30));
    let pool = SqlitePoolOptions::new()
        .max_connections(4)
        .connect_with(options)
        .await?;
    ledger_migrator!("sqlite").run(&pool).await?;
    Ok(pool)
}

fn read_pointer(dir: &Path) -> Result<Option<String>, LedgerError> {
    match std::fs::read_to_string(dir.join(POINTER)) {
        Ok(s) => Ok(Some(s.trim().to_owned())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Points the directory at `file`, atomically.
fn write_pointer(dir: &Path, file: &str) -> Result<(), LedgerError> {
    let tmp = dir.join(format!("{POINTER}.tmp"));
    std::fs::write(&tmp, format!("{file}\n"))?;
    std::fs::File::open(&tmp)?.sync_all()?;
    std::fs::rename(&tmp, dir.join(POINTER))?;
    if let Ok(d) = std::fs::File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

fn generation_number(file: &str) -> Option<u32> {
    file.strip_prefix("ledger-")?.strip_suffix(".db")?.parse().ok()
}

impl SqliteLedger {
    /// Opens the serving ledger in `dir`, creating the directory and a first generation if
    /// needed.
    pub async fn open(dir: &Path) -> Result<Self, LedgerError> {
        std::fs::create_dir_all(dir)?;
        let file = match read_pointer(dir)? {
            Some(file) => file,
            None => {
                let file = "ledger-1.db".to_owned();
                drop(open_pool(&dir.join(&file)).await?);
                write_pointer(dir, &file)?;
                file
            }
        };
        let pool = open_pool(&dir.join(&file)).await?;
        Ok(Self {
            dir: dir.to_owned(),
            pinned: None,
            current: Mutex::new((file, pool)),
        })
    }

    /// The pool of the generation this handle works on, following the pointer if serving.
    async fn pool(&self) -> Result<SqlitePool, LedgerError> {
        let (name, pool) = self.current.lock().expect("ledger lock").clone();
        if self.pinned.is_some() {
            return Ok(pool);
        }
        let Some(pointed) = read_pointer(&self.dir)? else {
            return Ok(pool);
        };
        if pointed == name {
            return Ok(pool);
        }
        let fresh = open_pool(&self.dir.join(&pointed)).await?;
        info!(generation = %pointed, "ledger generation switched");
        *self.current.lock().expect("ledger lock") = (pointed, fresh.clone());
        pool.close().await;
        Ok(fresh)
    }
}

fn placeholders(rows: usize, cols: usize) -> String {
    let row = format!("({})", vec!["?"; cols].join(", "));
    vec![row; rows].join(", ")
}

/// Writes one op. Inserts and updates say `OR ROLLBACK`: a batch is all or nothing anyway, and
/// a multi-row statement that may only abort itself (SQLite's default) first copies every page
/// it changes into a statement journal so it can be undone alone. Without that copy the ledger
/// of a `serve` node spent 56-90 µs of CPU a hold instead of 85-98 under wrk's reserves at 4
/// connections (three interleaved pairs). A failed statement then ends the transaction, which
/// fails the batch as before.
async fn write_op(conn: &mut sqlx::SqliteConnection, op: &Op) -> Result<(), LedgerError> {
    match op {
        Op::Insert { table, rows } => {
            let names: Vec<_> = table.cols.iter().map(|c| c.name).collect();
            for chunk in rows.chunks((MAX_PARAMS / names.len()).max(1)) {
                let sql = format!(
                    "INSERT OR ROLLBACK INTO {} ({}) VALUES {}",
                    table.name,
                    names.join(", "),
                    placeholders(chunk.len(), names.len())
                );
                let mut q = sqlx::query(AssertSqlSafe(sql));
                for v in chunk.iter().flatten() {
                    q = Sqlite::bind(q, v.clone());
                }
                q.execute(&mut *conn).await?;
            }
        }
        Op::Update { table, key, set, rows } => {
            let names: Vec<_> = key.iter().chain(set).map(|c| c.name).collect();
            let sets: Vec<_> = set.iter().map(|c| format!("{0} = u.{0}", c.name)).collect();
            let wheres: Vec<_> = key
                .iter()
                .map(|c| format!("{}.{1} = u.{1}", table.name, c.name))
                .collect();
            for chunk in rows.chunks((MAX_PARAMS / names.len()).max(1)) {
                let sql = format!(
                    "WITH u({names}) AS (VALUES {values}) UPDATE OR ROLLBACK {t} SET {sets} FROM u WHERE {wheres}",
                    names = names.join(", "),
                    values = placeholders(chunk.len(), names.len()),
                    t = table.name,
                    sets = sets.join(", "),
                    wheres = wheres.join(" AND "),
                );
                let mut q = sqlx::query(AssertSqlSafe(sql));
                for v in chunk.iter().flatten() {
                    q = Sqlite::bind(q, v.clone());
                }
                q.execute(&mut *conn).await?;
            }
        }
        Op::Delete { table, col, values } => {
            for chunk in values.chunks(MAX_PARAMS) {
                let sql = format!(
                    "DELETE FROM {} WHERE {} IN ({})",
                    table.name,
                    col.name,
                    vec!["?"; chunk.len()].join(", ")
                );
                let mut q = sqlx::query(AssertSqlSafe(sql));
                for v in chunk {
                    q = Sqlite::bind(q, v.clone());
                }
                q.execute(&mut *conn).await?;
            }
        }
    }
    Ok(())
}

impl Dialect for Sqlite {
    /// In WAL mode a transaction's first read fixes its snapshot for the rest.
    const ONE_SNAPSHOT: Option<&'static str> = None;

    fn bind(q: Query<'_, Self, Self::Arguments>, v: Val) -> Query<'_, Self, Self::Arguments> {
        match v {
            Val::Null => q.bind(None::<String>),
            Val::Uuid(u) => q.bind(u.hyphenated().to_string()),
            Val::Text(s) => q.bind(s),
            Val::Int(i) => q.bind(i),
            Val::Bool(b) => q.bind(i64::from(b)),
            Val::Time(t) => q.bind(sqlite_time(&t)),
        }
    }

    fn decode(row: &SqliteRow, i: usize, ty: Ty) -> Result<Val, LedgerError> {
        Ok(match ty {
            Ty::Uuid => match row.try_get::<Option<String>, _>(i)? {
                None => Val::Null,
                Some(s) => Val::Uuid(Uuid::parse_str(&s).map_err(|e| LedgerError::Corrupt(e.to_string()))?),
            },
            Ty::Text | Ty::Json => Val::opt(row.try_get::<Option<String>, _>(i)?),
            Ty::Int => Val::opt(row.try_get::<Option<i64>, _>(i)?),
            Ty::Bool => Val::opt(row.try_get::<Option<i64>, _>(i)?.map(|b| b != 0)),
            Ty::Time => match row.try_get::<Option<String>, _>(i)? {
                None => Val::Null,
                Some(s) => Val::Time(
                    DateTime::parse_from_rfc3339(&s)
                        .map_err(|e| LedgerError::Corrupt(e.to_string()))?
                        .with_timezone(&Utc),
                ),
            },
        })
    }
}

#[async_trait]
impl Ledger for SqliteLedger {
    fn describe(&self) -> String {
        let name = self.current.lock().expect("ledger lock").0.clone();
        format!("sqlite {}", self.dir.join(name).display())
    }

    fn generation(&self) -> String {
        self.current.lock().expect("ledger lock").0.clone()
    }

    async fn positions(&self) -> Result<BTreeMap<u32, u64>, LedgerError> {
        let rows: Vec<(i64, i64)> = sqlx::query_as("SELECT partition, next_offset FROM projector_positions")
            .fetch_all(&self.pool().await?)
            .await?;
        Ok(rows.into_iter().map(|(p, o)| (p as u32, o as u64)).collect())
    }

    async fn lookup(&self, events: &[EventId], reservations: &[ReservationId]) -> Result<Lookup, LedgerError> {
        let pool = self.pool().await?;
        let mut lookup = Lookup::default();
        for chunk in events.chunks(MAX_PARAMS) {
            let sql = format!(
                "SELECT event_id, organizer, currency, seat_map FROM events WHERE event_id IN ({})",
                vec!["?"; chunk.len()].join(", ")
            );
            let mut q = sqlx::query_as::<_, (String, String, String, String)>(AssertSqlSafe(sql));
            for id in chunk {
                q = q.bind(id.to_string());
            }
            for (id, o, c, m) in q.fetch_all(&pool).await? {
                let id = EventId::from_str(&id).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
                lookup.events.push((id, o, c, m));
            }
        }
        for chunk in reservations.chunks(MAX_PARAMS) {
            let sql = format!(
                "SELECT reservation_id, seats FROM reservations WHERE reservation_id IN ({})",
                vec!["?"; chunk.len()].join(", ")
            );
            let mut q = sqlx::query_as::<_, (String, String)>(AssertSqlSafe(sql));
            for id in chunk {
                q = q.bind(id.to_string());
            }
            for (id, s) in q.fetch_all(&pool).await? {
                let id = ReservationId::from_str(&id).map_err(|e| LedgerError::Corrupt(e.to_string()))?;
                lookup.reservations.push((id, s));
            }
        }
        Ok(lookup)
    }

    #[instrument(level = "debug", skip_all, fields(partition = batch.partition, from = batch.from, to = batch.to))]
    async fn write(&self, batch: &Batch) -> Result<(), LedgerError> {
        let pool = self.pool().await?;
        let mut tx = pool.begin_with("BEGIN IMMEDIATE").await?;
        let stored: Option<i64> = sqlx::query_scalar("SELECT next_offset FROM projector_positions WHERE partition = ?")
            .bind(i64::from(batch.partition))
            .fetch_optional(&mut *tx)
            .await?;
        batch.check_from(stored.unwrap_or(0) as u64)?;
        for op in &batch.ops {
            write_op(&mut tx, op).await?;
        }
        sqlx::query(
            "INSERT INTO projector_positions (partition, next_offset) VALUES (?, ?)
             ON CONFLICT (partition) DO UPDATE SET next_offset = excluded.next_offset",
        )
        .bind(i64::from(batch.partition))
        .bind(batch.to as i64)
        .execute(&mut *tx)
        .await?;
        batch.commit(tx).await
    }

    async fn query(&self, sql: &str, params: Vec<Val>, types: &[Ty]) -> Result<Vec<Vec<Val>>, LedgerError> {
        fetch(&self.pool().await?, sql, params, types).await
    }

    async fn query_together(&self, reads: Vec<Read>) -> Result<Vec<Vec<Vec<Val>>>, LedgerError> {
        fetch_together(&self.pool().await?, reads).await
    }

    async fn dump(&self) -> Result<BTreeMap<String, Vec<String>>, LedgerError> {
        let pool = self.pool().await?;
        let mut out = BTreeMap::new();
        let tables = ALL_TABLES
            .iter()
            .map(|t| (t.name, t.cols.iter().map(|c| c.name).collect::<Vec<_>>()))
            .chain([("projector_positions", vec!["partition", "next_offset"])]);
        for (name, cols) in tables {
            let sql = format!("SELECT json_array({}) FROM {name} ORDER BY 1", cols.join(", "));
            let rows: Vec<String> = sqlx::query_scalar(AssertSqlSafe(sql)).fetch_all(&pool).await?;
            out.insert(name.to_owned(), rows);
        }
        Ok(out)
    }

    async fn next_generation(&self) -> Result<Arc<dyn Ledger>, LedgerError> {
        let mut n = 1;
        for entry in std::fs::read_dir(&self.dir)? {
            if let Some(k) = entry?.file_name().to_str().and_then(generation_number) {
                n = n.max(k);
            }
        }
        let file = format!("ledger-{}.db", n + 1);
        info!(%file, "creating ledger generation");
        let pool = open_pool(&self.dir.join(&file)).await?;
        Ok(Arc::new(SqliteLedger {
            dir: self.dir.clone(),
            pinned: Some(file.clone()),
            current: Mutex::new((file, pool)),
        }))
    }

    #[instrument(skip(self))]
    async fn promote(&self, generation: &str) -> Result<(), LedgerError> {
        if generation_number(generation).is_none() || !self.dir.join(generation).exists() {
            return Err(LedgerError::Config(format!(
                "{generation} is not a ledger generation here"
            )));
        }
        let (old, old_pool) = self.current.lock().expect("ledger lock").clone();
        write_pointer(&self.dir, generation)?;
        let fresh = open_pool(&self.dir.join(generation)).await?;
        *self.current.lock().expect("ledger lock") = (generation.to_owned(), fresh);
        old_pool.close().await;
        if old != generation {
            for suffix in ["", "-wal", "-shm"] {
                let _ = std::fs::remove_file(self.dir.join(format!("{old}{suffix}")));
            }
        }
        info!(%generation, "ledger generation promoted");
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dialect::{ledger_migrations, migrator};

    /// A ledger written before migration 3 (its seats a table of rows beside an index of their
    /// key) keeps every seat when a node opens it now, and its seats are then stored by key.
    #[tokio::test]
    async fn a_ledger_from_before_keeps_its_seats_when_they_are_stored_by_key() {
        let dir = tempfile::tempdir().unwrap();
        let file = "ledger-1.db";
        {
            let options = SqliteConnectOptions::new()
                .filename(dir.path().join(file))
                .create_if_missing(true);
            let pool = SqlitePoolOptions::new().connect_with(options).await.unwrap();
            let migrations = ledger_migrations!("sqlite");
            migrator(&migrations[..2]).run(&pool).await.unwrap();
            sqlx::raw_sql(
                "INSERT INTO seats VALUES
                   ('e1', 'A-1-1', 'A', '1', 1, 'T', 5000, 'held', 'r1', '2026-12-07T20:00:00Z'),
                   ('e1', 'A-1-2', 'A', '1', 2, 'T', 5000, 'available', NULL, '2026-12-07T19:00:00Z'),
                   ('e2', 'F', 'F', '', 0, 'T', 3000, 'withheld', NULL, '2026-12-07T18:00:00Z')",
            )
            .execute(&pool)
            .await
            .unwrap();
            pool.close().await;
        }
        write_pointer(dir.path(), file).unwrap();

        let ledger = SqliteLedger::open(dir.path()).await.unwrap();
        let text = |row: &Vec<Val>| {
            row.iter()
                .map(|v| v.as_str().unwrap_or("-").to_owned())
                .collect::<Vec<_>>()
        };
        let seats = ledger
            .query(
                "SELECT event_id, seat, state, reservation_id FROM seats ORDER BY event_id, seat",
                vec![],
                &[Ty::Text, Ty::Text, Ty::Text, Ty::Text],
            )
            .await
            .unwrap();
        assert_eq!(
            seats.iter().map(text).collect::<Vec<_>>(),
            [
                ["e1", "A-1-1", "held", "r1"],
                ["e1", "A-1-2", "available", "-"],
                ["e2", "F", "withheld", "-"],
            ]
        );
        let table = ledger
            .query(
                "SELECT sql FROM sqlite_schema WHERE name = 'seats'",
                vec![],
                &[Ty::Text],
            )
            .await
            .unwrap();
        assert!(table[0][0].as_str().unwrap().ends_with("WITHOUT ROWID"), "{table:?}");
        // Still the table the projector writes: a seat's state changes by its key.
        let changed = ledger
            .query(
                "UPDATE seats SET state = 'booked' WHERE event_id = 'e1' AND seat = 'A-1-1' RETURNING state",
                vec![],
                &[Ty::Text],
            )
            .await
            .unwrap();
        assert_eq!(changed.len(), 1);
    }
}
