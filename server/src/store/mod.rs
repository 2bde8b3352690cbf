//! Durable storage of the authority's history (§15.2, §16): the Store trait and its SQLite
//! backend. The log is append-only; a batch of accepted Commands (their Events and
//! First-Admission Records) is one transaction, and nothing is acknowledged before it is
//! durable. No SQL leaves this module; a PostgreSQL backend implements the same trait.
//!
//! Writing and waiting for the disk are two steps (`append_pending`, then `wait_durable`) so
//! that the authority can decide the next batch while the disk makes the last one durable;
//! what a batch's answers depend on is durable before any of them is sent.

mod checkpointer;
pub mod cursors;
pub mod reader;
mod shared;
pub mod sqlite;
mod syncer;

use std::fmt;

/// One Event as stored: where it sits and its canonical (JCS) bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    /// `None` for an Organization-scoped Event.
    pub group_id: Option<String>,
    pub sequence: u64,
    pub kind: String,
    pub jcs: Vec<u8>,
}

/// One First-Admission Record (§6.4), keyed by `(organizationId, signingHash)`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredAdmission {
    pub organization_id: String,
    pub signing_hash: String,
    pub record: Vec<u8>,
    /// The signed Command itself, byte for byte as received, when its signer is a human: a
    /// human's decision is what an audit bundle must let an auditor check (docs/audit.md).
    /// `None` for an Agent's or a service's Command (not kept: the hot path stays cheap) and
    /// for the records of a store written before Commands were kept.
    pub command: Option<Vec<u8>>,
}

#[derive(Debug)]
pub struct StoreError(pub String);

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "store: {}", self.0)
    }
}

impl std::error::Error for StoreError {}

/// A point in a store's write order. Everything appended up to it is durable once
/// `wait_durable` has returned `Ok` for it; tickets only grow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Ticket(pub u64);

/// A point in the store's Event order: the store position of the last Event covered (opaque,
/// only grows). `Mark(0)`: before the first Event.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Mark(pub u64);

/// What [`Store::for_each_event_after`] calls with each Event: its Mark and its bytes.
pub type EventVisitor<'a> = dyn FnMut(Mark, &[u8]) -> Result<(), String> + 'a;

/// A snapshot as stored: the State after every Event up to `through`, encoded
/// (`wasm_core::authority::snapshot`). `events` is how many Events it covers (logs, and the
/// store's check that the snapshot belongs to this log).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSnapshot {
    pub through: Mark,
    pub events: u64,
    pub bytes: Vec<u8>,
}

/// Writes snapshots for a store, on a thread of its own (the authority's snapshot thread): a
/// connection of its own, so that encoding and writing a snapshot of hundreds of MB never
/// holds the owner thread, which keeps the store. The caller hands it only snapshots whose
/// Events are all durable; a snapshot lost in a crash only means a longer replay.
pub trait SnapshotWriter: Send {
    /// Stores `snapshot` and drops older ones (the store keeps at least the newest complete
    /// one at every moment).
    fn put_snapshot(&mut self, snapshot: &StoredSnapshot) -> Result<(), StoreError>;
}

/// Called by the store's sync thread after each sync (`Store::on_synced`); it must not block.
pub type SyncedHook = std::sync::Arc<dyn Fn() + Send + Sync>;

/// The key of the Organization's own log among the Groups' logs (its Events have no Group).
pub const ORGANIZATION_LOG: &str = "";

/// The authority's durable log.
pub trait Store: Send {
    /// Appends Events and admission records in one transaction. They are visible to this
    /// store's reads at once, and durable only once `wait_durable` returns `Ok` for the ticket.
    fn append_pending(
        &mut self,
        events: &[StoredEvent],
        admissions: &[StoredAdmission],
    ) -> Result<Ticket, StoreError>;

    /// The ticket of everything appended so far.
    fn last_ticket(&self) -> Ticket;

    /// Blocks until everything up to `ticket` is durable. An error is final: what was
    /// appended may or may not survive a crash, so the owner must stop and restart.
    fn wait_durable(&self, ticket: Ticket) -> Result<(), StoreError>;

    /// Whether `ticket` is durable already, without blocking (a failure reads as `false`;
    /// `wait_durable` reports it).
    fn is_durable(&self, ticket: Ticket) -> bool;

    /// Has `wake` called after every sync that ends (made more durable, or failed), so that
    /// an owner with other work need not block in `wait_durable`. A store whose tickets are
    /// durable when issued never calls it.
    fn on_synced(&self, wake: SyncedHook) {
        let _ = wake;
    }

    /// Whether a sync failed (final; `wait_durable` then reports it at once).
    fn sync_failed(&self) -> bool {
        false
    }

    /// Calls `f` with every Event in append order (replay at start-up).
    fn for_each_event(
        &self,
        f: &mut dyn FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<u64, StoreError>;

    /// Calls `f` with every Event after `after`, in append order, with its Mark (restart
    /// from a snapshot: the Events the snapshot does not cover). Returns how many.
    fn for_each_event_after(
        &self,
        after: Mark,
        f: &mut EventVisitor<'_>,
    ) -> Result<u64, StoreError>;

    /// The Mark of the last appended Event (`Mark(0)` when there is none). It covers appended
    /// Events, durable or not: a snapshot taken at it is handed to the [`SnapshotWriter`] only
    /// once the batch is durable.
    fn last_mark(&self) -> Mark;

    /// The newest stored snapshot, if any. An error (or a snapshot that does not decode) is
    /// never fatal: the caller replays the whole log.
    fn latest_snapshot(&self) -> Result<Option<StoredSnapshot>, StoreError> {
        Ok(None)
    }

    /// A writer of snapshots, to move to the snapshot thread; `None` when this store keeps no
    /// snapshots (the default: every restart replays the whole log).
    fn snapshot_writer(&self) -> Result<Option<Box<dyn SnapshotWriter>>, StoreError> {
        Ok(None)
    }

    /// A Group's Events after `after_sequence`, at most `limit` (replay to subscribers, §16).
    fn group_events(
        &self,
        group_id: &str,
        after_sequence: u64,
        limit: usize,
    ) -> Result<Vec<Vec<u8>>, StoreError>;

    /// The admission record for `(organization, signing hash)`, if any. Authoritative: an
    /// absence is answered from the store's own index, without a query (the common case).
    fn admission(
        &self,
        organization_id: &str,
        signing_hash: &str,
    ) -> Result<Option<Vec<u8>>, StoreError>;

    /// How many Events are stored.
    fn event_count(&self) -> Result<u64, StoreError>;

    /// Whether a refused append ends this store's use as the writer's (a cluster's fenced or
    /// disconnected writer steps down instead of replaying and going on).
    fn append_failure_is_final(&self) -> bool {
        false
    }
}
