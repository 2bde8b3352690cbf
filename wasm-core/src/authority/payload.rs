//! Reading Command payloads the way the reference authority does (payloads.md §2.1): camelCase
//! members, unknown members rejected, explicit `null` only where a member is nullable,
//! surrounding whitespace stripped, identifiers and text 1–512 characters, timestamps with an
//! offset. Every problem is collected, then reported at once as `INVALID_COMMAND` "Command
//! payload does not match its schema" with `details.errors`, like the reference's validator.

use super::clock::Micros;
use super::rejection::Rejection;
use crate::json::{Object, Value};
use crate::model::Id;
use crate::model::common::{Actor, ActorType};

/// The reference's length limit for identifiers and text after stripping (D-30).
pub const MAX_TEXT: usize = 512;

/// A payload reader; create one per object, call the typed getters, then [`Reader::finish`].
pub struct Reader<'a> {
    obj: &'a Object,
    prefix: String,
    seen: Vec<String>,
    errors: Vec<String>,
}

impl<'a> Reader<'a> {
    pub fn new(obj: &'a Object) -> Reader<'a> {
        Reader {
            obj,
            prefix: String::new(),
            seen: Vec::new(),
            errors: Vec::new(),
        }
    }

    fn path(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }

    pub fn error(&mut self, name: &str, message: impl AsRef<str>) {
        let p = self.path(name);
        self.errors.push(format!("{p}: {}", message.as_ref()));
    }

    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// Marks `name` as known and returns its value when present and not `null`.
    /// `nullable` says whether an explicit `null` is allowed (it means "absent").
    fn take(&mut self, name: &str, nullable: bool) -> Option<&'a Value> {
        self.seen.push(name.to_owned());
        match self.obj.get(name) {
            None => None,
            Some(Value::Null) => {
                if !nullable {
                    self.error(name, "may not be null");
                }
                None
            }
            Some(v) => Some(v),
        }
    }

    /// True when the member is present (even as `null`); marks it known.
    pub fn present(&mut self, name: &str) -> bool {
        self.seen.push(name.to_owned());
        self.obj.contains_key(name)
    }

    fn str_value(&mut self, name: &str, v: &Value) -> Option<String> {
        match v {
            Value::String(s) => Some(s.as_str().trim().to_owned()),
            other => {
                self.error(
                    name,
                    format!("expected a string, found {}", other.type_name()),
                );
                None
            }
        }
    }

    fn bounded(&mut self, name: &str, s: String) -> Option<String> {
        let n = s.chars().count();
        if n == 0 || n > MAX_TEXT {
            self.error(
                name,
                format!("must be 1..={MAX_TEXT} characters, found {n}"),
            );
            None
        } else {
            Some(s)
        }
    }

    /// A required identifier or short text (1–512 characters after stripping).
    pub fn id(&mut self, name: &str) -> String {
        match self.take(name, false) {
            Some(v) => self
                .str_value(name, v)
                .and_then(|s| self.bounded(name, s))
                .unwrap_or_default(),
            None => {
                if !self.obj.contains_key(name) {
                    self.error(name, "is required");
                }
                String::new()
            }
        }
    }

    /// Same as [`Self::id`], for free text members.
    pub fn text(&mut self, name: &str) -> String {
        self.id(name)
    }

    /// An optional, nullable identifier or short text.
    pub fn opt_id(&mut self, name: &str) -> Option<String> {
        let v = self.take(name, true)?;
        self.str_value(name, v).and_then(|s| self.bounded(name, s))
    }

    /// An optional, nullable string without a length limit (`comments`, `nextStep`…).
    pub fn opt_string(&mut self, name: &str) -> Option<String> {
        let v = self.take(name, true)?;
        self.str_value(name, v)
    }

    /// A required string without a length limit.
    pub fn string(&mut self, name: &str) -> String {
        match self.take(name, false) {
            Some(v) => self.str_value(name, v).unwrap_or_default(),
            None => {
                if !self.obj.contains_key(name) {
                    self.error(name, "is required");
                }
                String::new()
            }
        }
    }

    fn array(&mut self, name: &str) -> Option<&'a Vec<Value>> {
        match self.take(name, false)? {
            Value::Array(a) => Some(a),
            other => {
                self.error(
                    name,
                    format!("expected an array, found {}", other.type_name()),
                );
                None
            }
        }
    }

    /// An array of identifiers; absent means `[]` unless `min_items > 0` (then required).
    pub fn ids(&mut self, name: &str, min_items: usize) -> Vec<String> {
        let Some(items) = self.array(name) else {
            if min_items > 0 && !self.obj.contains_key(name) {
                self.error(name, "is required");
            }
            return Vec::new();
        };
        if items.len() < min_items {
            self.error(name, format!("needs at least {min_items} item(s)"));
        }
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            let n = format!("{name}[{i}]");
            if let Some(s) = self.str_value(&n, v).and_then(|s| self.bounded(&n, s)) {
                out.push(s);
            }
        }
        out
    }

    /// An array of strings without length limits; absent means `[]`.
    pub fn strings(&mut self, name: &str) -> Vec<String> {
        let Some(items) = self.array(name) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            if let Some(s) = self.str_value(&format!("{name}[{i}]"), v) {
                out.push(s);
            }
        }
        out
    }

    fn int_value(&mut self, name: &str, v: &Value, min: u64, max: u64) -> Option<u64> {
        let n = match v {
            Value::Number(n) if n.is_integer() => n.as_safe_u64(),
            Value::Number(_) => {
                self.error(name, "must be an integer");
                return None;
            }
            other => {
                self.error(
                    name,
                    format!("expected an integer, found {}", other.type_name()),
                );
                return None;
            }
        };
        match n {
            Some(x) if (min..=max).contains(&x) => Some(x),
            _ => {
                self.error(name, format!("must be in {min}..={max}"));
                None
            }
        }
    }

    /// An integer in `min..=max`; `default` `None` makes it required.
    pub fn int(&mut self, name: &str, min: u64, max: u64, default: Option<u64>) -> u64 {
        match self.take(name, false) {
            Some(v) => self.int_value(name, v, min, max).unwrap_or(min),
            None => match default {
                Some(d) => d,
                None => {
                    if !self.obj.contains_key(name) {
                        self.error(name, "is required");
                    }
                    min
                }
            },
        }
    }

    /// A nullable integer in `min..=max`.
    pub fn opt_int(&mut self, name: &str, min: u64, max: u64) -> Option<u64> {
        let v = self.take(name, true)?;
        self.int_value(name, v, min, max)
    }

    pub fn boolean(&mut self, name: &str, default: bool) -> bool {
        match self.take(name, false) {
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                self.error(
                    name,
                    format!("expected a boolean, found {}", other.type_name()),
                );
                default
            }
            None => default,
        }
    }

    fn ts_value(&mut self, name: &str, v: &Value) -> Option<Micros> {
        let s = self.str_value(name, v)?;
        let t = Micros::parse(&s);
        if t.is_none() {
            self.error(
                name,
                format!("{s:?} is not an RFC 3339 timestamp with an offset"),
            );
        }
        t
    }

    /// A required timestamp.
    pub fn ts(&mut self, name: &str) -> Micros {
        match self.take(name, false) {
            Some(v) => self.ts_value(name, v).unwrap_or_default(),
            None => {
                if !self.obj.contains_key(name) {
                    self.error(name, "is required");
                }
                Micros::default()
            }
        }
    }

    /// A nullable timestamp.
    pub fn opt_ts(&mut self, name: &str) -> Option<Micros> {
        let v = self.take(name, true)?;
        self.ts_value(name, v)
    }

    /// One of `allowed`; `default` `None` makes it required.
    pub fn choice(&mut self, name: &str, allowed: &[&str], default: Option<&str>) -> String {
        match self.take(name, false) {
            Some(v) => match self.str_value(name, v) {
                Some(s) if allowed.contains(&s.as_str()) => s,
                Some(s) => {
                    self.error(name, format!("{s:?} is not one of {allowed:?}"));
                    default.unwrap_or_default().to_owned()
                }
                None => default.unwrap_or_default().to_owned(),
            },
            None => {
                if default.is_none() && !self.obj.contains_key(name) {
                    self.error(name, "is required");
                }
                default.unwrap_or_default().to_owned()
            }
        }
    }

    /// Any JSON object (free-form `data`, `constraints`…); absent means `{}`.
    pub fn free_object(&mut self, name: &str) -> Object {
        match self.take(name, false) {
            Some(Value::Object(o)) => o.clone(),
            Some(other) => {
                self.error(
                    name,
                    format!("expected an object, found {}", other.type_name()),
                );
                Object::new()
            }
            None => Object::new(),
        }
    }

    /// A nested object read by `f` with its own closed member set; `None` when absent
    /// (`required` then records an error).
    pub fn nested<T>(
        &mut self,
        name: &str,
        required: bool,
        f: impl FnOnce(&mut Reader<'a>) -> T,
    ) -> Option<T> {
        let v = match self.take(name, !required) {
            Some(v) => v,
            None => {
                if required && !self.obj.contains_key(name) {
                    self.error(name, "is required");
                }
                return None;
            }
        };
        let Value::Object(o) = v else {
            self.error(name, format!("expected an object, found {}", v.type_name()));
            return None;
        };
        let mut sub = Reader {
            obj: o,
            prefix: format!("{}{name}.", self.prefix),
            seen: Vec::new(),
            errors: Vec::new(),
        };
        let out = f(&mut sub);
        sub.reject_unknown();
        self.errors.append(&mut sub.errors);
        Some(out)
    }

    /// Each item of an array of objects, read by `f`.
    pub fn nested_list<T>(
        &mut self,
        name: &str,
        mut f: impl FnMut(&mut Reader<'a>) -> T,
    ) -> Vec<T> {
        let Some(items) = self.array(name) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            let Value::Object(o) = v else {
                self.error(&format!("{name}[{i}]"), "expected an object");
                continue;
            };
            let mut sub = Reader {
                obj: o,
                prefix: format!("{}{name}[{i}].", self.prefix),
                seen: Vec::new(),
                errors: Vec::new(),
            };
            out.push(f(&mut sub));
            sub.reject_unknown();
            self.errors.append(&mut sub.errors);
        }
        out
    }

    /// A Principal `{type, id}`; `system` is the reference's spelling of `service` (D-28).
    pub fn principal(&mut self, name: &str) -> Option<Actor> {
        self.nested(name, true, |r| {
            let t = r.choice("type", &["agent", "human", "service", "system"], None);
            let id = r.id("id");
            let actor_type = match t.as_str() {
                "agent" => ActorType::Agent,
                "human" => ActorType::Human,
                _ => ActorType::Service,
            };
            Actor {
                actor_type,
                id: Id(id),
            }
        })
    }

    fn reject_unknown(&mut self) {
        let unknown: Vec<String> = self
            .obj
            .iter()
            .map(|(k, _)| k.as_str().to_owned())
            .filter(|k| !self.seen.iter().any(|s| s == k))
            .collect();
        for k in unknown {
            self.error(&k, "is not a member of this payload");
        }
    }

    /// Reports unknown members and every collected problem as one `INVALID_COMMAND`.
    pub fn finish(mut self, kind: &str) -> Result<(), Rejection> {
        self.reject_unknown();
        if self.errors.is_empty() {
            return Ok(());
        }
        let errors = self.errors.into_iter().map(Value::string).collect();
        Err(
            Rejection::invalid("Command payload does not match its schema")
                .detail("errors", Value::Array(errors))
                .detail("kind", kind),
        )
    }
}
