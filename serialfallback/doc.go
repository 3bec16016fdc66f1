// Package serialfallback opens the byte stream that classic Kermit runs
// over when there is no network path: a serial port, a pseudo-terminal, or
// the process's own stdin/stdout (kerf as the remote Kermit at a shell
// prompt).
//
// A Link is a plain io.ReadWriteCloser with Drain. It moves bytes and nothing
// else: it knows no packets, no timeouts and no retries; the Kermit engine
// in package kermit does all of that. Every Link is 8-bit clean unless a
// parity other than none is configured, in which case the Link adds the
// parity bit on output and strips it on input exactly as C-Kermit's SET
// PARITY does (software parity over an 8N1 port, which on the wire is the
// same as 7E1/7O1/7M1/7S1). The engine must then negotiate 8th-bit
// prefixing; LinkConfig.SevenBit says when.
//
// Read may be called from one goroutine while another writes; Close makes a
// pending Read return ErrClosed, which is how the engine's reader goroutine
// is told to stop.
//
// A serial device or pty is opened under its UUCP lock file
// (/var/lock/LCK..NAME), as C-Kermit and minicom open it: a line another
// live process holds is refused with ErrLineLocked.
//
// What it deliberately does not do: modem control (dialing, carrier
// detection, DTR hangup), and hardware parity with parity-error reporting.
package serialfallback
