package main

import (
	"context"
	"io"
	"log/slog"
)

// warnLog is a logger for the warnings of the libraries agentctl uses (the
// embedded cluster's "waiting for pid 12 (agentd) to finish starting…"):
// each message on a line of its own, as agentctl's own messages are.
func warnLog(w io.Writer) *slog.Logger { return slog.New(warnHandler{w}) }

// warnHandler writes warnings and errors as "agentctl: message"; their
// attributes only repeat the message for log readers.
type warnHandler struct{ w io.Writer }

func (h warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h warnHandler) Handle(_ context.Context, r slog.Record) error {
	_, err := io.WriteString(h.w, "agentctl: "+r.Message+"\n")
	return err
}

func (h warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h warnHandler) WithGroup(string) slog.Handler      { return h }
