//! One typed payload per Event kind (payloads.md §6), written by the `decide_*` functions and
//! read back by the `apply_*` functions, so the members an Event carries are named once.
//!
//! Each struct's fields are its payload's members in wire order; [`EventPayload::to_object`]
//! gives the exact object the authority seals (absent and `null` members as the reference
//! writes them) and [`EventPayload::read`] the struct back from a stored Event. The round trip
//! `read` then `to_object` gives the stored payload again (tested over the scenario suite).

/// A payload whose one member is an object the Event carries whole (a Membership, a
/// Message, a grant…): `Name { field: Type = "member" }`.
macro_rules! one_member {
    ($(#[$doc:meta])* $name:ident { $field:ident: $ty:ty = $member:literal }) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            pub $field: $ty,
        }

        impl $crate::authority::events::EventPayload for $name {
            fn to_object(&self) -> $crate::json::Object {
                $crate::authority::events::object([(
                    $member,
                    $crate::authority::events::json(&self.$field),
                )])
            }
            fn read(
                ev: &$crate::authority::event_view::EventView,
            ) -> Result<Self, $crate::authority::event_view::ApplyError> {
                Ok($name {
                    $field: $crate::authority::events::Fields::of(ev).model($member)?,
                })
            }
        }
    };
}

pub mod archive;
pub mod artifact;
pub mod budget;
pub mod grants;
pub mod membership;
pub mod message;
pub mod mission;
pub mod organization;
pub mod work_exec;
pub mod work_plan;

use super::clock::Micros;
use super::event_view::{ApplyError, EventView};
use crate::json::{Object, Value};
use crate::model::{FromJson, ToJson};

/// A typed Event payload: the one place its members are named.
pub trait EventPayload: Sized {
    /// The payload object the authority seals, members in wire order.
    fn to_object(&self) -> Object;
    /// Reads the payload of a stored or freshly sealed Event.
    fn read(ev: &EventView) -> Result<Self, ApplyError>;
}

/// The member reader behind every [`EventPayload::read`]: each getter names the member it
/// failed on, with the Event kind.
pub struct Fields<'e> {
    kind: &'e str,
    payload: &'e Object,
}

impl<'e> Fields<'e> {
    pub fn of(ev: &EventView<'e>) -> Fields<'e> {
        Fields {
            kind: ev.kind,
            payload: ev.payload,
        }
    }

    fn missing(&self, member: &'static str) -> ApplyError {
        ApplyError::MissingMember {
            kind: self.kind.to_owned(),
            member,
        }
    }

    fn malformed(&self, member: &'static str, reason: impl Into<String>) -> ApplyError {
        ApplyError::MalformedMember {
            kind: self.kind.to_owned(),
            member,
            reason: reason.into(),
        }
    }

    /// A required string member, borrowed.
    fn str_ref(&self, member: &'static str) -> Result<&'e str, ApplyError> {
        self.payload
            .get(member)
            .and_then(Value::as_str)
            .ok_or_else(|| self.missing(member))
    }

    /// A required string member.
    pub fn str(&self, member: &'static str) -> Result<String, ApplyError> {
        self.str_ref(member).map(str::to_owned)
    }

    /// An optional string member: absent, `null` or not a string is `None`.
    pub fn opt_str(&self, member: &'static str) -> Option<String> {
        self.payload
            .get(member)
            .and_then(Value::as_str)
            .map(str::to_owned)
    }

    /// A required safe-integer member.
    pub fn u64(&self, member: &'static str) -> Result<u64, ApplyError> {
        match self.payload.get(member) {
            Some(Value::Number(n)) => n
                .as_safe_u64()
                .ok_or_else(|| self.malformed(member, "not a safe non-negative integer")),
            _ => Err(self.missing(member)),
        }
    }

    /// A required timestamp member (RFC 3339 with an offset).
    pub fn ts(&self, member: &'static str) -> Result<Micros, ApplyError> {
        let s = self.str_ref(member)?;
        Micros::parse(s).ok_or_else(|| self.malformed(member, "not an RFC 3339 timestamp"))
    }

    /// A required member of a model type (an embedded projection, a list…).
    pub fn model<T: FromJson>(&self, member: &'static str) -> Result<T, ApplyError> {
        let v = self
            .payload
            .get(member)
            .ok_or_else(|| self.missing(member))?;
        crate::model::from_value(v, false).map_err(|e| self.malformed(member, e.to_string()))
    }

    /// A required member kept as JSON (a value the authority copies without reading it).
    pub fn value(&self, member: &'static str) -> Result<Value, ApplyError> {
        self.payload
            .get(member)
            .cloned()
            .ok_or_else(|| self.missing(member))
    }
}

/// Reads a replay note (`STATE_NOTES_EXTENSION`) of a model type; absent is `None`.
pub fn note<T: FromJson>(ev: &EventView, name: &'static str) -> Result<Option<T>, ApplyError> {
    match ev.note(name) {
        None => Ok(None),
        Some(v) => {
            crate::model::from_value(v, false)
                .map(Some)
                .map_err(|e| ApplyError::MalformedNote {
                    kind: ev.kind.to_owned(),
                    note: name,
                    reason: e.to_string(),
                })
        }
    }
}

/// Builds a payload object from `(member, value)` pairs, in that order.
pub fn object<const N: usize>(members: [(&'static str, Value); N]) -> Object {
    members.into_iter().collect()
}

/// A string member value.
pub fn string(s: &str) -> Value {
    Value::string(s.to_owned())
}

/// A nullable string member value (`null` when `None`).
pub fn opt_string(s: &Option<String>) -> Value {
    s.as_deref().map_or(Value::Null, string)
}

/// A list of strings.
pub fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().map(|s| string(s)).collect())
}

/// A model value.
pub fn json<T: ToJson>(v: &T) -> Value {
    v.to_json()
}
