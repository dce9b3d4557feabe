-- The plugin build that ran each trial. trials.plugin_hash is the plugin
-- file's hash when the run was planned; run_plugin_hash is the hash of the
-- file the trial's worker loaded, written when the trial finishes. They
-- differ only where `resume` or `merge` was told --allow-plugin-change: the
-- record, per trial, that a run mixes plugin builds. NULL: the trial has not
-- run, or ran before this column existed. Documented in db/README.md.
ALTER TABLE trials ADD COLUMN run_plugin_hash TEXT;
