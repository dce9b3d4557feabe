"""Shared harness for the PyTorch-eager reference implementations.

Same protocol idea as gpusweep: `--warmup` steps excluded, then `--blocks`
timed blocks of `--steps` steps each; each block is one throughput sample
(samples per second in the plugin's unit) and the reported figure is the
median over blocks. Prints one JSON line on stdout, with the throughput per second of
process CPU time next to the wall-clock one (see plugin_bench.cpp).
`--compile [MODE]` runs the same scripts with torch.compile.
"""
import argparse
import json
import os
import statistics
import time

import torch


def parse_args(description, steps, warmup, blocks=5):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--steps", type=int, default=steps, help="steps per timed block")
    p.add_argument("--warmup", type=int, default=warmup, help="untimed steps before the blocks")
    p.add_argument("--blocks", type=int, default=blocks, help="timed blocks (throughput samples)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads(N); 0 = torch's default")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--compile", nargs="?", const="default", default=None, metavar="MODE",
                   help="torch.compile the workload's modules in place (nn.Module.compile; "
                        "MODE: default, reduce-overhead, max-autotune, "
                        "max-autotune-no-cudagraphs); the compilation falls in the warmup, "
                        "which is then at least 3 steps, and is reported apart (first_step_s)")
    p.add_argument("--channels-last", action="store_true",
                   help="convolutional workloads (restoration): model weights and input batches "
                        "in channels-last memory format, as the plugin's channels_last=true")
    p.add_argument("--profile", type=int, default=0, metavar="N",
                   help="instead of measuring: after the warmup, print a per-op table of N steps "
                        "(legacy autograd profiler, comparable with op_profile.cpp's)")
    args = p.parse_args()
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    if args.compile:
        args.warmup = max(args.warmup, 3)
    torch.manual_seed(args.seed)
    return args


def compiled(args, *modules):
    """Compiles the modules in place when --compile was given (their state_dict
    keys stay as they were, so load_state_dict between them still works)."""
    if args.compile:
        for m in modules:
            m.compile(mode=args.compile)


def measure(name, unit, step, samples_per_step, args, setup_s=0.0):
    """Runs step() warmup + blocks*steps times; prints and returns the result."""
    t0 = time.perf_counter()
    first_step_s = None
    for i in range(args.warmup):
        step()
        if i == 0:
            first_step_s = time.perf_counter() - t0
    warmup_s = time.perf_counter() - t0
    if args.profile > 0:
        return profile(step, samples_per_step, args.profile)
    per_s, per_cpu_s = [], []
    for _ in range(args.blocks):
        t0, c0 = time.perf_counter(), time.process_time()
        for _ in range(args.steps):
            step()
        dt, dc = time.perf_counter() - t0, time.process_time() - c0
        per_s.append(samples_per_step * args.steps / dt)
        per_cpu_s.append(samples_per_step * args.steps / dc)
    med = statistics.median(per_s)
    mean = statistics.fmean(per_s)
    result = {
        "workload": name,
        "impl": "pytorch-compile" if args.compile else "pytorch-eager",
        "compile_mode": args.compile,
        "channels_last": args.channels_last,
        # The first step's time: with --compile, mostly the compilation.
        "first_step_s": first_step_s,
        "warmup_s": warmup_s,
        "unit": unit,
        "throughput_median": med,
        "throughput_cv": (statistics.stdev(per_s) / mean) if len(per_s) > 1 else 0.0,
        "step_time_median_s": samples_per_step / med,
        # Samples per second of process CPU time: a cross-check that CPU
        # contention from other jobs does not move (meaningful with 1 thread).
        "throughput_cpu_median": statistics.median(per_cpu_s),
        "blocks": per_s,
        "blocks_cpu": per_cpu_s,
        "steps_per_block": args.steps,
        "warmup": args.warmup,
        "threads": torch.get_num_threads(),
        "torch_version": torch.__version__,
        "setup_s": setup_s,
        "pid": os.getpid(),
    }
    print(json.dumps(result), flush=True)
    return result


def profile(step, samples_per_step, n, top=40):
    """Per-op self/total CPU time per step, same aggregation as op_profile.cpp."""
    t0 = time.perf_counter()
    for _ in range(n):
        step()
    plain = (time.perf_counter() - t0) / n
    with torch.autograd.profiler.profile(use_kineto=False) as prof:
        t0 = time.perf_counter()
        for _ in range(n):
            step()
        profiled = (time.perf_counter() - t0) / n
    rows = prof.key_averages()
    calls = sum(r.count for r in rows)
    print(f"step: {plain * 1e3:.2f} ms unprofiled, {profiled * 1e3:.2f} ms profiled; "
          f"{calls / n:.0f} ops/step; samples/step {samples_per_step:.0f}")
    print(f"{'op':<48} {'calls':>8} {'self ms':>12} {'total ms':>12}")
    for r in sorted(rows, key=lambda r: r.self_cpu_time_total, reverse=True)[:top]:
        print(f"{r.key[:48]:<48} {r.count / n:8.1f} {r.self_cpu_time_total / 1e3 / n:12.3f} "
              f"{r.cpu_time_total / 1e3 / n:12.3f}")
