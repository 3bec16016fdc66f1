package datachan_test

import (
	"bytes"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"kerf/datachan"
)

// emfileOnce is a listener whose first few Accepts fail as a process
// out of open files does.
type emfileOnce struct {
	net.Listener
	mu    sync.Mutex
	fails int
}

func (l *emfileOnce) Accept() (net.Conn, error) {
	l.mu.Lock()
	if l.fails > 0 {
		l.fails--
		l.mu.Unlock()
		return nil, &net.OpError{Op: "accept", Net: "tcp", Err: syscall.EMFILE}
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// A data listener out of open files says so, once, and says when it
// accepts again (QA aj: a server under a low RLIMIT_NOFILE failed its
// clients' data connections without a word).
func TestListenerSaysItCannotAccept(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var buf syncBuf
	l := datachan.NewListener(&emfileOnce{Listener: ln, fails: 3}, nil, datachan.WithLog(slog.New(slog.NewTextHandler(&buf, nil))))
	defer l.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(buf.String(), "accepting data connections again") && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	out := buf.String()
	if strings.Count(out, "cannot accept data connections") != 1 || !strings.Contains(out, "too many open files") || !strings.Contains(out, "accepting data connections again") {
		t.Errorf("the listener's log:\n%s\nwant one warning naming the cause, then that it accepts again", out)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
