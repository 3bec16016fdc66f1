#!/bin/bash
# Re-record the real-peer transcripts in this directory (see README.md).
# Needs: kermit (C-Kermit 10.0 Beta.08), gkermit (G-Kermit 2.01), socat.
# Usage: ./capture.sh [NAME...]   (default: all)
set -u
here=$(cd "$(dirname "$0")" && pwd)
files=$here/../files
out=$here

# run NAME SENDER-CMD RECEIVER-CMD SENDER-SCRIPT RECEIVER-SCRIPT
# The sender is socat's left side: NAME.snd is every byte the sender wrote,
# NAME.rcv every byte the receiver wrote.
run() {
	local name=$1 left=$2 right=$3 sks=$4 rks=$5
	local w
	w=$(mktemp -d)
	mkdir -p "$w/s" "$w/r"
	cp "$files"/* "$w/s/"
	rm -f "$out/$name.snd" "$out/$name.rcv"
	printf '%s\n' "$sks" >"$w/s.ksc"
	printf '%s\n' "$rks" >"$w/r.ksc"
	(cd "$w" && timeout "${T:-60}" socat -r "$out/$name.snd" -R "$out/$name.rcv" \
		SYSTEM:"$left",pty,raw,echo=0,setsid,ctty \
		SYSTEM:"$right",pty,raw,echo=0,setsid,ctty)
	echo "$name: socat rc=$? received: $(cd "$w/r" && ls | tr '\n' ' ')"
	# After G-Kermit exits the two ptys bounce CR LF for a while: keep one.
	perl -0777 -pi -e 's/(\r\r\n|\r\n)+\z/\r\n/' "$out/$name.snd" "$out/$name.rcv"
	rm -rf "$w"
}

CKS='kermit s.ksc -Y'
CKR='kermit r.ksc -Y'
ckr() { # receiver script: $1 = extra settings, $2 = number of RECEIVEs
	local s="set transfer display none"$'\n'"$1"$'\n'"cd r"
	for ((i = 0; i < $2; i++)); do s+=$'\n'"receive"; done
	printf '%s\nexit' "$s"
}
cks() { # sender script: $1 = extra settings, $2 = send commands
	printf 'set delay 0\nset transfer display none\n%s\ncd s\n%s\nexit' "$1" "$2"
}
ALL='msend all256.bin runs.bin small.txt'

SEL="${*:-}"
w() { [ -z "$SEL" ] || [[ " $SEL " == *" $1 "* ]]; }

# C-Kermit -> C-Kermit, block check 1, short packets (receiver asks for 90).
w ck_bc1_short && run ck_bc1_short "$CKS" "$CKR" \
	"$(cks 'set block-check 1' "$ALL")" \
	"$(ckr $'set block-check 1\nset receive packet-length 90' 1)"
# C-Kermit -> C-Kermit, block check 2, long packets; then a /text send.
w ck_bc2 && run ck_bc2 "$CKS" "$CKR" \
	"$(cks 'set block-check 2' "$ALL"$'\n''send /text small.txt')" \
	"$(ckr 'set block-check 2' 2)"
# C-Kermit -> C-Kermit, block check 3, long packets (the defaults).
w ck_bc3 && run ck_bc3 "$CKS" "$CKR" \
	"$(cks 'set block-check 3' "$ALL")" \
	"$(ckr 'set block-check 3' 1)"
# C-Kermit -> C-Kermit, block check 3, SET PREFIXING ALL on the sender.
w ck_prefall && run ck_prefall "$CKS" "$CKR" \
	"$(cks $'set block-check 3\nset prefixing all' "$ALL")" \
	"$(ckr 'set block-check 3' 1)"
# C-Kermit -> C-Kermit, even parity: 8th-bit prefixing and parity bits,
# locking shifts off (kerf does not implement them).
LSOFF=$'set block-check 3\nset parity even\nset transfer locking-shift off'
w ck_parity && run ck_parity "$CKS" "$CKR" "$(cks "$LSOFF" "$ALL")" "$(ckr "$LSOFF" 1)"
# Same with the default locking shifts (SO/SI/DLE in the data): only the
# packet layer of this one is checked.
w ck_parity_ls && run ck_parity_ls "$CKS" "$CKR" \
	"$(cks $'set block-check 3\nset parity even' "$ALL")" \
	"$(ckr $'set block-check 3\nset parity even' 1)"
# C-Kermit -> G-Kermit: 89/90/91-byte files show the 10.0 Beta.08 LEN 95/96 bug.
w ck2gk_len95 && T=15 run ck2gk_len95 "$CKS" "cd r && gkermit -q -r" \
	"$(cks 'set block-check 3' 'msend len89.txt len90.txt len91.txt')" ""
# The same on a mark-parity line: the LEN 96 byte, 0x80, arrives as 0x00
# (block check 3: 89/90/91 bytes; block check 1: 92/93 bytes).
w ck2gk_len96_mark && T=15 run ck2gk_len96_mark "$CKS" "cd r && gkermit -q -p m -r" \
	"$(cks $'set block-check 3\nset parity mark' 'msend len89.txt len90.txt len91.txt')" ""
w ck2gk_len96_mark_bc1 && T=15 run ck2gk_len96_mark_bc1 "$CKS" "cd r && gkermit -q -p m -r" \
	"$(cks $'set block-check 1\nset parity mark' 'msend len92.txt len93.txt')" ""
# G-Kermit -> G-Kermit, binary (-i).
w gk_bin && run gk_bin "cd s && gkermit -q -i -s all256.bin runs.bin" "cd r && gkermit -q -r" "" ""
# G-Kermit -> C-Kermit, text mode (-T).
w gk2ck_text && run gk2ck_text "cd s && gkermit -q -T -s small.txt" "$CKR" "" "$(ckr '' 1)"
# G-Kermit -> G-Kermit, even parity (-p e): 8th-bit prefixing.
w gk_parity && run gk_parity "cd s && gkermit -q -p e -i -s all256.bin runs.bin" "cd r && gkermit -q -p e -r" "" ""
exit 0
