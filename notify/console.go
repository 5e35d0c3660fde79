package notify

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// ConsoleSink prints each message as a readable line and appends a JSON
// record of it ({key, channel, text, ref, time}) to a file, which Find
// searches. It is safe for concurrent use; several processes may share the
// file, since records are appended with single O_APPEND writes.
type ConsoleSink struct {
	w    io.Writer
	path string

	mu      sync.Mutex
	offset  int64             // bytes of the file indexed so far
	lines   int               // complete lines indexed so far
	partial bool              // the file ends in an unterminated line
	refs    map[string]string // key → ref, the first record of each key
}

var _ Sink = (*ConsoleSink)(nil)

// record is one line of the file.
type record struct {
	Key     string    `json:"key"`
	Channel string    `json:"channel"`
	Text    string    `json:"text"`
	Ref     string    `json:"ref"`
	Time    time.Time `json:"time"`
}

// NewConsoleSink returns a sink printing to w (nil prints nothing) and
// recording to the file at path, which it creates with mode 0600 if absent.
func NewConsoleSink(w io.Writer, path string) (*ConsoleSink, error) {
	if path == "" {
		return nil, errors.New("notify: the console sink needs a file to record messages in")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	if w == nil {
		w = io.Discard
	}
	return &ConsoleSink{w: w, path: path, refs: map[string]string{}}, nil
}

// Post appends m's record under key and prints it, unless key was already
// posted: then it returns that post's ref and writes nothing. The ref is
// "<file name>:<line>". A failure to print is ignored: the record is the
// delivery.
func (s *ConsoleSink) Post(ctx context.Context, key string, m Message) (string, error) {
	if key == "" {
		return "", errors.New("notify: empty key")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.scanLocked(); err != nil {
		return "", err
	}
	if ref, ok := s.refs[key]; ok {
		return ref, nil
	}
	n := s.lines + 1
	if s.partial {
		n++ // the torn line is ended by our leading newline
	}
	ref := fmt.Sprintf("%s:%d", filepath.Base(s.path), n)
	line, err := json.Marshal(record{Key: key, Channel: m.Channel, Text: m.Text, Ref: ref, Time: time.Now().UTC()})
	if err != nil {
		return "", fmt.Errorf("notify: %w", err)
	}
	if s.partial { // never glue a record to a torn line
		line = append([]byte{'\n'}, line...)
	}
	if err := appendFile(s.path, append(line, '\n')); err != nil {
		return "", err
	}
	_, _ = fmt.Fprintln(s.w, readable(key, m))
	return ref, nil
}

// Find returns the ref of the record posted under key, if any; the file
// holds every channel, so m is not needed.
func (s *ConsoleSink) Find(ctx context.Context, key string, _ Message) (string, bool, error) {
	if err := ctx.Err(); err != nil {
		return "", false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.scanLocked(); err != nil {
		return "", false, err
	}
	ref, ok := s.refs[key]
	return ref, ok, nil
}

// scanLocked indexes the records appended since the last scan, by this
// process or another; it starts over if the file was truncated or replaced
// by a shorter one.
func (s *ConsoleSink) scanLocked() error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if st.Size() < s.offset {
		s.offset, s.lines, s.refs = 0, 0, map[string]string{}
	}
	if _, err := f.Seek(s.offset, io.SeekStart); err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	r := bufio.NewReader(f)
	s.partial = false
	for {
		line, err := r.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			s.partial = len(line) > 0
			return nil
		}
		if err != nil {
			return fmt.Errorf("notify: %w", err)
		}
		s.offset += int64(len(line))
		s.lines++
		var rec record
		if json.Unmarshal(line, &rec) != nil || rec.Key == "" {
			continue // a torn or foreign line
		}
		if _, seen := s.refs[rec.Key]; !seen {
			s.refs[rec.Key] = rec.Ref
		}
	}
}

// appendFile appends b to the file at path in one write.
func appendFile(path string, b []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	return nil
}

// readable is the console form: "[notify #ops] text (key al1-0123456789ab…)".
func readable(key string, m Message) string {
	ch := m.Channel
	if !strings.HasPrefix(ch, "#") {
		ch = "#" + ch
	}
	if len(key) > 16 {
		key = key[:16] + "…"
	}
	text := strings.ReplaceAll(m.Text, "\n", "\n    ")
	return fmt.Sprintf("[notify %s] %s (key %s)", ch, text, key)
}
