-- gpusweep results database, version 1. Documented in db/README.md.

CREATE TABLE sweeps (
  id          INTEGER PRIMARY KEY,
  name        TEXT NOT NULL,
  workload    TEXT NOT NULL,
  file_path   TEXT,                      -- the sweep file as given, NULL for generated sweeps
  file_hash   TEXT,                      -- FNV-1a 64 of the file's bytes
  spec_json   TEXT NOT NULL,             -- the sweep after --set overrides
  spec_hash   TEXT NOT NULL,             -- what --resume checks
  status      TEXT NOT NULL DEFAULT 'running'
              CHECK (status IN ('running', 'finished', 'interrupted')),
  created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
  finished_at TEXT
);
CREATE INDEX sweeps_by_name ON sweeps(name, id);

CREATE TABLE environments (
  id               INTEGER PRIMARY KEY,
  fingerprint      TEXT NOT NULL UNIQUE,
  hostname         TEXT,
  os               TEXT,
  cpu_model        TEXT,
  cpu_cores        INTEGER,
  torch_version    TEXT,
  blas             TEXT,
  threads          INTEGER,
  cuda_available   INTEGER,
  gpus             TEXT,                 -- JSON array of devices
  gpusweep_version TEXT,
  git_commit       TEXT,
  details_json     TEXT NOT NULL,        -- everything above and more, as collected
  first_seen       TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);

CREATE TABLE trials (
  id             INTEGER PRIMARY KEY,
  sweep_id       INTEGER NOT NULL REFERENCES sweeps(id) ON DELETE CASCADE,
  ordinal        INTEGER NOT NULL,       -- position in the (shuffled) run order
  config_index   INTEGER NOT NULL,       -- which grid point, 0-based
  repeat         INTEGER NOT NULL,       -- 0-based repeat of that grid point
  workload       TEXT NOT NULL,
  plugin_version TEXT NOT NULL,
  plugin_path    TEXT,
  plugin_hash    TEXT,
  abi_version    TEXT,
  config_json    TEXT NOT NULL,          -- the resolved config the plugin received
  config_hash    TEXT NOT NULL,          -- hash of (workload, plugin version, config)
  status         TEXT NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending', 'ok', 'failed', 'oom', 'timeout',
                                   'crashed', 'skipped', 'interrupted')),
  error          TEXT,                   -- reason for any status but ok
  exit_code      INTEGER,
  signal         INTEGER,
  stderr_tail    TEXT,                   -- last bytes of the worker's stderr
  stderr_bytes   INTEGER,                -- total stderr size before truncation
  environment_id INTEGER REFERENCES environments(id),
  started_at     TEXT,
  finished_at    TEXT,
  wall_s         REAL,                   -- whole worker lifetime
  UNIQUE (sweep_id, config_hash, repeat)
);
CREATE INDEX trials_by_status ON trials(sweep_id, status);

CREATE TABLE trial_summary (
  trial_id                    INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
  unit                        TEXT NOT NULL,
  secondary_unit              TEXT,
  warmup_steps                INTEGER NOT NULL,
  steps_per_block             INTEGER NOT NULL,
  blocks                      INTEGER NOT NULL,
  samples_per_step            REAL,
  throughput_median           REAL,      -- samples/s over block samples
  throughput_mean             REAL,
  throughput_min              REAL,
  throughput_max              REAL,
  throughput_iqr              REAL,
  throughput_cv               REAL,      -- stddev / mean of block throughput
  secondary_throughput_median REAL,
  step_time_median_s          REAL,
  step_time_min_s             REAL,
  step_time_max_s             REAL,
  peak_memory_bytes           REAL,
  input_wait_fraction         REAL,
  setup_s                     REAL,
  evaluate_s                  REAL,
  quality_metric              TEXT,
  quality                     REAL,
  quality_reference           REAL
);

CREATE TABLE blocks (
  trial_id          INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  idx               INTEGER NOT NULL,
  steps             INTEGER NOT NULL,
  seconds           REAL NOT NULL,
  samples           REAL NOT NULL,
  secondary_samples REAL,
  PRIMARY KEY (trial_id, idx)
) WITHOUT ROWID;

-- Evaluations during and after measurement (kind 'eval', at_step = steps
-- done) and the plugin's own statistics (kind 'stat').
CREATE TABLE metrics (
  trial_id INTEGER NOT NULL REFERENCES trials(id) ON DELETE CASCADE,
  kind     TEXT NOT NULL CHECK (kind IN ('eval', 'stat')),
  at_step  INTEGER NOT NULL,
  name     TEXT NOT NULL,
  value    REAL,
  PRIMARY KEY (trial_id, kind, at_step, name)
) WITHOUT ROWID;

-- One row per trial with its sweep and summary: the view most queries want.
CREATE VIEW trial_results AS
SELECT s.name AS sweep, s.id AS sweep_id, t.id AS trial_id, t.workload, t.config_index,
       t.repeat, t.status, t.error, t.config_json, t.config_hash,
       m.unit, m.throughput_median, m.throughput_cv, m.step_time_median_s,
       m.peak_memory_bytes, m.quality_metric, m.quality, m.quality_reference,
       t.environment_id, t.started_at, t.finished_at
FROM trials t
JOIN sweeps s ON s.id = t.sweep_id
LEFT JOIN trial_summary m ON m.trial_id = t.id;
