// Package peertest runs the real programs kerf must interoperate with —
// C-Kermit (kermit), G-Kermit (gkermit), lrzsz (sz, rz), socat — and the
// instruments they run over: lineem, the emulated serial line from the
// shared tools folder, and plain pty pairs. It is for tests and benchmarks
// only.
//
// A missing peer skips the test on a developer machine and fails it in CI
// (CI=true): an interop test that silently skips proves nothing.
//
// What it does not do: speak Kermit itself, or judge a transfer beyond
// comparing bytes (CheckFiles) and exit statuses (Peer.Wait).
//
// # C-Kermit settings that matter (C-Kermit 10.0 Beta.08, Debian 12)
//
// The prologue CKermit writes (see CKermitPrologue) holds the settings that
// were needed to make scripted C-Kermit reliable on a pty:
//
//   - The script file must precede -Y on the command line ("kermit s.ksc -Y");
//     -Y skips the init file.
//   - set carrier-watch off: a pty has no carrier detect (AUTO happened
//     to work on Linux ptys too, but a real line without CD needs OFF).
//   - set flow none: lineem and ptys have no RTS/CTS.
//   - set transfer mode manual + set file type binary: in automatic mode
//     C-Kermit picks text or binary per file from its name patterns
//     (*.txt is sent as text), which need not be byte-identical.
//   - set file names literal: names are sent as they are (spaces kept in
//     10.0 even without it; it makes the intent explicit). Brace-quote a
//     name with spaces in SEND/MSEND: "msend {a b.txt} {c.bin}".
//   - One SEND or MSEND is one batch and is matched by one RECEIVE: a
//     receiver exits after the batch's B packet, so send several files
//     with MSEND (or SEND with a wildcard), not with several SENDs.
//   - set file collision overwrite: the default, backup, renames an
//     existing file to NAME.~1~ and receives beside it.
//   - set transfer interruption off and set exit warning off: no keyboard
//     polling, no "close the connection?" question at EXIT.
//   - set take error on: a failing command ends the script. C-Kermit then
//     falls back to interactive mode and reads stdin, so the runner feeds it
//     "exit 99"; otherwise a script error (a SEND of a missing file is a
//     *syntax* error) exits with status 0. It comes first, before SET LINE:
//     a SET LINE that failed otherwise left C-Kermit going on with its own
//     terminal as the line, unheard.
//   - Line locks: C-Kermit keeps a UUCP lock, /var/lock/LCK..N for
//     /dev/pts/N, and a C-Kermit killed leaves it behind. A lock naming a
//     live process that is not C-Kermit's parent fails SET LINE ("Locked
//     by process N"), so once the dead C-Kermit's PID is another
//     process's, a later pty of that number cannot be opened; kerf
//     honours the same locks. CKermit removes any lock naming the line
//     before it starts and after the peer ends, and every pty peertest
//     makes (StartLineem, PtyPair) is cleared of locks when made (the pty
//     is the test's own).
//
// Exit statuses of a CKermit peer: 0 when every command and transfer
// succeeded; 99 when the script stopped on an error — a SEND or RECEIVE
// that failed ("Too many retries", an E packet) counts, since SET TAKE
// ERROR ON ends the script there, as does a syntax error. (Without TAKE
// ERROR ON, EXIT after a failed transfer gives 1, and a syntax error is
// ignored.) RECEIVE with no sender waits forever: always bound it with
// Peer.Wait's timeout.
//
// Known C-Kermit 10.0 bug, reproduced by bench/serial.sh: with NUL sent
// unprefixed (SET PREFIXING NONE, or SET CONTROL UNPREFIXED ALL) and
// sliding windows on a noisy line, the receiver silently truncates data
// from out-of-order packets at the NUL — both sides report success and exit
// 0 with a short, wrong file. Always compare bytes.
//
// G-Kermit 2.01 uses its stdin/stdout as the line; GKermit attaches the
// device to both. Useful flags: -i binary, -P literal names (spaces kept),
// -w overwrite, -q quiet, -S no streaming, -e N receive packet length. It
// has no sliding windows and no server mode, and it offers streaming,
// which C-Kermit on a SET LINE connection does not accept.
package peertest
