//! The envelope every event travels in, and its versioned JSON codec.
//!
//! The stored form is a CloudEvents 1.0 structured-mode JSON document: `specversion`, `id`,
//! `source`, `type`, `subject` (the event id), `time`, `datacontenttype`, `dataschema`, and
//! extension attributes `sequence` (per event, from 1), `partitionkey` (the event id, see
//! CloudEvents' partitioning extension), `schemaversion`, `causationid`, `correlationid` and
//! `idempotencykey`. The payload is in `data`. Decoding dispatches on `type` and
//! `schemaversion`, so an old version can be upcast when a newer one exists.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use uuid::Uuid;

use crate::events::*;
use crate::ids::EventId;
use crate::queue::QueueEvent;

/// The version of the payload schema this code writes.
pub const SCHEMA_VERSION: u32 = 1;

/// One event with its metadata: what the journal stores.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Envelope {
    /// Unique id of this record (CloudEvents `id`).
    pub id: Uuid,
    pub event_id: EventId,
    /// Position of this event within its event's stream, from 1 without gaps.
    pub sequence: u64,
    pub time: DateTime<Utc>,
    /// The envelope or request that caused this one.
    pub causation_id: Option<Uuid>,
    /// Shared by everything one client request set off.
    pub correlation_id: Option<Uuid>,
    /// The client's `Idempotency-Key`, when the command carried one.
    pub idempotency_key: Option<String>,
    pub event: Event,
}

impl Envelope {
    /// Event number `sequence` of `event_id`'s stream, written at `time`, in envelope `id`, with
    /// no causation, correlation or idempotency key (set those fields after, where there are).
    pub fn with_id(id: Uuid, event_id: EventId, sequence: u64, time: DateTime<Utc>, event: Event) -> Self {
        Self {
            id,
            event_id,
            sequence,
            time,
            causation_id: None,
            correlation_id: None,
            idempotency_key: None,
            event,
        }
    }

    /// [`Envelope::with_id`] with a new time-ordered (v7) id.
    pub fn new(event_id: EventId, sequence: u64, time: DateTime<Utc>, event: Event) -> Self {
        Self::with_id(Uuid::now_v7(), event_id, sequence, time, event)
    }

    /// The journal key of this envelope's record: its event id, so one event's records share a
    /// partition and keep their order.
    pub fn key(&self) -> Vec<u8> {
        self.event_id.to_string().into_bytes()
    }
}

/// Why bytes could not be read as an envelope.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("not a FrontRow envelope: {0}")]
    Malformed(#[source] serde_json::Error),
    #[error("unsupported specversion {0:?}")]
    SpecVersion(String),
    #[error("unknown event type {0:?} (schema version {1})")]
    UnknownType(String, u32),
    #[error("bad {0} payload: {1}")]
    Payload(String, #[source] serde_json::Error),
}

#[derive(Serialize)]
struct WireOut<'a, T: Serialize> {
    specversion: &'static str,
    id: Uuid,
    source: String,
    #[serde(rename = "type")]
    ty: &'static str,
    subject: EventId,
    time: DateTime<Utc>,
    datacontenttype: &'static str,
    dataschema: String,
    schemaversion: u32,
    sequence: u64,
    partitionkey: EventId,
    #[serde(skip_serializing_if = "Option::is_none")]
    causationid: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    correlationid: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    idempotencykey: Option<&'a str>,
    data: &'a T,
}

/// Borrows what it can from the stored bytes: a replay decodes millions of these.
#[derive(Deserialize)]
struct WireIn<'a> {
    #[serde(borrow)]
    specversion: Cow<'a, str>,
    id: Uuid,
    #[serde(rename = "type", borrow)]
    ty: Cow<'a, str>,
    subject: EventId,
    #[serde(deserialize_with = "rfc3339")]
    time: DateTime<Utc>,
    schemaversion: u32,
    sequence: u64,
    causationid: Option<Uuid>,
    correlationid: Option<Uuid>,
    idempotencykey: Option<String>,
    #[serde(borrow)]
    data: &'a RawValue,
}

/// An RFC 3339 time (the envelope's, and the payloads' frequent ones) through chrono's
/// dedicated parser: its `FromStr`, which chrono's own `Deserialize` uses, goes through the
/// general format machinery and is several times slower; it stays the fallback for the looser
/// forms it also takes.
pub(crate) fn rfc3339<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let text = <Cow<'de, str>>::deserialize(d)?;
    DateTime::parse_from_rfc3339(&text)
        .or_else(|_| text.parse::<DateTime<chrono::FixedOffset>>())
        .map(|t| t.with_timezone(&Utc))
        .map_err(serde::de::Error::custom)
}

/// Serialises an envelope to its stored JSON form.
pub fn encode(env: &Envelope) -> Vec<u8> {
    fn out<T: Serialize>(env: &Envelope, data: &T) -> Vec<u8> {
        let wire = WireOut {
            specversion: "1.0",
            id: env.id,
            source: format!("/frontrow/events/{}", env.event_id),
            ty: env.event.type_name(),
            subject: env.event_id,
            time: env.time,
            datacontenttype: "application/json",
            dataschema: format!("urn:frontrow:{}:v{SCHEMA_VERSION}", env.event.type_name()),
            schemaversion: SCHEMA_VERSION,
            sequence: env.sequence,
            partitionkey: env.event_id,
            causationid: env.causation_id,
            correlationid: env.correlation_id,
            idempotencykey: env.idempotency_key.as_deref(),
            data,
        };
        // Serialising these plain structs to a Vec cannot fail.
        serde_json::to_vec(&wire).expect("envelope serialises")
    }
    match &env.event {
        Event::EventScheduled(e) => out(env, e),
        Event::SeatMapChanged(e) => out(env, e),
        Event::SeatsReserved(e) => out(env, e),
        Event::SeatsBooked(e) => out(env, e),
        Event::SeatsReleased(e) => out(env, e),
        Event::PaymentRefunded(e) => out(env, e),
        Event::PaymentFailed(e) => out(env, e),
        Event::SeatsWithheld(e) => out(env, e),
        Event::SeatsReturned(e) => out(env, e),
        Event::Queue(q) => match q {
            QueueEvent::Opened(e) => out(env, e),
            QueueEvent::Joined(e) => out(env, e),
            QueueEvent::Shuffled(e) => out(env, e),
            QueueEvent::Admitted(e) => out(env, e),
            QueueEvent::Lapsed(e) => out(env, e),
            QueueEvent::Spent(e) => out(env, e),
            QueueEvent::Left(e) => out(env, e),
            QueueEvent::SoldOut(e) => out(env, e),
            QueueEvent::WaitlistJoined(e) => out(env, e),
            QueueEvent::WaitlistOffered(e) => out(env, e),
        },
    }
}

/// Reads an envelope of any supported schema version.
pub fn decode(bytes: &[u8]) -> Result<Envelope, DecodeError> {
    let wire: WireIn = match std::str::from_utf8(bytes) {
        // Checked once, whole: the text parser then does not check each string again.
        Ok(text) => serde_json::from_str(text),
        // The byte parser says where the text breaks.
        Err(_) => serde_json::from_slice(bytes),
    }
    .map_err(DecodeError::Malformed)?;
    if wire.specversion != "1.0" {
        return Err(DecodeError::SpecVersion(wire.specversion.into_owned()));
    }
    fn payload<'a, T: Deserialize<'a>>(ty: &str, raw: &'a RawValue) -> Result<T, DecodeError> {
        serde_json::from_str(raw.get()).map_err(|e| DecodeError::Payload(ty.to_owned(), e))
    }
    let raw = wire.data;
    let event = match (&*wire.ty, wire.schemaversion) {
        ("frontrow.event.scheduled", 1) => Event::EventScheduled(payload(&wire.ty, raw)?),
        ("frontrow.seatmap.changed", 1) => Event::SeatMapChanged(payload(&wire.ty, raw)?),
        ("frontrow.seats.reserved", 1) => Event::SeatsReserved(payload(&wire.ty, raw)?),
        ("frontrow.seats.booked", 1) => Event::SeatsBooked(payload(&wire.ty, raw)?),
        ("frontrow.seats.released", 1) => Event::SeatsReleased(payload(&wire.ty, raw)?),
        ("frontrow.payment.refunded", 1) => Event::PaymentRefunded(payload(&wire.ty, raw)?),
        ("frontrow.payment.failed", 1) => Event::PaymentFailed(payload(&wire.ty, raw)?),
        ("frontrow.seats.withheld", 1) => Event::SeatsWithheld(payload(&wire.ty, raw)?),
        ("frontrow.seats.returned", 1) => Event::SeatsReturned(payload(&wire.ty, raw)?),
        ("frontrow.queue.opened", 1) => Event::Queue(QueueEvent::Opened(payload(&wire.ty, raw)?)),
        ("frontrow.queue.joined", 1) => Event::Queue(QueueEvent::Joined(payload(&wire.ty, raw)?)),
        ("frontrow.queue.shuffled", 1) => Event::Queue(QueueEvent::Shuffled(payload(&wire.ty, raw)?)),
        ("frontrow.queue.admitted", 1) => Event::Queue(QueueEvent::Admitted(payload(&wire.ty, raw)?)),
        ("frontrow.queue.admission_lapsed", 1) => Event::Queue(QueueEvent::Lapsed(payload(&wire.ty, raw)?)),
        ("frontrow.queue.admission_spent", 1) => Event::Queue(QueueEvent::Spent(payload(&wire.ty, raw)?)),
        ("frontrow.queue.left", 1) => Event::Queue(QueueEvent::Left(payload(&wire.ty, raw)?)),
        ("frontrow.queue.sold_out", 1) => Event::Queue(QueueEvent::SoldOut(payload(&wire.ty, raw)?)),
        ("frontrow.waitlist.joined", 1) => Event::Queue(QueueEvent::WaitlistJoined(payload(&wire.ty, raw)?)),
        ("frontrow.waitlist.offered", 1) => Event::Queue(QueueEvent::WaitlistOffered(payload(&wire.ty, raw)?)),
        (ty, v) => return Err(DecodeError::UnknownType(ty.to_owned(), v)),
    };
    Ok(Envelope {
        causation_id: wire.causationid,
        correlation_id: wire.correlationid,
        idempotency_key: wire.idempotencykey,
        ..Envelope::with_id(wire.id, wire.subject, wire.sequence, wire.time, event)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The envelope's time is read by the RFC 3339 parser, and what chrono's own parser takes
    /// still decodes to the same instant; a time that is no time is malformed.
    #[test]
    fn times_decode_to_the_instant_they_name() {
        let record = |time: &str| {
            format!(
                r#"{{"specversion":"1.0","id":"0190a4b8-0000-7000-8000-000000000001","type":"frontrow.payment.failed","subject":"0190a4b8-0000-7000-8000-000000000002","time":"{time}","schemaversion":1,"sequence":3,"data":{{"reservation_id":"0190a4b8-0000-7000-8000-000000000003","provider_event_id":"evt_1","payment_intent":"pi_1","message":"declined"}}}}"#
            )
        };
        for time in [
            "2026-06-01T10:00:00.250Z",
            "2026-06-01T12:00:00.25+02:00",
            "2026-06-01 10:00:00.250Z",
        ] {
            let want = time
                .parse::<DateTime<chrono::FixedOffset>>()
                .unwrap()
                .with_timezone(&Utc);
            let env = decode(record(time).as_bytes()).unwrap_or_else(|e| panic!("{time}: {e}"));
            assert_eq!(env.time, want, "{time}");
            assert_eq!(env.time.timestamp_millis(), 1_780_308_000_250, "{time}");
        }
        assert!(matches!(
            decode(record("yesterday").as_bytes()),
            Err(DecodeError::Malformed(_))
        ));
    }

    #[test]
    fn garbage_is_a_decode_error_not_a_panic() {
        assert!(matches!(decode(b"{"), Err(DecodeError::Malformed(_))));
        let unknown = br#"{"specversion":"1.0","id":"0190a4b8-0000-7000-8000-000000000001","type":"frontrow.nope","subject":"0190a4b8-0000-7000-8000-000000000002","time":"2026-01-01T00:00:00Z","schemaversion":1,"sequence":1,"data":{}}"#;
        assert!(matches!(decode(unknown), Err(DecodeError::UnknownType(..))));
        let future = String::from_utf8_lossy(unknown)
            .replace("frontrow.nope", "frontrow.seats.released")
            .replace("\"schemaversion\":1", "\"schemaversion\":9");
        assert!(matches!(decode(future.as_bytes()), Err(DecodeError::UnknownType(_, 9))));
    }

    /// A record is checked as UTF-8 once, whole: text beyond ASCII reads as written, and bytes
    /// that are not UTF-8 (in the envelope or in the payload) are a malformed record with the
    /// place they break, as the byte parser reports it.
    #[test]
    fn text_is_utf8_checked_once_and_broken_bytes_are_malformed() {
        let record = |message: &str| {
            format!(
                r#"{{"specversion":"1.0","id":"0190a4b8-0000-7000-8000-000000000001","type":"frontrow.payment.failed","subject":"0190a4b8-0000-7000-8000-000000000002","time":"2026-06-01T10:00:00Z","schemaversion":1,"sequence":3,"data":{{"reservation_id":"0190a4b8-0000-7000-8000-000000000003","provider_event_id":"evt_1","payment_intent":"pi_1","message":"{message}"}}}}"#
            )
            .into_bytes()
        };
        let env = decode(&record(r"Karte abgelehnt – «Zahlung» 🎫 \u00e9")).unwrap();
        let Event::PaymentFailed(failed) = &env.event else {
            panic!("{:?}", env.event)
        };
        assert_eq!(failed.message.as_deref(), Some("Karte abgelehnt – «Zahlung» 🎫 é"));
        for broken in [b"\xff".as_slice(), b"\xc3\x28", b"\xed\xa0\x80"] {
            let mut bytes = record("X");
            let at = bytes.iter().position(|&b| b == b'X').unwrap();
            bytes.splice(at..at + 1, broken.iter().copied());
            match decode(&bytes) {
                // Columns count from 1: the broken bytes are at `at + 1`, the string ends after them.
                Err(DecodeError::Malformed(e)) => {
                    assert!((at + 1..=at + 2 + broken.len()).contains(&e.column()), "{e}")
                }
                other => panic!("{broken:?}: {other:?}"),
            }
        }
        let mut subject = record("X");
        let at = subject.windows(7).position(|w| w == b"subject").unwrap() + 10;
        subject[at] = 0xfe;
        assert!(matches!(decode(&subject), Err(DecodeError::Malformed(_))));
    }
}
