//! The Artifact Event (§13.1; payloads.md §6.30).

use super::{EventPayload, object};
use crate::authority::event_view::{ApplyError, EventView};
use crate::json::{Object, Value};

/// `artifact.published`: the signed manifest, kept as the object it was published as (its
/// members are the publisher's, checked by `decide_publish`).
#[derive(Clone, Debug, PartialEq)]
pub struct ArtifactPublished {
    pub artifact: Object,
}

impl EventPayload for ArtifactPublished {
    fn to_object(&self) -> Object {
        object([("artifact", Value::Object(self.artifact.clone()))])
    }
    fn read(ev: &EventView) -> Result<Self, ApplyError> {
        let artifact = ev
            .payload
            .get("artifact")
            .and_then(Value::as_object)
            .ok_or_else(|| ApplyError::MissingMember {
                kind: ev.kind.to_owned(),
                member: "artifact",
            })?
            .clone();
        Ok(ArtifactPublished { artifact })
    }
}
