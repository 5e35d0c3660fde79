package mcptools

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxFrame bounds one message from a server, as the SDK's own stdio
// connection does (mcp.DefaultMaxLineLength).
const maxFrame = mcp.DefaultMaxLineLength

// terminateAfter is how long Close waits for a server to exit after its
// stdin closed, then after SIGTERM, unless the transport says otherwise.
const terminateAfter = 5 * time.Second

// killWait bounds the wait for a SIGKILLed server to be reaped.
const killWait = 10 * time.Second

// commandTransport runs a server's command and speaks newline-delimited
// JSON-RPC with it over the command's stdin and stdout, as
// mcp.CommandTransport does, with a cheaper read side: the SDK's connection
// reads each message with a stream decoder, decodes it again as a batch and
// once more as a message (the last two each through a decoder with a fresh
// 32 KiB buffer) and hands it through one more goroutine; this one reads a
// line and decodes it once, in the goroutine that asked for it. It shuts the server down as the SDK does:
// stdin closed, then SIGTERM, then SIGKILL.
//
// A command without an Env gets DefaultEnv, not this process's whole
// environment as exec would give it: the SDKs' default, so that no secret
// reaches a server unless someone wrote it into Env.
type commandTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
}

func (t *commandTransport) Connect(context.Context) (mcp.Connection, error) {
	if t.cmd.Env == nil {
		t.cmd.Env = DefaultEnv()
	}
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	terminate := t.terminate
	if terminate <= 0 {
		terminate = terminateAfter
	}
	return &stdioConn{cmd: t.cmd, r: bufio.NewReaderSize(stdout, 64<<10), w: stdin, terminate: terminate}, nil
}

// stdioConn is one session's pipes. The SDK reads from one goroutine at a
// time and writes from many; Close may come at any time, and unblocks a
// Read once the process is gone (Wait closes stdout).
type stdioConn struct {
	cmd       *exec.Cmd
	r         *bufio.Reader
	queue     []jsonrpc.Message // the rest of a batch
	w         io.WriteCloser
	wmu       sync.Mutex
	terminate time.Duration

	closeOnce sync.Once
	closeErr  error
}

func (c *stdioConn) SessionID() string { return "" }

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for len(c.queue) == 0 {
		line, err := c.line()
		if err != nil {
			return nil, err
		}
		if c.queue, err = decodeLine(line); err != nil {
			return nil, err
		}
	}
	m := c.queue[0]
	c.queue = c.queue[1:]
	return m, nil
}

// line is the next line, at most maxFrame bytes.
func (c *stdioConn) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		long := append([]byte(nil), line...)
		for errors.Is(err, bufio.ErrBufferFull) {
			line, err = c.r.ReadSlice('\n')
			if long = append(long, line...); len(long) > maxFrame {
				return nil, fmt.Errorf("a message longer than %d bytes", maxFrame)
			}
		}
		line = long
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(bytes.TrimSpace(line)) > 0) {
		return nil, err
	}
	return line, nil
}

func (c *stdioConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err = c.w.Write(append(b, '\n'))
	return err
}

// Close closes the server's stdin and waits for it to exit; a server still
// running after c.terminate gets SIGTERM, and after as long again SIGKILL.
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		// Not under wmu: closing unblocks a Write stuck on a server that
		// stopped reading.
		// A failed close of stdin still ends the process below.
		stdinErr := c.w.Close()
		if stdinErr != nil {
			stdinErr = fmt.Errorf("closing stdin: %w", stdinErr)
		}
		exited := make(chan error, 1)
		go func() { exited <- c.cmd.Wait() }()
		wait := func(d time.Duration) (error, bool) {
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case err := <-exited:
				return err, true
			case <-t.C:
				return nil, false
			}
		}
		if err, ok := wait(c.terminate); ok {
			c.closeErr = cmp.Or(stdinErr, err)
			return
		}
		if c.cmd.Process.Signal(syscall.SIGTERM) == nil {
			if err, ok := wait(c.terminate); ok {
				c.closeErr = cmp.Or(stdinErr, err)
				return
			}
		}
		if err := c.cmd.Process.Kill(); err != nil {
			c.closeErr = err
			return
		}
		// SIGKILL cannot be refused, but a loaded machine may take longer
		// than the terminate grace to reap the process: wait for it, so
		// that Close returns with the process gone.
		if err, ok := wait(killWait); ok {
			c.closeErr = cmp.Or(stdinErr, err)
			return
		}
		c.closeErr = errors.New("the server's process does not exit")
	})
	return c.closeErr
}

// decodeLine decodes one line: a message, or a batch of them. Keys match
// exactly, as in the SDK (a "Method" is not a "method").
func decodeLine(line []byte) ([]jsonrpc.Message, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil, nil
	}
	if line[0] != '[' {
		m, err := decodeMessage(line)
		if err != nil {
			return nil, err
		}
		return []jsonrpc.Message{m}, nil
	}
	var batch []json.RawMessage
	if err := json.Unmarshal(line, &batch); err != nil {
		return nil, fmt.Errorf("a JSON-RPC batch: %w", err)
	}
	if len(batch) == 0 {
		return nil, errors.New("an empty JSON-RPC batch")
	}
	out := make([]jsonrpc.Message, 0, len(batch))
	for _, raw := range batch {
		m, err := decodeMessage(raw)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func decodeMessage(raw []byte) (jsonrpc.Message, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("a JSON-RPC message: %w", err)
	}
	if v := fields["jsonrpc"]; string(v) != `"2.0"` {
		return nil, fmt.Errorf("a JSON-RPC message of version %s, not \"2.0\"", v)
	}
	id, err := decodeID(fields["id"])
	if err != nil {
		return nil, err
	}
	if rawMethod, ok := fields["method"]; ok {
		var method string
		if err := json.Unmarshal(rawMethod, &method); err != nil {
			return nil, fmt.Errorf("a JSON-RPC message's method: %w", err)
		}
		return &jsonrpc.Request{ID: id, Method: method, Params: fields["params"]}, nil
	}
	if !id.IsValid() {
		return nil, errors.New("a JSON-RPC response without an id")
	}
	r := &jsonrpc.Response{ID: id, Result: fields["result"]}
	if e := fields["error"]; e != nil && string(e) != "null" {
		var we jsonrpc.Error
		if err := json.Unmarshal(e, &we); err != nil {
			return nil, fmt.Errorf("a JSON-RPC error: %w", err)
		}
		r.Error = &we
	}
	return r, nil
}

// decodeID reads an id as the SDK does: a number (its integer part), a
// string, or none.
func decodeID(raw json.RawMessage) (jsonrpc.ID, error) {
	var v any
	if raw != nil {
		if err := json.Unmarshal(raw, &v); err != nil {
			return jsonrpc.ID{}, fmt.Errorf("a JSON-RPC id: %w", err)
		}
	}
	return jsonrpc.MakeID(v)
}
