#!/usr/bin/env bash
# bench/fixedcost.sh: where a small send's fixed costs go, step by step
# (docs/benchmarks.md, "Thirty-fourth session ... fixed costs"). Builds
# kerf from this tree with marks.patch applied (each step prints its time
# since the fork when KERF_MARKS is set), sets up the small-files case as
# bench/ab-small.sh does (key login, a long-running `kerf serve
# --plain-data`, the 2,000 x 16 KiB tree on tmpfs), and runs REPS [5]
# sends through runner, which prints one line a send: "ms=step ...".
# The patch is of the tree of the commit that added it; where it no
# longer applies, mend it by hand (it only adds prints).
set -euo pipefail
REPS=${REPS:-5} WORK=${WORK:-/dev/shm/kerf-fixedcost}
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$WORK"
tree=$(mktemp -d)
trap 'git -C "$here" worktree remove --force "$tree" 2>/dev/null || true; kill "${srv:-}" 2>/dev/null || true' EXIT
git -C "$here" worktree add -q --detach "$tree" HEAD
(cd "$tree" && git apply "$here/bench/fixedcost/marks.patch" && go build -o "$WORK/kerf" ./cmd/kerf)
(cd "$here" && go build -o "$WORK/runner" ./bench/fixedcost/runner)
if [ ! -d "$WORK/src/small" ]; then
	for ((i = 0; i < 2000; i++)); do
		d=$WORK/src/small/d$((i / 100)); [ -d "$d" ] || mkdir -p "$d"
		head -c 16384 /dev/urandom >"$d/f$i"
	done
fi
rm -rf "$WORK/state" "$WORK/dst" "$WORK/home"; mkdir -p "$WORK/state" "$WORK/dst" "$WORK/home"
export HOME=$WORK/home
fp=$("$WORK/kerf" key --identity "$WORK/id" 2>/dev/null)
"$WORK/kerf" user add --root "$WORK/dst" --key "$fp" --state "$WORK/state" bench >/dev/null 2>&1
"$WORK/kerf" serve --root "$WORK/dst" --listen 127.0.0.1:17690 --state "$WORK/state" --plain-data >"$WORK/serve.log" 2>&1 &
srv=$!
sleep 1
KERF_USER=bench "$WORK/kerf" -q send --identity "$WORK/id" --plain-data --accept-new-host-key "$WORK/src/small/d0/f0" 127.0.0.1:17690 2>/dev/null # pins the key
KERF_USER=bench RM="$WORK/dst/small" "$WORK/runner" "$REPS" "$WORK/kerf" -q send --identity "$WORK/id" \
	--plain-data -r "$WORK/src/small" 127.0.0.1:17690
