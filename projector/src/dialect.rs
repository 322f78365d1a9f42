//! What the two ledger databases differ in where the rest of the code is shared: how a value
//! binds, how a row decodes, and the SQL dialect of the migrations.

use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::query::Query;
use sqlx::{AssertSqlSafe, Database, Executor, IntoArguments, Pool, SqlSafeStr};

use crate::LedgerError;
use crate::rows::{Ty, Val};

/// A ledger database, as the shared reads and writes need it.
pub(crate) trait Dialect: Database {
    /// Binds `v` as the next parameter of `q`, stored the way this database stores its type.
    fn bind(q: Query<'_, Self, Self::Arguments>, v: Val) -> Query<'_, Self, Self::Arguments>;

    /// Decodes column `i` of `row` as a `ty`.
    fn decode(row: &Self::Row, i: usize, ty: Ty) -> Result<Val, LedgerError>;
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
    let mut q = sqlx::query::<DB>(AssertSqlSafe(sql.to_owned()));
    for p in params {
        q = DB::bind(q, p);
    }
    let rows = q.fetch_all(pool).await?;
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

/// The ledger's migrator in the SQL dialect of `$db` (a folder of
/// `schema/migrations/ledger/`): both databases have the same migrations, in this order.
macro_rules! ledger_migrator {
    ($db:literal) => {
        $crate::dialect::migrator(&[
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
        ])
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
