-- Text columns use the "C" collation: byte order, the same order as the other backends and
-- as Rust strings, whatever the database's default collation is.

CREATE TABLE objects (
    repo TEXT COLLATE "C" NOT NULL,
    id   BYTEA NOT NULL,
    kind SMALLINT NOT NULL,
    data BYTEA NOT NULL,
    PRIMARY KEY (repo, id)
);

-- Branches (kind 0) and tags (kind 1). Rows are locked by the transactions that move them:
-- contention is per ref, never global.
CREATE TABLE refs (
    repo   TEXT COLLATE "C" NOT NULL,
    kind   SMALLINT NOT NULL,
    name   TEXT COLLATE "C" NOT NULL,
    target BYTEA NOT NULL,
    PRIMARY KEY (repo, kind, name)
);

CREATE TABLE ref_log (
    sequence  BIGSERIAL PRIMARY KEY,
    repo      TEXT COLLATE "C" NOT NULL,
    kind      SMALLINT NOT NULL,
    name      TEXT COLLATE "C" NOT NULL,
    old       BYTEA,
    new       BYTEA,
    principal TEXT NOT NULL,
    message   TEXT NOT NULL,
    time      BIGINT NOT NULL
);
CREATE INDEX ref_log_by_ref ON ref_log (repo, kind, name, sequence);
CREATE INDEX ref_log_by_time ON ref_log (repo, kind, name, time, sequence);

CREATE TABLE records (
    key     TEXT COLLATE "C" PRIMARY KEY,
    version BIGINT NOT NULL,
    value   BYTEA NOT NULL
);

CREATE TABLE audit (
    sequence      BIGINT PRIMARY KEY,
    time          BIGINT NOT NULL,
    tenant        TEXT COLLATE "C" NOT NULL,
    principal     TEXT COLLATE "C" NOT NULL,
    action        TEXT COLLATE "C" NOT NULL,
    resource_type TEXT COLLATE "C" NOT NULL,
    resource_id   TEXT COLLATE "C" NOT NULL,
    outcome       TEXT NOT NULL,
    details       BYTEA NOT NULL,
    previous      BYTEA NOT NULL,
    hash          BYTEA NOT NULL
);
CREATE INDEX audit_by_tenant ON audit (tenant, time);
CREATE INDEX audit_by_principal ON audit (principal, sequence);
CREATE INDEX audit_by_action ON audit (action, sequence);
CREATE INDEX audit_by_resource ON audit (resource_type, resource_id, sequence);
