#!/bin/bash
# Chaos run (by hand, not in CI): kill -9 the client or the server of a
# `send -r` or `get -r` at a random moment (20-620 ms in), with or
# without --sessions 4 and -z, then run it again with --resume. A
# killed server is started again at once, and its client must dial it
# again (--reconnect) and finish. After each run every file under its
# final name must equal its source (a wrong byte under a final name is
# the one failure that matters), and after the rerun the copy must be
# exact with no partials left.
#
#   bench/chaos.sh                 # ROUNDS [30] PORT [23370] K [built from this tree]
#
# Tree: one 800 MB file, 300 files of 0-196 KB with spaces and a
# non-ASCII letter in their names, an empty file; in /dev/shm/chaos.
# Prints a line per round and bad=0 or bad=1 at the end.
# bytes, and that the rerun completes the copy exactly.
set -u
K=${K:-}; W=/dev/shm/chaos; PORT=${PORT:-23370}; ROUNDS=${ROUNDS:-30}
if [ -z "$K" ]; then
  K=/tmp/kerf-chaos; (cd "$(dirname "$0")/.." && go build -o $K ./cmd/kerf) || exit 1
fi
rm -rf $W/root $W/get $W/home $W/st; mkdir -p $W/src/tree/sub $W/root $W/home $W/get
export HOME=$W/home KERF_USER=u
[ -s $W/src/tree/big.bin ] || head -c 800000000 /dev/urandom > $W/src/tree/big.bin
for i in $(seq 300); do head -c $((RANDOM * 6)) /dev/urandom > "$W/src/tree/sub/f $i ü.bin"; done
: > $W/src/tree/empty
$K key --identity $W/id > /dev/null 2>&1
FP=$($K key --identity $W/id 2>&1 | grep -o 'sha256:[0-9a-f]*' | head -1)
$K user add --root $W/root --key $FP --state $W/st u > /dev/null 2>&1
start_server() { $K serve --root $W/root --listen 127.0.0.1:$PORT --plain-data --state $W/st > $W/serve.log 2>&1 & SP=$!; sleep 0.5; }
check_final() { # every non-partial file under $1 must equal its source under $2
  find "$1" -type f ! -name '.*.kerf-part' -print0 | while IFS= read -r -d '' f; do
    rel=${f#$1/}; if ! cmp -s "$f" "$2/$rel"; then echo "BAD FINAL: $f"; fi; done; }
start_server
bad=0
for r in $(seq $ROUNDS); do
  mode=$(( RANDOM % 4 )); victim=$(( RANDOM % 2 )); delay=$(printf "0.%03d" $(( RANDOM % 600 + 20 )))
  extra=""; [ $(( RANDOM % 3 )) = 0 ] && extra="--sessions 4"; [ $(( RANDOM % 4 )) = 0 ] && extra="$extra -z"
  if [ $(( mode % 2 )) = 0 ]; then
    cmd="send --identity $W/id --accept-new-host-key --plain-data $extra -r $W/src/tree 127.0.0.1:$PORT/"
    dst=$W/root/tree
  else
    cmd="get --identity $W/id --accept-new-host-key --plain-data $extra -r 127.0.0.1:$PORT/tree $W/get/"
    dst=$W/get/tree
    [ -d $W/root/tree ] || { cp -r $W/src/tree $W/root/; }
  fi
  $K -q $cmd > $W/run1.log 2>&1 & CP=$!
  sleep $delay
  if [ $victim = 0 ]; then kill -9 $CP; else kill -9 $SP; wait $SP 2>/dev/null; sleep 0.$(( RANDOM % 9 )); start_server; fi
  # A client whose server died dials it again (--reconnect) and goes on.
  wait $CP 2>/dev/null; rc1=$?
  out=$(check_final $dst $W/src/tree); [ -n "$out" ] && { echo "round $r: after the first run: $out"; bad=1; }
  $K -q ${cmd/ -r / --resume -r } > $W/run2.log 2>&1; rc2=$?
  out=$(check_final $dst $W/src/tree)
  parts=$(find $dst -name '.*.kerf-part' | wc -l)
  d=$(diff -r $W/src/tree $dst > /dev/null 2>&1 && echo same || echo DIFF)
  echo "round $r: mode=$mode victim=$victim delay=$delay extra='$extra' rc1=$rc1 rc2=$rc2 $d parts=$parts $out"
  [ $rc2 != 0 -o $d != same -o $parts != 0 -o -n "$out" ] && { bad=1; cp $W/run2.log $W/fail-$r.log; }
  # Reset the destination half the time so both fresh and resumed runs occur.
  [ $(( RANDOM % 2 )) = 0 ] && rm -rf $dst
done
kill $SP
echo "bad=$bad"
