-- Objects: immutable, content-addressed, scoped by repository. Opaque bytes.
CREATE TABLE objects (
    repo TEXT NOT NULL,
    id   BLOB NOT NULL,
    kind INTEGER NOT NULL,
    data BLOB NOT NULL,
    PRIMARY KEY (repo, id)
);

-- Branches (kind 0) and tags (kind 1).
CREATE TABLE refs (
    repo   TEXT NOT NULL,
    kind   INTEGER NOT NULL,
    name   TEXT NOT NULL,
    target BLOB NOT NULL,
    PRIMARY KEY (repo, kind, name)
) WITHOUT ROWID;

-- Every move of a ref, written in the same transaction as the move.
CREATE TABLE ref_log (
    sequence  INTEGER PRIMARY KEY AUTOINCREMENT,
    repo      TEXT NOT NULL,
    kind      INTEGER NOT NULL,
    name      TEXT NOT NULL,
    old       BLOB,
    new       BLOB,
    principal TEXT NOT NULL,
    message   TEXT NOT NULL,
    time      INTEGER NOT NULL
);
CREATE INDEX ref_log_by_ref ON ref_log (repo, kind, name, sequence);
-- "What did the ref point to at time T" is one lookup in this index.
CREATE INDEX ref_log_by_time ON ref_log (repo, kind, name, time, sequence);

CREATE TABLE records (
    key     TEXT PRIMARY KEY,
    version INTEGER NOT NULL,
    value   BLOB NOT NULL
) WITHOUT ROWID;

CREATE TABLE audit (
    sequence      INTEGER PRIMARY KEY,
    time          INTEGER NOT NULL,
    tenant        TEXT NOT NULL,
    principal     TEXT NOT NULL,
    action        TEXT NOT NULL,
    resource_type TEXT NOT NULL,
    resource_id   TEXT NOT NULL,
    outcome       TEXT NOT NULL,
    details       BLOB NOT NULL,
    previous      BLOB NOT NULL,
    hash          BLOB NOT NULL
);
CREATE INDEX audit_by_tenant ON audit (tenant, time);
CREATE INDEX audit_by_principal ON audit (principal, sequence);
CREATE INDEX audit_by_action ON audit (action, sequence);
CREATE INDEX audit_by_resource ON audit (resource_type, resource_id, sequence);
