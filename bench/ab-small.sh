#!/usr/bin/env bash
# A/B of kerf configurations on the small-files case: one long-running
# `kerf serve --plain-data` per configuration, then REPS rounds in which
# every configuration sends the 2,000 x 16 KiB tree once (alternating, so
# a slow spell of the machine touches all alike); prints each one's
# median, quartiles and best, seconds from the client's start to its exit,
# and its server's CPU (utime+stime) per send on average.
#
#   bench/ab-small.sh "A=1" "S_GOMAXPROCS=1" "BIN=/tmp/kerf-old"
#
# Each argument is one configuration: space-separated VAR=VALUE. BIN=PATH
# picks the binary (default: built from this tree; it serves too);
# FLAGS=A,B adds the flags A B to the client's send (e.g.
# FLAGS=--sessions=1,--resume); S_NAME=V sets NAME=V for the server only,
# C_NAME=V for the client only, anything else for both. Environment:
# REPS [15], N [2000] files of SIZE [16384] bytes, PER_DIR [100] files
# in each directory, DIR_MODE [0755] of the directories, WORK
# [/dev/shm/kerf-ab], KEEP [0] (1: the copy is left in place between
# rounds, so that sends with --resume measure a rerun that finds every
# file there). Needs only kerf itself (key login, loopback).
set -euo pipefail
REPS=${REPS:-15} N=${N:-2000} SIZE=${SIZE:-16384} PER_DIR=${PER_DIR:-100} DIR_MODE=${DIR_MODE:-0755}
WORK=${WORK:-/dev/shm/kerf-ab}
[ $# -gt 0 ] || { sed -n '2,19p' "$0"; exit 2; }
here=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$WORK"
DEFAULT_BIN=$WORK/kerf
(cd "$here" && go build -o "$DEFAULT_BIN" ./cmd/kerf)
# The tree is made again when its shape changes.
shape="$N $SIZE $PER_DIR $DIR_MODE"
if [ ! -d "$WORK/src/small" ] || [ "$(cat "$WORK/src/shape" 2>/dev/null)" != "$shape" ]; then
	rm -rf "$WORK/src"
	for ((i = 0; i < N; i++)); do
		d=$WORK/src/small/d$((i / PER_DIR)); [ -d "$d" ] || mkdir -p "$d"
		head -c "$SIZE" /dev/urandom >"$d/f$i"
	done
	find "$WORK/src/small" -type d -exec chmod "$DIR_MODE" {} +
	echo "$shape" >"$WORK/src/shape"
fi
rm -rf "$WORK/state" "$WORK/dst" "$WORK/home"; mkdir -p "$WORK/state" "$WORK/dst" "$WORK/home"
export HOME=$WORK/home
fp=$("$DEFAULT_BIN" key --identity "$WORK/id" 2>/dev/null)
"$DEFAULT_BIN" user add --root "$WORK/dst" --key "$fp" --state "$WORK/state" bench >/dev/null 2>&1

# split CFG ROLE: the env assignments of configuration CFG for ROLE
# (server or client), and the binary.
envs() {
	local out=() kv
	for kv in $1; do
		case $kv in
		BIN=* | FLAGS=*) ;;
		S_*) [ "$2" = server ] && out+=("${kv#S_}") ;;
		C_*) [ "$2" = client ] && out+=("${kv#C_}") ;;
		*) out+=("$kv") ;;
		esac
	done
	echo "${out[@]}"
}
bin_of() { local kv; for kv in $1; do case $kv in BIN=*) echo "${kv#BIN=}"; return ;; esac; done; echo "$DEFAULT_BIN"; }
flags_of() { local kv; for kv in $1; do case $kv in FLAGS=*) echo "${kv#FLAGS=}" | tr , ' '; return ;; esac; done; }

pids=() i=0
for cfg in "$@"; do
	port=$((17600 + i)); i=$((i + 1))
	# shellcheck disable=SC2046
	env $(envs "$cfg" server) "$(bin_of "$cfg")" serve --root "$WORK/dst" --listen 127.0.0.1:$port \
		--state "$WORK/state" --plain-data >"$WORK/serve-$i.log" 2>&1 &
	pids+=($!)
done
trap 'kill "${pids[@]}" 2>/dev/null || true' EXIT
sleep 1
res=$WORK/results.txt; : >"$res"
if [ "${KEEP:-0}" = 1 ]; then # the copy the reruns find, not timed
	KERF_USER=bench "$DEFAULT_BIN" -q send --identity "$WORK/id" --plain-data --accept-new-host-key \
		-r "$WORK/src/small" 127.0.0.1:17600
fi
for ((r = 0; r < REPS; r++)); do
	i=0
	for cfg in "$@"; do
		port=$((17600 + i)); i=$((i + 1))
		if [ "${KEEP:-0}" = 1 ] && [ -d "$WORK/dst/small" ]; then :; else
			rm -rf "$WORK/dst/small"
		fi
		spid=${pids[$((i - 1))]}
		s0=$(awk '{print $14 + $15}' /proc/$spid/stat)
		t0=$(date +%s%N)
		# shellcheck disable=SC2046
		env $(envs "$cfg" client) KERF_USER=bench "$(bin_of "$cfg")" -q send --identity "$WORK/id" \
			--plain-data --accept-new-host-key $(flags_of "$cfg") -r "$WORK/src/small" 127.0.0.1:$port ||
			{ echo "FAIL: $cfg" >&2; exit 1; }
		t1=$(date +%s%N)
		s1=$(awk '{print $14 + $15}' /proc/$spid/stat)
		diff -rq "$WORK/src/small" "$WORK/dst/small" >/dev/null || { echo "FAIL: $cfg: copy differs" >&2; exit 1; }
		echo "$i $(((t1 - t0) / 1000)) $((s1 - s0))" >>"$res"
	done
done
python3 - "$res" "$(getconf CLK_TCK)" "$@" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list); cpu = collections.defaultdict(int)
for line in open(sys.argv[1]):
    k, us, ticks = line.split()
    d[int(k)].append(int(us) / 1e6); cpu[int(k)] += int(ticks)
for k in sorted(d):
    v = sorted(d[k]); q = statistics.quantiles(v, n=4)
    # The server's utime+stime, in clock ticks (/proc/PID/stat), over all its sends.
    print(f"median {statistics.median(v):.4f} s  q1 {q[0]:.4f}  q3 {q[2]:.4f}  best {v[0]:.4f}  n {len(v)}  server CPU {cpu[k] / len(v) * 1000 / int(sys.argv[2]):.1f} ms/send  {sys.argv[2 + k]}")
PY
