-- The SQLite ledger stores its seats by key from this version on (see ../sqlite/); a PostgreSQL
-- table is always a heap beside its key's index, so there is nothing to change here. Kept so
-- both databases have the same migrations in the same order.
SELECT 1;
