#!/usr/bin/env bash
# bench/wan-small.sh — many small files over an emulated WAN link
# (../shared/tools/wanem): kerf send with 1..16 sessions, a --resume rerun
# that finds every file there, and rsync, in one run, every copy checked.
#
#   bench/wan-small.sh                                 # as root; a few minutes
#   RATE=100mbit DELAY=25ms LOSS=0.5% NS="1 4" bench/wan-small.sh
#
# Parts (PARTS, default "small resume get rsync"); the client on side A sends
# the tree (N [2000] files of SIZE [16384] bytes in 20 directories) to a
# server on side B:
#   small    kerf send --sessions N -r into an empty destination, for each N of NS
#            ("default": no --sessions flag, also in RESUME_NS and for get;
#            so a kerf from before the flag can be measured)
#   resume   kerf send --sessions N --resume -r again, every file already there,
#            for each N of RESUME_NS
#   rsync    rsync -a --whole-file to rsync --daemon, into an empty destination
#   rsync-rerun  the same again, every file already there (rsync's quick check)
#   get      kerf get --sessions N -r of the tree from the server, for each N of NS
#   get-resume  kerf get --sessions N --resume -r again into a full copy,
#            for each N of RESUME_NS
# Environment: RATE [100mbit], DELAY [25ms one way], LOSS [0], REPS [3],
# KERF_FLAGS (given to every kerf send and get, e.g. "--in-band"),
# NS ["1 2 4 8 default"], RESUME_NS ["1 4"], KERF (default built from this tree),
# WANEM_DIR [../shared/tools/wanem], OUT [bench/out/wan-small-DATE].
# Prints the median and best wall time of the client per row.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RATE=${RATE:-100mbit} DELAY=${DELAY:-25ms} LOSS=${LOSS:-0} REPS=${REPS:-3}
N=${N:-2000} SIZE=${SIZE:-16384}
NS=${NS:-"1 2 4 8 default"} RESUME_NS=${RESUME_NS:-"1 4"} PARTS=${PARTS:-"small resume get rsync"}
WANEM_DIR=${WANEM_DIR:-$here/../shared/tools/wanem}
OUT=${OUT:-$here/bench/out/wan-small-$(date -u +%Y%m%dT%H%M%SZ)}
W=/dev/shm/kerf-wan-small SRC=/dev/shm/kerf-wan-small/src DST=/dev/shm/kerf-wan-small/dst
export NS_A=kerfsA NS_B=kerfsB WAN_STATE=/tmp/wanem-kerfsA-kerfsB
die() { echo "wan-small.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (network namespaces)"
command -v rsync >/dev/null || { apt-get update -qq && apt-get install -y -qq rsync >/dev/null; }
mkdir -p "$OUT/logs" "$SRC" "$DST"
if [ -z "${KERF:-}" ]; then
	KERF=$W/kerf
	(cd "$here" && go build -o "$KERF" ./cmd/kerf) || die "building kerf failed"
	KERF_DESC="built from the tree at $(cd "$here" && git rev-parse --short HEAD)$(cd "$here" && git diff --quiet HEAD || echo ' with uncommitted changes')"
else
	KERF_DESC=$KERF
fi
if [ ! -d "$SRC/small" ]; then
	for ((i = 0; i < N; i++)); do
		d=$SRC/small/d$((i * 20 / N)); [ -d "$d" ] || mkdir -p "$d"
		head -c "$SIZE" /dev/urandom >"$d/f$i"
	done
fi

SRV= RSD=
cleanup() {
	[ -n "$SRV" ] && kill "$SRV" 2>/dev/null || true
	[ -n "$RSD" ] && kill "$RSD" 2>/dev/null || true
	bash "$WANEM_DIR/down.sh" >"$OUT/logs/wanem-down.log" 2>&1 || true
}
trap cleanup EXIT
bash "$WANEM_DIR/up.sh" -delay "$DELAY" -loss "$LOSS" -rate "$RATE" >"$OUT/logs/wanem-up.log" 2>&1 || die "wanem up failed (see $OUT/logs)"
A() { ip netns exec "$NS_A" "$@"; }
B() { ip netns exec "$NS_B" "$@"; }
export HOME=$W/home
rm -rf "$HOME" "$W/state" && mkdir -p "$HOME" "$W/state"
fp=$("$KERF" key --identity "$W/id" 2>/dev/null)
"$KERF" user add --root "$DST" --key "$fp" --state "$W/state" bench >/dev/null 2>&1
B "$KERF" serve --root "$DST" --listen 10.77.0.2:1649 --state "$W/state" >"$OUT/logs/serve.log" 2>&1 &
SRV=$!
printf 'use chroot = no\nuid = root\ngid = root\nmax connections = 0\n[dst]\npath = %s\nread only = no\n' "$DST" >"$W/rsyncd.conf"
B rsync --daemon --no-detach --address=10.77.0.2 --port=8730 --config="$W/rsyncd.conf" >"$OUT/logs/rsyncd.log" 2>&1 &
RSD=$!
sleep 1
res=$OUT/results.tsv
: >"$res"
read -ra kflags <<<"${KERF_FLAGS:-}"
send() { (cd "$SRC" && A env KERF_USER=bench "$KERF" -q send "${kflags[@]}" "$@" --identity "$W/id" --accept-new-host-key -r small 10.77.0.2:1649); }
fetch() { (cd "$W/back" && A env KERF_USER=bench "$KERF" -q get "${kflags[@]}" "$@" --identity "$W/id" --accept-new-host-key -r 10.77.0.2:1649/small .); }
# timed ROW CMD...: runs CMD, checks the copy, records the seconds.
timed() {
	local row=$1 t0 t1; shift
	t0=$(date +%s%N)
	"$@" >>"$OUT/logs/$row.log" 2>&1 || die "$row failed (see $OUT/logs/$row.log)"
	t1=$(date +%s%N)
	diff -r "$SRC/small" "$DST/small" >/dev/null || die "$row: the copy differs"
	case $row in kerf-get-*) diff -r "$SRC/small" "$W/back/small" >/dev/null || die "$row: the copy differs" ;; esac
	echo "$row $(((t1 - t0) / 1000))" >>"$res"
}
empty() { find "$DST" -mindepth 1 -delete; }
for ((r = 0; r < REPS; r++)); do
	for part in $PARTS; do
		case $part in
		small) for n in $NS; do
			empty
			flag=(--sessions "$n"); [ "$n" = default ] && flag=()
			timed "kerf-sessions-$n" send "${flag[@]}"
		done ;;
		resume) [ -d "$DST/small" ] || send >/dev/null
			for n in $RESUME_NS; do
				flag=(--sessions "$n"); [ "$n" = default ] && flag=()
				timed "kerf-resume-rerun-sessions-$n" send "${flag[@]}" --resume
			done ;;
		get) [ -d "$DST/small" ] || send >/dev/null
			for n in $NS; do
				rm -rf "$W/back" && mkdir -p "$W/back"
				flag=(--sessions "$n"); [ "$n" = default ] && flag=()
				timed "kerf-get-sessions-$n" fetch "${flag[@]}"
			done ;;
		get-resume) [ -d "$DST/small" ] || send >/dev/null
			[ -d "$W/back/small" ] || { mkdir -p "$W/back" && fetch >/dev/null; }
			for n in $RESUME_NS; do
				flag=(--sessions "$n"); [ "$n" = default ] && flag=()
				timed "kerf-get-resume-rerun-sessions-$n" fetch "${flag[@]}" --resume
			done ;;
		rsync) empty; timed rsync A rsync -a --whole-file "$SRC/small" rsync://10.77.0.2:8730/dst/ ;;
		rsync-rerun) [ -d "$DST/small" ] || send >/dev/null
			timed rsync-rerun A rsync -a --whole-file "$SRC/small" rsync://10.77.0.2:8730/dst/ ;;
		esac
	done
done
python3 - "$res" "$N" <<'PY'
import collections, statistics, sys
d = collections.defaultdict(list)
for l in open(sys.argv[1]):
    k, us = l.split(); d[k].append(int(us) / 1e6)
print("| row | seconds | best | files/s |")
print("|---|---:|---:|---:|")
for k, v in d.items():
    m = statistics.median(v)
    print(f"| {k} | {m:.2f} | {min(v):.2f} | {int(sys.argv[2]) / m:.0f} |")
PY
echo
echo "link: RATE=$RATE DELAY=$DELAY (one way) LOSS=$LOSS; $N x $SIZE bytes; REPS=$REPS"
echo "kerf: $KERF_DESC${KERF_FLAGS:+ with $KERF_FLAGS}; $(date -u +%FT%TZ); load $(cut -d' ' -f1-3 /proc/loadavg)"
