-- Each trial's blocks packed in one row, for the commands that read every
-- block of a run (compare, report, best, serve's panels): at 100,000 trials
-- of 100 blocks, reading 10M block rows took seconds where these rows take
-- a fraction of one. Written with the blocks, in the trial's transaction;
-- rows for the blocks of older databases are filled in by the migration
-- itself (db/src/series.cpp). The blocks table stays the record: these rows
-- are derived from it, and read back to the same numbers.
--   throughput: samples / seconds of every block with seconds > 0, in idx
--               order, as little-endian IEEE 754 doubles
--   cycles:     each of those blocks' cycle as a little-endian int64
--               (-9223372036854775808: none), or NULL when none has one
CREATE TABLE block_series (
  trial_id   INTEGER PRIMARY KEY REFERENCES trials(id) ON DELETE CASCADE,
  blocks     INTEGER NOT NULL,
  throughput BLOB NOT NULL,
  cycles     BLOB
);

-- A run's trials in plan order without sorting them (Store::trials reads
-- every trial of a run ORDER BY ordinal: 100,000 rows went through a
-- temporary b-tree).
CREATE INDEX trials_by_ordinal ON trials(sweep_id, ordinal);
