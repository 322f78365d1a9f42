-- Organizer holds: a seat may be withheld from the sale, and its history records the withhold
-- and the return, which belong to no reservation. SQLite cannot change a CHECK constraint, so
-- the two tables are rebuilt.
CREATE TABLE seats_new (
    event_id       TEXT NOT NULL,
    seat           TEXT NOT NULL,
    section        TEXT NOT NULL,
    row_name       TEXT NOT NULL,
    number         INTEGER NOT NULL,
    tier           TEXT NOT NULL,
    price          INTEGER NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('available', 'held', 'booked', 'withheld')),
    reservation_id TEXT,
    updated_at     TEXT NOT NULL,
    PRIMARY KEY (event_id, seat)
);
INSERT INTO seats_new SELECT * FROM seats;
DROP TABLE seats;
ALTER TABLE seats_new RENAME TO seats;

CREATE TABLE seat_history_new (
    event_id       TEXT NOT NULL,
    sequence       INTEGER NOT NULL,
    seat           TEXT NOT NULL,
    kind           TEXT NOT NULL
        CHECK (kind IN ('held', 'booked', 'expired', 'released', 'payment_failed', 'refunded', 'withheld',
            'returned')),
    reservation_id TEXT,
    section        TEXT NOT NULL,
    tier           TEXT NOT NULL,
    price          INTEGER NOT NULL,
    at             TEXT NOT NULL,
    PRIMARY KEY (event_id, seat, sequence)
);
INSERT INTO seat_history_new SELECT * FROM seat_history;
DROP TABLE seat_history;
ALTER TABLE seat_history_new RENAME TO seat_history;
CREATE INDEX seat_history_by_event ON seat_history (event_id, section, tier, kind);
