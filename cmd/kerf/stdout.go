package main

import (
	"cmp"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"

	"kerf/kermit"
)

// `kerf get HOST/FILE -` writes the file to standard output, for a pipe
// (`kerf get host/logs.tar.zst - | zstd -d | tar x`), as curl -o - and
// wget -O - do. The bytes go out as they come, each block checked
// (CRC-32C, a damaged one fetched again before it is used); the whole
// file's check comes at its end, and the exit status says whether what
// went out is the whole file. There is no partial to resume: a file cut
// off leaves the reader with what came so far and a failed exit, as
// with curl. Decided in docs/architecture.md ("A fetch to standard
// output").

// isStdout reports whether dest names standard output: "-", or another
// name of what standard output is (/dev/stdout, /dev/fd/1, or the file
// it is redirected to).
func isStdout(dest string) bool {
	if dest == "-" {
		return true
	}
	out, err := os.Stdout.Stat()
	if err != nil || out.IsDir() {
		return false
	}
	fi, err := os.Stat(dest)
	return err == nil && os.SameFile(fi, out)
}

// stdoutStore takes the one file a get asked for and writes it to out.
// The peer may begin it again (a session that takes over a lost one's
// file): the same sink goes on, and what went out stays out.
type stdoutStore struct {
	sink *pipeSink
	sent string // the peer's name for the file, once seen
	// expect: as asNameStore's.
	expect func(string) error
}

func (s *stdoutStore) Create(name string) (kermit.Incoming, error) {
	if err := checkExpected(s.expect, name); err != nil {
		return nil, err
	}
	if s.sent == "" {
		s.sent = name
	}
	if name != s.sent {
		return nil, fmt.Errorf("%s: refused: one file was asked for, to go to standard output, and %s came first", name, s.sent)
	}
	return s.sink, nil
}

// pipeSink is a received file written to a stream in order. Blocks that
// come ahead of a missing one (several data connections, a damaged
// block fetched again) wait in an unlinked temporary file, so memory
// stays bounded whatever the order, and go out once what is before them
// has; the space they took is given back as they go (hole punching,
// where the file system has it).
type pipeSink struct {
	out     io.Writer
	tmpDir  string
	mu      sync.Mutex
	sent    int64  // bytes written to out
	crc     uint32 // CRC-32C of them
	ahead   *os.File
	pending []span // in ahead, by offset; may overlap what went out
	buf     []byte
	err     error // out failed: every later write fails so
}

// span is a run of bytes held in the ahead file.
type span struct{ off, n int64 }

func (s span) end() int64 { return s.off + s.n }

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func newPipeSink(out io.Writer, tmpDir string) *pipeSink {
	return &pipeSink{out: out, tmpDir: tmpDir}
}

func (p *pipeSink) Name() string { return "-" }

// WriteAt writes b out if it is next, or holds it until what comes
// before it has gone out. Bytes already out (a block sent again) are
// passed over.
func (p *pipeSink) WriteAt(b []byte, off int64) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return 0, p.err
	}
	end := off + int64(len(b))
	switch {
	case end <= p.sent:
	case off <= p.sent:
		if err := p.emit(b[p.sent-off:]); err != nil {
			return 0, err
		}
		if err := p.drain(); err != nil {
			return 0, err
		}
	default:
		if err := p.hold(b, off); err != nil {
			return 0, err
		}
	}
	return len(b), nil
}

func (p *pipeSink) emit(b []byte) error {
	if _, err := p.out.Write(b); err != nil {
		p.err = fmt.Errorf("writing to standard output: %w", err)
		return p.err
	}
	p.crc = crc32.Update(p.crc, castagnoli, b)
	p.sent += int64(len(b))
	return nil
}

func (p *pipeSink) hold(b []byte, off int64) error {
	if p.ahead == nil {
		f, err := os.CreateTemp(p.tmpDir, ".kerf-stdout-*")
		if err != nil {
			return fmt.Errorf("holding blocks that came out of order: %w", err)
		}
		os.Remove(f.Name()) // gone with the last descriptor, whatever happens
		p.ahead = f
	}
	if _, err := p.ahead.WriteAt(b, off); err != nil {
		return fmt.Errorf("holding blocks that came out of order: %w", err)
	}
	i, _ := slices.BinarySearchFunc(p.pending, off, func(s span, off int64) int { return cmp.Compare(s.off, off) })
	p.pending = slices.Insert(p.pending, i, span{off, int64(len(b))})
	return nil
}

// drain writes out the held bytes that now follow what went out.
func (p *pipeSink) drain() error {
	for len(p.pending) > 0 && p.pending[0].off <= p.sent {
		s := p.pending[0]
		if s.end() > p.sent {
			if p.buf == nil {
				p.buf = make([]byte, 1<<20)
			}
			for p.sent < s.end() {
				n := min(int64(len(p.buf)), s.end()-p.sent)
				if _, err := p.ahead.ReadAt(p.buf[:n], p.sent); err != nil {
					return fmt.Errorf("reading back blocks that came out of order: %w", err)
				}
				if err := p.emit(p.buf[:n]); err != nil {
					return err
				}
			}
			punchHole(p.ahead, s.off, s.n)
		}
		p.pending = p.pending[1:]
	}
	return nil
}

// Partial is what went out: a session taking the file over goes on from
// there if the sender finds it the start of its file.
func (p *pipeSink) Partial() (int64, uint32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent, p.crc, nil
}

// Truncate forgets held bytes from size on; what went out cannot be
// taken back.
func (p *pipeSink) Truncate(size int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if size < p.sent {
		return fmt.Errorf("it cannot begin again at byte %d: %d bytes of it went to standard output already", size, p.sent)
	}
	p.pending = slices.DeleteFunc(p.pending, func(s span) bool { return s.off >= size })
	for i := range p.pending {
		p.pending[i].n = min(p.pending[i].n, size-p.pending[i].off)
	}
	return nil
}

// Commit checks that every byte went out; the engine has checked the
// whole file's CRC-32C by then.
func (p *pipeSink) Commit(time.Time, fs.FileMode) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		return p.err
	}
	if len(p.pending) > 0 {
		return fmt.Errorf("bytes %d to %d never came: the output is incomplete", p.sent, p.pending[0].off)
	}
	p.closeAhead()
	return nil
}

// Abort drops what is held; what went out stays out.
func (p *pipeSink) Abort(bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending = nil
	p.closeAhead()
	return nil
}

// KeepsNothing: nothing is kept for a later --resume.
func (p *pipeSink) KeepsNothing() bool { return true }

func (p *pipeSink) closeAhead() {
	if p.ahead != nil {
		p.ahead.Close()
		p.ahead = nil
	}
}

// errStdoutUsage says what a get to standard output takes.
var errStdoutUsage = errors.New("- (standard output) takes one file: -r, several files or a wildcard need a directory")
