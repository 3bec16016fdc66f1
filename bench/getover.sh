#!/usr/bin/env bash
# bench/getover.sh — a several-session GET whose session is lost, each
# file told once? For each kerf binary: a fresh `kerf serve` on the
# 100,000-file tree of bench/memfiles.sh (run it once first: it makes the
# tree, the key and the user), a `get -r --sessions 4` cut off by SIGINT
# after 3 s (so that part of the tree is there), then a
# `get --resume --sessions 4 -r --json` of the same tree whose second
# control connection is killed (ss -K) once files flow. Prints what the
# JSON told: events by kind, names told, names told more than once (0
# wanted), and the command's exit; then the files in the copy (N wanted).
#
#   bench/getover.sh /tmp/kerf-old /tmp/kerf-new
#
# Environment: WORK [/dev/shm/memfiles], N [100000] (tree E$N of
# memfiles.sh), PORT [17997]. Needs root for ss -K.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 2; }
WORK=${WORK:-/dev/shm/memfiles} N=${N:-100000} PORT=${PORT:-17997}
[ -f "$WORK/E$N.done" ] && [ -f "$WORK/id.fp" ] || { echo "run bench/memfiles.sh first (COUNTS=$N)" >&2; exit 2; }
cd "$WORK" || exit 2
export HOME=$WORK/home KERF_USER=u
SPID=
trap '[ -n "$SPID" ] && kill "$SPID" 2>/dev/null; rm -rf "$WORK/out"' EXIT
serve() {
	"$1" serve --root "$WORK/root" --listen 127.0.0.1:$PORT --state "$st" --take-over-after 5s >/dev/null 2>&1 &
	SPID=$!
	sleep 0.7
}
for b in "$@"; do
	st=$WORK/state-getover-$(basename "$b")
	rm -rf "$st" out; mkdir -p "$st" out
	"$b" user add --root "$WORK/root" --key "$(cat id.fp)" --state "$st" u >/dev/null 2>&1
	rm -f home/.config/kerf/known_hosts
	serve "$b"
	"$b" -q get --identity id --accept-new-host-key --sessions 4 -r 127.0.0.1:$PORT/E$N out/ >/dev/null 2>&1 &
	cp=$!; sleep 3; kill -INT $cp; wait $cp
	had=$(find out -type f | wc -l)
	kill "$SPID"; wait "$SPID" 2>/dev/null
	serve "$b"
	"$b" --json get --resume --identity id --accept-new-host-key --sessions 4 -r 127.0.0.1:$PORT/E$N out/ >"$WORK/getover.json" 2>"$WORK/getover.err" &
	cp=$!
	for _ in $(seq 60); do sleep 0.2; grep -q file_done "$WORK/getover.json" 2>/dev/null && break; done
	sleep 0.5
	port=$(ss -tnp | grep "pid=$cp," | awk -v p=":$PORT" '$5 ~ p"$" {n = split($4, a, ":"); print a[n]}' | sed -n 2p)
	ss -K dst 127.0.0.1 dport = $PORT sport = :$port >/dev/null 2>&1
	wait $cp; rc=$?
	kill "$SPID"; wait "$SPID" 2>/dev/null; SPID=
	python3 - "$(basename "$b")" "$had" "$rc" "$WORK/getover.json" <<'PY'
import collections, json, sys
ends = collections.defaultdict(int); kinds = collections.Counter()
for line in open(sys.argv[4]):
    e = json.loads(line); kinds[e['event']] += 1
    if e['event'] in ('file_done', 'file_error', 'file_skipped'):
        ends[e['name']] += 1
print(sys.argv[1], 'had', sys.argv[2], 'exit', sys.argv[3], dict(kinds), 'names', len(ends),
      'told more than once', sum(1 for n in ends.values() if n != 1))
PY
	echo "files in the copy: $(find out -type f | wc -l)"
	grep -m1 WARN "$WORK/getover.err" | cut -c1-120
done
