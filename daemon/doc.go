// Package daemon is agentd as a library: one Config builds the worker pool,
// the HTTP API and webhooks, the cron scheduler, the notification
// dispatcher, the retention janitor, the metrics, the ledger and the tool
// registry, each once, over one PostgreSQL database (or the embedded
// cluster). A program registers its own task kinds and tools before Run;
// they run exactly like the built-in ones, and every effect a tool
// performs passes through the ledger under a deterministic key.
//
//	d := daemon.New(daemon.Config{DatabaseURL: os.Getenv("DATABASE_URL"), Listen: "127.0.0.1:7450"})
//	if err := d.RegisterKind("greet", worker.HandlerFunc(greet)); err != nil { … }
//	if err := d.RegisterTool(openTicket); err != nil { … } // usable from steps and agent tasks
//	err := d.Run(ctx) // until ctx ends: then a graceful shutdown
//
// cmd/agentd is this package behind flags, environment variables and a
// TOML file. A kind or tool name taken by a built-in one, or registered
// twice, is refused (a tool when Run starts, as a *ConfigError).
package daemon
