#!/bin/bash
# memget.sh BIN SESSIONS: peak server RSS and largest live heap for get -r of 100k empty files

W=/dev/shm/memget; K=$1; S=$2
mkdir -p $W/state $W/root
if [ ! -d $W/root/E100k ]; then
python3 -c "
import os
for i in range(100000):
  d='$W/root/E100k/d%03d'%(i%100); os.makedirs(d,exist_ok=True); open(d+'/f%07d_some_longer_name_for_realism'%i,'w').close()"
fi
export HOME=$W/home; mkdir -p $HOME
[ -f $W/id ] || { fp=$($K key --identity $W/id 2>/dev/null); $K user add --root $W/root --key "$fp" --state $W/state u >/dev/null 2>&1; }
GODEBUG=gctrace=1 $K serve --root $W/root --listen 127.0.0.1:17991 --state $W/state 2>$W/serve.log & P=$!
sleep 1
rm -rf $W/out; mkdir -p $W/out
KERF_USER=u $K -q get --identity $W/id --accept-new-host-key --sessions $S -r 127.0.0.1:17991/E100k $W/out/ ; rc=$?
hwm=$(grep VmHWM /proc/$P/status | awk '{print $2}')
kill $P; wait $P 2>/dev/null || true
live=$(grep '^gc ' $W/serve.log | awk '{split($11,a,"->"); print a[2]}' | sort -n | tail -1)
n=$(find $W/out -type f | wc -l)
echo "bin=$K sessions=$S rc=$rc files=$n VmHWM=${hwm}kB max_live_after_gc=${live}MB"
