#!/usr/bin/env bash
# bench/lan.sh — kerf beside the usual LAN file movers, on loopback, with
# source and destination on tmpfs. Run by hand (as root: it installs and
# starts the peers), not in CI.
#
#   bench/lan.sh                          # everything, REPS runs each (~8 min)
#   TOOLS="raw kerf" CASES=small bench/lan.sh
#   DIRECTION=get bench/lan.sh            # clients pull instead of push
#
# Tools (rows), each a client pushing to a server it starts itself:
#   raw       file | socat -> socat > file with 128 KiB buffers (trees:
#             tar | socat -> socat | tar): the ceiling
#   ftp       vsftpd; curl -T for one file, lftp mirror -R --parallel=4
#             for trees
#   scp       OpenSSH scp (SFTP protocol) to sshd, aes128-gcm
#   rsync     rsync -a to an rsync daemon (rsync://), whole files
#   ckermit   C-Kermit to C-Kermit over a raw TCP socket: streaming,
#             9024-byte packets, no control prefixing
#   kerf      kerf send [-r] to kerf serve, plaintext data connections;
#             the client logs in with a key (kerf key, like scp's), or
#             with a password where the binary has no key login
#   kerf-tls  the same with TLS on the data connections (once kerf has it;
#             "pending" until then)
#   kerf-b    kerf send/serve of the binary KERF_B, plaintext: to compare
#             two builds side by side (not in the default TOOLS)
#   kerf-tls-b  the same with TLS on the data connections
#   kerf-quic the data channel over QUIC (serve --quic, send --quic; not
#             in the default TOOLS)
# Cases: big (one 1 GiB random file), small (2,000 files of 16 KiB in 20
# directories), medium (200 files of 4 MiB).
#
# Every copy is compared with its source byte for byte (cmp / diff -r); a
# run whose copy differs, or whose client fails, is reported as FAIL and
# its figures do not count. Seconds run from the client's start until the
# client and (where the server is started per run) the server have exited.
# The figure shown is the median of REPS runs ("best": the fastest run);
# CPU is the client's
# user+sys (from /usr/bin/time, children included) plus the server's
# (from /proc/PID/stat, utime+stime+cutime+cstime, before and after, once
# the server's per-session children have exited), median too.
#   vs raw  = raw seconds / tool seconds (1.00 = as fast as the raw pipe)
#   vs kerf = kerf seconds / tool seconds (below 1 = slower than kerf)
#
# Environment (defaults in brackets):
#   TOOLS ["raw ftp scp rsync ckermit kerf kerf-tls"]
#   CASES ["big small medium"]
#   REPS [5]   REPS_SLOW [1] for ckermit (about 50 s per GiB)
#   BIG_MB [1024]  SMALL_N [2000]  SMALL_KB [16]  MEDIUM_N [200]  MEDIUM_MB [4]
#   WORK [/dev/shm/kerf-lan]: must be tmpfs; removed at the end unless KEEP=1
#   KERF: a kerf binary (default: built from this tree into WORK)
#   KERF_B: the second kerf binary of the kerf-b row
#   KERF_STREAMS [kerf's default]: --streams for kerf send
#   INSTALL [1]: apt-get install missing peers
#   OUT [bench/out/lan-DATE]: results.tsv, table.md, per-run logs
#   DIRECTION [send]: get has each client fetch the case from its server
#     (socat | tar the other way, curl -o / lftp mirror, scp and rsync from
#     the server, kerf get [-r]) into WORK/pull; the servers serve WORK/dst,
#     filled with the sources first. C-Kermit has no row in this direction.
set -euo pipefail
DIRECTION=${DIRECTION:-send}
case $DIRECTION in send | get) ;; *) echo "lan.sh: DIRECTION is send or get" >&2; exit 2 ;; esac

TOOLS=${TOOLS:-"raw ftp scp rsync ckermit kerf kerf-tls"}
CASES=${CASES:-"big small medium"}
REPS=${REPS:-5}
REPS_SLOW=${REPS_SLOW:-1}
BIG_MB=${BIG_MB:-1024}
SMALL_N=${SMALL_N:-2000}
SMALL_KB=${SMALL_KB:-16}
MEDIUM_N=${MEDIUM_N:-200}
MEDIUM_MB=${MEDIUM_MB:-4}
WORK=${WORK:-/dev/shm/kerf-lan}
KERF_STREAMS=${KERF_STREAMS:-}
INSTALL=${INSTALL:-1}
KEEP=${KEEP:-0}
PORT0=${PORT0:-17400}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/.." && pwd)
OUT=${OUT:-$root/bench/out/lan-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/logs"
OUT=$(cd "$OUT" && pwd)
TCK=$(getconf CLK_TCK)

die() { echo "lan.sh: $*" >&2; exit 1; }
log() { echo "lan.sh: $*" >&2; }

[ "$(id -u)" = 0 ] || die "run as root (it installs and starts vsftpd, sshd, rsync --daemon)"

# --- peers ---
need=()
command -v socat >/dev/null || need+=(socat)
command -v curl >/dev/null || need+=(curl)
command -v lftp >/dev/null || need+=(lftp)
[ -x /usr/sbin/vsftpd ] || need+=(vsftpd)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v scp >/dev/null || need+=(openssh-client)
command -v rsync >/dev/null || need+=(rsync)
command -v kermit >/dev/null || need+=(ckermit)
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
	[ "$INSTALL" = 1 ] || die "missing: ${need[*]}"
	log "installing ${need[*]}"
	apt-get update -qq >/dev/null
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# --- work area on tmpfs ---
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
[ "$(stat -f -c %T "$WORK")" = tmpfs ] || die "WORK=$WORK is not on tmpfs"
SRC=$WORK/src
DST=$WORK/dst
RUN=$WORK/run
PULL=$WORK/pull # where a get lands
mkdir -p "$SRC" "$DST" "$RUN" "$PULL"

pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ "$KEEP" = 1 ] || rm -rf "$WORK"
}
trap cleanup EXIT

# --- kerf ---
KERF_DESC="$(cd "$root" && git describe --always --dirty 2>/dev/null || echo unknown)"
if [ -z "${KERF:-}" ]; then
	KERF=$WORK/kerf
	(cd "$root" && go build -o "$KERF" ./cmd/kerf) || die "building kerf failed"
	KERF_DESC="built from $KERF_DESC"
else
	KERF_DESC="KERF=$KERF (tree at $KERF_DESC)"
fi
KERF=$(cd "$(dirname "$KERF")" && pwd)/$(basename "$KERF")
# The CLI grows (TLS, users, host keys): each binary's flags are read from
# its --help. kerf_flags BIN sets SERVE_PLAIN, SEND_PLAIN (--plain-data:
# TLS is then the default for data), AUTH (a users file), KEYAUTH (login
# with a client key: kerf key, send --identity, user add --key: no
# argon2 hash per session, as scp logs in with a key), SEND_EXTRA.
has_flag() { grep -q -- "$2" <<<"$1"; }
KERF_ID=$WORK/kerf-identity
kerf_flags() {
	local sh ch
	sh=$("$1" serve --help 2>&1 || true)
	ch=$("$1" send --help 2>&1 || true)
	SERVE_PLAIN=() SEND_PLAIN=() SEND_EXTRA=() AUTH=0 KEYAUTH=0
	has_flag "$sh" --plain-data && SERVE_PLAIN=(--plain-data)
	has_flag "$ch" --plain-data && SEND_PLAIN=(--plain-data)
	"$1" user --help >/dev/null 2>&1 && AUTH=1
	if [ "$AUTH" = 1 ] && has_flag "$ch" --identity && has_flag "$("$1" user add --help 2>&1 || true)" --key; then
		KEYAUTH=1
		SEND_EXTRA+=(--identity "$KERF_ID")
	fi
	has_flag "$ch" --accept-new-host-key && SEND_EXTRA+=(--accept-new-host-key)
	has_flag "$ch" --known-hosts && SEND_EXTRA+=(--known-hosts "$WORK/kerf-known-hosts")
	return 0
}
kerf_flags "$KERF"
KERF_TLS=0
[ ${#SEND_PLAIN[@]} -gt 0 ] && KERF_TLS=1
KERF_STATE=$WORK/kerf-state
export KERF_USER=bench KERF_PASSWORD=benchpass
kerf_bin() { case $1 in kerf-b | kerf-tls-b) echo "$KERF_B" ;; *) echo "$KERF" ;; esac; }
case " $TOOLS " in *" kerf-b "* | *" kerf-tls-b "*)
	[ -x "${KERF_B:-}" ] || die "kerf-b needs KERF_B, a kerf binary"
	KERF_B=$(cd "$(dirname "$KERF_B")" && pwd)/$(basename "$KERF_B") ;;
esac

# --- source files ---
make_sources() {
	case " $CASES " in *" big "*)
		[ -f "$SRC/big/big.bin" ] || { mkdir -p "$SRC/big"; head -c $((BIG_MB << 20)) /dev/urandom >"$SRC/big/big.bin"; } ;;
	esac
	case " $CASES " in *" small "*)
		[ -d "$SRC/small" ] || { mkdir -p "$SRC/small"; for ((i = 0; i < SMALL_N; i++)); do
			d=$SRC/small/d$((i / 100)); [ -d "$d" ] || mkdir -p "$d"
			head -c $((SMALL_KB << 10)) /dev/urandom >"$d/f$i.bin"; done; } ;;
	esac
	case " $CASES " in *" medium "*)
		[ -d "$SRC/medium" ] || { mkdir -p "$SRC/medium"; for ((i = 0; i < MEDIUM_N; i++)); do
			head -c $((MEDIUM_MB << 20)) /dev/urandom >"$SRC/medium/f$i.bin"; done; } ;;
	esac
}
log "making source files in $SRC"
make_sources

case_bytes() { du -sb --apparent-size "$SRC/$1" | cut -f1; }
case_files() { find "$SRC/$1" -type f | wc -l; }

# The thing a client sends for a case, and what must appear in $DST.
# big: the file big.bin lands as $DST/big.bin; trees land as $DST/small etc.
# In DIRECTION=get the copy lands in $PULL the same way, and $DST holds
# what the servers serve.
verify() { # case
	local to=$DST; [ "$DIRECTION" = get ] && to=$PULL
	if [ "$1" = big ]; then
		cmp -s "$SRC/big/big.bin" "$to/big.bin"
	else
		diff -rq "$SRC/$1" "$to/$1" >/dev/null
	fi
}
clear_dst() {
	if [ "$DIRECTION" = get ]; then
		find "$PULL" -mindepth 1 -delete
	else
		find "$DST" -mindepth 1 -delete
	fi
	sync_tmpfs
}
# serve_sources puts every case where a send would have put it, for the
# servers to serve in DIRECTION=get.
serve_sources() {
	find "$DST" -mindepth 1 -delete
	for cs in $CASES; do
		if [ "$cs" = big ]; then cp "$SRC/big/big.bin" "$DST/big.bin"; else cp -r "$SRC/$cs" "$DST/$cs"; fi
	done
	chmod -R a+rX "$DST"
}
sync_tmpfs() { :; }

# CPU seconds (x100 ticks) of a process and its reaped children.
proc_ticks() { awk '{print $14+$15+$16+$17}' "/proc/$1/stat" 2>/dev/null || echo 0; }
# Wait (up to 5 s) until a daemon's per-session children are gone.
wait_children() {
	for _ in $(seq 50); do
		pgrep -P "$1" >/dev/null || return 0
		sleep 0.1
	done
}
now() { date +%s.%N; }

# --- servers: start_TOOL sets SERVER_PID (a daemon kept for all runs) ---
SERVER_PID=
port_of() { # tool
	local i=0
	for t in raw ftp scp rsync ckermit kerf kerf-tls kerf-b kerf-tls-b kerf-quic; do
		[ "$t" = "$1" ] && { echo $((PORT0 + 10 * i)); return; }
		i=$((i + 1))
	done
}
wait_port() { # port
	for _ in $(seq 100); do
		(exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0
		sleep 0.05
	done
	die "nothing listening on port $1"
}

start_ftp() {
	local p; p=$(port_of ftp)
	mkdir -p "$WORK/ftp" /var/run/vsftpd/empty
	chmod 755 "$WORK/ftp"
	# Anonymous uploads into $DST, bind-mounted under the (unwritable)
	# anonymous root.
	mkdir -p "$WORK/ftp/dst"
	mountpoint -q "$WORK/ftp/dst" || mount --bind "$DST" "$WORK/ftp/dst"
	chown ftp "$DST"
	cat >"$RUN/vsftpd.conf" <<-EOF
		listen=YES
		listen_address=127.0.0.1
		listen_port=$p
		anonymous_enable=YES
		no_anon_password=YES
		anon_root=$WORK/ftp
		write_enable=YES
		anon_upload_enable=YES
		anon_mkdir_write_enable=YES
		anon_other_write_enable=YES
		anon_umask=022
		local_enable=NO
		pasv_enable=YES
		pasv_min_port=$((p + 1))
		pasv_max_port=$((p + 8))
		pasv_address=127.0.0.1
		seccomp_sandbox=NO
		secure_chroot_dir=/var/run/vsftpd/empty
		xferlog_enable=NO
		max_per_ip=0
		max_clients=0
		background=NO
	EOF
	/usr/sbin/vsftpd "$RUN/vsftpd.conf" >"$OUT/logs/vsftpd.log" 2>&1 &
	SERVER_PID=$!
	wait_port "$p"
}
stop_ftp() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; umount "$WORK/ftp/dst" 2>/dev/null || true; chown root "$DST"; }

start_scp() {
	local p; p=$(port_of scp)
	mkdir -p "$RUN/ssh" /run/sshd
	[ -f "$RUN/ssh/host" ] || ssh-keygen -q -t ed25519 -N '' -f "$RUN/ssh/host"
	[ -f "$RUN/ssh/id" ] || ssh-keygen -q -t ed25519 -N '' -f "$RUN/ssh/id"
	cp "$RUN/ssh/id.pub" "$RUN/ssh/authorized_keys"
	cat >"$RUN/ssh/sshd_config" <<-EOF
		Port $p
		ListenAddress 127.0.0.1
		HostKey $RUN/ssh/host
		AuthorizedKeysFile $RUN/ssh/authorized_keys
		PermitRootLogin prohibit-password
		PasswordAuthentication no
		KbdInteractiveAuthentication no
		UsePAM no
		StrictModes no
		Subsystem sftp internal-sftp
		PidFile none
	EOF
	/usr/sbin/sshd -D -e -f "$RUN/ssh/sshd_config" >"$OUT/logs/sshd.log" 2>&1 &
	SERVER_PID=$!
	wait_port "$p"
}
stop_scp() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }

start_rsync() {
	local p; p=$(port_of rsync)
	cat >"$RUN/rsyncd.conf" <<-EOF
		use chroot = no
		uid = root
		gid = root
		max connections = 0
		[dst]
		path = $DST
		read only = no
	EOF
	rsync --daemon --no-detach --address=127.0.0.1 --port="$p" --config="$RUN/rsyncd.conf" >"$OUT/logs/rsyncd.log" 2>&1 &
	SERVER_PID=$!
	wait_port "$p"
}
stop_rsync() { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }

start_kerf() { # tool
	local p; p=$(port_of "$1")
	local extra=() bin; bin=$(kerf_bin "$1")
	kerf_flags "$bin"
	case $1 in kerf-tls | kerf-tls-b) ;; kerf-quic) extra=(--quic) ;; *) extra=("${SERVE_PLAIN[@]}") ;; esac
	if [ "$AUTH" = 1 ]; then
		local state=$KERF_STATE-$1 fp
		mkdir -p "$state"
		if [ "$KEYAUTH" = 1 ]; then
			fp=$("$bin" key --identity "$KERF_ID" 2>>"$OUT/logs/$1-user.log") ||
				die "$1: kerf key failed (see $OUT/logs/$1-user.log)"
			"$bin" user add --root "$DST" --key "$fp" --state "$state" bench >>"$OUT/logs/$1-user.log" 2>&1 ||
				die "$1: kerf user add --key failed (see $OUT/logs/$1-user.log)"
		else
			echo benchpass | "$bin" user add --root "$DST" --password-stdin --state "$state" bench >"$OUT/logs/$1-user.log" 2>&1 ||
				die "$1: kerf user add failed (see $OUT/logs/$1-user.log)"
		fi
		extra+=(--state "$state")
	fi
	"$bin" serve --root "$DST" --listen 127.0.0.1:"$p" "${extra[@]}" >"$OUT/logs/$1-serve.log" 2>&1 &
	SERVER_PID=$!
	wait_port "$p"
}
stop_kerf() {
	[ -r "/proc/$SERVER_PID/status" ] && grep VmHWM "/proc/$SERVER_PID/status" >>"$OUT/logs/$1-serve.log"
	kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true
}

# --- one run: client command per tool and case ---
# Prints "seconds cpu" or "FAIL reason". Per-run servers (raw, ckermit)
# are started here and timed with /usr/bin/time.
run_one() { # tool case rep
	local tool=$1 cs=$2 rep=$3
	local lg=$OUT/logs/$tool-$cs-$rep
	local p; p=$(port_of "$tool")
	local srvtime=$lg.srvtime clitime=$lg.time
	local srv=() cli=() sp="" s0=0 s1=0
	local what=$SRC/$cs
	[ "$cs" = big ] && what=$SRC/big/big.bin
	local name=$cs # what a get asks the server for
	[ "$cs" = big ] && name=big.bin
	clear_dst
	if [ "$DIRECTION" = get ]; then
		get_cmds "$tool" "$cs" "$name" "$p" "$lg"
	else
	case $tool in
	raw)
		if [ "$cs" = big ]; then
			# Through the shell's redirections: with socat's own OPEN:
			# address the same copy took 30-50% longer here.
			srv=(sh -c "socat -u -b 131072 TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr STDOUT >'$DST/big.bin'")
			cli=(sh -c "socat -u -b 131072 STDIN TCP:127.0.0.1:$p <'$what'")
		else
			srv=(sh -c "socat -u -b 131072 TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr STDOUT | tar -C '$DST' -xf -")
			cli=(sh -c "tar -C '$SRC' -cf - '$cs' | socat -u -b 131072 STDIN TCP:127.0.0.1:$p")
		fi ;;
	ckermit)
		local tree=""; [ "$cs" = big ] || tree=/recursive
		cat >"$lg.recv.ksc" <<-EOF
			set host * $p /raw-socket
			set file type binary
			set file collision overwrite
			set receive packet-length 9024
			set streaming on
			set reliable on
			set window 32
			set receive pathnames relative
			set transfer display none
			cd $DST
			receive
			exit
		EOF
		cat >"$lg.send.ksc" <<-EOF
			set host 127.0.0.1 $p /raw-socket
			set file type binary
			set send packet-length 9024
			set streaming on
			set reliable on
			set prefixing none
			set window 32
			set send pathnames relative
			set transfer display none
			cd $(dirname "$what")
			send $tree $(basename "$what")
			exit
		EOF
		srv=(kermit "$lg.recv.ksc" -Y)
		cli=(kermit "$lg.send.ksc" -Y) ;;
	ftp)
		if [ "$cs" = big ]; then
			cli=(curl -sS --ftp-pasv -T "$what" ftp://127.0.0.1:"$p"/dst/big.bin)
		else
			cli=(lftp -p "$p" -u anonymous, -e "set net:max-retries 1; set ftp:passive-mode on; mirror -R --parallel=4 --no-perms $what /dst/$cs; bye" 127.0.0.1)
		fi ;;
	scp)
		cli=(scp -q -r -c aes128-gcm@openssh.com -P "$p" -i "$RUN/ssh/id" -o StrictHostKeyChecking=no
			-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR "$what" root@127.0.0.1:"$DST/") ;;
	rsync)
		cli=(rsync -a --whole-file "$what" rsync://127.0.0.1:"$p"/dst/) ;;
	kerf | kerf-tls | kerf-b | kerf-tls-b | kerf-quic)
		kerf_cli "$tool" "$cs" send "$what" 127.0.0.1:"$p" ;;
	esac
	fi
	if [ ${#srv[@]} -gt 0 ]; then
		/usr/bin/time -f "%e %U %S %M" -o "$srvtime" "${srv[@]}" >"$lg.srv.out" 2>&1 &
		sp=$!
		[ "$tool" = raw ] && wait_port_quiet "$p"
		[ "$tool" = ckermit ] && sleep 0.5
	else
		s0=$(proc_ticks "$SERVER_PID")
	fi
	local t0 t1 rc=0
	t0=$(now)
	timeout 600 /usr/bin/time -f "%e %U %S %M" -o "$clitime" "${cli[@]}" >"$lg.out" 2>&1 || rc=$?
	if [ -n "$sp" ]; then
		wait "$sp" || true
	fi
	t1=$(now)
	local scpu
	if [ -n "$sp" ]; then
		scpu=$(awk '{print $2+$3}' "$srvtime" 2>/dev/null || echo 0)
	else
		wait_children "$SERVER_PID"
		s1=$(proc_ticks "$SERVER_PID")
		scpu=$(awk -v a="$s0" -v b="$s1" -v t="$TCK" 'BEGIN{print (b-a)/t}')
	fi
	local ccpu; ccpu=$(awk '{print $2+$3}' "$clitime" 2>/dev/null || echo 0)
	if [ "$rc" != 0 ]; then
		echo "FAIL client exit $rc"
		return
	fi
	if ! verify "$cs"; then
		echo "FAIL copy differs"
		return
	fi
	awk -v a="$t0" -v b="$t1" -v c="$ccpu" -v s="$scpu" 'BEGIN{printf "%.3f %.2f %.2f\n", b-a, c+s, s}'
}
# kerf_cli sets cli (run_one's) to a kerf client of a kerf row: send or
# get with the row's binary and flags, -r for trees, then FROM TO.
kerf_cli() { # tool case send|get from to
	local bin; bin=$(kerf_bin "$1")
	kerf_flags "$bin"
	local extra=("${SEND_EXTRA[@]}")
	[ -z "$KERF_STREAMS" ] || extra+=(--streams "$KERF_STREAMS")
	case $1 in kerf-tls | kerf-tls-b) ;; kerf-quic) extra+=(--quic) ;; *) extra+=("${SEND_PLAIN[@]}") ;; esac
	[ "$2" = big ] || extra+=(-r)
	cli=("$bin" -q "$3" "${extra[@]}" "$4" "$5")
	# Key login: no password in the environment, so the key is used.
	if [ "$KEYAUTH" = 1 ]; then cli=(env -u KERF_PASSWORD "${cli[@]}"); fi
}
# get_cmds sets srv and cli (run_one's) for a client fetching case cs
# (the server's name for it: name) in DIRECTION=get.
get_cmds() { # tool case name port log
	local tool=$1 cs=$2 name=$3 p=$4 lg=$5
	case $tool in
	raw)
		if [ "$cs" = big ]; then
			srv=(sh -c "socat -u -b 131072 STDIN TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr <'$DST/big.bin'")
			cli=(sh -c "socat -u -b 131072 TCP:127.0.0.1:$p STDOUT >'$PULL/big.bin'")
		else
			srv=(sh -c "tar -C '$DST' -cf - '$cs' | socat -u -b 131072 STDIN TCP-LISTEN:$p,bind=127.0.0.1,reuseaddr")
			cli=(sh -c "socat -u -b 131072 TCP:127.0.0.1:$p STDOUT | tar -C '$PULL' -xf -")
		fi ;;
	ftp)
		if [ "$cs" = big ]; then
			cli=(curl -sS --ftp-pasv -o "$PULL/big.bin" ftp://127.0.0.1:"$p"/dst/big.bin)
		else
			cli=(lftp -p "$p" -u anonymous, -e "set net:max-retries 1; set ftp:passive-mode on; mirror --parallel=4 --no-perms /dst/$cs $PULL/$cs; bye" 127.0.0.1)
		fi ;;
	scp)
		cli=(scp -q -r -c aes128-gcm@openssh.com -P "$p" -i "$RUN/ssh/id" -o StrictHostKeyChecking=no
			-o UserKnownHostsFile=/dev/null -o LogLevel=ERROR root@127.0.0.1:"$DST/$name" "$PULL/") ;;
	rsync)
		cli=(rsync -a --whole-file rsync://127.0.0.1:"$p"/dst/"$name" "$PULL/") ;;
	kerf | kerf-tls | kerf-b | kerf-tls-b | kerf-quic)
		kerf_cli "$tool" "$cs" get 127.0.0.1:"$p"/"$name" "$PULL" ;;
	ckermit) cli=(false) ;; # no row in this direction (run_one's caller skips it)
	esac
}
wait_port_quiet() { # port: until a listener answers, without connecting to it
	for _ in $(seq 100); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.02
	done
}

median() { sort -n | awk '{a[NR]=$1} END{if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

RES=$OUT/results.tsv
printf "tool\tcase\trep\tseconds\tcpu\tserver_cpu\n" >"$RES"

[ "$DIRECTION" = get ] && { log "copying the sources into $DST to be served"; serve_sources; }

# Servers that stay up (one port each), then the runs: repetitions
# outermost, so that a slow spell of the machine touches every tool alike.
declare -A SERVER
RUN_TOOLS=()
for tool in $TOOLS; do
	case $tool in
	kerf-tls)
		if [ "$KERF_TLS" != 1 ]; then
			log "kerf-tls: this kerf has no TLS data connections (no --plain-data flag): pending"
			for cs in $CASES; do printf "%s\t%s\t-\tpending\t-\t-\n" "$tool" "$cs" >>"$RES"; done
			continue
		fi
		start_kerf "$tool" ;;
	kerf | kerf-b | kerf-tls-b | kerf-quic) start_kerf "$tool" ;;
	ftp | scp | rsync) "start_$tool" ;;
	raw | ckermit) SERVER_PID= ;;
	*) die "unknown tool $tool" ;;
	esac
	SERVER[$tool]=$SERVER_PID
	[ -n "$SERVER_PID" ] && pids+=("$SERVER_PID")
	RUN_TOOLS+=("$tool")
done
for ((r = 1; r <= REPS; r++)); do
	for tool in "${RUN_TOOLS[@]}"; do
		[ "$tool" = ckermit ] && [ "$r" -gt "$REPS_SLOW" ] && continue
		[ "$tool" = ckermit ] && [ "$DIRECTION" = get ] && continue
		SERVER_PID=${SERVER[$tool]}
		for cs in $CASES; do
			res=$(run_one "$tool" "$cs" "$r")
			log "$tool $cs #$r: $res"
			if [[ $res == FAIL* ]]; then
				printf "%s\t%s\t%d\tFAIL\t%s\t-\n" "$tool" "$cs" "$r" "${res#FAIL }" >>"$RES"
			else
				read -r sec cpu scpu <<<"$res"
				printf "%s\t%s\t%d\t%s\t%s\t%s\n" "$tool" "$cs" "$r" "$sec" "$cpu" "$scpu" >>"$RES"
			fi
		done
	done
done
for tool in "${RUN_TOOLS[@]}"; do
	SERVER_PID=${SERVER[$tool]}
	case $tool in
	kerf | kerf-tls | kerf-b | kerf-tls-b | kerf-quic) stop_kerf "$tool" ;;
	ftp | scp | rsync) "stop_$tool" ;;
	esac
done

# --- table ---
TABLE=$OUT/table.md
{
	echo "| case | tool | seconds | best | MB/s | files/s | CPU s (client+server) | CPU s/GB | vs raw | vs kerf |"
	echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
	for cs in $CASES; do
		bytes=$(case_bytes "$cs")
		nfiles=$(case_files "$cs")
		sec_of() { awk -F'\t' -v t="$1" -v c="$cs" '$1==t && $2==c && $4 ~ /^[0-9.]+$/ {print $4}' "$RES" | median; }
		raw=$(sec_of raw)
		kerf=$(sec_of kerf)
		for tool in $TOOLS; do
			s=$(sec_of "$tool")
			cpu=$(awk -F'\t' -v t="$tool" -v c="$cs" '$1==t && $2==c && $4 ~ /^[0-9.]+$/ {print $5}' "$RES" | median)
			best=$(awk -F'\t' -v t="$tool" -v c="$cs" '$1==t && $2==c && $4 ~ /^[0-9.]+$/ {print $4}' "$RES" | sort -n | head -1)
			status=$(awk -F'\t' -v t="$tool" -v c="$cs" '$1==t && $2==c && $4 !~ /^[0-9.]+$/ {print $4; exit}' "$RES")
			if [ "$s" = - ]; then
				echo "| $cs | $tool | ${status:-n/a} | | | | | | | |"
				continue
			fi
			awk -v cs="$cs" -v t="$tool" -v s="$s" -v cpu="$cpu" -v b="$bytes" -v n="$nfiles" -v raw="$raw" -v k="$kerf" -v st="$status" -v best="$best" 'BEGIN {
				vr = (raw == "-") ? "" : sprintf("%.2f", raw / s)
				vk = (k == "-") ? "" : sprintf("%.2f", k / s)
				note = (st != "") ? " (some runs " st ")" : ""
				printf "| %s | %s | %.3f%s | %.3f | %.0f | %.0f | %.2f | %.2f | %s | %s |\n", cs, t, s, note, best, b / 1e6 / s, n / s, cpu, cpu / (b / 1e9), vr, vk
			}'
		done
	done
} >"$TABLE"
{
	echo
	echo "machine: $(nproc) cores, $(awk -F': ' '/model name/{print $2; exit}' /proc/cpuinfo), $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), kernel $(uname -r)"
	echo "command: DIRECTION=$DIRECTION TOOLS=\"$TOOLS\" CASES=\"$CASES\" REPS=$REPS REPS_SLOW=$REPS_SLOW KERF_STREAMS=${KERF_STREAMS:-default} bench/lan.sh   ($(date -u +%Y-%m-%dT%H:%MZ))"
	echo "kerf: $KERF_DESC; login: $(kerf_flags "$KERF"; [ "$KEYAUTH" = 1 ] && echo "client key" || echo password); kerf server peak RSS over all its runs: $(for f in "$OUT"/logs/kerf*-serve.log; do [ -f "$f" ] && grep -h VmHWM "$f" | awk -v n="$(basename "$f" -serve.log)" '{print n " " $2 " kB"}'; done | paste -sd, -)"
	echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} >>"$TABLE"
cat "$TABLE"
