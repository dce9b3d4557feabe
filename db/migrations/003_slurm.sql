-- Runs split into shards (`gpusweep run --shard i/n`, `gpusweep launch
-- --slurm`) and merged back (`gpusweep merge`). Documented in db/README.md.

-- The shards of one run share a run key. In a shard database the run's row
-- carries its slice (shard_index of shard_count, 1-based); in the database
-- the shards are merged into, the merged run has the key and the count but
-- no index. NULL everywhere for an ordinary, unsharded run.
ALTER TABLE sweeps ADD COLUMN run_key TEXT;
ALTER TABLE sweeps ADD COLUMN shard_index INTEGER;
ALTER TABLE sweeps ADD COLUMN shard_count INTEGER;
CREATE INDEX sweeps_by_run_key ON sweeps(run_key, shard_index);

-- The Slurm array job and task that ran a trial (SLURM_ARRAY_JOB_ID and
-- SLURM_ARRAY_TASK_ID; for a job that is not an array, SLURM_JOB_ID and NULL).
ALTER TABLE trials ADD COLUMN slurm_job_id INTEGER;
ALTER TABLE trials ADD COLUMN slurm_task_id INTEGER;

-- A run handed to a scheduler by `gpusweep launch`.
CREATE TABLE launches (
  id           INTEGER PRIMARY KEY,
  sweep_id     INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  scheduler    TEXT NOT NULL DEFAULT 'slurm',
  job_id       INTEGER,                  -- from `sbatch --parsable`; NULL until submitted
  run_dir      TEXT NOT NULL,            -- the sweep, the batch script, shards/, logs/
  tasks        INTEGER NOT NULL,         -- array tasks = shards
  submitted_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
CREATE INDEX launches_by_sweep ON launches(sweep_id);

-- The shards merged into a run: where from, and how many of the shard's
-- trials had finished at the last merge that imported something.
CREATE TABLE merged_shards (
  sweep_id        INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  shard_index     INTEGER NOT NULL,
  shard_count     INTEGER NOT NULL,
  source          TEXT NOT NULL,         -- absolute path of the shard database
  trials          INTEGER NOT NULL,      -- the shard's trials
  trials_finished INTEGER NOT NULL,      -- of which finished (not pending or interrupted)
  merged_at       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  PRIMARY KEY (sweep_id, shard_index)
);
