#!/usr/bin/env python3
"""Note [Interrupted run]: a job of one stopped by SIGINT (^C) or SIGTERM
mid-run dies by that signal and first says, on standard error, how to get
its reports; `memprof report --run DIR` then recovers them from the
capture it left, marked as a post-mortem.

    interrupted_run_test.py MEMPROF CONFIG WORKDIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time


def fail(why):
    print("FAIL: " + why)
    sys.exit(1)


def main():
    memprof, config, work = sys.argv[1:4]
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    for stop in (signal.SIGINT, signal.SIGTERM):
        out = os.path.join(work, stop.name)
        run = subprocess.Popen(
            [memprof, "profile", "--config", config, "--steps", "100000",
             "--out", out, "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        capture = os.path.join(out, "capture-0.bin")
        deadline = time.monotonic() + 60
        while not os.path.exists(capture) and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(2)  # some steps into the run
        run.send_signal(stop)
        try:
            err = run.communicate(timeout=60)[1].decode()
        except subprocess.TimeoutExpired:
            run.kill()
            fail(f"{stop.name}: the run did not stop within 60 s")
        said = (f"memprof: stopped by a signal; 'memprof report --run {out}' "
                "writes the reports from what the run recorded")
        if run.returncode != -stop or said not in err:
            fail(f"{stop.name}: exit {run.returncode}, expected "
                 f"{-stop}, and {said!r} on standard error; got {err[-400:]!r}")
        if os.path.exists(os.path.join(out, "rank-0.json")):
            fail(f"{stop.name}: a rank report was written mid-run")
        report = subprocess.run([memprof, "report", "--run", out],
                                capture_output=True, text=True, timeout=120)
        rank = os.path.join(out, "rank-0.json")
        if report.returncode != 0 or not os.path.exists(rank):
            fail(f"{stop.name}: report --run exited {report.returncode}: "
                 f"{report.stdout[-300:]}{report.stderr[-300:]}")
        with open(rank) as f:
            post_mortem = json.load(f).get("post_mortem")
        if not post_mortem or post_mortem["records"] <= 0:
            fail(f"{stop.name}: the recovered report has no post_mortem "
                 f"block: {post_mortem!r}")
        print(f"{stop.name}: exit {run.returncode}, said how; recovered "
              f"{post_mortem['records']} records, step {post_mortem['step']}")


main()
