#!/usr/bin/env bash
# bench/wan.sh — kerf's WAN options beside rsync on an emulated WAN link
# (../shared/tools/wanem: two network namespaces, a bottleneck rate, a
# one-way delay and random loss), in one run, every copy checked.
#
#   bench/wan.sh                                  # as root; a few minutes
#   RATE=50mbit DELAY=40ms LOSS=0.5% bench/wan.sh
#   TOOLS="kerf kerf-z" CASES=text bench/wan.sh
#
# Rows (client on side A sends to a server on side B):
#   kerf         kerf send -r, TLS data connections, the system's congestion control
#   kerf-z       the same with --compress (zstd blocks, both ends agree)
#   kerf-cubic   kerf with --congestion cubic on both ends
#   kerf-bbr     kerf with --congestion bbr on both ends
#   kerf-quic    kerf with --quic (serve --quic): the data streams on one QUIC connection
#   rsync        rsync -a --whole-file to rsync --daemon
#   rsync-z      the same with -z (zlib)
# Cases: text (compressible: generated log lines, SIZE_MB in 8 files),
# random (SIZE_MB of random bytes in one file).
#
# Environment: RATE [100mbit], DELAY [20ms one way], LOSS [0.1%], REPS [3],
# SIZE_MB [128], TOOLS, CASES, KERF (a kerf binary; default built from
# this tree), WANEM_DIR [../shared/tools/wanem], OUT [bench/out/wan-DATE].
# seconds = median wall time of the client; ratio = kerf's / the row's.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
RATE=${RATE:-100mbit} DELAY=${DELAY:-20ms} LOSS=${LOSS:-0.1%} REPS=${REPS:-3} SIZE_MB=${SIZE_MB:-128}
TOOLS=${TOOLS:-"kerf kerf-z kerf-cubic kerf-bbr kerf-quic rsync rsync-z"}
CASES=${CASES:-"text random"}
WANEM_DIR=${WANEM_DIR:-$here/../shared/tools/wanem}
OUT=${OUT:-$here/bench/out/wan-$(date -u +%Y%m%dT%H%M%SZ)}
WORK=/dev/shm/kerf-wan
die() { echo "wan.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (network namespaces)"
command -v rsync >/dev/null || { apt-get update -qq && apt-get install -y -qq rsync >/dev/null; }
mkdir -p "$OUT/logs" "$WORK"
if [ -z "${KERF:-}" ]; then
	KERF=$WORK/kerf
	(cd "$here" && go build -o "$KERF" ./cmd/kerf) || die "building kerf failed"
	KERF_DESC="built from the tree at $(cd "$here" && git rev-parse --short HEAD)$(cd "$here" && git diff --quiet HEAD || echo ' with uncommitted changes')"
else
	KERF_DESC=$KERF
fi
(cd "$WANEM_DIR" && go build -o "$WORK/wanem" .)

# Data: on tmpfs, made once per size.
SRC=$WORK/src-$SIZE_MB DST=$WORK/dst
if [ ! -d "$SRC" ]; then
	mkdir -p "$SRC/text" "$SRC/random"
	python3 - "$SRC/text" "$SIZE_MB" <<-'PY'
		import random, sys
		d, mb = sys.argv[1], int(sys.argv[2])
		r = random.Random(1649)
		words = "kerf moved stored file session user batch block window resend checksum directory".split()
		for i in range(8):
		    with open(f"{d}/log{i}.txt", "w") as f:
		        n, t = 0, 0
		        while n < mb * 1024 * 1024 // 8:
		            line = f"2026-11-30T{t // 3600 % 24:02d}:{t // 60 % 60:02d}:{t % 60:02d}Z host{r.randrange(40)} kerf[{r.randrange(1000, 99999)}]: " + " ".join(r.choice(words) for _ in range(r.randrange(4, 12))) + f" id={r.getrandbits(32):08x}\n"
		            f.write(line); n += len(line); t += r.randrange(3)
	PY
	head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC/random/data.bin"
fi

cleanup() {
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null || true
	NS_A=wanA NS_B=wanB bash "$WANEM_DIR/down.sh" >"$OUT/logs/wanem-down.log" 2>&1 || true
}
trap cleanup EXIT
NS_A=wanA NS_B=wanB bash "$WANEM_DIR/up.sh" -delay "$DELAY" -loss "$LOSS" -rate "$RATE" >"$OUT/logs/wanem-up.log" 2>&1 ||
	die "wanem up failed (see $OUT/logs/wanem-up.log)"
A() { ip netns exec wanA "$@"; }
B() { ip netns exec wanB "$@"; }

# kerf server on B, rsync daemon on B.
export HOME=$WORK/home
rm -rf "$HOME" "$WORK/state" && mkdir -p "$HOME" "$WORK/state" "$DST"
fp=$("$KERF" key --identity "$WORK/id" 2>/dev/null)
"$KERF" user add --root "$DST" --key "$fp" --state "$WORK/state" bench >/dev/null 2>&1
cat >"$WORK/rsyncd.conf" <<-EOF
	use chroot = no
	uid = root
	gid = root
	[dst]
	path = $DST
	read only = no
EOF
# Each server is started with ip netns exec itself, not through B: $! of
# a backgrounded shell function is the subshell's, and killing it left
# the server running, so that every later kerf row of a run talked to
# the first row's server (its --quic row went over TCP: the results of
# the ninth and eleventh sessions' QUIC rows were TCP's). The port is
# checked free before each start, and a kerf-quic row whose data did
# not go over QUIC fails.
start_server() { # tool
	local i
	for ((i = 0; i < 50; i++)); do
		B ss -Hltn 'sport = :1649' | grep -q . || break
		sleep 0.1
	done
	case $1 in
	kerf | kerf-z) ip netns exec wanB "$KERF" serve --root "$DST" --listen 10.77.0.2:1649 --state "$WORK/state" >"$OUT/logs/$1-serve.log" 2>&1 & ;;
	kerf-quic) ip netns exec wanB "$KERF" serve --root "$DST" --listen 10.77.0.2:1649 --state "$WORK/state" --quic >"$OUT/logs/$1-serve.log" 2>&1 & ;;
	kerf-cubic | kerf-bbr) ip netns exec wanB "$KERF" serve --root "$DST" --listen 10.77.0.2:1649 --state "$WORK/state" --congestion "${1#kerf-}" >"$OUT/logs/$1-serve.log" 2>&1 & ;;
	rsync | rsync-z) ip netns exec wanB rsync --daemon --no-detach --address=10.77.0.2 --port=8730 --config="$WORK/rsyncd.conf" >"$OUT/logs/rsyncd.log" 2>&1 & ;;
	esac
	SRV=$!
	sleep 0.5
}
# right_channel: a kerf-quic row counts only if its data went over QUIC,
# as its closing JSON event says.
right_channel() { # tool log
	[ "$1" != kerf-quic ] || grep -q '"event":"done".*"data":"quic"' "$2"
}
client() { # tool case
	local what=$SRC/$2
	case $1 in
	kerf) A env KERF_USER=bench "$KERF" -q send --identity "$WORK/id" --accept-new-host-key -r "$what" 10.77.0.2 ;;
	kerf-z) A env KERF_USER=bench "$KERF" -q send -z --identity "$WORK/id" --accept-new-host-key -r "$what" 10.77.0.2 ;;
	kerf-quic) A env KERF_USER=bench "$KERF" --json send --quic --identity "$WORK/id" --accept-new-host-key -r "$what" 10.77.0.2 ;;
	kerf-cubic | kerf-bbr) A env KERF_USER=bench "$KERF" -q send --congestion "${1#kerf-}" --identity "$WORK/id" --accept-new-host-key -r "$what" 10.77.0.2 ;;
	rsync) A rsync -a --whole-file "$what" rsync://10.77.0.2:8730/dst/ ;;
	rsync-z) A rsync -a -z --whole-file "$what" rsync://10.77.0.2:8730/dst/ ;;
	esac
}

res=$OUT/results.tsv; : >"$res"
for ((r = 1; r <= REPS; r++)); do
	for cs in $CASES; do
		for tool in $TOOLS; do
			start_server "$tool"
			rm -rf "${DST:?}/$cs"
			t0=$(date +%s.%N)
			ok=0
			client "$tool" "$cs" >"$OUT/logs/$tool-$cs-$r.log" 2>&1 && ok=1
			t1=$(date +%s.%N) # the transfer's time, not the check's
			if [ $ok = 1 ] && diff -rq "$SRC/$cs" "$DST/$cs" >/dev/null &&
				right_channel "$tool" "$OUT/logs/$tool-$cs-$r.log"; then
				echo -e "$tool\t$cs\t$r\t$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')" >>"$res"
			else
				echo -e "$tool\t$cs\t$r\tFAIL" >>"$res"
			fi
			kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=
		done
	done
done

{
	echo "| case | tool | seconds (median of $REPS) | MB/s | kerf / tool |"
	echo "|---|---|---:|---:|---:|"
	python3 - "$res" "$SIZE_MB" "$CASES" "$TOOLS" <<-'PY'
		import collections, statistics, sys
		d = collections.defaultdict(list)
		for line in open(sys.argv[1]):
		    tool, cs, _, s = line.split()
		    d[tool, cs].append(s)
		mb = int(sys.argv[2])
		for cs in sys.argv[3].split():
		    k = [float(x) for x in d.get(("kerf", cs), []) if x != "FAIL"]
		    kmed = statistics.median(k) if k else None
		    for tool in sys.argv[4].split():
		        v = d.get((tool, cs), [])
		        ok = [float(x) for x in v if x != "FAIL"]
		        if not ok or len(ok) < len(v):
		            print(f"| {cs} | {tool} | FAIL ({len(v) - len(ok)} of {len(v)}) | | |"); continue
		        m = statistics.median(ok)
		        ratio = f"{kmed / m:.2f}" if kmed else ""
		        print(f"| {cs} | {tool} | {m:.2f} | {mb * 1.048576 / m:.1f} | {ratio} |")
	PY
	echo
	echo "link: RATE=$RATE DELAY=$DELAY (one way) LOSS=$LOSS; SIZE_MB=$SIZE_MB; REPS=$REPS; $(date -u +%FT%RZ); kerf $KERF_DESC"
} | tee "$OUT/table.md"
