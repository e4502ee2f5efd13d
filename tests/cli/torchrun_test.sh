#!/bin/bash
# The same binary under torchrun --no-python: two ranks that torchrun
# starts, each a memprof process reading torchrun's variables, with the
# store served by torchrun's agent (TORCHELASTIC_USE_AGENT_STORE=True:
# every rank is a client, under a prefix per restart). The job must end
# with both rank reports, one summary, and model state identical to the
# byte on both ranks.
# Usage: torchrun_test.sh MEMPROF CONFIG WORKDIR TORCH_INSTALL_PREFIX
set -euo pipefail
memprof=$1 config=$2 work=$3 torch_prefix=$4
rm -rf "$work" && mkdir -p "$work"

# scripts/deps.sh installs torchrun beside the LibTorch it unpacks:
# <env>/lib/pythonX.Y/site-packages/torch is the prefix, <env>/bin the tools.
env_bin=$(cd "$torch_prefix/../../../../bin" 2>/dev/null && pwd) || env_bin=""
if [ -z "$env_bin" ] || [ ! -x "$env_bin/torchrun" ]; then
  echo "FAIL: no torchrun beside the LibTorch at $torch_prefix;" \
       "scripts/deps.sh installs it with the torch wheel"
  exit 1
fi
python=$env_bin/python
port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

code=0
timeout 120 "$env_bin/torchrun" --no-python --nproc-per-node 2 \
  --master-addr 127.0.0.1 --master-port "$port" \
  "$memprof" profile --config "$config" --out "$work/d" \
  > "$work/torchrun.log" 2>&1 || code=$?
if [ "$code" -ne 0 ]; then
  cat "$work/torchrun.log"
  echo "FAIL: torchrun exited $code"
  exit 1
fi

"$python" - "$work/d" <<'PY'
import json, sys
d = sys.argv[1]
ranks = [json.load(open(f"{d}/rank-{r}.json")) for r in (0, 1)]
summary = json.load(open(f"{d}/summary.json"))
assert len(summary["ranks"]) == 2, summary["ranks"]
for r, report in enumerate(ranks):
    assert report["context"]["rank"] == r, (r, report["context"])
    assert report["context"]["world_size"] == 2, report["context"]
for category in ("weights", "gradients", "optimizer_state", "ddp_buckets"):
    measured = [rk["categories"][category]["measured_bytes"] for rk in ranks]
    predicted = ranks[0]["categories"][category]["predicted_bytes"]
    assert measured == [predicted, predicted], (category, measured, predicted)
print("ok: two ranks under torchrun, model state to the byte on both")
PY
