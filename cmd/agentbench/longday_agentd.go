package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// agentdProc is the daemon under test, a process of its own so that its
// resident set and goroutines are its alone.
type agentdProc struct {
	cmd    *exec.Cmd
	base   string // its HTTP listener, http://host:port
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

// buildAgentd builds cmd/agentd into dir and returns the binary's path.
// The benchmark's module lives in the repository's workspace, so the
// package path resolves to the checkout being measured.
func buildAgentd(ctx context.Context, dir string, errOut io.Writer) (string, error) {
	bin := filepath.Join(dir, "agentd")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/agentledger/agentledger/cmd/agentd")
	cmd.Stdout, cmd.Stderr = errOut, errOut
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("building agentd (run within the repository's checkout, or pass --agentd PATH): %w", err)
	}
	return bin, nil
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// startAgentd starts bin with args and env (added to this process's) and
// waits until /readyz answers 200 or the process exits.
func startAgentd(ctx context.Context, bin, listen string, args, env []string, errOut io.Writer) (*agentdProc, error) {
	cmd := exec.Command(bin, append([]string{"--listen", listen}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = errOut, errOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL} // never outlive the benchmark
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting agentd: %w", err)
	}
	p := &agentdProc{cmd: cmd, base: "http://" + listen, exited: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.exited) }()
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case <-p.exited:
			return nil, fmt.Errorf("agentd exited before it was ready: %v", p.err)
		case <-ctx.Done():
			p.Stop()
			return nil, ctx.Err()
		case <-deadline:
			p.Stop()
			return nil, errors.New("agentd was not ready within 2 minutes")
		case <-t.C:
		}
		if resp, err := http.Get(p.base + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
	}
}

// PID is the daemon's process id.
func (p *agentdProc) PID() int { return p.cmd.Process.Pid }

// RSS is the daemon's resident set now (VmRSS), in bytes; 0 when unknown.
func (p *agentdProc) RSS() int64 { return procStatusKB(p.PID(), "VmRSS:") }

// procStatusKB reads a "kB" field of /proc/PID/status, in bytes.
func procStatusKB(pid int, field string) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field); ok {
			if f := strings.Fields(v); len(f) == 2 && f[1] == "kB" {
				n, _ := strconv.ParseInt(f[0], 10, 64)
				return n << 10
			}
		}
	}
	return 0
}

// Metrics reads the named gauges and counters of the daemon's /metrics
// (Prometheus text), each summed over its labels; a missing one is absent
// from the map.
func (p *agentdProc) Metrics(ctx context.Context, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("agentd /metrics: %s", resp.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		sp := strings.LastIndexByte(l, ' ') // label values may hold spaces; the value may not
		if sp < 0 || strings.HasPrefix(l, "#") {
			continue
		}
		name := l[:sp]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		for _, n := range names {
			if name == n {
				if f, err := strconv.ParseFloat(l[sp+1:], 64); err == nil {
					out[n] += f
				}
			}
		}
	}
	return out, sc.Err()
}

// Stop asks the daemon to shut down gracefully (SIGTERM) and waits for it,
// killing it after a minute.
func (p *agentdProc) Stop() error {
	select {
	case <-p.exited:
		return p.err
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return p.err
	case <-time.After(time.Minute):
		_ = p.cmd.Process.Kill()
		<-p.exited
		return errors.New("agentd did not stop within a minute of SIGTERM: killed")
	}
}
