#!/usr/bin/env python3
"""An independent replay of a memprof capture file (Note [Capture file]).

Reads capture-<r>.bin record by record (the spilled windows, then the
ring window after them), written from the format's description alone (no
memprof code), and prints as JSON the bytes live by
category after the last committed record, the step and phase in force,
the number of committed records, whether a torn record followed them,
and each step's seconds (its first mark to the next step's first mark, or
to the last record's time);
with --records N, after the first N records only (a prefix of the
session: what a capture cut short after N records must give).
Blocks still pending at the end: activations when the last mark is a
forward and they were allocated since it, unattributed otherwise (Note
[Killed capture]); freed pending blocks were temporaries.

    replay_capture.py CAPTURE [--records N]
"""
import json
import struct
import sys

CATEGORIES = ["weights", "gradients", "optimizer_state", "weight_casts",
              "activations", "ddp_buckets", "inputs", "temporaries",
              "unattributed"]
PENDING = 9
PHASES = ["idle", "model_init", "ddp_init", "inputs", "forward", "backward",
          "optimizer", "zero_grad", "audit"]
ALLOC, FREE, RESOLVE, PENDING_SINCE, MARK, REFUSAL, END = range(1, 8)
SCOPE_NAME, SCOPE_ENTER, SCOPE_EXIT = range(8, 11)  # no effect on bytes
M56 = (1 << 56) - 1
M64 = (1 << 64) - 1


def check(kind, seq, a, b):
    fold = (seq ^ a ^ (b >> 8) ^ ((b << 8) & M64)) & M56
    return (kind << 56) | fold


def records(data):
    """The committed records in order: the spilled 1 MiB windows the
    header counts, then the ring window after them; each up to its first
    zero record. Yields (seq, a, b, kind), then ("torn", bool, 0, 0)."""
    window = 1 << 20
    spilled = struct.unpack("<q", data[32:40])[0]
    starts = [4096 + 2 * window + s * window for s in range(spilled)]
    starts.append(4096 + (spilled % 2) * window)
    for start in starts:
        for offset in range(start, start + window, 32):
            raw = data[offset:offset + 32]
            if len(raw) < 32:
                yield "torn", len(raw) > 0, 0, 0
                return
            seq, a, b, chk = struct.unpack("<QQQQ", raw)
            kind = chk >> 56
            if ALLOC <= kind <= SCOPE_EXIT and chk == check(kind, seq, a, b):
                yield seq, a, b, kind
                continue
            if any(raw):
                yield "torn", True, 0, 0
                return
            break  # zeros: the rest of this window was never written
    yield "torn", False, 0, 0


def main(path, limit=None):
    data = open(path, "rb").read()
    assert data[:8] in (b"MPCAPT02", b"MPCAPT03"), "not a capture"
    live = {}  # address -> [alloc seq, bytes, category]
    step, phase, forward_seq = 0, 0, -1
    count, torn, ended = 0, False, False
    step_begin_ns, end_ns = [], 0  # each step's first mark; the last time
    for seq, a, b, kind in records(data):
        if seq == "torn":
            torn = a
            break
        if count == limit:
            break
        count += 1
        category = (b >> 48) & 0xFF
        if kind == ALLOC:
            live[a] = [seq, b & ((1 << 48) - 1), PENDING]
        elif kind == FREE:
            del live[a]
        elif kind == RESOLVE:
            if a in live:
                live[a][2] = category
        elif kind == PENDING_SINCE:
            for block in live.values():
                if block[2] == PENDING and block[0] >= a:
                    block[2] = b
        elif kind == MARK:
            phase, step = a & 0xFF, a >> 8
            if phase == PHASES.index("forward"):
                forward_seq = seq
            if step > len(step_begin_ns):
                step_begin_ns += [b] * (step - len(step_begin_ns))
            end_ns = b
        elif kind == END:
            ended = True
            end_ns = b
    live_bytes = dict.fromkeys(CATEGORIES, 0)
    for alloc_seq, size, category in live.values():
        if category == PENDING:
            forward = not ended and phase == PHASES.index("forward")
            category = (CATEGORIES.index("activations")
                        if forward and alloc_seq >= forward_seq
                        else CATEGORIES.index("unattributed"))
        live_bytes[CATEGORIES[category]] += size
    ends = step_begin_ns[1:] + [end_ns]
    step_seconds = [(e - b) * 1e-9 for b, e in zip(step_begin_ns, ends)]
    json.dump({"live_bytes": live_bytes, "step": step, "phase": PHASES[phase],
               "records": count, "torn": torn, "ended": ended,
               "step_seconds": step_seconds},
              sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1],
         int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[2] == "--records"
         else None)
