#!/usr/bin/env bash
# bench/memfiles.sh — does memory grow with the number of files? memget.sh
# generalized: for each kerf binary, direction (get -r from the server,
# send -r to it) and file count N, a fresh `kerf serve` (GODEBUG=gctrace=1)
# moves a tree of N empty files in 100 directories over loopback with one
# client; prints per run the server's VmHWM, the largest live heap after a
# GC in its trace, the client's peak RSS (/usr/bin/time -v) and the
# seconds, then per binary and direction the ratio of the largest N's
# server peaks to the smallest N's (about 1: bounded; about N_max/N_min:
# growing with the file count). A run with rc != 0 or a copy without N
# files is marked FAIL.
#
#   bench/memfiles.sh /tmp/kerf-old /tmp/kerf-new
#   DIRECTION=get COUNTS="10000 100000" SESSIONS=8 bench/memfiles.sh ./kerf
#
# Environment (defaults in brackets):
#   DIRECTION [both]: get, send or both
#   COUNTS ["100000 300000"]: file counts, smallest first
#   SESSIONS [1]: the client's --sessions
#   WORK [/dev/shm/memfiles]: tmpfs work directory; the trees (root/E<N>)
#   are kept there for the next run, the copies are removed
#   PORT [17993]: server control port (memget.sh uses 17991)
#   TIMEOUT [1200]: seconds before a client is given up (FAIL)
#
# Columns: srv_hwm_kB is the server's VmHWM; srv_live_MB the largest
# live heap after a GC in gctrace (third figure of "a->b->c MB");
# srv_gcend_MB the largest second figure (heap at the GC's end, what
# memget.sh prints as max_live_after_gc); cli_hwm_kB the client's
# maximum resident set size.
set -uo pipefail
[ $# -ge 1 ] || { echo "usage: $0 BIN [BIN...]" >&2; exit 2; }
DIRECTION=${DIRECTION:-both} COUNTS=${COUNTS:-"100000 300000"} SESSIONS=${SESSIONS:-1}
WORK=${WORK:-/dev/shm/memfiles} PORT=${PORT:-17993} TIMEOUT=${TIMEOUT:-1200}
case $DIRECTION in both) DIRS="get send" ;; get|send) DIRS=$DIRECTION ;;
	*) echo "DIRECTION: get, send or both" >&2; exit 2 ;; esac
for b in "$@"; do [ -x "$b" ] || { echo "not executable: $b" >&2; exit 2; }; done

SPID=
cleanup() {
	if [ -n "$SPID" ]; then kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; fi
	rm -rf "$WORK/out" "$WORK/root/in"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$WORK/root" "$WORK/home"
export HOME=$WORK/home KERF_USER=u

# Trees of N empty files, d000..d099, made once per N.
for n in $COUNTS; do
	[ -f "$WORK/E$n.done" ] && continue
	echo "# making $WORK/root/E$n ($n files)" >&2
	rm -rf "$WORK/root/E$n"
	python3 - "$WORK/root/E$n" "$n" <<'PY' || exit 1
import os, sys
top, n = sys.argv[1], int(sys.argv[2])
for i in range(100):
    os.makedirs(top + '/d%03d' % i)
for i in range(n):
    open(top + '/d%03d/f%07d_some_longer_name_for_realism' % (i % 100, i), 'w').close()
PY
	touch "$WORK/E$n.done"
done

# One server state per binary (its own key and users file), one client key.
declare -A results
printf '%-22s %-4s %7s %3s %7s %10s %11s %12s %10s %7s %s\n' \
	bin dir N rc files srv_hwm_kB srv_live_MB srv_gcend_MB cli_hwm_kB secs status
for K in "$@"; do
	st=$WORK/state-$(basename "$K")
	rm -rf "$st"; mkdir -p "$st"
	[ -f "$WORK/id.fp" ] || "$K" key --identity "$WORK/id" >"$WORK/id.fp" 2>/dev/null
	"$K" user add --root "$WORK/root" --key "$(cat "$WORK/id.fp")" --state "$st" u >/dev/null 2>&1
	rm -f "$HOME/.config/kerf/known_hosts"
	for d in $DIRS; do
		for n in $COUNTS; do
			rm -rf "$WORK/out" "$WORK/root/in"; mkdir -p "$WORK/out"
			GODEBUG=gctrace=1 "$K" serve --root "$WORK/root" --listen 127.0.0.1:$PORT \
				--state "$st" 2>"$WORK/serve.log" >/dev/null & SPID=$!
			for _ in $(seq 50); do
				(exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1
			done
			common=(--identity "$WORK/id" --accept-new-host-key --sessions "$SESSIONS")
			t0=$(date +%s.%N)
			if [ "$d" = get ]; then
				timeout "$TIMEOUT" /usr/bin/time -v -o "$WORK/time.txt" "$K" -q get "${common[@]}" \
					-r 127.0.0.1:$PORT/E$n "$WORK/out/" >"$WORK/client.log" 2>&1
				rc=$?; dst=$WORK/out
			else
				mkdir -p "$WORK/root/in"
				timeout "$TIMEOUT" /usr/bin/time -v -o "$WORK/time.txt" "$K" -q send "${common[@]}" \
					-r "$WORK/root/E$n" 127.0.0.1:$PORT/in/ >"$WORK/client.log" 2>&1
				rc=$?; dst=$WORK/root/in
			fi
			t1=$(date +%s.%N)
			hwm=$(awk '/^VmHWM/{print $2}' /proc/$SPID/status 2>/dev/null)
			kill "$SPID" 2>/dev/null; wait "$SPID" 2>/dev/null; SPID=
			live=$(awk '/^gc /{for(i=1;i<=NF;i++) if($i ~ /->.*->/){split($i,a,"->"); print a[3]}}' \
				"$WORK/serve.log" | sort -n | tail -1)
			gcend=$(awk '/^gc /{for(i=1;i<=NF;i++) if($i ~ /->.*->/){split($i,a,"->"); print a[2]}}' \
				"$WORK/serve.log" | sort -n | tail -1)
			cli=$(awk -F': ' '/Maximum resident set size/{print $2}' "$WORK/time.txt" 2>/dev/null)
			files=$(find "$dst" -type f | wc -l)
			status=ok
			if [ "$rc" != 0 ] || [ "$files" != "$n" ]; then
				status=FAIL; tail -3 "$WORK/client.log" | sed 's/^/#   client: /' >&2
			fi
			printf '%-22s %-4s %7s %3s %7s %10s %11s %12s %10s %7.1f %s\n' \
				"$(basename "$K")" "$d" "$n" "$rc" "$files" "${hwm:--}" "${live:--}" "${gcend:--}" \
				"${cli:--}" "$(echo "$t1 - $t0" | bc)" "$status"
			results[$K,$d,$n]="${hwm:-0} ${live:-0}"
			rm -rf "$WORK/out" "$WORK/root/in"
		done
	done
done

# Largest N against smallest N, per binary and direction.
lo=${COUNTS%% *}; hi=${COUNTS##* }
echo
echo "ratio N=$hi / N=$lo (server):"
for K in "$@"; do
	for d in $DIRS; do
		read -r h1 l1 <<<"${results[$K,$d,$lo]}"; read -r h2 l2 <<<"${results[$K,$d,$hi]}"
		awk -v b="$(basename "$K")" -v d=$d -v h1=$h1 -v h2=$h2 -v l1=$l1 -v l2=$l2 'BEGIN {
			printf "%-22s %-4s VmHWM x%s  live heap x%s\n", b, d,
				(h1 > 0 ? sprintf("%.2f", h2 / h1) : "-"), (l1 > 0 ? sprintf("%.2f", l2 / l1) : "-") }'
	done
done
