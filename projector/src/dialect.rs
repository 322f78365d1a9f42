//! What the two ledger databases differ in where the rest of the code is shared: how a value
//! binds, how a row decodes, and the SQL dialect of the migrations.

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Database, Executor, IntoArguments, Pool, SqlSafeStr};

use crate::LedgerError;
use crate::ledger::Read;
use crate::rows::{Ty, Val};

/// A ledger database, as the shared reads and writes need it.
pub(crate) trait Dialect: Database {
    /// Binds `v` as the next parameter of `q`, stored the way this database stores its type.
    fn bind(q: Query<'_, Self, Self::Arguments>, v: Val) -> Query<'_, Self, Self::Arguments>;

    /// Decodes column `i` of `row` as a `ty`.
    fn decode(row: &Self::Row, i: usize, ty: Ty) -> Result<Val, LedgerError>;

    /// The statement that makes a transaction's reads see one snapshot, where its first read does
    /// not already (PostgreSQL's default isolation takes a new snapshot for every statement).
    const ONE_SNAPSHOT: Option<&'static str>;
}

/// Runs `sql` with `params` on `pool`, decoding each row as `types` says (see
/// [`Ledger::query`](crate::Ledger::query)).
pub(crate) async fn fetch<DB: Dialect>(
    pool: &Pool<DB>,
    sql: &str,
    params: Vec<Val>,
    types: &[Ty],
) -> Result<Vec<Vec<Val>>, LedgerError>
where
    for<'c> &'c Pool<DB>: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
{
    let rows = bound::<DB>(sql, params).fetch_all(pool).await?;
    decoded::<DB>(&rows, types)
}

/// Runs `reads` in one read-only transaction on `pool` (see
/// [`Ledger::query_together`](crate::Ledger::query_together)).
pub(crate) async fn fetch_together<DB: Dialect>(
    pool: &Pool<DB>,
    reads: Vec<Read>,
) -> Result<Vec<Vec<Vec<Val>>>, LedgerError>
where
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
{
    let mut tx = pool.begin().await?;
    if let Some(sql) = DB::ONE_SNAPSHOT {
        sqlx::query::<DB>(AssertSqlSafe(sql)).execute(&mut *tx).await?;
    }
    let mut answers = Vec::with_capacity(reads.len());
    for read in reads {
        let rows = bound::<DB>(&read.sql, read.params).fetch_all(&mut *tx).await?;
        answers.push(decoded::<DB>(&rows, read.types)?);
    }
    // Nothing was written: ending it either way releases the snapshot.
    tx.rollback().await?;
    Ok(answers)
}

fn bound<DB: Dialect>(sql: &str, params: Vec<Val>) -> Query<'static, DB, DB::Arguments> {
    let mut q = sqlx::query::<DB>(AssertSqlSafe(sql.to_owned()));
    for p in params {
        q = DB::bind(q, p);
    }
    q
}

fn decoded<DB: Dialect>(rows: &[DB::Row], types: &[Ty]) -> Result<Vec<Vec<Val>>, LedgerError> {
    rows.iter()
        .map(|row| {
            types
                .iter()
                .enumerate()
                .map(|(i, ty)| DB::decode(row, i, *ty))
                .collect()
        })
        .collect()
}

/// The ledger's migrations in the SQL dialect of `$db` (a folder of `schema/migrations/ledger/`),
/// as `(version, description, SQL)`: both databases have the same migrations, in this order.
macro_rules! ledger_migrations {
    ($db:literal) => {
        [
            (
                1,
                "ledger",
                include_str!(concat!("../../schema/migrations/ledger/", $db, "/0001_ledger.sql")),
            ),
            (
                2,
                "withheld seats",
                include_str!(concat!(
                    "../../schema/migrations/ledger/",
                    $db,
                    "/0002_withheld_seats.sql"
                )),
            ),
            (
                3,
                "seats stored by key",
                include_str!(concat!(
                    "../../schema/migrations/ledger/",
                    $db,
                    "/0003_seats_by_key.sql"
                )),
            ),
        ]
    };
}
pub(crate) use ledger_migrations;

/// The ledger's migrator in the SQL dialect of `$db`.
macro_rules! ledger_migrator {
    ($db:literal) => {
        $crate::dialect::migrator(&$crate::dialect::ledger_migrations!($db))
    };
}
pub(crate) use ledger_migrator;

/// A migrator of `migrations`: `(version, description, SQL)`, oldest first.
pub(crate) fn migrator(migrations: &[(i64, &'static str, &'static str)]) -> Migrator {
    Migrator::with_migrations(
        migrations
            .iter()
            .map(|(v, d, sql)| Migration::new(*v, (*d).into(), MigrationType::Simple, sql.into_sql_str(), false))
            .collect(),
    )
}
