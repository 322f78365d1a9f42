-- The ledger (SQLite dialect): the journal folded into relational tables by the projector.
-- The same logical schema as ../postgres/0001_ledger.sql; every row is derived from the log, so
-- a replay of the same log writes the same rows. Each ledger generation is its own database
-- file, so a rebuild is written beside the serving ledger.

-- The catalogue: one row per scheduled event, with its current seat map.
CREATE TABLE events (
    event_id            TEXT PRIMARY KEY,
    organizer           TEXT NOT NULL,
    title               TEXT NOT NULL,
    artist              TEXT NOT NULL,
    venue               TEXT NOT NULL,
    city                TEXT NOT NULL,
    starts_at           TEXT NOT NULL,
    onsale_at           TEXT NOT NULL,
    hold_minutes        INTEGER NOT NULL,
    max_seats_per_order INTEGER NOT NULL,
    currency            TEXT NOT NULL,
    seat_map            TEXT NOT NULL,
    scheduled_at        TEXT NOT NULL,
    -- When the seat map last changed (the schedule time if it never did).
    seat_map_at         TEXT NOT NULL
);

-- Every seat of every event with where it stands now.
CREATE TABLE seats (
    event_id       TEXT NOT NULL,
    seat           TEXT NOT NULL,
    section        TEXT NOT NULL,
    row_name       TEXT NOT NULL,
    number         INTEGER NOT NULL,
    tier           TEXT NOT NULL,
    price          INTEGER NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('available', 'held', 'booked')),
    reservation_id TEXT,
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (event_id, seat)
);

-- Every hold and what became of it.
CREATE TABLE reservations (
    reservation_id TEXT PRIMARY KEY,
    event_id       TEXT NOT NULL,
    customer       TEXT NOT NULL,
    -- The seat ids, comma-separated, in the order the hold named them.
    seats          TEXT NOT NULL,
    seat_count     INTEGER NOT NULL,
    amount         INTEGER NOT NULL,
    currency       TEXT NOT NULL,
    hold_until     TEXT NOT NULL,
    reserved_at    TEXT NOT NULL,
    status         TEXT NOT NULL
        CHECK (status IN ('held', 'booked', 'expired', 'released', 'payment_failed', 'refunded')),
    status_at      TEXT NOT NULL
);
CREATE INDEX reservations_by_customer ON reservations (customer, reserved_at);
CREATE INDEX reservations_by_event ON reservations (event_id);

-- Sold reservations: at most one booking per reservation, paid by exactly one payment.
CREATE TABLE bookings (
    reservation_id    TEXT PRIMARY KEY,
    event_id          TEXT NOT NULL,
    customer          TEXT NOT NULL,
    seats             TEXT NOT NULL,
    seat_count        INTEGER NOT NULL,
    amount            INTEGER NOT NULL,
    currency          TEXT NOT NULL,
    provider_event_id TEXT NOT NULL UNIQUE,
    late              INTEGER NOT NULL,
    booked_at         TEXT NOT NULL,
    cancelled_at      TEXT
);
CREATE INDEX bookings_by_customer ON bookings (customer, booked_at);
CREATE INDEX bookings_by_event ON bookings (event_id);

-- Every payment the provider reported: one that booked, one given back, one that failed.
CREATE TABLE payments (
    provider_event_id TEXT PRIMARY KEY,
    payment_intent    TEXT NOT NULL,
    reservation_id    TEXT NOT NULL,
    event_id          TEXT NOT NULL,
    -- NULL for a failed attempt (the provider reports no amount).
    amount            INTEGER,
    currency          TEXT,
    status            TEXT NOT NULL CHECK (status IN ('booked', 'refunded', 'failed')),
    received_at       TEXT NOT NULL,
    refunded_at       TEXT,
    message           TEXT
);
CREATE INDEX payments_by_reservation ON payments (reservation_id);

-- Money owed back to a customer, one per refunded payment.
CREATE TABLE refunds (
    provider_event_id TEXT PRIMARY KEY,
    reservation_id    TEXT NOT NULL,
    event_id          TEXT NOT NULL,
    customer          TEXT NOT NULL,
    amount            INTEGER NOT NULL,
    currency          TEXT NOT NULL,
    reason            TEXT NOT NULL,
    refunded_at       TEXT NOT NULL
);
CREATE INDEX refunds_by_event ON refunds (event_id);

-- Double entry: each transaction (one log record) moves money between accounts and its lines
-- sum to zero. Revenue lines carry the section and tier they were earned in.
CREATE TABLE money_entries (
    txn_id         TEXT NOT NULL,
    line           INTEGER NOT NULL,
    event_id       TEXT NOT NULL,
    reservation_id TEXT NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('booking', 'refund')),
    account        TEXT NOT NULL CHECK (account IN ('customer', 'event_revenue', 'refunds_payable')),
    section        TEXT,
    tier           TEXT,
    amount         INTEGER NOT NULL,
    currency       TEXT NOT NULL,
    at             TEXT NOT NULL,
    PRIMARY KEY (txn_id, line)
);
CREATE INDEX money_entries_by_event ON money_entries (event_id, account);

-- Every change of every seat: holds, expiries, releases, bookings, refunds.
CREATE TABLE seat_history (
    event_id       TEXT NOT NULL,
    sequence       INTEGER NOT NULL,
    seat           TEXT NOT NULL,
    kind           TEXT NOT NULL
        CHECK (kind IN ('held', 'booked', 'expired', 'released', 'payment_failed', 'refunded')),
    reservation_id TEXT NOT NULL,
    section        TEXT NOT NULL,
    tier           TEXT NOT NULL,
    price          INTEGER NOT NULL,
    at             TEXT NOT NULL,
    PRIMARY KEY (event_id, seat, sequence)
);
CREATE INDEX seat_history_by_event ON seat_history (event_id, section, tier, kind);

-- Where the projector is in each journal partition: the offset of the next record to apply.
-- Written in the same transaction as the rows that record produced.
CREATE TABLE projector_positions (
    partition   INTEGER PRIMARY KEY,
    next_offset INTEGER NOT NULL
);
