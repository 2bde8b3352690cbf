-- A cluster's shared store (docs/cluster.md). Applied once, in a transaction, under an
-- advisory lock, by the first node that starts against an empty database.

-- The append-only Event log: one row per Event, in the writer's order (`position`), unique
-- per Group and sequence ('' is the Organization log: SQL NULLs are not unique). `epoch` is
-- the writer's lease epoch that appended it (audit: which writer wrote what).
CREATE TABLE mwp_events (
    position   bigint PRIMARY KEY,
    group_key  text   NOT NULL,
    sequence   bigint NOT NULL,
    kind       text   NOT NULL,
    jcs        bytea  NOT NULL,
    epoch      bigint NOT NULL,
    UNIQUE (group_key, sequence)
);

-- First-Admission Records (§6.4), keyed as the spec keys them.
CREATE TABLE mwp_admissions (
    organization_id text  NOT NULL,
    signing_hash    text  NOT NULL,
    record          bytea NOT NULL,
    position        bigint NOT NULL,
    PRIMARY KEY (organization_id, signing_hash)
);
-- A follower reads the records of each page of the log it folds (its admission index).
CREATE INDEX mwp_admissions_position ON mwp_admissions (position);

-- ACK Cursors (§16), shared by every node: a client resumes on any node.
CREATE TABLE mwp_cursors (
    principal_id text   NOT NULL,
    group_id     text   NOT NULL,
    sequence     bigint NOT NULL,
    PRIMARY KEY (principal_id, group_id)
);

-- Snapshots of the authority's state after the Event at `through` (a takeover loads the
-- latest and replays only what follows it).
CREATE TABLE mwp_snapshots (
    through    bigint PRIMARY KEY,
    events     bigint NOT NULL,
    bytes      bytea  NOT NULL,
    written_at timestamptz NOT NULL DEFAULT now()
);

-- The writer's lease: one row. A node takes it when it has expired (by the database's
-- clock), bumping `epoch`; every append checks and extends it in the same transaction.
CREATE TABLE mwp_writer (
    id         integer PRIMARY KEY CHECK (id = 1),
    holder     text,
    epoch      bigint NOT NULL,
    expires_at timestamptz NOT NULL,
    address    text
);
INSERT INTO mwp_writer (id, holder, epoch, expires_at, address)
    VALUES (1, NULL, 0, '-infinity', NULL);
