#!/bin/bash
# bigdir.sh BIN [BIN...]: memory of listing, matching and deleting in big
# directories, each build in turn on the same trees (tmpfs):
#   ls D, ls D/entry*, get D/entry* (--sessions 1), rm D/entry*   (D: 500,000 empty files)
#   8 x ls D at once;  ls -R and ls -R --json of T (1,000 dirs x 1,000 files)
#   send --resume -r L with nothing to send (L: 200 dirs x 1,000 files, sent
#   once before, with the first build)
# For each: the server's peak RSS (VmHWM, a fresh server each time), the
# client's max RSS and seconds, and the lines printed (checked).
# CASES="ls lspat getpat rm ls8 lsR" chooses; W= the scratch dir (tmpfs).
set -u
W=${W:-/dev/shm/kerf-bigdir}; CASES=${CASES:-"ls lspat getpat rm ls8 lsR resume"}
SRV=$W/srv; D=$SRV/flat500k; T=$SRV/tree1m; PORT=${PORT:-46500}; H=127.0.0.1:$PORT
mkdir -p $SRV
mkflat() {
	[ -d $D ] && [ "$(ls -f $D | wc -l)" -ge 500002 ] && return
	rm -rf $D; python3 -c "
import os; os.makedirs('$D', exist_ok=True)
for i in range(500000): open('$D/entry_with_a_longish_name_%07d.dat'%i,'wb').close()"
}
mktree() {
	[ -d $T/d999 ] && return
	python3 -c "
import os
for d in range(1000):
    p='$T/d%03d'%d; os.makedirs(p, exist_ok=True)
    for i in range(1000): open(p+'/file_%04d.dat'%i,'wb').close()"
}
mklocal() {
	[ -d $W/local200k/d199 ] && return
	python3 -c "
import os
for d in range(200):
    p='$W/local200k/d%03d'%d; os.makedirs(p, exist_ok=True)
    for i in range(1000): open(p+'/file_%04d.dat'%i,'wb').close()"
}
serve() { $B serve --root $SRV --listen $H --data-listen 127.0.0.1:$((PORT+1)) > $W/server.log 2>&1 & SP=$!; sleep 0.5; }
peak() { echo $(( $(awk '/VmHWM/{print $2}' /proc/$SP/status) / 1024 )); }
stop() { kill $SP; wait $SP 2>/dev/null; }
# one NAME EXPECTED-LINES cmd...: a fresh server, the command timed
one() {
	local name=$1 want=$2; shift 2
	serve
	/usr/bin/time -f "%e %M" -o $W/ct "$@" > $W/out 2> $W/err; local rc=$?
	local lines=$(wc -l < $W/out) ok=ok
	[ $rc = 0 ] && { [ "$want" = - ] || [ "$lines" = "$want" ]; } || ok="FAIL(rc=$rc lines=$lines)"
	printf "| %s | %s | %s | %s | %s | %s |\n" "$(basename $B)" "$name" "$(peak)" "$(awk '{print int($2/1024)}' $W/ct)" "$(awk '{print $1}' $W/ct)" "$ok"
	stop
}
echo "| build | case | server peak MB | client MB | client s | check |"
echo "|---|---|---:|---:|---:|---|"
for B in "$@"; do
	S=$W/state-$(basename $B); rm -rf $S $W/home; mkdir -p $S $W/home
	export HOME=$W/home KERF_STATE=$S KERF_USER=qa KERF_PASSWORD=qapass123
	echo $KERF_PASSWORD | $B user add qa --root $SRV --password-stdin > /dev/null 2>&1
	serve; $B ls --accept-new-host-key $H/ > /dev/null 2>&1; stop # pins the key
	serve; $B ls $H/ > /dev/null; printf "| %s | idle server, one ls of / | %s | | | |\n" "$(basename $B)" "$(peak)"; stop
	for c in $CASES; do
		case $c in
		ls) mkflat; one "ls D" 500000 $B ls $H/flat500k ;;
		lspat) mkflat; one "ls D/entry*" 500000 $B ls "$H/flat500k/entry*" ;;
		getpat) mkflat; rm -rf $W/get; mkdir -p $W/get
			one "get D/entry*" - $B -q get --sessions 1 "$H/flat500k/entry*" $W/get/
			[ "$(ls -f $W/get | wc -l)" = 500002 ] || echo "FAIL: get D/entry* brought $(($(ls -f $W/get | wc -l) - 2)) files"
			rm -rf $W/get ;;
		rm) mkflat; one "rm D/entry*" - $B rm "$H/flat500k/entry*"
			[ "$(ls -f $D | wc -l)" = 2 ] || echo "FAIL: rm D/entry* left $(($(ls -f $D | wc -l) - 2))" ;;
		ls8) mkflat; serve; pids=""
			for i in 1 2 3 4 5 6 7 8; do $B ls $H/flat500k > $W/ls8-$i.out 2>&1 & pids="$pids $!"; done
			bad=0; for p in $pids; do wait $p || bad=$((bad+1)); done
			lines=$(cat $W/ls8-*.out | wc -l); ok=ok; [ $bad = 0 ] && [ $lines = 4000000 ] || ok="FAIL($bad failed, $lines lines)"
			printf "| %s | 8 x ls D at once | %s | | | %s |\n" "$(basename $B)" "$(peak)" "$ok"; stop ;;
		lsR) mktree; one "ls -R T" 1001001 $B ls -R $H/tree1m
			one "ls -R --json T" 1001002 $B ls -R --json $H/tree1m ;;
		resume) mklocal
			if [ ! -d $SRV/local200k/d199 ]; then serve; $B -q send -r $W/local200k $H/ || echo "FAIL: the first send"; stop; fi
			one "send --resume -r L (nothing to send)" - $B -q send --resume -r $W/local200k $H/ ;;
		esac
	done
done
