#!/usr/bin/env bash
# Note [Post-mortem]: a rank killed with SIGKILL at a random moment
# (20 times, seeded) gets its report recovered by `memprof report --run`,
# and the recovered breakdown at the last recorded event equals, to the
# byte, what an independent replay of the capture file gives
# (replay_capture.py); a torn final record (a record cut short, a record
# without its commit) is dropped, never misread.
#   post_mortem_test.sh MEMPROF CONFIG WORKDIR [RUNS] [SEED]
set -euo pipefail
memprof="$1" config="$2" work="$3" runs="${4:-20}" seed="${5:-21}"
here="$(cd "$(dirname "$0")" && pwd)"
profile="$(dirname "$memprof")/memprof-profile"
rm -rf "$work" && mkdir -p "$work"
# The kill moments, in ms after the capture file appears.
delays=$(python3 -c "import random; r = random.Random($seed); print(' '.join(str(r.randint(0, 1500)) for _ in range($runs)))")
compare() {  # DIR: the recovered report against the replay of its capture
  python3 - "$1/rank-0.json" "$1/replay.json" <<'PY'
import json, sys
rank = json.load(open(sys.argv[1]))
replay = json.load(open(sys.argv[2]))
post = rank["post_mortem"]
problems = []
if post["live_bytes"] != replay["live_bytes"]:
    problems.append(f"live bytes {post['live_bytes']} != {replay['live_bytes']}")
ends = {c: v["end_bytes"] for c, v in rank["categories"].items()}
if ends != replay["live_bytes"]:
    problems.append(f"categories.end_bytes {ends} != {replay['live_bytes']}")
for key, theirs in (("step", "step"), ("phase", "phase"), ("records", "records")):
    if post[key] != replay[theirs]:
        problems.append(f"{key} {post[key]} != {replay[theirs]}")
if post["torn_record_dropped"] != replay["torn"]:
    problems.append("torn flag differs")
# The step the kill cut short is out of the steady state when a whole
# step is in it: its pending blocks (unattributed at the kill) are then in
# no steady-state figure.
steady = any(s["steady_state"] for s in rank["steps"])
if steady and rank["categories"]["unattributed"]["peak_bytes"] != 0:
    problems.append("the cut step's unattributed bytes in the steady state")
seconds = [s["seconds"] for s in rank["steps"]]
if len(seconds) != len(replay["step_seconds"]) or any(
        abs(a - b) > 1e-6 for a, b in zip(seconds, replay["step_seconds"])):
    problems.append(f"step seconds {seconds[:4]}... != "
                    f"{replay['step_seconds'][:4]}...")
if sum(replay["live_bytes"].values()) <= 0:
    problems.append("nothing live at the kill")
print("; ".join(problems) or "same")
sys.exit(1 if problems else 0)
PY
}
n=0
for delay in $delays; do
  n=$((n + 1))
  dir="$work/run-$n"
  mkdir -p "$dir"
  "$profile" profile --config "$config" --steps 100000 --out "$dir" \
    >"$dir/log" 2>&1 &
  pid=$!
  for _ in $(seq 600); do  # the session has begun when its capture exists
    [ -s "$dir/capture-0.bin" ] && break
    sleep 0.05
  done
  sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
  kill -9 "$pid"
  wait "$pid" 2>/dev/null || true
  [ -f "$dir/capture-0.bin" ] || { echo "run $n: no capture"; exit 1; }
  "$memprof" report --run "$dir" >"$dir/report.log" 2>&1 ||
    { echo "run $n: memprof report failed"; cat "$dir/report.log"; exit 1; }
  python3 "$here/replay_capture.py" "$dir/capture-0.bin" >"$dir/replay.json"
  if ! result=$(compare "$dir"); then
    echo "run $n (killed ${delay} ms in): $result"; exit 1
  fi
  grep -q "stopped without its report (killed, or failed: the capture cannot tell which), recovered from the capture" "$dir/report.md" ||
    { echo "run $n: report.md does not mark the rank killed"; exit 1; }
  grep -Eq "stopped (in|before) step [0-9]+ \(killed or failed\)" "$dir/report.md" ||
    { echo "run $n: report.md's steps line names a cause it cannot know"; exit 1; }
  echo "run $n: killed ${delay} ms in: $(python3 -c "import json; p = json.load(open('$dir/rank-0.json'))['post_mortem']; print(p['records'], 'records, step', p['step'], p['phase'])"): same as the replay"
done

# Torn final records: the last run's capture with a record cut short, and
# with a whole record whose commit word is missing.
last="$work/run-$runs"
for torn in cut uncommitted; do
  dir="$work/torn-$torn"
  mkdir -p "$dir"
  cp "$last/capture-0.bin" "$dir/"
  python3 - "$dir/capture-0.bin" "$torn" <<'PY'
import struct, sys
path, how = sys.argv[1], sys.argv[2]
data = bytearray(open(path, "rb").read())
# The next record's place: the first zero record of the ring window after
# the spilled ones (Note [Capture file]).
window = 1 << 20
spilled = struct.unpack("<q", data[32:40])[0]
at = 4096 + (spilled % 2) * window
while any(data[at:at + 32]):
    at += 32
seq = struct.unpack("<Q", data[at - 32:at - 24])[0] + 1 if at % window else 1
# A real alloc record's payload (seq one past the last, a fresh address)
# there: cut short (its last words never written), or whole but without
# its commit word.
payload = struct.pack("<QQQ", seq, 0xDEAD000, 64 | (9 << 48))
data[at:at + (20 if how == "cut" else 24)] = payload[:20 if how == "cut" else 24]
open(path, "wb").write(bytes(data))
PY
  "$memprof" report --run "$dir" >"$dir/report.log" 2>&1 ||
    { echo "torn $torn: memprof report failed"; cat "$dir/report.log"; exit 1; }
  python3 "$here/replay_capture.py" "$dir/capture-0.bin" >"$dir/replay.json"
  compare "$dir" >/dev/null || { echo "torn $torn: $(compare "$dir")"; exit 1; }
  python3 - "$dir/rank-0.json" "$last/rank-0.json" <<'PY' ||
import json, sys
torn, whole = (json.load(open(p))["post_mortem"] for p in sys.argv[1:])
assert torn["torn_record_dropped"], "the torn record was not reported"
assert torn["live_bytes"] == whole["live_bytes"], "the torn record was read"
assert torn["records"] == whole["records"], "the torn record was counted"
PY
    { echo "torn $torn: misread"; exit 1; }
  echo "torn $torn: dropped; the figures are the untorn capture's"
done

# A rank killed after its last step: its last mark is the audit's (step 0).
# That step is complete, and the report says the rank was past it.
dir="$work/after-last-step"
mkdir -p "$dir"
cp "$last/capture-0.bin" "$dir/"
python3 - "$dir/capture-0.bin" "$here" <<'PY'
import struct, sys
sys.path.insert(0, sys.argv[2])
from replay_capture import MARK, PHASES, check, records
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
window = 1 << 20
spilled = struct.unpack("<q", data[32:40])[0]
at = 4096 + (spilled % 2) * window
while any(data[at:at + 32]):
    at += 32
last = [r for r in records(bytes(data)) if r[0] != "torn"]
seq, _, _, kind = last[-1]
marks = [r for r in last if r[3] == MARK]
seq += 1 if kind in (1, 2, 6) else 0  # alloc, free, refusal take a seq
a, b = PHASES.index("audit"), marks[-1][2] + 1000
data[at:at + 32] = struct.pack("<QQQQ", seq, a, b, check(MARK, seq, a, b))
open(path, "wb").write(bytes(data))
PY
"$memprof" report --run "$dir" >"$dir/report.log" 2>&1 ||
  { echo "after the last step: memprof report failed"; cat "$dir/report.log"; exit 1; }
python3 - "$dir/rank-0.json" "$dir/report.md" <<'PY' ||
import json, sys
rank = json.load(open(sys.argv[1]))
last = rank["steps"][-1]
assert last["completed"], "the last step is marked incomplete"
assert rank["post_mortem"]["phase"] == "audit", rank["post_mortem"]
moment = "after step %d, audit" % last["step"]
assert moment in open(sys.argv[2]).read(), "report.md does not say " + moment
PY
  { echo "after the last step: misread"; exit 1; }
echo "after the last step: every step complete, the rank past the last"
echo "post-mortem: $runs kills and 2 torn records, every breakdown exact"
