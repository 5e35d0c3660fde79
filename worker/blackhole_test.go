package worker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
)

// blackHole is a TCP proxy on 127.0.0.1 to the test server that can stop
// passing bytes while keeping every socket open: what a connection looks
// like to its client when the server or the path to it vanished without a
// reset (nothing arrives, nothing fails).
type blackHole struct {
	ln     net.Listener
	target string
	config *pgx.ConnConfig // the database's, through the proxy

	mu     sync.Mutex
	holed  bool          // every byte is dropped, both ways
	holdUp chan struct{} // non-nil: client bytes wait until it is closed
	conns  []net.Conn

	down    atomic.Int64 // bytes passed to clients
	started chan int     // a client began a session, not a cancel request (its id)
	heldUp  chan int     // a connection's client bytes are being held (its id)
	closed  chan int     // a connection's client closed it (its id)
	done    chan struct{}
	wg      sync.WaitGroup
}

// newBlackHole starts a proxy to the server of url, closed when t ends.
func newBlackHole(t *testing.T, url string) *blackHole {
	t.Helper()
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Host) > 0 && cfg.Host[0] == '/' {
		t.Fatalf("test server at a unix socket; the proxy speaks TCP")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b := &blackHole{ln: ln, target: net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))),
		started: make(chan int, 1000), heldUp: make(chan int, 1000), closed: make(chan int, 1000), done: make(chan struct{})}
	cfg.Host, cfg.Fallbacks = "127.0.0.1", nil
	cfg.Port = uint16(ln.Addr().(*net.TCPAddr).Port)
	cfg.TLSConfig = nil
	b.config = cfg
	b.wg.Add(1)
	go b.accept()
	t.Cleanup(b.close)
	return b
}

// connect opens a session through the proxy.
func (b *blackHole) connect(ctx context.Context) (*pgx.Conn, error) {
	return pgx.ConnectConfig(ctx, b.config.Copy())
}

// hole starts (true) or stops dropping every byte.
func (b *blackHole) hole(on bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.holed = on
}

// holdClients makes client bytes wait, undropped, until release is called
// (once or more).
func (b *blackHole) holdClients() (release func()) {
	hold := make(chan struct{})
	b.mu.Lock()
	b.holdUp = hold
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.holdUp = nil
			b.mu.Unlock()
			close(hold)
		})
	}
}

func (b *blackHole) accept() {
	defer b.wg.Done()
	for {
		client, err := b.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", b.target)
		if err != nil {
			client.Close()
			continue
		}
		b.mu.Lock()
		select {
		case <-b.done: // closing: close has closed the others
			b.mu.Unlock()
			client.Close()
			server.Close()
			return
		default:
		}
		id := len(b.conns)
		b.conns = append(b.conns, client, server)
		b.mu.Unlock()
		id /= 2
		b.wg.Add(2)
		go b.pump(id, server, client, true)
		go b.pump(id, client, server, false)
	}
}

// cancelRequestCode opens a CancelRequest where a StartupMessage has its
// protocol version.
const cancelRequestCode = 80877102

// pump copies src to dst until either fails; up is client to server.
func (b *blackHole) pump(id int, dst, src net.Conn, up bool) {
	defer b.wg.Done()
	defer dst.Close()
	buf := make([]byte, 64<<10)
	for first := up; ; first = false {
		n, err := src.Read(buf)
		if first && n >= 8 && binary.BigEndian.Uint32(buf[4:8]) != cancelRequestCode {
			select {
			case b.started <- id:
			default:
			}
		}
		if n > 0 && !b.pass(id, dst, buf[:n], up) {
			return
		}
		if err != nil {
			if up && !errors.Is(err, net.ErrClosed) { // the client's doing, not ours
				select {
				case b.closed <- id:
				default:
				}
			}
			return
		}
	}
}

func (b *blackHole) pass(id int, dst net.Conn, p []byte, up bool) bool {
	b.mu.Lock()
	holed, hold := b.holed, b.holdUp
	b.mu.Unlock()
	if holed {
		return true // dropped
	}
	if up && hold != nil {
		select {
		case b.heldUp <- id:
		default:
		}
		select {
		case <-hold:
		case <-b.done:
			return false
		}
	}
	if _, err := dst.Write(p); err != nil {
		return false
	}
	if !up {
		b.down.Add(int64(len(p)))
	}
	return true
}

func (b *blackHole) close() {
	b.mu.Lock()
	close(b.done)
	b.ln.Close()
	for _, c := range b.conns {
		c.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}
