#!/usr/bin/env python3
"""The figures scripts/device-check.sh reports, read from the rank reports
it wrote: usage device_summary.py OUT RUNS."""
import json
import os
import statistics
import sys

MODEL_STATE = ("weights", "gradients", "optimizer_state", "ddp_buckets")


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: not read ({e})")
        return None


def mib(n):
    return f"{n / 2**20:.2f} MiB"


def steady_median(report):
    first = report.get("steady_first_step", 3)
    times = [s["seconds"] for s in report["steps"] if s["step"] >= first]
    return statistics.median(times) if times else float("nan")


def categories(report, title):
    print(f"## {title}")
    cats = report["categories"]
    for name, c in cats.items():
        exact = "exact" if c["peak_bytes"] == c["predicted_bytes"] else (
            f"{c['peak_bytes'] - c['predicted_bytes']:+d} B")
        print(f"  {name:16} own peak {c['peak_bytes']:>14} B  predicted "
              f"{c['predicted_bytes']:>14} B  {exact}")
    unattributed = cats.get("unattributed", {}).get("allocated_bytes")
    print(f"  unattributed allocated over the run: {unattributed} B")
    state = [n for n in MODEL_STATE
             if n in cats and cats[n]["peak_bytes"] != cats[n]["predicted_bytes"]]
    print("  model state equal to the prediction to the byte: "
          + ("yes" if not state else "NO (" + ", ".join(state) + ")"))
    run = report.get("cuda_run")
    if not run:
        print("  no cuda_run section")
        return
    failed = [c for c in run["checks"] if not c["matches"]]
    print(f"  self-checks: {len(run['checks'])}, failed {len(failed)}")
    for c in failed[:5]:
        print(f"    step {c['step']} {c['phase']}: memprof {c['memprof']} "
              f"allocator {c['allocator']}")
    peak = run["at_allocated_peak"]
    print(f"  allocated peak: memprof {peak['allocated_bytes']} B, allocator "
          f"{run['allocator_peak_allocated_bytes']} B -> "
          + ("equal" if peak["allocated_bytes"] ==
             run["allocator_peak_allocated_bytes"] else "DIFFERENT"))
    print(f"  reserved peak: memprof {run['peak_reserved_bytes']} B, allocator "
          f"{run['allocator_peak_reserved_bytes']} B")
    predicted = run["predicted_peak_reserved_bytes"]
    measured = run["allocator_peak_reserved_bytes"]
    if measured:
        print(f"  predicted reserved {mib(predicted)} vs measured "
              f"{mib(measured)}: {100.0 * (predicted - measured) / measured:+.2f}%")
    print(f"  predicted allocated at the peak "
          f"{mib(run['predicted_at_peak']['allocated_bytes'])} vs measured "
          f"{mib(peak['allocated_bytes'])}")
    print(f"  at the allocated peak: requested {mib(peak['requested_bytes'])}, "
          f"allocated {mib(peak['allocated_bytes'])}, reserved "
          f"{mib(peak['reserved_bytes'])}, inactive split "
          f"{mib(peak['inactive_split_bytes'])}")
    print(f"  categories at the peak: {mib(report['peak']['total_bytes'])}")
    print(f"  before the session (library workspaces): "
          f"{mib(run['before_session_allocated_bytes'])}")
    print(f"  trace mismatches: {run['mismatches']} {run['first_mismatch']}")
    print("  outside the allocator (device used - reserved):")
    for m in run["moments"]:
        print(f"    {m['moment']:15} used {mib(m['device_used_bytes']):>14}  "
              f"reserved {mib(m['reserved_bytes']):>14}  outside "
              f"{mib(m['outside_bytes']):>12}")
    if run.get("out_of_memory"):
        o = run["out_of_memory"]
        print(f"  allocator OOM: requested {mib(o['requested_bytes'])}, "
              f"device free {mib(o['device_free_bytes'])}, at {o['at']}")


def main():
    out, runs = sys.argv[1], sys.argv[2]
    hook = load(os.path.join(runs, "hook", "rank-0.json"))
    nohook = load(os.path.join(runs, "nohook", "rank-0.json"))
    if hook:
        categories(hook, "gpt2-small T=1024 B=4 on the GPU (rank 0)")
    if hook and nohook:
        on, off = steady_median(hook), steady_median(nohook)
        print(f"## step time, steady-state median: hook on {on * 1e3:.1f} ms, "
              f"off {off * 1e3:.1f} ms, ratio {on / off:.3f}")
    for r in (0, 1):
        gloo = load(os.path.join(runs, "gloo", f"rank-{r}.json"))
        if gloo:
            categories(gloo, f"2 ranks over Gloo on one GPU, rank {r}")
    oom = load(os.path.join(runs, "oom", "rank-0.json"))
    if oom:
        o = oom.get("out_of_memory")
        print("## --memory-limit run")
        print(f"  out_of_memory: {json.dumps(o)[:600]}")
        if oom.get("cuda_run"):
            c = oom["cuda_run"]
            print(f"  allocator limit {c['memory_limit_bytes']} B, OOM "
                  f"{json.dumps(c.get('out_of_memory'))}")


main()
