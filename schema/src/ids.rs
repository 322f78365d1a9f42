//! Identifiers that cannot hold invalid values.
//!
//! Every id is parsed once at the edge (`FromStr`/`TryFrom`) and is valid from then on, so the
//! domain never checks a string again.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Why a string is not a valid identifier.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {kind}: {reason}")]
pub struct InvalidId {
    pub kind: &'static str,
    pub reason: String,
}

macro_rules! uuid_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(Uuid);

        impl $name {
            /// A fresh random id (UUIDv7, so ids sort roughly by creation time).
            pub fn new() -> Self {
                Self(Uuid::now_v7())
            }

            pub const fn from_uuid(uuid: Uuid) -> Self {
                Self(uuid)
            }

            pub fn as_uuid(&self) -> Uuid {
                self.0
            }
        }

        impl Default for $name {
            fn default() -> Self {
                Self::new()
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Uuid::try_parse(s).map(Self).map_err(|e| InvalidId {
                    kind: $kind,
                    reason: format!("{s:?} is not a UUID ({e})"),
                })
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                // Always the lowercase hyphenated form: it is the partition key's bytes.
                fmt::Display::fmt(&self.0.hyphenated(), f)
            }
        }

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::ObjectBuilder::new()
                    .schema_type(utoipa::openapi::schema::Type::String)
                    .format(Some(utoipa::openapi::SchemaFormat::KnownFormat(
                        utoipa::openapi::KnownFormat::Uuid,
                    )))
                    .into()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

uuid_id!(
    /// One concert or show: the unit of consistency. All commands for one event are decided by
    /// one writer, and its id is the journal's partition key.
    EventId,
    "event id"
);
uuid_id!(
    /// One hold of one or more seats by one customer, later booked, released or expired.
    ReservationId,
    "reservation id"
);

/// What every validated string newtype `$name(String)` with a `parse` has: `as_str`, and
/// `FromStr`, `Deserialize` (both through `parse`, so no invalid value is ever read) and
/// `Display`.
macro_rules! validated_string {
    ($name:ident) => {
        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl FromStr for $name {
            type Err = InvalidId;

            fn from_str(s: &str) -> Result<Self, Self::Err> {
                Self::parse(s)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = String::deserialize(d)?;
                Self::parse(&s).map_err(serde::de::Error::custom)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

macro_rules! name_id {
    ($(#[$doc:meta])* $name:ident, $kind:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub fn parse(s: &str) -> Result<Self, InvalidId> {
                let invalid = |reason: &str| InvalidId { kind: $kind, reason: reason.to_owned() };
                if s.is_empty() {
                    return Err(invalid("must not be empty"));
                }
                if s.len() > 64 {
                    return Err(invalid("must be at most 64 characters"));
                }
                if !s.chars().all(|c| c.is_ascii_alphanumeric() || "_.@-+".contains(c)) {
                    return Err(invalid("may contain only ASCII letters, digits and _ . @ - +"));
                }
                Ok(Self(s.to_owned()))
            }
        }

        validated_string!($name);

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                <String as utoipa::PartialSchema>::schema()
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}

name_id!(
    /// A fan, as named by the `sub` claim of their verified bearer token. Never taken from a
    /// request body or header.
    CustomerId,
    "customer id"
);
name_id!(
    /// An organizer, identified by the API key they present.
    OrganizerId,
    "organizer id"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_ids_display_lowercase_hyphenated() {
        let id: EventId = "6F9619FF-8B86-D011-B42D-00C04FC964FF".parse().unwrap();
        assert_eq!(id.to_string(), "6f9619ff-8b86-d011-b42d-00c04fc964ff");
    }

    #[test]
    fn bad_ids_are_refused() {
        assert!("not-a-uuid".parse::<EventId>().is_err());
        assert!(CustomerId::parse("").is_err());
        assert!(CustomerId::parse("a b").is_err());
        assert!(CustomerId::parse(&"x".repeat(65)).is_err());
        assert!(serde_json::from_str::<CustomerId>("\"bad id\"").is_err());
        assert_eq!(
            CustomerId::parse("alice@example.com").unwrap().as_str(),
            "alice@example.com"
        );
    }
}
