//! The writer's lease (docs/cluster.md, "Election and fencing"): one row in `mwp_writer`,
//! taken by a node when it has expired by the database's clock (so the nodes' clocks do not
//! matter), with a new epoch each time it changes hands.
//!
//! ```text
//!   follower ──try_acquire (expired)──▶ writer(epoch e) ──renew / every append──▶ writer(e)
//!       ▲                                   │
//!       └──── lost: renew or an append finds holder ≠ me or epoch ≠ e (fenced) ──┘
//! ```
//!
//! The lease only elects; the fence is in every append (`pg::PgStore`): an append checks the
//! holder, the epoch and the expiry in its own transaction, under the row's lock.

use super::pg::{Fence, err};
use crate::store::StoreError;
use postgres::Client;
use std::time::Duration;

/// The writer as the lease row names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Writer {
    pub node: String,
    pub epoch: i64,
    /// Where the other nodes forward Commands to it (its `--advertise` URL).
    pub address: String,
}

/// Takes the lease if it is free or expired: `Some(epoch)` when this node is now the writer.
pub fn try_acquire(
    client: &mut Client,
    node: &str,
    address: &str,
    ttl: Duration,
) -> Result<Option<i64>, StoreError> {
    let row = client
        .query_opt(
            "UPDATE mwp_writer
             SET holder = $1, address = $2, epoch = epoch + 1,
                 expires_at = clock_timestamp() + make_interval(secs => $3)
             WHERE id = 1 AND (holder IS NULL OR expires_at <= clock_timestamp())
             RETURNING epoch",
            &[&node, &address, &ttl.as_secs_f64()],
        )
        .map_err(err)?;
    Ok(row.map(|r| r.get(0)))
}

/// Extends the lease; false when this node no longer holds it at this epoch (or it expired:
/// a writer that let it lapse steps down even if nobody took over yet).
pub fn renew(client: &mut Client, fence: &Fence) -> Result<bool, StoreError> {
    let n = client
        .execute(
            "UPDATE mwp_writer
             SET expires_at = clock_timestamp() + make_interval(secs => $3)
             WHERE id = 1 AND holder = $1 AND epoch = $2 AND expires_at > clock_timestamp()",
            &[&fence.node, &fence.epoch, &fence.ttl.as_secs_f64()],
        )
        .map_err(err)?;
    Ok(n == 1)
}

/// Gives the lease up at once (a clean shutdown): another node takes over without waiting
/// for it to expire.
pub fn release(client: &mut Client, fence: &Fence) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE mwp_writer SET expires_at = '-infinity'
             WHERE id = 1 AND holder = $1 AND epoch = $2",
            &[&fence.node, &fence.epoch],
        )
        .map_err(err)?;
    Ok(())
}

/// The current writer, if its lease has not expired.
pub fn current(client: &mut Client) -> Result<Option<Writer>, StoreError> {
    let row = client
        .query_opt(
            "SELECT holder, epoch, address FROM mwp_writer
             WHERE id = 1 AND holder IS NOT NULL AND expires_at > clock_timestamp()",
            &[],
        )
        .map_err(err)?;
    Ok(row.map(|r| Writer {
        node: r.get(0),
        epoch: r.get(1),
        address: r.get::<_, Option<String>>(2).unwrap_or_default(),
    }))
}
