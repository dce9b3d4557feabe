-- Whether a higher quality value is better (dqn's return) or worse (a loss),
-- so that comparisons can judge a quality change without the plugin.
ALTER TABLE trial_summary ADD COLUMN quality_higher_is_better INTEGER;
