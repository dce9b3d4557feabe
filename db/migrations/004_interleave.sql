-- Interleaved execution (measure.interleave) and the device's clock.
-- Documented in db/README.md.

-- The trials kept alive together and run block by block in turn share an
-- interleave group (one per execution of `run` or `resume`); a block's cycle
-- numbers the round of turns it ran in, within its group. Blocks of two
-- trials of one group with the same cycle ran back to back, so that drift
-- of the machine between cycles hits both alike. NULL: not interleaved.
ALTER TABLE trials ADD COLUMN interleave_group TEXT;
ALTER TABLE blocks ADD COLUMN cycle INTEGER;

-- The block's time by the device's own clock (CUDA events on the trial's
-- stream), beside the host's `seconds`; NULL on a device without one.
ALTER TABLE blocks ADD COLUMN device_seconds REAL;
