#!/usr/bin/env bash
# bench/outage.sh — how long a kerf send takes to pick up again after the
# link is cut (no reset: every packet dropped) and healed, on an emulated
# WAN link (../shared/tools/wanem). Two builds side by side, every copy
# checked.
#
#   KERF=./new KERF_B=./old bench/outage.sh      # as root; ~3 min per row and outage
#   OUTAGES="30 60 120" RATE=100mbit DELAY=20ms SIZE_MB=200 bench/outage.sh
#
# Each run: kerf serve on side B, kerf send of SIZE_MB random bytes from
# side A (two data streams, the default); CUT_AT seconds in, nftables in
# A's namespace drops every packet both ways for the outage, then lets
# them through again. after heal = the client's exit minus the heal: the
# rest of the file (SIZE_MB less what had moved, at RATE) plus the time
# the connections took to notice that the link was back.
#
# Environment: OUTAGES [60 120] seconds, RATE [100mbit], DELAY [20ms one
# way], SIZE_MB [200], CUT_AT [4], KERF, KERF_B (a second build; its row
# is kerf-b), WANEM_DIR [../shared/tools/wanem], OUT [bench/out/outage-DATE].
#
# MODE=rerun: the client gives up instead (killed during the cut, as a
# user's Ctrl-C or a dead laptop), and once the link is back a
# `send --resume -r --sessions SESSIONS [4]` of the same tree (FILES [40]
# files making SIZE_MB) runs at once; its server still has the old
# sessions, silent on dead connections, holding their partials until it
# takes them over (`serve --take-over-after`, 60 s). total s is then the
# rerun's time, after heal the same.
#
#   MODE=rerun OUTAGES=2 RATE=200mbit SIZE_MB=400 KERF=./new KERF_B=./old bench/outage.sh
#
# MODE=restart: no cut; CUT_AT seconds in, the server is killed (kill -9)
# and started again OUTAGES seconds later, as an upgrade or a crash and
# its service manager would. A client that dials again by itself
# (--reconnect, the default since the twenty-third session) finishes
# on its own; one that exits with the loss (an older build, or
# KERF_B_ARGS="--reconnect 0") is run again with --resume at once, as a
# retrying script would, and its row's "rerun" says so. total s counts
# from the first start to the end of the last run.
#
#   MODE=restart OUTAGES="2 10" KERF=./new KERF_B=./old bench/outage.sh
#
# TREE=1 (MODE wait or restart): the send is of the tree (FILES files
# making SIZE_MB, `--sessions SESSIONS -r`), as in MODE=rerun: how a
# several-session send comes back after a restart.
#
#   MODE=restart TREE=1 FILES=3000 SIZE_MB=24 OUTAGES=3 CUT_AT=6 DELAY=25ms KERF=./new KERF_B=./old bench/outage.sh
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
OUTAGES=${OUTAGES:-"60 120"} RATE=${RATE:-100mbit} DELAY=${DELAY:-20ms} SIZE_MB=${SIZE_MB:-200} CUT_AT=${CUT_AT:-4}
WANEM_DIR=${WANEM_DIR:-$here/../shared/tools/wanem}
OUT=${OUT:-$here/bench/out/outage-$(date -u +%Y%m%dT%H%M%SZ)}
WORK=/dev/shm/kerf-outage
die() { echo "outage.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (network namespaces, nftables)"
command -v nft >/dev/null || { apt-get update -qq && apt-get install -y -qq nftables >/dev/null; }
mkdir -p "$OUT/logs" "$WORK"
if [ -z "${KERF:-}" ]; then
	KERF=$WORK/kerf
	(cd "$here" && go build -o "$KERF" ./cmd/kerf) || die "building kerf failed"
fi
ROWS="kerf"
[ -n "${KERF_B:-}" ] && ROWS="kerf kerf-b"
(cd "$WANEM_DIR" && go build -o "$WORK/wanem" .)
MODE=${MODE:-wait} FILES=${FILES:-40} SESSIONS=${SESSIONS:-4}
tree=${TREE:-}
[ "$MODE" = rerun ] && tree=1
SRC=$WORK/src DST=$WORK/dst
mkdir -p "$SRC"
[ "$(stat -c %s "$SRC/data.bin" 2>/dev/null || echo 0)" = $((SIZE_MB << 20)) ] || head -c $((SIZE_MB << 20)) /dev/urandom >"$SRC/data.bin"
if [ -n "$tree" ] && [ "$(cat "$SRC/tree.shape" 2>/dev/null)" != "$FILES $SIZE_MB" ]; then
	rm -rf "$SRC/tree"; mkdir -p "$SRC/tree"
	split -n "$FILES" -d -a 4 "$SRC/data.bin" "$SRC/tree/part-"
	echo "$FILES $SIZE_MB" >"$SRC/tree.shape"
fi

heal() { ip netns exec wanA nft delete table inet kerfcut 2>/dev/null || true; }
cleanup() {
	heal
	[ -n "${SRV:-}" ] && kill "$SRV" 2>/dev/null || true
	NS_A=wanA NS_B=wanB bash "$WANEM_DIR/down.sh" >"$OUT/logs/wanem-down.log" 2>&1 || true
}
trap cleanup EXIT
NS_A=wanA NS_B=wanB bash "$WANEM_DIR/up.sh" -delay "$DELAY" -rate "$RATE" >"$OUT/logs/wanem-up.log" 2>&1 ||
	die "wanem up failed (see $OUT/logs/wanem-up.log)"
cut() {
	ip netns exec wanA nft -f - <<-EOF
		table inet kerfcut {
			chain out { type filter hook output priority 0; policy drop; }
			chain in { type filter hook input priority 0; policy drop; }
		}
	EOF
}

export HOME=$WORK/home
rm -rf "$HOME" "$WORK/state" && mkdir -p "$HOME" "$WORK/state" "$DST"
fp=$("$KERF" key --identity "$WORK/id" 2>/dev/null)
"$KERF" user add --root "$DST" --key "$fp" --state "$WORK/state" bench >/dev/null 2>&1

res=$OUT/results.tsv; : >"$res"
for outage in $OUTAGES; do
	for row in $ROWS; do
		bin=$KERF
		[ "$row" = kerf-b ] && bin=$KERF_B
		for ((i = 0; i < 50; i++)); do
			ip netns exec wanB ss -Hltn 'sport = :1649' | grep -q . || break
			sleep 0.1
		done
		serve() {
			ip netns exec wanB "$bin" serve --root "$DST" --listen 10.77.0.2:1649 --state "$WORK/state" >>"$OUT/logs/$row-$outage-serve.log" 2>&1 &
			SRV=$!
		}
		serve
		sleep 0.5
		rm -rf "$DST/data.bin" "$DST/tree"
		log=$OUT/logs/$row-$outage.log
		t0=$(date +%s.%N)
		send=("$bin" -q send --identity "$WORK/id" --accept-new-host-key)
		if [ "$row" = kerf-b ] && [ -n "${KERF_B_ARGS:-}" ]; then
			read -r -a extra <<<"$KERF_B_ARGS"
			send+=("${extra[@]}")
		fi
		if [ -n "$tree" ]; then
			send+=(--sessions "$SESSIONS" -r "$SRC/tree")
		else
			send+=("$SRC/data.bin")
		fi
		ip netns exec wanA env KERF_USER=bench "${send[@]}" 10.77.0.2 >"$log" 2>&1 &
		CL=$!
		sleep "$CUT_AT"
		if [ "$MODE" = rerun ]; then
			# The old client's connections stay cut after the heal (as
			# when the client came back from another address): its
			# kernel would otherwise reset them, and the server's
			# sessions end at once.
			ports=$(ip netns exec wanA ss -Htnp state established | grep "pid=$CL," | awk '{split($3,a,":"); print a[length(a)]}' | paste -sd, -)
		fi
		if [ "$MODE" = restart ]; then
			kill -9 "$SRV"; wait "$SRV" 2>/dev/null || true
			sleep "$outage"
			serve
		else
			cut
			[ "$MODE" = rerun ] && { kill -9 "$CL"; wait "$CL" 2>/dev/null || true; }
			sleep "$outage"
			heal
		fi
		if [ "$MODE" = rerun ] && [ -n "$ports" ]; then
			ip netns exec wanA nft -f - <<-EOF
				table inet kerfcut {
					chain out { type filter hook output priority 0; tcp sport { $ports } drop; }
					chain in { type filter hook input priority 0; tcp dport { $ports } drop; }
				}
			EOF
		fi
		th=$(date +%s.%N)
		ok=0
		rerun=no
		if [ "$MODE" = rerun ]; then
			t0=$th
			ip netns exec wanA env KERF_USER=bench "${send[@]:0:${#send[@]}-1}" --resume "$SRC/tree" 10.77.0.2 >>"$log" 2>&1 && ok=1
		elif wait "$CL"; then
			ok=1
		elif [ "$MODE" = restart ]; then
			rerun=yes
			what=$SRC/data.bin
			[ -n "$tree" ] && what=$SRC/tree
			ip netns exec wanA env KERF_USER=bench "${send[@]:0:${#send[@]}-1}" --resume "$what" 10.77.0.2 >>"$log" 2>&1 && ok=1
		fi
		t1=$(date +%s.%N)
		heal
		same() { if [ -n "$tree" ]; then diff -r "$SRC/tree" "$DST/tree" >/dev/null; else cmp -s "$SRC/data.bin" "$DST/data.bin"; fi; }
		if [ $ok = 1 ] && same; then
			echo -e "$row\t$outage\t$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')\t$(awk -v a="$th" -v b="$t1" 'BEGIN{printf "%.1f", b-a}')\t$rerun" >>"$res"
		else
			echo -e "$row\t$outage\tFAIL\tFAIL\t$rerun" >>"$res"
		fi
		kill "$SRV" 2>/dev/null || true; wait "$SRV" 2>/dev/null || true; SRV=
	done
done

{
	echo "| outage (s) | row | total s | after heal s | rerun |"
	echo "|---:|---|---:|---:|---|"
	awk -F'\t' '{printf "| %s | %s | %s | %s | %s |\n", $2, $1, $3, $4, $5}' "$res"
	echo
	echo "link: RATE=$RATE DELAY=$DELAY (one way); SIZE_MB=$SIZE_MB; cut at ${CUT_AT}s; $(date -u +%FT%RZ); kerf $KERF${KERF_B:+, kerf-b $KERF_B}"
	echo "a rest at full rate takes about $(awk -v m="$SIZE_MB" -v r="$RATE" 'BEGIN{sub(/mbit/,"",r); printf "%.0f", m*8.39/r}') s less what moved before the cut"
} | tee "$OUT/table.md"
