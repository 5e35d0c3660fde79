package main

import (
	"io"
	"log/slog"

	"github.com/agentledger/agentledger/tracing"
)

// newLogger returns agentd's logger: text or JSON lines on w, with the
// trace and span ids of records logged within a span.
func newLogger(w io.Writer, level slog.Level, format string) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		return namedForAgentd(durationText(groups, a))
	}}
	if format == "json" {
		return slog.New(tracing.LogHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(tracing.LogHandler(slog.NewTextHandler(w, opts)))
}

// durationText writes a duration as people and time.ParseDuration read it
// ("6s"): slog's JSON handler would write nanoseconds (6000000000).
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}
