//! The sample event a newcomer sees on first start: an arena of about 20,000 seats.

use chrono::{DateTime, Duration, Utc};
use frontrow_schema::seatmap::RowName;
use frontrow_schema::*;
use uuid::Uuid;

/// The sample event's id is fixed, so every start finds the same event.
pub const SAMPLE_EVENT_ID: EventId = EventId::from_uuid(Uuid::from_u128(0x5a3b_1e00_0000_4000_8000_0000_0000_0001));

/// The organizer the sample event belongs to (the demo organizer).
pub const DEMO_ORGANIZER: &str = "demo";

fn tier(code: &str, name: &str, price: i64) -> PriceTier {
    PriceTier {
        code: TierCode::parse(code).expect("valid tier"),
        name: name.into(),
        price,
    }
}

fn row(name: &str, seats: u16, tier: &str) -> Row {
    Row {
        name: RowName::parse(name).expect("valid row"),
        seats,
        tier: TierCode::parse(tier).expect("valid tier"),
        attributes: Default::default(),
    }
}

fn section(code: &str, name: String, rows: Vec<Row>) -> Section {
    Section {
        code: SectionCode::parse(code).expect("valid section"),
        name,
        rows,
        standing: None,
    }
}

/// Riverside Arena: three floor blocks, a lower bowl of 12 sections and an upper bowl of 16:
/// 20,008 seats in four price tiers.
pub fn arena() -> SeatMap {
    let mut sections = Vec::new();
    for block in ["A", "B", "C"] {
        let rows = (1..=20).map(|r| row(&r.to_string(), 30, "FLOOR")).collect();
        sections.push(section(&format!("FL{block}"), format!("Floor {block}"), rows));
    }
    for s in 101..=112 {
        let rows = (b'A'..=b'V')
            .map(|r| {
                let name = (r as char).to_string();
                row(&name, 28, if r <= b'H' { "LOWER1" } else { "LOWER2" })
            })
            .collect();
        sections.push(section(&s.to_string(), format!("Lower {s}"), rows));
    }
    for s in 201..=216 {
        let rows = (1..=26).map(|r| row(&r.to_string(), 26, "UPPER")).collect();
        sections.push(section(&s.to_string(), format!("Upper {s}"), rows));
    }
    SeatMap {
        tiers: vec![
            tier("FLOOR", "Floor", 18900),
            tier("LOWER1", "Lower bowl, front", 12900),
            tier("LOWER2", "Lower bowl", 9900),
            tier("UPPER", "Upper bowl", 5900),
        ],
        sections,
    }
}

/// The sample event: on sale since a minute before `now`, on stage in 60 days.
pub fn event(now: DateTime<Utc>) -> EventScheduled {
    EventScheduled {
        event_id: SAMPLE_EVENT_ID,
        organizer: OrganizerId::parse(DEMO_ORGANIZER).expect("valid organizer"),
        title: "Midnight Orbit World Tour".into(),
        artist: "Nova Lights".into(),
        venue: "Riverside Arena".into(),
        city: "Amsterdam".into(),
        tags: vec![],
        aliases: vec![],
        starts_at: now + Duration::days(60),
        onsale_at: now - Duration::minutes(1),
        hold_minutes: HoldMinutes::DEFAULT,
        max_seats_per_order: 8,
        max_seats_per_customer: None,
        allow_orphan_seats: false,
        currency: Currency::parse("EUR").expect("valid currency"),
        seat_map: arena().into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_arena_is_a_valid_twenty_thousand_seat_map() {
        let map = arena();
        map.validate().unwrap();
        assert_eq!(seatmap::SeatLayout::new(map).len(), 20_008);
    }
}
