#!/usr/bin/env bash
# Note [Capture file]: a run whose --out is on a full disk fails with exit
# 3 and says which file and why (No space left on device), never by SIGBUS.
# The full disk is a small tmpfs: past its size, writes and fallocate fail
# with ENOSPC and a store into a mapped page it cannot back raises SIGBUS,
# as on a full ext4 or xfs. (A file-size limit, RLIMIT_FSIZE, is not a full
# disk: it gives EFBIG and SIGXFSZ, and never a SIGBUS through a mapping.)
# The test mounts it, so it runs as root; where it cannot, it fails.
#   1 MiB: the capture's mapped first 2 MiB cannot be reserved (No space
#          left on device);
#   3 MiB: they can, and its first spilled window would leave the file
#          system less than its reserve (a twentieth of 3 MiB): stopped
#          before the disk is full.
#   disk_full_test.sh MEMPROF CONFIG WORKDIR
set -euo pipefail
memprof="$1" config="$2" work="$3"
profile="$(dirname "$memprof")/memprof-profile"
rm -rf "$work" && mkdir -p "$work/disk"
mounted=""
trap '[ -z "$mounted" ] || umount "$work/disk"' EXIT
for size in 1m 3m; do
  if ! mount -t tmpfs -o "size=$size" tmpfs "$work/disk"; then
    echo "FAIL: cannot mount a $size tmpfs at $work/disk (needs root):" \
      "no full disk to run on"
    exit 1
  fi
  mounted=1
  out="$work/disk/run"
  rc=0
  # Many small tensors a step: the first 1 MiB window fills in 100 steps.
  "$profile" profile --config "$config" --mlp.depth 12 --mlp.hidden 16 \
    --train.micro_batch 2 --steps 400 --out "$out" >"$work/log-$size" 2>&1 ||
    rc=$?
  if [ "$size" = 1m ]; then
    expected="$out/capture-0.bin: .*No space left on device"
  else
    expected="$out/capture-0.bin: stopped at 2.00 MiB: its file system has .* free, and the capture leaves it 154 KiB; free space on its file system"
  fi
  if [ "$rc" -ne 3 ] || ! grep -q "$expected" "$work/log-$size" ||
    grep -qi "bus error" "$work/log-$size"; then
    echo "FAIL: $size disk: exit $rc; expected 3 and: $expected"
    tail -5 "$work/log-$size"
    exit 1
  fi
  echo "$size disk: exit 3: $(grep -m1 "capture-0.bin" "$work/log-$size")"
  umount "$work/disk"
  mounted=""
done

# The reports rendered from whole rank reports onto a full disk: the
# message names the file and the remedy that fits (room, not permissions).
source_dir="$(cd "$(dirname "$0")/../.." && pwd)"
mount -t tmpfs -o size=132k tmpfs "$work/disk" || {
  echo "FAIL: cannot mount a tmpfs at $work/disk (needs root)"; exit 1; }
mounted=1
cp "$source_dir"/tests/data/run-mlp-tiny-ws2/rank-*.json "$work/disk/"
rc=0
"$memprof" report --run "$work/disk" >"$work/log-report" 2>&1 || rc=$?
if [ "$rc" -ne 2 ] ||
  ! grep -q "No space left on device; free space on its filesystem, then 'memprof report --run $work/disk' writes them" \
    "$work/log-report"; then
  echo "FAIL: report on a full disk: exit $rc:"; cat "$work/log-report"; exit 1
fi
echo "report on a full disk: exit 2: $(head -1 "$work/log-report")"
