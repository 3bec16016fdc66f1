// Package e2e runs the real kerf binary as a user would: it builds
// cmd/kerf once, starts `kerf serve` on loopback and drives it with
// `kerf send/get/ls/mkdir/rm/mv`, with C-Kermit on either side for the
// classic-Kermit cases. It holds tests only; nothing imports it.
//
// The argv and environment of every kerf invocation are built in one
// place (serverArgs and clientInvocation in main_test.go), which probes
// `kerf serve --help` and `kerf send --help` for the security flags
// (--state, --accept-new-host-key, --allow-classic, --plain-data) so the
// tests keep working whether or not TLS and login are in the binary.
//
// Tests that inject faults on the data connection run the server on
// 127.0.0.2 and put a proxy on 127.0.0.1 at the same data port: the client
// dials the data port the server announces on the host of its control
// connection, which is the proxy's.
package e2e
