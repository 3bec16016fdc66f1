#!/usr/bin/env bash
# bench/alternate.sh — two kerf clients, A and B, take turns sending the
# same thing to one long-running kerf server, and each side's CPU is read
# separately: client user+sys from /usr/bin/time, server utime+stime from
# /proc/PID/stat before and after each run. Where lan.sh's A/B (kerf-b)
# gives each build its own server, this isolates what a change on the
# sending side costs or saves on either end.
#
#   A=./new B=./old bench/alternate.sh                  # 1 GiB, TLS data
#   A=./new B=./old ARGS=--plain-data bench/alternate.sh
#   A=./new B=./old WHAT=small ARGS=--plain-data bench/alternate.sh
#
# Environment (defaults in brackets):
#   A, B: kerf binaries (or wrapper scripts) for the two clients
#   SERVER [$B]: the kerf binary of the server
#   RUNS [10]: runs of each client, alternating A, B, B, A, A, B, ...
#   WHAT [big]: big (one 1 GiB random file) or small (2,000 × 16 KiB in
#   20 directories)
#   ARGS []: extra flags for kerf send (e.g. --plain-data)
#   WORK [/dev/shm/kerf-alt]: tmpfs work directory, removed at the end
# Prints per client: the median wall time, and the mean client and
# server CPU seconds per run. A wrapper script used as SERVER must `exec`
# kerf (the server's CPU is read from the PID it was started as).
set -euo pipefail

: "${A:?A: a kerf binary}" "${B:?B: a kerf binary}"
SERVER=${SERVER:-$B}
RUNS=${RUNS:-10}
WHAT=${WHAT:-big}
ARGS=${ARGS:-}
WORK=${WORK:-/dev/shm/kerf-alt}
PORT=${PORT:-17390}

rm -rf "$WORK"
mkdir -p "$WORK"/{src,dst,state,home}
export HOME=$WORK/home
trap 'kill "$srv" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT

case $WHAT in
big) head -c 1G /dev/urandom >"$WORK/src/big"; what=$WORK/src/big; rec=() ;;
small)
	for d in $(seq 0 19); do
		mkdir -p "$WORK/src/t/d$d"
		for f in $(seq 0 99); do head -c 16384 /dev/urandom >"$WORK/src/t/d$d/f$f"; done
	done
	what=$WORK/src/t; rec=(-r) ;;
*) echo "alternate.sh: WHAT is big or small" >&2; exit 2 ;;
esac

fp=$("$SERVER" key --identity "$WORK/id" 2>&1 | grep -o 'sha256:[0-9a-f]*' | head -1)
"$SERVER" user add --root "$WORK/dst" --key "$fp" --state "$WORK/state" bench >/dev/null 2>&1
plain=()
case " $ARGS " in *" --plain-data "*) plain=(--plain-data) ;; esac
"$SERVER" serve --root "$WORK/dst" --listen 127.0.0.1:$PORT --state "$WORK/state" "${plain[@]}" >"$WORK/serve.log" 2>&1 &
srv=$!
for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.05; done

cpu() { awk '{print $14 + $15}' "/proc/$srv/stat"; }
tck=$(getconf CLK_TCK)
out=$WORK/runs.txt
for run in $(seq "$RUNS"); do
	# A B, then B A: the second of a pair ran measurably faster here
	# (7-8% on 1 GiB), whichever binary it was.
	order="A B"
	[ $((run % 2)) = 0 ] && order="B A"
	for side in $order; do
		bin=${!side}
		rm -rf "${WORK:?}/dst/big" "$WORK/dst/t"
		before=$(cpu)
		# shellcheck disable=SC2086
		/usr/bin/time -f "%e %U %S" -o "$WORK/time" "$bin" -q send --identity "$WORK/id" --user bench \
			--known-hosts "$WORK/kh" --accept-new-host-key $ARGS "${rec[@]}" "$what" 127.0.0.1:$PORT
		after=$(cpu)
		echo "$side $(cat "$WORK/time") $(( after - before ))" >>"$out"
	done
done
if [ "$WHAT" = big ]; then cmp "$what" "$WORK/dst/big"; else diff -r "$what" "$WORK/dst/t"; fi

for side in A B; do
	median=$(grep "^$side " "$out" | awk '{print $2}' | sort -n |
		awk '{w[NR] = $1} END {print (NR % 2) ? w[(NR + 1) / 2] : (w[NR / 2] + w[NR / 2 + 1]) / 2}')
	grep "^$side " "$out" | awk -v side="$side" -v tck="$tck" -v m="$median" '
		{ c += $3 + $4; s += $5 / tck }
		END { printf "%s: median %.3f s, client CPU %.3f s, server CPU %.3f s (%d runs)\n", side, m, c / NR, s / NR, NR }'
done
