//! Typed models of the 22 normative schemas (checklist D-1, D-4, D-16).
//!
//! The schemas stay in the shared bundle; these types are ours. Every object rejects unknown
//! members (`additionalProperties: false`), every `format` is asserted, and the schemas'
//! conditional rules (`allOf`/`if`/`then`) are written as `check` functions next to the type.
//! A differential test runs the same documents through a JSON Schema validator so that a drift
//! between these types and the schemas fails CI.
//!
//! Parsing goes through [`FromJson`] with a context [`Cx`] that carries the JSON Pointer of the
//! value being read (for precise errors) and whether the §2 timestamp profile applies (it does
//! inside Signed Documents, the First-Admission Record and Registry evidence).

pub mod agent_card;
pub mod approval;
pub mod artifact;
pub mod command;
pub mod common;
pub mod context_package;
pub mod conversation;
pub mod error;
pub mod event;
pub mod evidence;
pub mod extension_profile;
pub mod first_admission_record;
pub mod group;
pub mod group_snapshot;
pub mod lease;
pub mod membership;
pub mod message;
pub mod mission;
pub mod presence_record;
pub mod primitives;
pub mod schemas;
pub mod work_contract;
pub mod work_item;

use crate::json::{Number, Object, Value};
use std::fmt;

pub use primitives::*;

/// A schema-stage failure (`SCHEMA_VALIDATION_FAILED`), with the JSON Pointer it applies to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaError {
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.pointer.is_empty() {
            write!(f, "at the document root: {}", self.message)
        } else {
            write!(f, "at {}: {}", self.pointer, self.message)
        }
    }
}

impl std::error::Error for SchemaError {}

/// One step of a JSON Pointer. Member names are mostly the schema's own (static): keeping
/// them borrowed means that walking a valid document allocates nothing for its path, which
/// is only rendered when an error needs it.
#[derive(Clone, Debug)]
pub enum Seg {
    Name(&'static str),
    Index(usize),
    Owned(String),
}

impl From<&'static str> for Seg {
    fn from(s: &'static str) -> Seg {
        Seg::Name(s)
    }
}

impl From<usize> for Seg {
    fn from(i: usize) -> Seg {
        Seg::Index(i)
    }
}

impl From<String> for Seg {
    fn from(s: String) -> Seg {
        Seg::Owned(s)
    }
}

/// Parsing context: where we are, and which timestamp rules apply.
#[derive(Clone, Debug, Default)]
pub struct Cx {
    path: Vec<Seg>,
    /// Apply the §2 timestamp profile (year 0001-9999, no leap second, no `-00:00`).
    pub timestamp_profile: bool,
}

impl Cx {
    /// A context for a plain durable object (generic RFC 3339 timestamps).
    pub fn new() -> Cx {
        Cx::default()
    }

    /// A context for Signed Documents and admission records (timestamp profile on).
    pub fn profile() -> Cx {
        Cx {
            path: Vec::new(),
            timestamp_profile: true,
        }
    }

    pub fn pointer(&self) -> String {
        let mut p = String::new();
        for seg in &self.path {
            p.push('/');
            match seg {
                Seg::Name(s) => p.push_str(&s.replace('~', "~0").replace('/', "~1")),
                Seg::Owned(s) => p.push_str(&s.replace('~', "~0").replace('/', "~1")),
                Seg::Index(i) => p.push_str(&i.to_string()),
            }
        }
        p
    }

    /// An error at the current position.
    pub fn err(&self, message: impl Into<String>) -> SchemaError {
        SchemaError {
            pointer: self.pointer(),
            message: message.into(),
        }
    }

    /// Runs `f` one level down, at member or index `seg`.
    pub fn at<T>(
        &mut self,
        seg: impl Into<Seg>,
        f: impl FnOnce(&mut Cx) -> Result<T, SchemaError>,
    ) -> Result<T, SchemaError> {
        self.enter(seg.into());
        let r = f(self);
        self.leave();
        r
    }

    /// One step down. Out of line (with [`Self::leave`]) so that the push, its growth and the
    /// pop's drop glue exist once, not at each of the hundreds of member sites in the browser.
    #[inline(never)]
    fn enter(&mut self, seg: Seg) {
        self.path.push(seg);
    }

    #[inline(never)]
    fn leave(&mut self) {
        self.path.pop();
    }

    /// Parses child value `v` found at `seg`.
    pub fn field<T: FromJson>(&mut self, seg: impl Into<Seg>, v: &Value) -> Result<T, SchemaError> {
        self.at(seg, |cx| T::from_json(v, cx))
    }

    /// Parses member `name` into `slot` (the `object!` members): out of line, so each member
    /// type's parse and the move into its slot exist once, however many objects use the type.
    #[inline(never)]
    pub fn field_into<T: FromJson>(
        &mut self,
        name: &'static str,
        v: &Value,
        slot: &mut Option<T>,
    ) -> Result<(), SchemaError> {
        *slot = Some(self.at(name, |cx| T::from_json(v, cx))?);
        Ok(())
    }

    pub fn object<'v>(&self, v: &'v Value) -> Result<&'v Object, SchemaError> {
        v.as_object()
            .ok_or_else(|| self.err(format!("expected an object, found {}", v.type_name())))
    }

    pub fn string<'v>(&self, v: &'v Value) -> Result<&'v str, SchemaError> {
        match v {
            Value::String(s) => Ok(s.as_str()),
            other => Err(self.err(format!("expected a string, found {}", other.type_name()))),
        }
    }

    pub fn number<'v>(&self, v: &'v Value) -> Result<&'v Number, SchemaError> {
        match v {
            Value::Number(n) => Ok(n),
            other => Err(self.err(format!("expected a number, found {}", other.type_name()))),
        }
    }

    /// The position of member `key` in `fields` (an object's declared wire names), or the
    /// unknown-member error (`additionalProperties: false`; a name with an unpaired surrogate
    /// matches no declared name). One shared loop instead of a string match per object type.
    #[inline(never)]
    pub fn member_index(
        &self,
        key: &crate::json::JsonString,
        fields: &[&str],
    ) -> Result<usize, SchemaError> {
        let name = key.as_str();
        match fields.iter().position(|f| *f == name) {
            Some(i) if key.is_well_formed() => Ok(i),
            _ => Err(self.unknown(name)),
        }
    }

    /// The value of a string enum, or the error that lists the allowed wire values.
    #[inline(never)]
    pub fn wire_index(&self, v: &Value, wires: &[&str]) -> Result<usize, SchemaError> {
        let s = self.string(v)?;
        wires
            .iter()
            .position(|w| *w == s)
            .ok_or_else(|| self.err(format!("{s:?} is not one of {wires:?}")))
    }

    /// A `const` string member (`const_str!`): `wire` or an error that names it.
    #[inline(never)]
    pub fn const_string(&self, v: &Value, wire: &str) -> Result<(), SchemaError> {
        let s = self.string(v)?;
        if s == wire {
            Ok(())
        } else {
            Err(self.err(format!("{s:?} must be {wire:?}")))
        }
    }

    #[inline(never)]
    pub fn missing(&self, name: &str) -> SchemaError {
        self.err(format!("missing required member \"{name}\""))
    }

    pub fn unknown(&self, name: &str) -> SchemaError {
        SchemaError {
            pointer: self.pointer(),
            message: format!("unknown member \"{name}\" (additionalProperties: false)"),
        }
    }
}

/// Reads a typed value from a strict-parsed JSON value, asserting its schema.
pub trait FromJson: Sized {
    fn from_json(v: &Value, cx: &mut Cx) -> Result<Self, SchemaError>;
}

/// Writes a typed value back to JSON (member order as declared; not canonical).
pub trait ToJson {
    fn to_json(&self) -> Value;
}

/// Parses `v` as `T` in a fresh context.
pub fn from_value<T: FromJson>(v: &Value, timestamp_profile: bool) -> Result<T, SchemaError> {
    let mut cx = Cx {
        path: Vec::new(),
        timestamp_profile,
    };
    T::from_json(v, &mut cx)
}

#[doc(hidden)]
#[macro_export]
macro_rules! __field_ty {
    (req $t:ty) => { $t };
    (opt $t:ty) => { Option<$t> };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __field_take {
    (req $var:ident $json:literal $cx:ident) => {
        match $var {
            Some(v) => v,
            None => return Err($cx.missing($json)),
        }
    };
    (opt $var:ident $json:literal $cx:ident) => {
        $var
    };
}

#[doc(hidden)]
#[macro_export]
macro_rules! __field_emit {
    (req $obj:ident $json:literal $val:expr) => {
        $obj.insert($json, $crate::model::ToJson::to_json($val));
    };
    (opt $obj:ident $json:literal $val:expr) => {
        if let Some(v) = $val {
            $obj.insert($json, $crate::model::ToJson::to_json(v));
        }
    };
}

/// Declares a closed schema object: a struct, its [`FromJson`] (unknown members rejected,
/// required members enforced) and [`ToJson`]. Each field is `"wireName" => rust_name: req T` or
/// `opt T`. An optional `check = path;` names `fn(&Self, &mut Cx) -> Result<(), SchemaError>`
/// for the schema's cross-field rules; it runs after the members parse.
#[macro_export]
macro_rules! object {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $json:literal => $field:ident : $req:ident $ty:ty ),* $(,)?
        }
        $(check = $check:path;)?
    ) => {
        $(#[$meta])*
        #[derive(Clone, Debug, PartialEq)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $crate::__field_ty!($req $ty), )*
        }

        impl $crate::model::FromJson for $name {
            #[allow(unused_assignments, unused_labels)]
            fn from_json(
                v: &$crate::json::Value,
                cx: &mut $crate::model::Cx,
            ) -> Result<Self, $crate::model::SchemaError> {
                const FIELDS: &[&str] = &[$($json),*];
                let obj = cx.object(v)?;
                $( let mut $field: Option<$ty> = None; )*
                for (k, val) in obj.iter() {
                    // Members in document order (so the first error is the same), dispatched
                    // by declared position: the name lookup is shared by every object type.
                    #[allow(unused_variables)]
                    let i = cx.member_index(k, FIELDS)?;
                    // One `?` for all members: each member's error is written to the same
                    // place instead of being copied out at a site of its own.
                    #[allow(unused_mut, unused_variables)]
                    let mut n = 0usize;
                    let r: Result<(), $crate::model::SchemaError> = 'member: {
                        $(
                            if i == n {
                                break 'member cx.field_into::<$ty>($json, val, &mut $field);
                            }
                            n += 1;
                        )*
                        Ok(())
                    };
                    r?;
                }
                let out = $name {
                    $( $field: $crate::__field_take!($req $field $json cx), )*
                };
                $( $check(&out, cx)?; )?
                Ok(out)
            }
        }

        impl $crate::model::ToJson for $name {
            fn to_json(&self) -> $crate::json::Value {
                #[allow(unused_mut)]
                let mut obj = $crate::json::Object::with_capacity([$($json),*].len());
                $( $crate::__field_emit!($req obj $json &self.$field); )*
                $crate::json::Value::Object(obj)
            }
        }
    };
}

/// Declares a string enum (`enum` or `const` in the schema).
#[macro_export]
macro_rules! string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $wire:literal ),+ $(,)? }
    ) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name { $( $(#[$vmeta])* $variant ),+ }

        impl $name {
            /// Every variant, in schema order.
            pub const ALL: &'static [$name] = &[ $( $name::$variant ),+ ];

            pub fn as_str(&self) -> &'static str {
                match self { $( $name::$variant => $wire ),+ }
            }

            /// The wire values, in the order of [`Self::ALL`].
            pub const WIRE: &'static [&'static str] = &[ $( $wire ),+ ];

            pub fn from_wire(s: &str) -> Option<$name> {
                let i = Self::WIRE.iter().position(|w| *w == s)?;
                Self::ALL.get(i).copied()
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl $crate::model::FromJson for $name {
            fn from_json(
                v: &$crate::json::Value,
                cx: &mut $crate::model::Cx,
            ) -> Result<Self, $crate::model::SchemaError> {
                let i = cx.wire_index(v, Self::WIRE)?;
                match Self::ALL.get(i) {
                    Some(x) => Ok(*x),
                    None => Err(cx.err("enum table mismatch")),
                }
            }
        }

        impl $crate::model::ToJson for $name {
            fn to_json(&self) -> $crate::json::Value {
                $crate::json::Value::string(self.as_str())
            }
        }
    };
}
