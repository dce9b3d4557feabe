"""The script workload's Python side (gpusweep._script) on its own: the
trial's settings as the script's flags, and a script's DataLoader workers
kept still between its turns.
Usage: python_script_test.py SDK_DIR FIXTURES_DIR"""
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, sys.argv[1])
FIXTURES = sys.argv[2]
from gpusweep import _script  # noqa: E402

TABLE = [{"name": n, "default": d} for n, d in [
    ("batch_size", 8), ("precision", "fp32"), ("grad_accum", 1), ("device", "cpu"),
    ("loader_workers", 0), ("prefetch", 2), ("pin_memory", True), ("seed", 0)]]
DEFAULTS = {e["name"]: e["default"] for e in TABLE}


class Flags(unittest.TestCase):
    def argv(self, **config):
        config.setdefault("script", "/train.py")
        full = dict(DEFAULTS, **config)
        return _script.script_argv(full, DEFAULTS)

    def test_the_hf_map_gives_training_arguments_flags(self):
        argv, unmapped = self.argv(flags="hf", batch_size=16, precision="bf16", grad_accum=2,
                                   args="--output_dir out --use_cpu")
        self.assertEqual(unmapped, [])
        self.assertEqual(argv[:4], ["/train.py", "--output_dir", "out", "--use_cpu"])
        flags = " ".join(argv)
        self.assertIn("--per_device_train_batch_size 16", flags)
        self.assertIn("--bf16", flags)
        self.assertIn("--gradient_accumulation_steps 2", flags)
        # A prefetch factor only with worker processes, as DataLoader takes it.
        self.assertNotIn("--dataloader_prefetch_factor", flags)
        argv, _ = self.argv(flags="hf", loader_workers=2, prefetch=4)
        self.assertIn("--dataloader_prefetch_factor 4", " ".join(argv))

    def test_a_map_of_ones_own_and_the_scripts_own_flags(self):
        argv, unmapped = self.argv(
            flags='{"batch_size": "--batch-size", "precision": {"fp32": [], "bf16": ["--amp"]}}',
            batch_size=4, precision="bf16", **{"--optim": "sgd", "--checkpointing": True,
                                               "--compile-off": False})
        self.assertEqual(argv, ["/train.py", "--batch-size", "4", "--amp", "--optim", "sgd",
                                "--checkpointing"])
        self.assertEqual(unmapped, [])
        # A setting the sweep set that no flag carries is named.
        _, unmapped = self.argv(flags='{"batch_size": "--batch-size"}', grad_accum=4)
        self.assertEqual(unmapped, ["grad_accum"])
        with self.assertRaisesRegex(ValueError, "name a built-in map"):
            self.argv(flags="keras")
        with self.assertRaisesRegex(ValueError, "has no entry in the map's precision"):
            self.argv(flags='{"precision": {"fp32": []}}', precision="bf16")
        # A map as a JSON object, and arguments as a list.
        argv, _ = self.argv(flags={"batch_size": "--bs"}, batch_size=2, args=["--x", 3])
        self.assertEqual(argv, ["/train.py", "--x", "3", "--bs", "2"])
        with self.assertRaisesRegex(ValueError, "args: expected the script's arguments"):
            self.argv(args={"--x": 3})

    def test_a_map_is_checked_against_the_settings_before_anything_runs(self):
        settings = {"batch_size": None, "precision": ["fp32", "bf16", "fp16"],
                    "grad_accum": None, "pin_memory": ["true", "false"]}
        self.assertEqual(_script.check_flags("hf", dict(settings, **{
            n: None for n in _script.FLAG_MAPS["hf"]})), "")
        self.assertEqual(_script.check_flags({"batch_size": "--bs"}, settings), "")
        self.assertIn("the map names 'batchsize', which is not a setting of the script "
                      "workload (did you mean batch_size?)",
                      _script.check_flags({"batchsize": "--bs"}, settings))
        self.assertIn("the map's precision has an entry for 'bf61', which precision cannot be "
                      "(it takes fp32, bf16, fp16) (did you mean bf16?)",
                      _script.check_flags({"precision": {"bf61": ["--amp"]}}, settings))
        self.assertIn("the map's batch_size is 'bs', not a flag",
                      _script.check_flags({"batch_size": "bs"}, settings))
        self.assertIn("must be a flag", _script.check_flags({"grad_accum": 2}, settings))
        self.assertIn("(did you mean hf?)", _script.check_flags("hff", settings))


def state(pid):
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


class Between(unittest.TestCase):
    def test_a_scripts_loader_workers_stand_still_between_its_turns(self):
        trace = tempfile.mktemp(prefix="gpusweep_trace_")
        config = dict(DEFAULTS, script=os.path.join(FIXTURES, "loader_train.py"),
                      args="--workers 2 --trace " + trace, flags="none",
                      __defaults=DEFAULTS)
        inst = _script.Instance(config, "cpu", TABLE)
        try:
            for _ in range(3):
                inst.step()
            workers = _script.descendants(os.getpid())
            self.assertGreaterEqual(len(workers), 2)
            inst.pause()
            self.assertTrue(all(state(p) == "T" for p in workers),
                            [state(p) for p in workers])
            time.sleep(0.3)  # a write under way when they stopped lands now
            before = os.path.getsize(trace)
            time.sleep(1.0)
            self.assertEqual(os.path.getsize(trace), before,
                             "the loader's workers built samples while the trial paused")
            inst.resume()
            self.assertTrue(all(state(p) != "T" for p in workers))
            time.sleep(1.0)
            self.assertGreater(os.path.getsize(trace), before,
                               "the workers did not go on after resume")
            inst.step()
            inst.evaluate()
            self.assertTrue(inst.run.finished)
        finally:
            inst.run.resume()
            if os.path.exists(trace):
                os.remove(trace)


if __name__ == "__main__":
    unittest.main(argv=sys.argv[:1])
