#!/usr/bin/env bash
# Proves the README's quick start on a fresh Debian 12 with nothing else
# (no CUDA toolkit, no GPU): debootstraps bookworm (minbase) into a
# temporary folder, copies in what a user's own machine would have (this
# machine's apt sources, and pip's certificate bundle as PIP_CERT), clones
# the repository's committed HEAD, and runs the README's two commands,
# scripts/run.sh then scripts/test.sh, inside a chroot, timing each.
# Everything comes from Debian's archive and PyPI. Not part of CI: it
# downloads about 3.5 GB and builds everything from scratch.
# Usage (as root): scripts/fresh-debian-check.sh [EXTRA ARGS FOR scripts/test.sh]
# MEMPROF_CHECK_KEEP=1 keeps the folder (printed) instead of removing it.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

if [ "$(id -u)" -ne 0 ]; then
  echo "fresh-debian-check: needs root (debootstrap, chroot, mount)" >&2
  exit 2
fi
if ! command -v debootstrap >/dev/null; then
  echo "fresh-debian-check: needs debootstrap: apt-get install debootstrap" >&2
  exit 2
fi
if [ -n "$(git -C "$repo" status --porcelain --untracked-files=no)" ]; then
  echo "fresh-debian-check: note: uncommitted changes are not checked" \
    "(the root gets the committed HEAD, $(git -C "$repo" rev-parse --short=12 HEAD))" >&2
fi

work="$(mktemp -d /tmp/memprof-fresh.XXXXXX)"
root="$work/root"
cleanup() {
  if [ "${MEMPROF_CHECK_KEEP:-0}" = 1 ]; then
    echo "fresh-debian-check: kept $work" >&2
  else
    # The mounts lived in a private mount namespace and are gone; do not
    # cross into any that is not.
    rm -rf --one-file-system "$work"
  fi
}
trap cleanup EXIT

seconds() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { s = b - a; printf "%dm %04.1fs", s / 60, s % 60 }'; }

# The archive this machine's own apt sources name (the first URIs line).
mirror="$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/*.sources)"
[ -n "$mirror" ] || { echo "fresh-debian-check: no URIs line in /etc/apt/sources.list.d/*.sources" >&2; exit 2; }
echo "== debootstrap bookworm (minbase) into $root"
t0="$(seconds)"
debootstrap --variant=minbase bookworm "$root" "$mirror" \
  > "$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log"; exit 3; }
t1="$(seconds)"

# What a user's machine has: its apt sources, its certificate bundle for
# pip (a proxy that re-signs TLS needs it), a resolver, and its hosts file,
# naming localhost and the machine's own name (the root shares it; an
# installed Debian has one, debootstrap writes none, and torchrun's workers
# reach its rendezvous store by the machine's name).
rm -f "$root/etc/apt/sources.list"
cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/"
if [ -n "${PIP_CERT:-}" ]; then
  mkdir -p "$root/etc/ssl"
  cp "$PIP_CERT" "$root/etc/ssl/pip-cert.pem"
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
cp /etc/hosts "$root/etc/hosts"
git clone --quiet "$repo" "$root/root/memprof"
head="$(git -C "$root/root/memprof" log -1 --format='%h %s' | cut -c1-100)"
echo "== cloned HEAD: $head"
echo "== in the root: /usr/local/cuda $( [ -e "$root/usr/local/cuda" ] && echo present || echo absent)," \
  "nvcc $(chroot "$root" sh -c 'command -v nvcc || echo absent')"

# The two commands, each timed, in a private mount namespace whose mounts
# (proc, sys, dev, a fresh /dev/shm) vanish with it.
cat > "$root/root/readme-commands.sh" <<'EOF'
set -uo pipefail
cd /root/memprof
TIMEFORMAT='%0R'
echo "== scripts/run.sh"
{ time scripts/run.sh; } 2> >(tee /root/run.err >&2)
echo "run.sh exit $?" > /root/run.rc
echo "== scripts/test.sh $*"
{ time scripts/test.sh "$@"; } 2> >(tee /root/test.err >&2)
echo "test.sh exit $?" > /root/test.rc
echo "== MEMPROF_CMAKE_ARGS=-DMEMPROF_CUDA=ON scripts/run.sh, no build/ yet (must stop before CMake)"
mv build build.kept
MEMPROF_CMAKE_ARGS=-DMEMPROF_CUDA=ON scripts/run.sh
echo "exit $?"
rm -rf build && mv build.kept build
EOF
env_vars=(-i HOME=/root LANG=C.UTF-8 TERM=dumb
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
[ -n "${PIP_CERT:-}" ] && env_vars+=(PIP_CERT=/etc/ssl/pip-cert.pem)
t2="$(seconds)"
unshare --mount --propagation private bash -c '
  set -e
  root=$1; shift
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  mount --bind /dev "$root/dev"
  mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
  exec chroot "$root" /usr/bin/env "$@"
' _ "$root" "${env_vars[@]}" bash /root/readme-commands.sh "$@" 2>&1 |
  tee "$work/commands.log"
t3="$(seconds)"

# bash's `time` (TIMEFORMAT %0R) leaves the seconds as the last stderr line.
run_s="$(tail -1 "$root/root/run.err" 2>/dev/null || echo '?')"
test_s="$(tail -1 "$root/root/test.err" 2>/dev/null || echo '?')"
echo
echo "== summary (fresh Debian 12 root, no CUDA toolkit, no GPU; HEAD $head)"
echo "debootstrap:      $(elapsed "$t0" "$t1")"
echo "scripts/run.sh:   ${run_s} s, $(cat "$root/root/run.rc" 2>/dev/null || echo 'did not finish')"
echo "scripts/test.sh:  ${test_s} s, $(cat "$root/root/test.rc" 2>/dev/null || echo 'did not finish')"
echo "both, wall:       $(elapsed "$t2" "$t3")"
echo "ctest:            $(grep -E 'tests passed|tests failed' "$work/commands.log" | tail -1)"
echo "LibTorch found:   $(grep -m1 -- '-- memprof: LibTorch' "$work/commands.log" | sed 's/^-- //')"
echo ".deps on disk:    $(du -sh "$root/root/memprof/.deps" 2>/dev/null | cut -f1)"
echo "CUDA wheels:      $(ls "$root"/root/memprof/.deps/torch-*/lib/python3*/site-packages | grep -c '^nvidia_.*dist-info$') nvidia-* wheels"
grep -q 'exit 0' "$root/root/run.rc" 2>/dev/null && grep -q 'exit 0' "$root/root/test.rc" 2>/dev/null
