package daemon_test

import (
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/agentledger/agentledger/daemon"
	"github.com/agentledger/agentledger/internal/test/testdaemon"
	"github.com/agentledger/agentledger/internal/test/testdb"
)

// Many concurrent /readyz probes all answer ready: a probe is a ping and
// the last schema check, not a migration provider of its own.
func TestReadyzUnderConcurrentProbes(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d := daemon.New(daemon.Config{
		Database:    daemon.Database{URL: testdb.URL(t)},
		API:         daemon.API{Listener: ln},
		Worker:      daemon.Worker{PollInterval: time.Second},
		Maintenance: daemon.Maintenance{NoCron: true, NoJanitor: true},
		Notify:      daemon.Notifications{NoDispatch: true},
		Logger:      quiet(),
		Stdout:      io.Discard,
	})
	testdaemon.Run(t, d)
	url := "http://" + ln.Addr().String() + "/readyz"
	var wg sync.WaitGroup
	var mu sync.Mutex
	bad := map[int]int{}
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				resp, err := http.Get(url)
				status := 0
				if err == nil {
					status = resp.StatusCode
					resp.Body.Close()
				}
				if status != http.StatusOK {
					mu.Lock()
					bad[status]++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(bad) > 0 {
		t.Errorf("of 400 probes, not 200 by status: %v", bad)
	}
}
