-- What a run is, stored rather than read from its name: a sweep of configs
-- (`run`), a tune's race, a check of two builds, or one of the commands that
-- record probes rather than measure a config (diagnose, tune-batch), which
-- history leaves out. Older runs get theirs from what they were known by:
-- the names diagnose and tune-batch gave their runs, and a check's or a
-- tune's record in the stored spec.
ALTER TABLE sweeps ADD COLUMN kind TEXT NOT NULL DEFAULT 'sweep'
  CHECK (kind IN ('sweep', 'tune', 'check', 'diagnose', 'tune-batch'));
UPDATE sweeps SET kind = CASE
  WHEN name LIKE 'diagnose-%' THEN 'diagnose'
  WHEN name LIKE 'tune-batch-%' THEN 'tune-batch'
  WHEN json_type(spec_json, '$.check') IN ('object') THEN 'check'
  WHEN json_type(spec_json, '$.tune') IN ('object') THEN 'tune'
  ELSE 'sweep' END;
