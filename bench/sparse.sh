#!/usr/bin/env bash
# bench/sparse.sh — a sparse disk image (SIZE, default 8 GiB, with 4 MiB
# of random data in four places) fetched with `get --sparse` over
# loopback from a `kerf serve --plain-data`, by each kerf binary given,
# beside a raw socat pipe of the same image (every zero read and sent,
# as a tool that does not look for holes does) and a local
# `rsync --sparse` copy (it writes holes but reads every byte), in one
# run. Each copy is checked with cmp and its
# allocated size printed; prints seconds, the wire bytes kerf's --json
# says, and each one's ratio to the first kerf.
#
#   bench/sparse.sh /tmp/kerf-old /tmp/kerf-new
#
# Environment: WORK [/dev/shm/kerf-sparse] (tmpfs: holes), SIZE [8G],
# PORT [17996], REPS [3].
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 2; }
WORK=${WORK:-/dev/shm/kerf-sparse} SIZE=${SIZE:-8G} PORT=${PORT:-17996} REPS=${REPS:-3}
rm -rf "$WORK"; mkdir -p "$WORK/root" "$WORK/out" "$WORK/home"
cd "$WORK" || exit 2
export HOME=$WORK/home KERF_USER=u KERF_PASSWORD=benchpw
SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; cd /; rm -rf "$WORK"' EXIT
truncate -s "$SIZE" root/disk.img
bytes=$(stat -c %s root/disk.img)
for off in 0 $((bytes / 3)) $((bytes / 2 + 12345)) $((bytes - 1048576)); do
	head -c 1048576 /dev/urandom | dd of=root/disk.img bs=1M seek=$off oflag=seek_bytes conv=notrunc status=none
done
echo "image: $(du -h --apparent-size root/disk.img | cut -f1) apparent, $(du -h root/disk.img | cut -f1) allocated"
now() { date +%s.%N; }
declare -A secs
first=
for b in "$@"; do
	name=$(basename "$b")
	st=$WORK/state-$name
	rm -rf "$st"; mkdir -p "$st"
	echo benchpw | "$b" user add --root "$WORK/root" --state "$st" --password-stdin u >/dev/null 2>&1
	"$b" serve --root "$WORK/root" --listen 127.0.0.1:$PORT --state "$st" --plain-data >/dev/null 2>&1 &
	SPID=$!
	sleep 0.7
	rm -f home/.config/kerf/known_hosts
	best=
	for _ in $(seq "$REPS"); do
		rm -f out/disk.img
		t0=$(now)
		"$b" --json get --sparse --plain-data --accept-new-host-key 127.0.0.1:$PORT/disk.img out/ >"$WORK/get.json" 2>"$WORK/get.err" || { echo "$name: FAIL: $(tail -c 300 get.err)"; break; }
		t=$(echo "$(now) - $t0" | bc)
		cmp -s root/disk.img out/disk.img || { echo "$name: FAIL: copy differs"; break; }
		[ -z "$best" ] || [ "$(echo "$t < $best" | bc)" = 1 ] && best=$t
	done
	kill "$SPID"; wait "$SPID" 2>/dev/null; SPID=
	wire=$(grep '"event":"done"' get.json | python3 -c 'import json,sys; print(json.loads(sys.stdin.read()).get("wire_bytes", "-"))')
	printf '%-14s best %8.3f s  wire %s  allocated %s\n' "$name" "$best" "$wire" "$(du -h out/disk.img | cut -f1)"
	secs[$name]=$best
	[ -n "$first" ] || first=$name
done
if command -v socat >/dev/null; then
	rm -f out/raw.img
	socat -u TCP-LISTEN:$((PORT + 1)),reuseaddr,rcvbuf=131072 CREATE:out/raw.img &
	sleep 0.3
	t0=$(now)
	socat -u FILE:root/disk.img TCP:127.0.0.1:$((PORT + 1)),sndbuf=131072
	wait
	t=$(echo "$(now) - $t0" | bc)
	cmp -s root/disk.img out/raw.img && printf '%-14s best %8.3f s  (every byte sent)\n' raw-pipe "$t" || echo "raw-pipe: FAIL"
	secs[raw-pipe]=$t
	rm -f out/raw.img
fi
if command -v rsync >/dev/null; then
	rm -f out/disk.img
	t0=$(now)
	rsync --sparse root/disk.img out/disk.img
	t=$(echo "$(now) - $t0" | bc)
	cmp -s root/disk.img out/disk.img && printf '%-14s best %8.3f s  (local copy, --sparse: reads every byte)\n' rsync-local "$t" || echo "rsync: FAIL"
	secs[rsync-local]=$t
fi
for k in "${!secs[@]}"; do
	printf 'ratio %-14s / %s: %.2f\n' "$k" "$first" "$(echo "${secs[$k]} / ${secs[$first]}" | bc -l)"
done
