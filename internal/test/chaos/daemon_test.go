package chaos

import (
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// daemon is one agentd slot: a process the harness kills, freezes and
// restarts.
type daemon struct {
	name string
	bin  string
	args []string
	env  []string
	log  string // file its output is appended to

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	starts  int
	held    bool // the harness froze it or is killing it: do not restart
	stopped bool // shut down for good
}

// start runs a new process in the slot.
func (d *daemon) start() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.startLocked()
}

func (d *daemon) startLocked() error {
	f, err := os.OpenFile(d.log, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	d.starts++
	cmd := exec.Command(d.bin, append(d.args, "--worker-id", sprintf("%s-%d", d.name, d.starts))...)
	cmd.Env = append(os.Environ(), d.env...)
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		f.Close()
		return err
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		f.Close()
		close(exited)
	}()
	d.cmd, d.exited = cmd, exited
	return nil
}

// alive reports whether the slot's process runs.
func (d *daemon) alive() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.aliveLocked()
}

func (d *daemon) aliveLocked() bool {
	if d.cmd == nil {
		return false
	}
	select {
	case <-d.exited:
		return false
	default:
		return true
	}
}

// ensure restarts the slot's process if it exited and is not held.
func (d *daemon) ensure() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.held || d.stopped || d.aliveLocked() {
		return nil
	}
	return d.startLocked()
}

// kill SIGKILLs the process and waits for it.
func (d *daemon) kill() {
	d.mu.Lock()
	cmd, exited := d.cmd, d.exited
	d.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
}

// freeze SIGSTOPs the process for d, then thaws it: it wakes as a zombie
// whose leases others hold.
func (d *daemon) freeze(dur time.Duration) bool {
	d.mu.Lock()
	if !d.aliveLocked() {
		d.mu.Unlock()
		return false
	}
	d.held = true
	cmd := d.cmd
	d.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGSTOP)
	time.Sleep(dur) // the freeze itself: the point is to outlast the lease
	_ = cmd.Process.Signal(syscall.SIGCONT)
	d.mu.Lock()
	d.held = false
	d.mu.Unlock()
	return true
}

// stop shuts the daemon down with SIGTERM (SIGKILL after 20 s).
func (d *daemon) stop() {
	d.mu.Lock()
	d.stopped = true
	cmd, exited := d.cmd, d.exited
	alive := d.aliveLocked()
	d.mu.Unlock()
	if !alive {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGCONT)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// stopAll stops the daemons and, when the test failed, logs the last
// lines of each one's log.
func stopAll(t *testing.T, daemons []*daemon) {
	for _, d := range daemons {
		d.stop()
	}
	if !t.Failed() {
		return
	}
	for _, d := range daemons {
		b, _ := os.ReadFile(d.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("last lines of %s:\n%s", d.name, strings.Join(lines[max(0, len(lines)-15):], "\n"))
	}
}
