#!/usr/bin/env python3
"""memprof's measured Llama activations against an independent count.

Usage: llama_reference_test.py MEMPROF SITE_PACKAGES WORK_DIR CONFIG:DTYPE...

For each config (an INI of configs/) and dtype, runs `memprof profile` and
tests/models/llama_reference.py (plain PyTorch, what autograd saves, run
with the torch wheel's site-packages on PYTHONPATH), and compares the
activations memprof measured at their peak (rank-0.json
categories.activations.peak_bytes) with the reference's activations_bytes:
they must agree within 5%. Prints both and the difference. Exit 1 on a
disagreement, 2 on a run that fails.
"""

import json
import os
import subprocess
import sys

TOLERANCE = 0.05


def main():
    memprof, site_packages, work = sys.argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))
    failed = False
    for spec in sys.argv[4:]:
        config, dtype = spec.split(":")
        out = os.path.join(work, os.path.basename(config) + "-" + dtype)
        subprocess.run(["rm", "-rf", out], check=True)
        run = subprocess.run(
            [memprof, "profile", "--config", config, "--train.dtype", dtype,
             "--steps", "3", "--out", out, "--quiet"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if run.returncode != 0:
            print(f"{spec}: memprof profile exited {run.returncode}:\n"
                  f"{run.stderr}")
            sys.exit(2)
        with open(os.path.join(out, "rank-0.json")) as f:
            measured = json.load(f)["categories"]["activations"]["peak_bytes"]
        env = dict(os.environ, PYTHONPATH=site_packages)
        ref = subprocess.run(
            [sys.executable, os.path.join(here, "llama_reference.py"), config,
             "--dtype", dtype], env=env, capture_output=True, text=True)
        if ref.returncode != 0:
            print(f"{spec}: the reference exited {ref.returncode}:\n"
                  f"{ref.stderr}")
            sys.exit(2)
        reference = json.loads(ref.stdout)["activations_bytes"]
        diff = measured - reference
        share = diff / reference
        ok = abs(share) <= TOLERANCE
        failed |= not ok
        print(f"{os.path.basename(config)} {dtype}: memprof {measured:,} B, "
              f"autograd saved {reference:,} B, difference {diff:+,} B "
              f"({share:+.3%}) {'ok' if ok else 'OVER 5%'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
