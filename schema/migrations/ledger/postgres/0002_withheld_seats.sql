-- Organizer holds: a seat may be withheld from the sale, and its history records the withhold
-- and the return, which belong to no reservation.
ALTER TABLE seats DROP CONSTRAINT seats_state_check;
ALTER TABLE seats ADD CONSTRAINT seats_state_check CHECK (state IN ('available', 'held', 'booked', 'withheld'));
ALTER TABLE seat_history DROP CONSTRAINT seat_history_kind_check;
ALTER TABLE seat_history ADD CONSTRAINT seat_history_kind_check
    CHECK (kind IN ('held', 'booked', 'expired', 'released', 'payment_failed', 'refunded', 'withheld', 'returned'));
ALTER TABLE seat_history ALTER COLUMN reservation_id DROP NOT NULL;
