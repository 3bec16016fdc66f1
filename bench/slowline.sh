#!/bin/bash
# A serial line slower than kerf is told (a modem slower than its port):
# kerf serial send to kerf serial receive through lineem at BAUD, both
# told --speed KSPEED; prints seconds, the sender's timeouts and its
# statistics, and whether the copy is whole. Run by hand.
#
#   bench/slowline.sh [KERF]     # BAUD [9600] KSPEED [115200] SIZE [200000]
#
# lineem is built from ../shared/tools/lineem (KERF_SHARED to say where).
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
BAUD=${BAUD:-9600} KSPEED=${KSPEED:-115200} SIZE=${SIZE:-200000}
KERF=${1:-}
W=$(mktemp -d /tmp/kerf-slowline.XXXXXX)
trap 'rm -rf "$W"' EXIT
if [ -z "$KERF" ]; then
	KERF=$W/kerf
	(cd "$here" && go build -o "$KERF" ./cmd/kerf) || exit 1
fi
shared=${KERF_SHARED:-$here/../shared}
(cd "$shared/tools/lineem" && go build -o "$W/lineem" .) || exit 1
mkdir -p "$W/in"
head -c "$SIZE" /dev/urandom >"$W/f.bin"
"$W/lineem" -paths "$W/paths" -baud "$BAUD" >"$W/lineem.log" 2>&1 &
LP=$!
sleep 1
read -r A B <"$W/paths"
timeout 1800 "$KERF" --json serial receive --line "$B" --speed "$KSPEED" --dir "$W/in" >"$W/recv.log" 2>&1 &
RP=$!
sleep 0.5
s=$(date +%s.%N)
timeout 1800 "$KERF" --json --log-level debug serial send --line "$A" --speed "$KSPEED" "$W/f.bin" >"$W/send.log" 2>&1
e=$(date +%s.%N)
wait $RP
kill $LP
whole=$(cmp -s "$W/f.bin" "$W/in/f.bin" && echo whole || echo NOT-WHOLE)
echo "line $BAUD bps, kerf told $KSPEED, $SIZE bytes: $(echo "$e - $s" | bc) s, sender timeouts $(grep -c msg=timeout "$W/send.log"), $(grep -o 'stats="[^"]*"' "$W/send.log"), copy $whole"
