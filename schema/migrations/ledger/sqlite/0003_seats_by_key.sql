-- Every seat's row stored once, in the b-tree of its key (event, seat), instead of as a row
-- plus an index of the key: a 10-million-seat catalogue's ledger keeps each seat's 40-odd
-- bytes of key once, and a seat's update finds its row in one search instead of two. An
-- event's seats are inserted when its map is written (again when the map changes) and then
-- only updated. The tables a hold inserts into (reservations, seat_history) keep their rowids:
-- their rows would land in random places of a tree ordered by key, which costs more.
CREATE TABLE seats_by_key (
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
) WITHOUT ROWID;
INSERT INTO seats_by_key SELECT * FROM seats;
DROP TABLE seats;
ALTER TABLE seats_by_key RENAME TO seats;
