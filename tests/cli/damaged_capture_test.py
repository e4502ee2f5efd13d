#!/usr/bin/env python3
"""Note [Damaged capture]: a real tiny run's capture, killed once it has
spilled 3 windows, then cut short or with one 8-byte header field patched
(each field in turn, several values each). `memprof report --run` must,
within 60 s and with no file over 64 MiB (RLIMIT_FSIZE: a temporary that
grows with a damaged seq is killed by SIGXFSZ), either refuse with exit 2
naming the capture and write no rank report, or recover a prefix of the
session: its figures equal an independent replay of the intact capture's
first N records (replay_capture.py --records N), and a prefix shorter than
the whole is marked cut short, never silent.

    damaged_capture_test.py MEMPROF CONFIG WORKDIR
"""
import json
import os
import resource
import shutil
import struct
import subprocess
import sys
import time

WINDOW = 1 << 20
RECORDS_PER_WINDOW = WINDOW // 32
RING_END = 4096 + 2 * WINDOW
HERE = os.path.dirname(os.path.abspath(__file__))


def spill_offset(s):
    return RING_END + s * WINDOW


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def spilled_of(data):
    return struct.unpack("<q", data[32:40])[0]


def make_capture(memprof, config, work):
    """Runs a rank until its capture has 3 spilled windows, then SIGKILL."""
    run = os.path.join(work, "run")
    os.makedirs(run)
    profile = os.path.join(os.path.dirname(memprof), "memprof-profile")
    path = os.path.join(run, "capture-0.bin")
    with open(os.path.join(run, "log"), "w") as log:
        # Many small tensors a step: the windows fill in seconds.
        proc = subprocess.Popen(
            [profile, "profile", "--config", config, "--mlp.depth", "12",
             "--mlp.hidden", "16", "--train.micro_batch", "2", "--steps",
             "100000", "--out", run], stdout=log, stderr=subprocess.STDOUT)
    spilled = 0
    deadline = time.monotonic() + 120  # a bound on the wait, not a timing
    while spilled < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
        try:
            with open(path, "rb") as f:
                spilled = spilled_of(f.read(40).ljust(40, b"\0"))
        except OSError:
            pass
    proc.kill()
    proc.wait()
    if spilled < 3:
        fail("the run spilled %d windows in 120 s; see %s/log" % (spilled, run))
    # Killed while copying a window (before counting it): the file as a
    # kill a moment earlier leaves it (the ring still holds that window),
    # so that every cut below is a cut of counted windows.
    with open(path, "rb") as f:
        spilled = spilled_of(f.read(40))
    if os.path.getsize(path) > spill_offset(spilled):
        os.truncate(path, spill_offset(spilled))
    return path


def replay(capture, records=None):
    args = [sys.executable, os.path.join(HERE, "replay_capture.py"), capture]
    if records is not None:
        args += ["--records", str(records)]
    return json.loads(subprocess.check_output(args))


def limits():
    resource.setrlimit(resource.RLIMIT_FSIZE, (64 << 20, 64 << 20))


def report(memprof, work, name, data):
    """`memprof report --run` on a directory holding `data` as its
    capture: (exit code, stderr, rank-0.json or None)."""
    run = os.path.join(work, name)
    os.makedirs(run)
    with open(os.path.join(run, "capture-0.bin"), "wb") as f:
        f.write(data)
    try:
        done = subprocess.run([memprof, "report", "--run", run],
                              capture_output=True, text=True, timeout=60,
                              preexec_fn=limits)
    except subprocess.TimeoutExpired:
        fail(name + ": memprof report ran past 60 s")
    rank = os.path.join(run, "rank-0.json")
    doc = json.load(open(rank)) if os.path.exists(rank) else None
    return done.returncode, done.stderr, doc


def expect_prefix(name, doc, whole, original, begin_unix_us, records=None):
    """The recovered report is the intact capture's first N records; a
    part is marked cut short. Returns N."""
    post = doc["post_mortem"]
    n = post["records"]
    if records is not None and n != records:
        fail("%s: recovered %d records, expected %d" % (name, n, records))
    if n > whole["records"]:
        fail("%s: %d records, more than the intact capture's %d"
             % (name, n, whole["records"]))
    prefix = replay(original, n)
    for key, theirs in (("live_bytes", "live_bytes"), ("step", "step"),
                        ("phase", "phase")):
        if post[key] != prefix[theirs]:
            fail("%s: %s %s, the replay of the first %d records says %s"
                 % (name, key, post[key], n, prefix[theirs]))
    if n < whole["records"] and not post.get("cut_short"):
        fail("%s: %d of %d records recovered, not marked cut short"
             % (name, n, whole["records"]))
    if doc["context"]["session_start_unix_us"] != begin_unix_us:
        fail("%s: the session start %d is not the header's %d"
             % (name, doc["context"]["session_start_unix_us"], begin_unix_us))
    return n


def main(memprof, config, work):
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    original = make_capture(memprof, config, work)
    intact = open(original, "rb").read()
    spilled = spilled_of(intact)
    begin_unix_us = struct.unpack("<q", intact[24:32])[0]
    whole = replay(original)

    code, err, doc = report(memprof, work, "intact", intact)
    if code != 0 or doc is None:
        fail("intact: exit %d: %s" % (code, err))
    expect_prefix("intact", doc, whole, original, begin_unix_us,
                  whole["records"])
    print("intact: %d records, %d spilled windows" % (whole["records"], spilled))

    # Cut short: every whole record before the cut is recovered.
    cuts = [
        ("cut 32 bytes", spill_offset(spilled) - 32,
         spilled * RECORDS_PER_WINDOW - 1),
        ("cut 1 byte", spill_offset(spilled) - 1,
         spilled * RECORDS_PER_WINDOW - 1),
        ("cut a window", spill_offset(spilled - 1),
         (spilled - 1) * RECORDS_PER_WINDOW),
    ]
    for name, size, records in cuts:
        code, err, doc = report(memprof, work, name.replace(" ", "-"),
                                intact[:size])
        if code != 0 or doc is None:
            fail("%s: exit %d, no recovered report: %s" % (name, code, err))
        expect_prefix(name, doc, whole, original, begin_unix_us, records)
        print("%s: the %d records before the cut, marked cut short"
              % (name, records))

    # A rank killed between a window's copy and its count: the file holds
    # one window more than the header counts (here half of it), and the
    # ring window still holds it whole. Nothing is damaged.
    ring = 4096 + (spilled % 2) * WINDOW
    uncounted = intact[:spill_offset(spilled)] + intact[ring:ring + WINDOW // 2]
    code, err, doc = report(memprof, work, "uncounted", uncounted)
    if code != 0 or doc is None:
        fail("uncounted window: exit %d: %s" % (code, err))
    expect_prefix("uncounted window", doc, whole, original, begin_unix_us,
                  whole["records"])
    print("uncounted window: every record, as the intact capture")

    # One header field patched: a prefix, or a refusal naming the file.
    fields = [(0, "magic"), (8, "record and header sizes"),
              (16, "first seq"), (24, "session start"),
              (32, "spilled windows")]
    for offset, field in fields:
        value = struct.unpack("<q", intact[offset:offset + 8])[0]
        patches = [value ^ (1 << 62), -1, 0]
        # A start moved by a microsecond is a start: only bounds tell.
        patches += ([value + 3600 * 1000000] if offset == 24
                    else [value + 1, value - 1])
        for patched in sorted(set(patches) - {value}):
            name = "%s=%d" % (field.replace(" ", "-"), patched)
            data = bytearray(intact)
            data[offset:offset + 8] = struct.pack("<q", patched)
            code, err, doc = report(memprof, work, name, bytes(data))
            if code == 2:
                if doc is not None:
                    fail(name + ": refused, yet wrote rank-0.json")
                if "capture-0.bin" not in err:
                    fail(name + ": the refusal does not name the file: " + err)
                print("%s: refused: %s" % (name, err.strip().splitlines()[0]))
            elif code == 0 and doc is not None:
                n = expect_prefix(name, doc, whole, original, begin_unix_us)
                print("%s: %d of %d records, a prefix" % (name, n,
                                                          whole["records"]))
            else:
                fail("%s: exit %d: %s" % (name, code, err))
    print("damaged captures: every cut a prefix, every patch a prefix or a "
          "refusal")


if __name__ == "__main__":
    main(*sys.argv[1:4])
