-- A repository's ref log in sequence order: the change events' feed.
CREATE INDEX ref_log_by_repo ON ref_log (repo, sequence);
