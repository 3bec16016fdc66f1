#!/usr/bin/env bash
# bench/zmem.sh — a receiving server's peak memory with and without
# --compress: CLIENTS clients at once, each sending a half-compressible
# file of SIZE_MB MiB over STREAMS data connections in blocks of BLOCK
# bytes, to one `kerf serve`; prints the server's VmHWM per mode.
#
#   bench/zmem.sh                                   # 4 x 1 GiB, 8 streams, 16000000-byte blocks
#   BLOCK=1048576 bench/zmem.sh                     # the default block size
#
# Environment: CLIENTS [4], SIZE_MB [1024], STREAMS [8], BLOCK [16000000],
# PORT [18490], WORK [/dev/shm/kerf-zmem], KERF (default: built here).
set -euo pipefail
CLIENTS=${CLIENTS:-4} SIZE_MB=${SIZE_MB:-1024} STREAMS=${STREAMS:-8} BLOCK=${BLOCK:-16000000}
PORT=${PORT:-18490} WORK=${WORK:-/dev/shm/kerf-zmem}
here=$(cd "$(dirname "$0")/.." && pwd)
rm -rf "$WORK"; mkdir -p "$WORK/home" "$WORK/state" "$WORK/root"
trap 'kill "${SPID:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
if [ -z "${KERF:-}" ]; then KERF=$WORK/kerf; (cd "$here" && go build -o "$KERF" ./cmd/kerf); fi
export HOME=$WORK/home KERF_USER=bench
fp=$("$KERF" key --identity "$WORK/id" 2>/dev/null)
"$KERF" user add --key "$fp" --root "$WORK/root" --state "$WORK/state" bench >/dev/null 2>&1
# Half compressible: 2 MiB of log lines, then 2 MiB of random bytes, and so on.
python3 - "$WORK/src" "$SIZE_MB" <<'PY'
import os, sys
with open(sys.argv[1], "wb") as f:
    for i in range(int(sys.argv[2]) // 2):
        f.write(os.urandom(2 << 20) if i % 2 else ((b"log line %d abcdefghijklmnop\n" % i) * 80000)[: 2 << 20])
PY
for z in "" "--compress"; do
	"$KERF" serve --listen 127.0.0.1:$PORT --state "$WORK/state" --root "$WORK/root" >"$WORK/serve.log" 2>&1 &
	SPID=$!
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
	pids=()
	for i in $(seq "$CLIENTS"); do
		"$KERF" -q send $z --identity "$WORK/id" --accept-new-host-key --streams "$STREAMS" --block-size "$BLOCK" \
			"$WORK/src" 127.0.0.1:$PORT/up$i/ &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	for i in $(seq "$CLIENTS"); do cmp -s "$WORK/src" "$WORK/root/up$i/src" || { echo "copy $i differs" >&2; exit 1; }; done
	echo "${z:-plain}: server $(grep VmHWM /proc/$SPID/status | tr -s ' \t' ' ')  (CLIENTS=$CLIENTS SIZE_MB=$SIZE_MB STREAMS=$STREAMS BLOCK=$BLOCK)"
	kill "$SPID"; wait "$SPID" 2>/dev/null || true; SPID=
	rm -rf "$WORK/root"/up*
done
