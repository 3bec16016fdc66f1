#!/usr/bin/env bash
# C-Kermit as client sending a tree of small files to `kerf serve
# --allow-classic` over loopback (password login, streaming, packets of
# 9,024, window 32, no prefixing): REPS rounds alternating the builds
# given, each into a fresh root of a fresh server; prints each run's
# seconds (the `kermit` client's start to exit) and the files stored.
#
#   bench/classic-in.sh /tmp/kerf-new /tmp/kerf-old
#
# Environment: REPS [3], N [2000] files of SIZE [16384] bytes, SRC
# [/dev/shm/kerf-classic-in/src], DST [/dev/shm/kerf-classic-in/dst]
# (put DST on a disk to see fsync's part), PORT [44100].
# Needs kermit (Debian: ckermit), bc.
set -euo pipefail
REPS=${REPS:-3} N=${N:-2000} SIZE=${SIZE:-16384} PORT=${PORT:-44100}
WORK=/dev/shm/kerf-classic-in
SRC=${SRC:-$WORK/src} DST=${DST:-$WORK/dst}
[ $# -gt 0 ] || { sed -n '2,13p' "$0"; exit 2; }
command -v kermit >/dev/null || { echo "kermit not found (apt-get install ckermit)" >&2; exit 1; }
mkdir -p "$WORK"
if [ "$(ls "$SRC/small" 2>/dev/null | wc -l)" != "$N" ]; then
	rm -rf "$SRC"; mkdir -p "$SRC/small"
	for ((i = 0; i < N; i++)); do head -c "$SIZE" /dev/urandom >"$SRC/small/f$i"; done
fi
cat >"$WORK/send.ksc" <<EOK
set host 127.0.0.1 $PORT /raw-socket
if fail exit 1
remote login bench pw-bench-1234
if fail exit 1
set file type binary
set send packet-length 9024
set streaming on
set reliable on
set prefixing none
set window 32
set send pathnames relative
set transfer display none
cd $SRC
send /recursive small
if fail exit 1
bye
exit
EOK
run() { # run BIN: one copy; prints "seconds files"
	local bin=$1 st=$WORK/state sp t0 t1
	rm -rf "$st" "$DST"; mkdir -p "$st" "$DST"
	echo pw-bench-1234 | "$bin" user add --root "$DST" --state "$st" --password-stdin bench >/dev/null 2>&1
	"$bin" serve --root "$DST" --listen 127.0.0.1:$PORT --data-listen 127.0.0.1:$((PORT + 1)) \
		--state "$st" --allow-classic >"$WORK/server.log" 2>&1 &
	sp=$!
	for _ in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/$PORT) 2>/dev/null && break; sleep 0.1; done
	t0=$(date +%s.%N)
	kermit "$WORK/send.ksc" -Y >"$WORK/kermit.log" 2>&1 || echo "FAIL (see $WORK/kermit.log)" >&2
	t1=$(date +%s.%N)
	kill "$sp"; wait "$sp" 2>/dev/null || true
	echo "$(echo "$t1 - $t0" | bc) $(find "$DST/small" -type f 2>/dev/null | wc -l)"
}
for ((r = 1; r <= REPS; r++)); do
	for bin in "$@"; do
		read -r secs files < <(run "$bin")
		printf '%s\tround %d\t%s s\t%s files\n' "$bin" "$r" "$secs" "$files"
	done
done
