// Package datachan is kerf's data channel: the TCP (optionally TLS)
// connections that carry file bytes beside the Kermit control connection,
// the way FTP keeps a data connection beside its control connection.
//
// It does three things:
//
//   - Pairing. The server registers a single-use session Token with
//     Listener.Expect (the token travels to the client inside the Kermit
//     Send-Init, in base64url; see docs/protocol.md §4); the client opens
//     one or more connections with Dial and proves it holds the token
//     with a 42-byte hello. See hello.go and docs/protocol-datachan.md for the bytes.
//   - Transfer. Path implements kermit.DataPath over the paired
//     connections: files are cut into blocks (framing.BlockHeader), the
//     blocks are striped over the connections, each is checked with its
//     CRC-32C, damaged ones are asked for again (framing.ResendRequest)
//     and good ones are written with WriteAt by the connection's reader
//     (or, with WithWriteBehind, by a disk writer behind it).
//   - Socket tuning (Tune).
//
// It deliberately does not decide which files move, name them, or know
// about Kermit packets: the engine in package kermit drives it through
// the DataPath interface, and the file ids come from the engine.
//
// A Path fails as a whole: once a connection is lost or the peer breaks
// the protocol (including a block header whose own check fails, after
// which the next frame cannot be found), every pending and later call
// returns the same error.
//
// Blocks that arrive before their file is Expect-ed are parked in memory
// (up to a limit; beyond it they are dropped and asked for again at
// Expect) rather than stopping the connection's reader. Stopping it would
// deadlock an engine that pipelines files, as kermit's does in dual mode:
// the receiver sits in Wait for file 1 while the block of file 1 it asked
// to be re-sent is queued behind blocks of file 2, which nobody reads
// until file 2 is Expect-ed after that Wait.
package datachan
