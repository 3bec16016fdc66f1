#!/bin/bash
# Re-record the Send-Init / attribute transcripts in this directory.
# See README.md. Needs kermit (C-Kermit 10.0 Beta.08), gkermit (G-Kermit
# 2.01), socat and python3. Loopback only: the peers talk over two ptys.
# Usage: ./capture.sh [NAME...]   (default: every scenario)
set -u
here=$(cd "$(dirname "$0")" && pwd)
raw=$here/raw
mkdir -p "$raw"
export TZ=UTC # A-packet dates are local time; record them in UTC

# mkfiles DIR: the files every sender offers, with a fixed mtime.
mkfiles() {
	python3 -c 'import sys; sys.stdout.buffer.write((bytes(range(256))*4)[:1000])' >"$1/bin.dat"
	for i in $(seq 1 20); do echo "line $i of a small text file"; done >"$1/t.txt"
	touch -d '2024-02-29 13:14:15' "$1/bin.dat" "$1/t.txt"
	chmod 644 "$1/bin.dat" "$1/t.txt"
}

# run NAME LEFT-CMD RIGHT-CMD LEFT-SCRIPT RIGHT-SCRIPT [SETUP]
# LEFT runs in s/, RIGHT in r/ (both start with copies of the files in s/
# only). raw/NAME.l2r holds every byte LEFT wrote, raw/NAME.r2l every byte
# RIGHT wrote. SETUP is shell run in the work dir before the transfer.
# NAME.txt gets every non-D packet of both directions.
run() {
	local name=$1 left=$2 right=$3 lks=$4 rks=$5 setup=${6:-}
	local w
	w=$(mktemp -d)
	mkdir -p "$w/s" "$w/r"
	mkfiles "$w/s"
	printf '%b\n' "$lks" >"$w/s/s.ksc"
	printf '%b\n' "$rks" >"$w/r/r.ksc"
	(cd "$w" && eval "$setup")
	rm -f "$raw/$name.l2r" "$raw/$name.r2l"
	(cd "$w" && timeout 30 socat -r "$raw/$name.l2r" -R "$raw/$name.r2l" \
		SYSTEM:"cd s && $left",pty,raw,echo=0,setsid,ctty \
		SYSTEM:"cd r && $right",pty,raw,echo=0,setsid,ctty)
	echo "$name: socat rc=$? r/: $(cd "$w/r" && ls -l --time-style=+ | grep -v ksc | awk 'NR>1{printf "%s(%s) ", $6, $5}')"
	{
		echo "# $name: see README.md. LABEL TYPE SEQ CHECK \"DATA\" (Go-quoted)."
		python3 "$here/pkts.py" "$raw/$name.l2r" | grep -v '^D ' | awk '{k="l2r." $1 $2; n[k]++; if (n[k]>1) k=k "#" n[k]; print k, $0}'
		python3 "$here/pkts.py" "$raw/$name.r2l" | grep -v '^D ' | awk '{k="r2l." $1 $2; n[k]++; if (n[k]>1) k=k "#" n[k]; print k, $0}'
	} >"$here/$name.txt"
	rm -rf "$w"
}

CK='kermit s.ksc -Y'
CKR='kermit r.ksc -Y'
snd() { echo "set delay 0\nset transfer display none\n$1\nexit"; }
rcv() { echo "set transfer display none\n$1\nreceive\nexit"; }

SEL="${*:-}"
w() { [ -z "$SEL" ] || [[ " $SEL " == *" $1 "* ]]; }

# --- C-Kermit <-> C-Kermit, C-Kermit <-> G-Kermit, default settings
w ck2ck_bin && run ck2ck_bin "$CK" "$CKR" "$(snd 'send bin.dat')" "$(rcv '')"
w ck2ck_txt && run ck2ck_txt "$CK" "$CKR" "$(snd 'send /text t.txt')" "$(rcv '')"
w gk2ck_bin && run gk2ck_bin "gkermit -q -i -s bin.dat" "$CKR" "" "$(rcv '')"
w gk2ck_txt && run gk2ck_txt "gkermit -q -T -s t.txt" "$CKR" "" "$(rcv '')"
w ck2gk_bin && run ck2gk_bin "$CK" "gkermit -q -r" "$(snd 'send bin.dat')" ""
w ck2gk_txt && run ck2gk_txt "$CK" "gkermit -q -r" "$(snd 'send /text t.txt')" ""

# --- C-Kermit settings on both sides
w ck_win31 && run ck_win31 "$CK" "$CKR" "$(snd 'set window 31\nsend bin.dat')" "$(rcv 'set window 31')"
w ck_rpl9024 && run ck_rpl9024 "$CK" "$CKR" "$(snd 'set receive packet-length 9024\nsend bin.dat')" "$(rcv 'set receive packet-length 9024')"
w ck_bc1 && run ck_bc1 "$CK" "$CKR" "$(snd 'set block-check 1\nsend bin.dat')" "$(rcv 'set block-check 1')"
w ck_nostream && run ck_nostream "$CK" "$CKR" "$(snd 'set streaming off\nsend bin.dat')" "$(rcv 'set streaming off')"
w ck_mixed && run ck_mixed "$CK" "$CKR" \
	"$(snd 'set block-check 2\nset window 4\nset receive packet-length 94\nsend bin.dat')" \
	"$(rcv 'set block-check 2\nset window 8\nset receive packet-length 80')"
w ck_bcB && run ck_bcB "$CK" "$CKR" "$(snd 'set block-check blank-free-2\nsend bin.dat')" "$(rcv '')"
# FORCE-3: the S packet itself carries a type-3 check; the 10.0 receiver
# never answers, so this one records only retries of the S packet.
w ck_bc5 && run ck_bc5 "$CK" "$CKR" "$(snd 'set retry-limit 3\nset block-check 5\nsend bin.dat')" "$(rcv 'set retry-limit 3')"
w ck_noattr && run ck_noattr "$CK" "$CKR" \
	"$(snd 'set attributes off\nset receive timeout 20\nset send timeout 9\nsend bin.dat')" "$(rcv 'set attributes off')"
w ck_latin1 && run ck_latin1 "$CK" "$CKR" "$(snd 'set transfer character-set latin1\nsend /text t.txt')" "$(rcv 'set transfer character-set latin1')"
w ck_utf8 && run ck_utf8 "$CK" "$CKR" "$(snd 'set file character-set utf8\nset transfer character-set utf8\nsend /text t.txt')" "$(rcv '')"

# --- G-Kermit options
w gk_e9000 && run gk_e9000 "gkermit -q -i -e 9000 -s bin.dat" "$CKR" "" "$(rcv '')"
w gk_S && run gk_S "gkermit -q -i -S -s bin.dat" "$CKR" "" "$(rcv '')"
# -e <= 94: G-Kermit's S data stops after WINDO (rpar leaves xdata[12] NUL).
w gk_e80 && run gk_e80 "gkermit -q -i -e 80 -S -s bin.dat" "$CKR" "" "$(rcv '')"
w ck2gk_e9000 && run ck2gk_e9000 "$CK" "gkermit -q -r -e 9000 -S" "$(snd 'send bin.dat')" ""

# --- server: C-Kermit client (left) <-> C-Kermit server (right)
w srv_ck && run srv_ck "$CK" "$CKR" \
	"$(snd 'get bin.dat\nsend t.txt\nremote pwd\nfinish')" "set transfer display none\nserver\nexit" \
	'mv s/bin.dat r/'
w srv_ck_opts && run srv_ck_opts "$CK" "$CKR" \
	"$(snd 'set window 31\nset receive packet-length 9024\nset streaming off\nget bin.dat\nfinish')" \
	"set transfer display none\nset window 20\nset receive packet-length 2000\nset block-check 1\nserver\nexit" \
	'mv s/bin.dat r/'
w srv_gk && run srv_gk "gkermit -q -g bin.dat" "$CKR" "" "set transfer display none\nserver\nexit" 'mv s/bin.dat r/'

# --- attribute replies: refusals and RESEND
w ck_discard && run ck_discard "$CK" "$CKR" "$(snd 'send bin.dat')" "$(rcv 'set file collision discard')" \
	'head -c 100 s/bin.dat >r/bin.dat'
w ck_update && run ck_update "$CK" "$CKR" "$(snd 'send bin.dat')" "$(rcv 'set file collision update')" \
	'head -c 100 s/bin.dat >r/bin.dat; touch -d 2030-01-01 r/bin.dat'
w ck_resend && run ck_resend "$CK" "$CKR" "$(snd 'resend bin.dat')" "$(rcv '')" 'head -c 400 s/bin.dat >r/bin.dat'
w ck_resend_none && run ck_resend_none "$CK" "$CKR" "$(snd 'resend bin.dat')" "$(rcv '')"
w ck_resend_full && run ck_resend_full "$CK" "$CKR" "$(snd 'resend bin.dat')" "$(rcv '')" 'cp s/bin.dat r/bin.dat'
w ck_resend_txt && run ck_resend_txt "$CK" "$CKR" "$(snd 'set file type text\nresend /text t.txt')" "$(rcv 'set file type text')" 'head -c 100 s/t.txt >r/t.txt'

# --- kerf's own Send-Init (second CAPAS byte, Ext after WHATAMI2) offered
# to the real receivers by sendinit.py; their debug logs (not kept) showed
# C-Kermit reading window 7, MAXLX 2345, WHATAMI 46, sysid U1, WHATAMI2 32,
# and G-Kermit attributes+long packets, WHATAMI 0x2e, sysid U1.
# kerf_s.dat holds that field: Params{ckS, Capas2 2, Window 7, MaxLenX
# 2345, Ext "127.0.0.1:4000/tok"}.Marshal() (TestMarshalParams pins it).
w kerf2ck_ext && run kerf2ck_ext "python3 $here/sendinit.py $here/kerf_s.dat" "$CKR" "" "$(rcv '')"
w kerf2gk_ext && run kerf2gk_ext "python3 $here/sendinit.py $here/kerf_s.dat" "gkermit -q -r" "" ""
exit 0
