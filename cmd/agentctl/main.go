package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	"github.com/charmbracelet/x/term"
)

func main() {
	os.Exit(agentctl(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// agentctl runs a command line as the program does: SIGINT and SIGTERM
// cancel the command, and when the reader of its output goes away
// (agentctl list | head -1) it ends quietly and successfully, as a filter
// should, where Go's default is death by SIGPIPE ("signal: broken pipe").
func agentctl(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// With SIGPIPE handled, a write to a pipe with no reader fails with
	// EPIPE instead of killing the process (see os/signal).
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if f, ok := stdout.(*os.File); ok && term.IsTerminal(f.Fd()) {
		// No pipe to lose, and the console needs the terminal's *os.File.
		return run(ctx, args, stdin, stdout, stderr)
	}
	out := &pipeWriter{w: stdout}
	code := run(ctx, args, stdin, out, &quietAfter{out: out, w: stderr})
	if out.gone.Load() {
		return 0
	}
	return code
}

// pipeWriter is stdout, noting when its reader has gone away.
type pipeWriter struct {
	w    io.Writer
	gone atomic.Bool
}

func (p *pipeWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if errors.Is(err, syscall.EPIPE) {
		p.gone.Store(true)
	}
	return n, err
}

// quietAfter is stderr, silent once stdout's reader has gone: what follows
// (the failed write, as an error) is no news to anyone.
type quietAfter struct {
	out *pipeWriter
	w   io.Writer
}

func (q *quietAfter) Write(b []byte) (int, error) {
	if q.out.gone.Load() {
		return len(b), nil
	}
	return q.w.Write(b)
}
