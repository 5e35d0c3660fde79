package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// serverCounters are the server's cumulative statistics that explain its
// CPU time outside statement execution: commits (each waits for a WAL
// flush), WAL records, full-page images and bytes, checkpoints, and per
// table the updates that were HOT (they write no index entry) and the
// autovacuum and autoanalyze runs.
type serverCounters struct {
	commits, rollbacks     int64 // the run's database
	walRecords, walFPI     int64 // server-wide, as all WAL counters
	walBytes               float64
	walWrites, walSyncs    int64
	checkpoints, ckptBufs  int64 // timed and requested; buffers they wrote
	bgwriterBufs, backBufs int64 // buffers written by the bgwriter and by backends
	tables                 map[string]tableCounters
}

// tableCounters are pg_stat_user_tables' counters of one table.
type tableCounters struct {
	ins, upd, hot, del, autovacuums, autoanalyzes int64
}

// readServerCounters reads the counters through pool (connected to the
// run's database).
func readServerCounters(ctx context.Context, pool *pgxpool.Pool) (*serverCounters, error) {
	c := &serverCounters{tables: map[string]tableCounters{}}
	err := pool.QueryRow(ctx, `
SELECT d.xact_commit, d.xact_rollback, w.wal_records, w.wal_fpi, w.wal_bytes::float8, w.wal_write, w.wal_sync,
	b.checkpoints_timed + b.checkpoints_req, b.buffers_checkpoint, b.buffers_clean, b.buffers_backend
FROM pg_stat_database d, pg_stat_wal w, pg_stat_bgwriter b
WHERE d.datname = current_database()`).Scan(&c.commits, &c.rollbacks, &c.walRecords, &c.walFPI, &c.walBytes,
		&c.walWrites, &c.walSyncs, &c.checkpoints, &c.ckptBufs, &c.bgwriterBufs, &c.backBufs)
	if err != nil {
		return nil, fmt.Errorf("reading the server's counters: %w", err)
	}
	rows, err := pool.Query(ctx, `
SELECT relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del, autovacuum_count, autoanalyze_count
FROM pg_stat_user_tables`)
	if err != nil {
		return nil, fmt.Errorf("reading pg_stat_user_tables: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		var t tableCounters
		if err := rows.Scan(&name, &t.ins, &t.upd, &t.hot, &t.del, &t.autovacuums, &t.autoanalyzes); err != nil {
			return nil, err
		}
		c.tables[name] = t
	}
	return c, rows.Err()
}

// settleServerCounters lets the backends publish their pending statistics
// before the last reading: a backend publishes them at the end of a
// transaction at most once a second, and an idle one only after 10s. It
// closes pool's idle connections (the enqueuers' backends exit and
// publish) and waits for the workers' next poll.
func settleServerCounters(pool *pgxpool.Pool) {
	pool.Reset()
	time.Sleep(2100 * time.Millisecond)
}

// report prints what changed from a to b, per task.
func (b *serverCounters) report(w io.Writer, a *serverCounters, tasks int) {
	n := float64(max(tasks, 1))
	fmt.Fprintf(w, "  commits %.2f/task (rollbacks %d); WAL %.2f records, %.3f full-page images, %.0f bytes per task; "+
		"%d WAL writes, %d syncs (%.2f/task); %d checkpoints (%d buffers), bgwriter %d, backends %d buffers\n",
		float64(b.commits-a.commits)/n, b.rollbacks-a.rollbacks,
		float64(b.walRecords-a.walRecords)/n, float64(b.walFPI-a.walFPI)/n, (b.walBytes-a.walBytes)/n,
		b.walWrites-a.walWrites, b.walSyncs-a.walSyncs, float64(b.walSyncs-a.walSyncs)/n,
		b.checkpoints-a.checkpoints, b.ckptBufs-a.ckptBufs, b.bgwriterBufs-a.bgwriterBufs, b.backBufs-a.backBufs)
	type row struct {
		name string
		d    tableCounters
	}
	var rs []row
	for name, t := range b.tables {
		p := a.tables[name]
		d := tableCounters{t.ins - p.ins, t.upd - p.upd, t.hot - p.hot, t.del - p.del,
			t.autovacuums - p.autovacuums, t.autoanalyzes - p.autoanalyzes}
		if d.ins+d.upd+d.del+d.autovacuums+d.autoanalyzes > 0 {
			rs = append(rs, row{name, d})
		}
	}
	sort.Slice(rs, func(i, j int) bool { return rs[i].d.ins+rs[i].d.upd > rs[j].d.ins+rs[j].d.upd })
	var parts []string
	for _, r := range rs {
		hot := 0.0
		if r.d.upd > 0 {
			hot = 100 * float64(r.d.hot) / float64(r.d.upd)
		}
		parts = append(parts, fmt.Sprintf("%s ins %.2f upd %.2f (HOT %.0f%%) del %.2f /task, autovacuum %d, autoanalyze %d",
			r.name, float64(r.d.ins)/n, float64(r.d.upd)/n, hot, float64(r.d.del)/n, r.d.autovacuums, r.d.autoanalyzes))
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "  tables: %s\n", strings.Join(parts, "; "))
	}
}
