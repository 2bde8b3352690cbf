//! (Being written: see docs/authority.md for the family's kinds.)

use super::{Ctx, Decision};
use crate::authority::evolve::EventView;
use crate::authority::state::State;

pub fn decide(_cx: &Ctx) -> Option<Decision> {
    None
}

pub fn apply(_state: &mut State, _ev: &EventView) -> Option<Result<(), String>> {
    None
}
