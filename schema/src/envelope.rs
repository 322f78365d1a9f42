//! The envelope every event travels in, and its versioned JSON codec.
//!
//! The stored form is a CloudEvents 1.0 structured-mode JSON document: `specversion`, `id`,
//! `source`, `type`, `subject` (the event id), `time`, `datacontenttype`, `dataschema`, and
//! extension attributes `sequence` (per event, from 1), `partitionkey` (the event id, see
//! CloudEvents' partitioning extension), `schemaversion`, `causationid`, `correlationid` and
//! `idempotencykey`. The payload is in `data`. Decoding dispatches on `type` and
//! `schemaversion`, so an old version can be upcast when a newer one exists.

use std::borrow::Cow;
use std::cell::Cell;

use chrono::{DateTime, Utc};
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
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

/// An RFC 3339 time (the envelope's, and the payloads' frequent ones) through chrono's
/// dedicated parser: its `FromStr`, which chrono's own `Deserialize` uses, goes through the
/// general format machinery and is several times slower; it stays the fallback for the looser
/// forms it also takes.
pub(crate) fn rfc3339<'de, D: serde::Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
    let text = Text::deserialize(d)?.0;
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
///
/// One pass over the bytes: the payload is read straight into its event type when `type` and
/// `schemaversion` come before `data`, as [`encode`] writes them (a replay decodes millions of
/// these); a record with `data` first is read again from the payload's text once they are known.
pub fn decode(bytes: &[u8]) -> Result<Envelope, DecodeError> {
    let in_data = Cell::new(None);
    let seed = WireSeed { in_data: &in_data };
    // Checked once, whole, with the CPU's vector instructions (a replay spent 4% of its time in
    // the standard library's check): the text parser then does not check each string again.
    let read = match simdutf8::basic::from_utf8(bytes) {
        Ok(text) => whole(serde_json::Deserializer::from_str(text), seed),
        // The byte parser says where the text breaks; bytes that are not text are no envelope,
        // wherever they stand.
        Err(_) => {
            let read = whole(serde_json::Deserializer::from_slice(bytes), seed);
            in_data.set(None);
            read
        }
    };
    let wire = read.map_err(|e| match in_data.take() {
        Some(ty) => DecodeError::Payload(ty.into_owned(), e),
        None => DecodeError::Malformed(e),
    })?;
    if wire.specversion != "1.0" {
        return Err(DecodeError::SpecVersion(wire.specversion.into_owned()));
    }
    let event = match wire.data {
        Data::Read(event) => event,
        Data::Ahead(raw) => event_of(
            &wire.ty,
            wire.schemaversion,
            &mut serde_json::Deserializer::from_str(raw.get()),
        )
        .map_err(|e| DecodeError::Payload(wire.ty.to_string(), e))?,
    };
    let Some(event) = event else {
        return Err(DecodeError::UnknownType(wire.ty.into_owned(), wire.schemaversion));
    };
    Ok(Envelope {
        causation_id: wire.causationid,
        correlation_id: wire.correlationid,
        idempotency_key: wire.idempotencykey,
        ..Envelope::with_id(wire.id, wire.subject, wire.sequence, wire.time, event)
    })
}

/// A whole record read by `seed`: nothing but whitespace may follow the envelope.
fn whole<'de, R: serde_json::de::Read<'de>>(
    mut de: serde_json::Deserializer<R>,
    seed: WireSeed<'_, 'de>,
) -> serde_json::Result<WireIn<'de>> {
    let wire = seed.deserialize(&mut de)?;
    de.end()?;
    Ok(wire)
}

/// The event of `ty` at schema version `version` read from `d`, or `None` (its value skipped)
/// for a type or version this code does not know. The one table of what `decode` reads.
fn event_of<'de, D: serde::Deserializer<'de>>(ty: &str, version: u32, d: D) -> Result<Option<Event>, D::Error> {
    Ok(Some(match (ty, version) {
        ("frontrow.event.scheduled", 1) => Event::EventScheduled(Deserialize::deserialize(d)?),
        ("frontrow.seatmap.changed", 1) => Event::SeatMapChanged(Deserialize::deserialize(d)?),
        ("frontrow.seats.reserved", 1) => Event::SeatsReserved(Deserialize::deserialize(d)?),
        ("frontrow.seats.booked", 1) => Event::SeatsBooked(Deserialize::deserialize(d)?),
        ("frontrow.seats.released", 1) => Event::SeatsReleased(Deserialize::deserialize(d)?),
        ("frontrow.payment.refunded", 1) => Event::PaymentRefunded(Deserialize::deserialize(d)?),
        ("frontrow.payment.failed", 1) => Event::PaymentFailed(Deserialize::deserialize(d)?),
        ("frontrow.seats.withheld", 1) => Event::SeatsWithheld(Deserialize::deserialize(d)?),
        ("frontrow.seats.returned", 1) => Event::SeatsReturned(Deserialize::deserialize(d)?),
        ("frontrow.queue.opened", 1) => Event::Queue(QueueEvent::Opened(Deserialize::deserialize(d)?)),
        ("frontrow.queue.joined", 1) => Event::Queue(QueueEvent::Joined(Deserialize::deserialize(d)?)),
        ("frontrow.queue.shuffled", 1) => Event::Queue(QueueEvent::Shuffled(Deserialize::deserialize(d)?)),
        ("frontrow.queue.admitted", 1) => Event::Queue(QueueEvent::Admitted(Deserialize::deserialize(d)?)),
        ("frontrow.queue.admission_lapsed", 1) => Event::Queue(QueueEvent::Lapsed(Deserialize::deserialize(d)?)),
        ("frontrow.queue.admission_spent", 1) => Event::Queue(QueueEvent::Spent(Deserialize::deserialize(d)?)),
        ("frontrow.queue.left", 1) => Event::Queue(QueueEvent::Left(Deserialize::deserialize(d)?)),
        ("frontrow.queue.sold_out", 1) => Event::Queue(QueueEvent::SoldOut(Deserialize::deserialize(d)?)),
        ("frontrow.waitlist.joined", 1) => Event::Queue(QueueEvent::WaitlistJoined(Deserialize::deserialize(d)?)),
        ("frontrow.waitlist.offered", 1) => Event::Queue(QueueEvent::WaitlistOffered(Deserialize::deserialize(d)?)),
        _ => {
            IgnoredAny::deserialize(d)?;
            return Ok(None);
        }
    }))
}

/// An envelope as read, borrowing what it can from the stored bytes.
struct WireIn<'a> {
    specversion: Cow<'a, str>,
    id: Uuid,
    ty: Cow<'a, str>,
    subject: EventId,
    time: DateTime<Utc>,
    schemaversion: u32,
    sequence: u64,
    causationid: Option<Uuid>,
    correlationid: Option<Uuid>,
    idempotencykey: Option<String>,
    data: Data<'a>,
}

/// The payload: read as its event (`None`: a type this code does not know), or kept as text
/// because it came before `type` or `schemaversion`.
#[expect(
    clippy::large_enum_variant,
    reason = "one lives on the stack per decode; boxing the event would allocate for every record"
)]
enum Data<'a> {
    Read(Option<Event>),
    Ahead(&'a RawValue),
}

/// The envelope's fields, by name; any other (`source`, `dataschema`, …) is skipped.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "lowercase")]
enum Field {
    Specversion,
    Id,
    Type,
    Subject,
    Time,
    Schemaversion,
    Sequence,
    Causationid,
    Correlationid,
    Idempotencykey,
    Data,
    #[serde(other)]
    Other,
}

/// Reads a [`WireIn`]; `in_data` holds the type while its payload is being read, so an error
/// there is told as the payload's.
struct WireSeed<'c, 'de> {
    in_data: &'c Cell<Option<Cow<'de, str>>>,
}

impl<'de> DeserializeSeed<'de> for WireSeed<'_, 'de> {
    type Value = WireIn<'de>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

/// The payload read as the event its (already read) type names.
struct EventSeed<'t> {
    ty: &'t str,
    version: u32,
}

impl<'de> DeserializeSeed<'de> for EventSeed<'_> {
    type Value = Option<Event>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        event_of(self.ty, self.version, d)
    }
}

/// A string borrowed from the record when it has no escapes, else copied.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: serde::de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

/// An RFC 3339 time, through [`rfc3339`].
struct Time(DateTime<Utc>);

impl<'de> Deserialize<'de> for Time {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        rfc3339(d).map(Time)
    }
}

/// Sets a field read once; a second value for it is an error, as it is for derived structs.
fn once<T, E: serde::de::Error>(slot: &mut Option<T>, name: &'static str, value: T) -> Result<(), E> {
    if slot.replace(value).is_some() {
        return Err(E::duplicate_field(name));
    }
    Ok(())
}

impl<'de> Visitor<'de> for WireSeed<'_, 'de> {
    type Value = WireIn<'de>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a FrontRow envelope (a CloudEvents JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let (mut specversion, mut id, mut ty, mut subject, mut time) = (None, None, None, None, None);
        let (mut schemaversion, mut sequence, mut data) = (None, None, None);
        let (mut causationid, mut correlationid, mut idempotencykey) = (None, None, None);
        while let Some(field) = map.next_key::<Field>()? {
            match field {
                Field::Specversion => once(&mut specversion, "specversion", map.next_value::<Text<'de>>()?.0)?,
                Field::Id => once(&mut id, "id", map.next_value::<Uuid>()?)?,
                Field::Type => once(&mut ty, "type", map.next_value::<Text<'de>>()?.0)?,
                Field::Subject => once(&mut subject, "subject", map.next_value::<EventId>()?)?,
                Field::Time => once(&mut time, "time", map.next_value::<Time>()?.0)?,
                Field::Schemaversion => once(&mut schemaversion, "schemaversion", map.next_value::<u32>()?)?,
                Field::Sequence => once(&mut sequence, "sequence", map.next_value::<u64>()?)?,
                Field::Causationid => once(&mut causationid, "causationid", map.next_value::<Option<Uuid>>()?)?,
                Field::Correlationid => once(&mut correlationid, "correlationid", map.next_value::<Option<Uuid>>()?)?,
                Field::Idempotencykey => once(
                    &mut idempotencykey,
                    "idempotencykey",
                    map.next_value::<Option<String>>()?,
                )?,
                Field::Data => {
                    let read = match (&ty, schemaversion) {
                        (Some(t), Some(version)) => {
                            // Borrowed from the record: no copy unless the type had escapes.
                            self.in_data.set(Some(t.clone()));
                            let event = map.next_value_seed(EventSeed { ty: t, version })?;
                            self.in_data.set(None);
                            Data::Read(event)
                        }
                        _ => Data::Ahead(map.next_value::<&'de RawValue>()?),
                    };
                    once(&mut data, "data", read)?;
                }
                Field::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        use serde::de::Error;
        Ok(WireIn {
            specversion: specversion.ok_or_else(|| A::Error::missing_field("specversion"))?,
            id: id.ok_or_else(|| A::Error::missing_field("id"))?,
            ty: ty.ok_or_else(|| A::Error::missing_field("type"))?,
            subject: subject.ok_or_else(|| A::Error::missing_field("subject"))?,
            time: time.ok_or_else(|| A::Error::missing_field("time"))?,
            schemaversion: schemaversion.ok_or_else(|| A::Error::missing_field("schemaversion"))?,
            sequence: sequence.ok_or_else(|| A::Error::missing_field("sequence"))?,
            causationid: causationid.flatten(),
            correlationid: correlationid.flatten(),
            idempotencykey: idempotencykey.flatten(),
            data: data.ok_or_else(|| A::Error::missing_field("data"))?,
        })
    }
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

    /// The payload is read in the same pass when `type` and `schemaversion` come first (as
    /// `encode` writes them) and from its text when `data` comes first: the same envelope either
    /// way. A payload that does not fit its type is that type's error in both orders; a second
    /// `data` is a malformed envelope.
    #[test]
    fn the_payload_reads_the_same_wherever_it_stands() {
        let data = r#""data":{"reservation_id":"0190a4b8-0000-7000-8000-000000000003","provider_event_id":"evt_1","payment_intent":"pi_1","message":null}"#;
        let head = r#""specversion":"1.0","id":"0190a4b8-0000-7000-8000-000000000001","type":"frontrow.payment.failed","subject":"0190a4b8-0000-7000-8000-000000000002","time":"2026-06-01T10:00:00Z","schemaversion":1,"sequence":3,"correlationid":null"#;
        let last = decode(format!("{{{head},{data}}}").as_bytes()).unwrap();
        let first = decode(format!("{{{data},{head}}}").as_bytes()).unwrap();
        assert_eq!(last, first);
        assert!(matches!(last.event, Event::PaymentFailed(_)));
        assert_eq!(encode(&last), encode(&first));
        assert_eq!(decode(&encode(&last)).unwrap(), last);

        let bad = data.replace("\"pi_1\"", "7");
        for record in [format!("{{{head},{bad}}}"), format!("{{{bad},{head}}}")] {
            match decode(record.as_bytes()) {
                Err(DecodeError::Payload(ty, _)) => assert_eq!(ty, "frontrow.payment.failed"),
                other => panic!("{record}: {other:?}"),
            }
        }
        let twice = format!("{{{head},{data},{data}}}");
        assert!(matches!(decode(twice.as_bytes()), Err(DecodeError::Malformed(_))));
        let escaped = format!("{{{head},{data}}}").replace("payment.failed", r"payment\u002efailed");
        assert_eq!(
            decode(escaped.as_bytes()).unwrap(),
            last,
            "an escaped type reads as written"
        );
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
