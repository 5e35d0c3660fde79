package console

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/notify"
)

// Sink prints each message as a readable line and appends a JSON
// record of it to a file: a post is {key, channel, text, ref, time}, an
// update {update_of, channel, text, time}, both with title and fields when
// set. Find searches the posts. It is safe for concurrent use; several
// processes may share the file, since records are appended with single
// O_APPEND writes.
type Sink struct {
	w    io.Writer
	path string

	mu      sync.Mutex
	offset  int64             // bytes of the file indexed so far
	lines   int               // complete lines indexed so far
	partial bool              // the file ends in an unterminated line
	refs    map[string]string // key → ref, the first record of each key
	posts   map[string]string // ref → channel, of every post record
}

var _ notify.Sink = (*Sink)(nil)

// record is one line of the file. Posts always carry key and ref, and
// updates never do, so Find cannot match an update; title, fields and
// update_of are absent from older files.
type record struct {
	Key      string         `json:"key,omitempty"`
	UpdateOf string         `json:"update_of,omitempty"`
	Channel  string         `json:"channel"`
	Text     string         `json:"text"`
	Title    string         `json:"title,omitempty"`
	Fields   []notify.Field `json:"fields,omitempty"`
	Ref      string         `json:"ref,omitempty"`
	Time     time.Time      `json:"time"`
}

// New returns a sink printing to w (nil prints nothing) and
// recording to the file at path, which it creates with mode 0600 if absent.
func New(w io.Writer, path string) (*Sink, error) {
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
	return &Sink{w: w, path: path, refs: map[string]string{}, posts: map[string]string{}}, nil
}

// Post appends m's record under key and prints it, unless key was already
// posted: then it returns that post's ref and writes nothing. The ref is
// "<file name>:<line>". A failure to print is ignored: the record is the
// delivery.
func (s *Sink) Post(ctx context.Context, key string, m notify.Message) (string, error) {
	if key == "" {
		return "", errors.New("notify: empty key")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockFile(s.path)
	if err != nil {
		return "", err
	}
	defer unlock()
	if err := s.scanLocked(); err != nil {
		return "", err
	}
	if ref, ok := s.refs[key]; ok {
		return ref, nil
	}
	n := s.lines + 1
	if s.partial {
		n++ // the torn line is ended by writeLocked's leading newline
	}
	ref := fmt.Sprintf("%s:%d", filepath.Base(s.path), n)
	err = s.writeLocked(record{Key: key, Channel: m.Channel, Text: m.Text, Title: m.Title, Fields: m.Fields,
		Ref: ref, Time: time.Now().UTC()})
	if err != nil {
		return "", err
	}
	_, _ = fmt.Fprintln(s.w, readable(m.Channel, m, "", key))
	return ref, nil
}

// Update appends a record of m as the new content of the post ref and
// prints it. The edit stays in the post's channel: m.Channel is not used.
// A ref that no post record of the file has answers an error matching
// ErrMessageGone (permanent), as does any ref after the file was
// truncated.
func (s *Sink) Update(ctx context.Context, ref string, m notify.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	unlock, err := lockFile(s.path)
	if err != nil {
		return err
	}
	defer unlock()
	if err := s.scanLocked(); err != nil {
		return err
	}
	ch, ok := s.posts[ref]
	if !ok {
		return agentledger.Permanent(fmt.Errorf("notify: no message %q in %s: %w", ref, filepath.Base(s.path), notify.ErrMessageGone))
	}
	err = s.writeLocked(record{UpdateOf: ref, Channel: ch, Text: m.Text, Title: m.Title, Fields: m.Fields, Time: time.Now().UTC()})
	if err != nil {
		return err
	}
	_, _ = fmt.Fprintln(s.w, readable(ch, m, ref, ""))
	return nil
}

// Find returns the ref of the record posted under key, if any. The file
// holds every channel and is indexed as it grows, so m and since are not
// needed.
func (s *Sink) Find(ctx context.Context, key string, _ notify.Message, _ time.Time) (string, bool, error) {
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
func (s *Sink) scanLocked() error {
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
		s.offset, s.lines, s.refs, s.posts = 0, 0, map[string]string{}, map[string]string{}
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
		if json.Unmarshal(line, &rec) != nil || rec.Key == "" || rec.UpdateOf != "" {
			continue // a torn or foreign line, or an update
		}
		if _, seen := s.refs[rec.Key]; !seen {
			s.refs[rec.Key] = rec.Ref
		}
		s.posts[rec.Ref] = rec.Channel
	}
}

// writeLocked appends rec as one line, never glued to a torn one.
func (s *Sink) writeLocked(rec record) error {
	line, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	if s.partial {
		line = append([]byte{'\n'}, line...)
	}
	return appendFile(s.path, append(line, '\n'))
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

// lockFile holds an exclusive flock on the file at path until unlock:
// daemons sharing the file must not both take the same next line number
// for their refs, or both post a key neither has seen yet.
func lockFile(path string) (unlock func(), err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("notify: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("notify: locking %s: %w", filepath.Base(path), err)
	}
	return func() { f.Close() }, nil // closing releases the lock
}
