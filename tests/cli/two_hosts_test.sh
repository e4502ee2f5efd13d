#!/bin/bash
# Across machines, for real: two network namespaces with their own host
# names, joined by a veth pair (10.213.0.1 and 10.213.0.2; nothing outside
# them is contacted), one rank in each, MASTER_ADDR the first one's
# address: the path a multi-node torchrun or srun job takes. Rank 0 must
# serve the store on an interface rank 1 can reach, and each rank's Gloo
# device must listen on the address that faces the other (Note [Gloo
# address]; neither host name resolves).
# Usage: two_hosts_test.sh MEMPROF CONFIG WORKDIR
set -euo pipefail
memprof=$1 config=$2 work=$3
rm -rf "$work" && mkdir -p "$work"

# Root may unshare directly; anyone else through a user namespace.
unshare_net=(unshare --net --uts)
if ! "${unshare_net[@]}" true 2>/dev/null; then
  unshare_net=(unshare --user --map-root-user --net --uts)
  if ! "${unshare_net[@]}" true 2>/dev/null; then
    echo "SKIP: this machine cannot make network namespaces (unshare --net" \
         "and unshare --user --net both refused); the two-host test needs them"
    exit 77
  fi
fi
command -v ip >/dev/null || { echo "FAIL: ip (iproute2) is not installed"; exit 1; }

export memprof config work
"${unshare_net[@]}" --fork bash -euo pipefail -c '
  hostname host-a
  ip link set lo up
  ip link add mp-a type veth peer name mp-b
  ip addr add 10.213.0.1/24 dev mp-a
  ip link set mp-a up
  common="WORLD_SIZE=2 MASTER_ADDR=10.213.0.1 MASTER_PORT=29517"
  # Host B: a namespace of its own, which gets the far end of the pair.
  unshare --net --uts bash -euo pipefail -c "
    hostname host-b
    touch $work/b-ready
    until ip link show mp-b >/dev/null 2>&1; do sleep 0.05; done
    ip link set lo up
    ip addr add 10.213.0.2/24 dev mp-b
    ip link set mp-b up
    env RANK=1 $common $memprof profile --config $config --out $work/b
  " >"$work/b.log" 2>&1 &
  b=$!
  until [ -e "$work/b-ready" ]; do sleep 0.05; done
  ip link set mp-b netns "$b"
  set +e
  env RANK=0 $common "$memprof" profile --config "$config" --out "$work/a" \
    >"$work/a.log" 2>&1
  a_code=$?
  wait "$b"
  b_code=$?
  echo "$a_code $b_code" >"$work/codes"
'
read -r a_code b_code <"$work/codes"
status=0
fail() { echo "FAIL: $*"; status=1; }
[ "$a_code" = 0 ] || fail "rank 0 (host-a) exited $a_code"
[ "$b_code" = 0 ] || fail "rank 1 (host-b) exited $b_code"
if [ "$status" = 0 ]; then
  python3 - "$work" <<'PY' || status=1
import json, sys
work = sys.argv[1]
summary = json.load(open(f"{work}/a/summary.json"))
assert len(summary["ranks"]) == 2, summary["ranks"]
hosts = [json.load(open(f"{work}/{d}/rank-{r}.json"))["context"]["hostname"]
         for d, r in (("a", 0), ("b", 1))]
assert hosts == ["host-a", "host-b"], hosts
weights = summary["categories"]["weights"]["measured_bytes"]
assert len(set(weights)) == 1, weights
print(f"two hosts {hosts}: summary of 2 ranks, weights {weights}")
PY
fi
if [ "$status" != 0 ]; then
  echo "--- host-a (rank 0) ---"; cat "$work/a.log"
  echo "--- host-b (rank 1) ---"; cat "$work/b.log"
fi
exit "$status"
