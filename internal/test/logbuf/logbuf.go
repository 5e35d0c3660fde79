// Package logbuf is a buffer that collects log output written from many
// goroutines, for tests that read what was logged.
package logbuf

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writes and reads.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
