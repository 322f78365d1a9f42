-- The ledger (PostgreSQL dialect): the journal folded into relational tables by the projector.
-- The same logical schema as ../sqlite/0001_ledger.sql; every row is derived from the log, so
-- a replay of the same log writes the same rows. Applied inside the ledger's own schema
-- (search_path), so one database can hold a serving ledger and a rebuild side by side.

-- The catalogue: one row per scheduled event, with its current seat map.
CREATE TABLE events (
    event_id            uuid PRIMARY KEY,
    organizer           text NOT NULL,
    title               text NOT NULL,
    artist              text NOT NULL,
    venue               text NOT NULL,
    city                text NOT NULL,
    starts_at           timestamptz NOT NULL,
    onsale_at           timestamptz NOT NULL,
    hold_minutes        integer NOT NULL,
    max_seats_per_order integer NOT NULL,
    currency            text NOT NULL,
    seat_map            jsonb NOT NULL,
    scheduled_at        timestamptz NOT NULL,
    -- When the seat map last changed (the schedule time if it never did).
    seat_map_at         timestamptz NOT NULL
);

-- Every seat of every event with where it stands now.
CREATE TABLE seats (
    event_id       uuid NOT NULL,
    seat           text NOT NULL,
    section        text NOT NULL,
    row_name       text NOT NULL,
    number         integer NOT NULL,
    tier           text NOT NULL,
    price          bigint NOT NULL,
    state          text NOT NULL CHECK (state IN ('available', 'held', 'booked')),
    reservation_id uuid,
    updated_at     timestamptz NOT NULL,
    PRIMARY KEY (event_id, seat)
);

-- Every hold and what became of it.
CREATE TABLE reservations (
    reservation_id uuid PRIMARY KEY,
    event_id       uuid NOT NULL,
    customer       text NOT NULL,
    -- The seat ids, comma-separated, in the order the hold named them.
    seats          text NOT NULL,
    seat_count     integer NOT NULL,
    amount         bigint NOT NULL,
    currency       text NOT NULL,
    hold_until     timestamptz NOT NULL,
    reserved_at    timestamptz NOT NULL,
    status         text NOT NULL
        CHECK (status IN ('held', 'booked', 'expired', 'released', 'payment_failed', 'refunded')),
    status_at      timestamptz NOT NULL
);
CREATE INDEX reservations_by_customer ON reservations (customer, reserved_at);
CREATE INDEX reservations_by_event ON reservations (event_id);

-- Sold reservations: at most one booking per reservation, paid by exactly one payment.
CREATE TABLE bookings (
    reservation_id    uuid PRIMARY KEY,
    event_id          uuid NOT NULL,
    customer          text NOT NULL,
    seats             text NOT NULL,
    seat_count        integer NOT NULL,
    amount            bigint NOT NULL,
    currency          text NOT NULL,
    provider_event_id text NOT NULL UNIQUE,
    late              boolean NOT NULL,
    booked_at         timestamptz NOT NULL,
    cancelled_at      timestamptz
);
CREATE INDEX bookings_by_customer ON bookings (customer, booked_at);
CREATE INDEX bookings_by_event ON bookings (event_id);

-- Every payment the provider reported: one that booked, one given back, one that failed.
CREATE TABLE payments (
    provider_event_id text PRIMARY KEY,
    payment_intent    text NOT NULL,
    reservation_id    uuid NOT NULL,
    event_id          uuid NOT NULL,
    -- NULL for a failed attempt (the provider reports no amount).
    amount            bigint,
    currency          text,
    status            text NOT NULL CHECK (status IN ('booked', 'refunded', 'failed')),
    received_at       timestamptz NOT NULL,
    refunded_at       timestamptz,
    message           text
);
CREATE INDEX payments_by_reservation ON payments (reservation_id);

-- Money owed back to a customer, one per refunded payment.
CREATE TABLE refunds (
    provider_event_id text PRIMARY KEY,
    reservation_id    uuid NOT NULL,
    event_id          uuid NOT NULL,
    customer          text NOT NULL,
    amount            bigint NOT NULL,
    currency          text NOT NULL,
    reason            text NOT NULL,
    refunded_at       timestamptz NOT NULL
);
CREATE INDEX refunds_by_event ON refunds (event_id);

-- Double entry: each transaction (one log record) moves money between accounts and its lines
-- sum to zero. Revenue lines carry the section and tier they were earned in.
CREATE TABLE money_entries (
    txn_id         uuid NOT NULL,
    line           integer NOT NULL,
    event_id       uuid NOT NULL,
    reservation_id uuid NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('booking', 'refund')),
    account        text NOT NULL CHECK (account IN ('customer', 'event_revenue', 'refunds_payable')),
    section        text,
    tier           text,
    amount         bigint NOT NULL,
    currency       text NOT NULL,
    at             timestamptz NOT NULL,
    PRIMARY KEY (txn_id, line)
);
CREATE INDEX money_entries_by_event ON money_entries (event_id, account);

-- Every change of every seat: holds, expiries, releases, bookings, refunds.
CREATE TABLE seat_history (
    event_id       uuid NOT NULL,
    sequence       bigint NOT NULL,
    seat           text NOT NULL,
    kind           text NOT NULL
        CHECK (kind IN ('held', 'booked', 'expired', 'released', 'payment_failed', 'refunded')),
    reservation_id uuid NOT NULL,
    section        text NOT NULL,
    tier           text NOT NULL,
    price          bigint NOT NULL,
    at             timestamptz NOT NULL,
    PRIMARY KEY (event_id, seat, sequence)
);
CREATE INDEX seat_history_by_event ON seat_history (event_id, section, tier, kind);

-- Where the projector is in each journal partition: the offset of the next record to apply.
-- Written in the same transaction as the rows that record produced.
CREATE TABLE projector_positions (
    partition   integer PRIMARY KEY,
    next_offset bigint NOT NULL
);
