package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Table collects rows and prints them aligned.
type Table struct {
	header []string
	rows   [][]string
}

// NewTable returns a table with the given column names.
func NewTable(header ...string) *Table { return &Table{header: header} }

// Add appends a row; values are formatted with %v.
func (t *Table) Add(cells ...any) {
	row := make([]string, len(cells))
	for i, c := range cells {
		row[i] = fmt.Sprint(c)
	}
	t.rows = append(t.rows, row)
}

// Print writes the table to w, numbers right-aligned.
func (t *Table) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	line := func(cells []string) {
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	line(t.header)
	sep := make([]string, len(t.header))
	for i, h := range t.header {
		sep[i] = strings.Repeat("-", len(h))
	}
	line(sep)
	for _, r := range t.rows {
		line(r)
	}
	tw.Flush()
}

// Percentiles summarises a sample of durations.
type Percentiles struct {
	N                         int
	Mean, P50, P90, P99, P999 time.Duration
	Min, Max                  time.Duration
}

// Summarise computes nearest-rank percentiles of xs (which it sorts).
func Summarise(xs []time.Duration) Percentiles {
	var p Percentiles
	p.N = len(xs)
	if p.N == 0 {
		return p
	}
	slices.Sort(xs)
	var sum time.Duration
	for _, x := range xs {
		sum += x
	}
	rank := func(q float64) time.Duration {
		i := int(q*float64(len(xs))+0.999999) - 1
		return xs[max(0, min(i, len(xs)-1))]
	}
	p.Mean = sum / time.Duration(len(xs))
	p.P50, p.P90, p.P99, p.P999 = rank(0.50), rank(0.90), rank(0.99), rank(0.999)
	p.Min, p.Max = xs[0], xs[len(xs)-1]
	return p
}

// ms formats a duration as milliseconds with two decimals.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 2, 64)
}

// CPUMeter measures the CPU time this process (and the worker processes it
// started), the database server (when it runs on this machine: its
// processes are read from /proc) and the whole machine spend between
// StartCPU and Stop.
type CPUMeter struct {
	pool    *pgxpool.Pool
	pids    []int
	at      time.Time
	self    time.Duration
	machine time.Duration
	server  *serverSnap // nil when the server's processes cannot be read
}

// StartCPU starts measuring; pool is a connection to the run's database,
// pids are worker processes whose CPU time counts as this process's.
func StartCPU(ctx context.Context, pool *pgxpool.Pool, pids ...int) *CPUMeter {
	m := &CPUMeter{pool: pool, pids: pids}
	m.server, _ = serverCPU(ctx, pool, nil)
	m.at, m.self, m.machine = time.Now(), m.goCPU(), machineBusy()
	return m
}

// goCPU is the CPU time of this process and the worker processes.
func (m *CPUMeter) goCPU() time.Duration {
	t := selfCPU()
	for _, pid := range m.pids {
		if st, ok := readProcStat(pid); ok {
			t += st.self
		}
	}
	return t
}

// CPUUse is the CPU time spent during a measurement.
type CPUUse struct {
	Wall    time.Duration
	Self    time.Duration // this process and its worker processes
	Server  time.Duration // the database server's processes; valid if ServerKnown
	Machine time.Duration // all CPUs busy; valid if MachineKnown
	// ServerKnown and MachineKnown say whether Server and Machine were measured.
	ServerKnown, MachineKnown bool
}

// Stop ends the measurement.
func (m *CPUMeter) Stop(ctx context.Context) CPUUse {
	u, _ := m.read(ctx)
	return u
}

// Lap returns the use since StartCPU or the previous Lap and starts the
// next measurement from the same readings, so that consecutive laps leave
// no gap.
func (m *CPUMeter) Lap(ctx context.Context) CPUUse {
	u, next := m.read(ctx)
	*m = next
	return u
}

// read returns the use so far and a meter started now.
func (m *CPUMeter) read(ctx context.Context) (CPUUse, CPUMeter) {
	next := CPUMeter{pool: m.pool, pids: m.pids}
	next.server, _ = serverCPU(ctx, m.pool, m.server)
	next.at, next.self, next.machine = time.Now(), m.goCPU(), machineBusy()
	u := CPUUse{Wall: next.at.Sub(m.at), Self: next.self - m.self}
	if next.machine > 0 && m.machine > 0 {
		u.Machine, u.MachineKnown = next.machine-m.machine, true
	}
	if m.server != nil && next.server != nil {
		for _, d := range serverCPUSpent(*m.server, *next.server) {
			u.Server += d
		}
		u.ServerKnown = true
	}
	return u, next
}

// cells formats the use for n tasks: cores of this process, of the server
// and of anything else on the machine, then µs of CPU per task of this
// process and of the server.
func (u CPUUse) cells(n int) []any {
	cores := func(d time.Duration) string { return strconv.FormatFloat(d.Seconds()/u.Wall.Seconds(), 'f', 2, 64) }
	per := func(d time.Duration) string {
		return strconv.FormatFloat(float64(d)/float64(time.Microsecond)/float64(max(n, 1)), 'f', 1, 64)
	}
	srvCores, srvPer, others := "?", "?", "?"
	if u.ServerKnown {
		srvCores, srvPer = cores(u.Server), per(u.Server)
		if u.MachineKnown {
			others = cores(max(u.Machine-u.Self-u.Server, 0))
		}
	}
	return []any{cores(u.Self), srvCores, others, per(u.Self), srvPer}
}

// cpuHeader names the columns of CPUUse.cells.
var cpuHeader = []string{"go cores", "pg cores", "others", "go us/task", "pg us/task"}

// selfCPU returns the user+system time of this process.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// machineBusy sums the non-idle time of the "cpu" line of /proc/stat
// (USER_HZ is 100 on Linux); 0 when unknown.
func machineBusy() time.Duration {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	if !sc.Scan() {
		return 0
	}
	fields := strings.Fields(sc.Text())
	if len(fields) < 8 || fields[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, f := range fields[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		n, _ := strconv.ParseInt(f, 10, 64)
		busy += n
	}
	return time.Duration(busy) * 10 * time.Millisecond
}

// Profile is a running CPU profile of one measured phase; a nil *Profile
// does nothing.
type Profile struct {
	f    *os.File
	base string // prefix-label, for the allocation profiles
}

// StartProfile starts a CPU profile written to prefix-label.pprof; an empty
// prefix profiles nothing. It also writes the allocation profile as it stands
// (prefix-label.allocs0.pprof), so that the one Stop writes can be read as
// the phase's own allocations with pprof -diff_base.
func StartProfile(prefix, label string) (*Profile, error) {
	if prefix == "" {
		return nil, nil
	}
	base := prefix + "-" + label
	if err := writeAllocs(base + ".allocs0.pprof"); err != nil {
		return nil, err
	}
	f, err := os.Create(base + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return &Profile{f: f, base: base}, nil
}

// Stop ends the profile, closes its file and writes the allocation profile
// (prefix-label.allocs.pprof); an error writing the latter is only printed,
// the CPU profile being whole.
func (p *Profile) Stop() {
	if p == nil {
		return
	}
	pprof.StopCPUProfile()
	p.f.Close()
	if err := writeAllocs(p.base + ".allocs.pprof"); err != nil {
		fmt.Fprintf(os.Stderr, "agentbench: allocation profile: %v\n", err)
	}
}

// writeAllocs writes the process's allocation profile so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// PGStats watches the server during one run: pg_stat_statements of the
// run's database and samples of what its backends wait on.
type PGStats struct {
	pool *pgxpool.Pool

	cpu0 *serverSnap
	ctr0 *serverCounters

	mu      sync.Mutex
	waits   map[string]int
	samples int
	stop    chan struct{}
	done    chan struct{}
}

// StartPGStats resets pg_stat_statements and samples pg_stat_activity of
// the run's database every 10ms until Stop.
func StartPGStats(ctx context.Context, pool *pgxpool.Pool) (*PGStats, error) {
	if _, err := pool.Exec(ctx, "SELECT pg_stat_statements_reset()"); err != nil {
		return nil, fmt.Errorf("pg_stat_statements_reset: %w", err)
	}
	p := &PGStats{pool: pool, waits: map[string]int{}, stop: make(chan struct{}), done: make(chan struct{})}
	p.cpu0, _ = serverCPU(ctx, pool, nil)
	var err error
	if p.ctr0, err = readServerCounters(ctx, pool); err != nil {
		return nil, err
	}
	go p.sample(ctx)
	return p, nil
}

// procCPU is one server process's CPU time so far.
type procCPU struct {
	kind  string // backend type; client backends of the run's database are "client <application_name>", or "client listener" if their last query was LISTEN
	start int64  // when it started (clock ticks after boot): tells a reused pid apart
	cpu   time.Duration
}

// serverSnap is one reading of the server's processes.
type serverSnap struct {
	procs map[int]procCPU // by pid
	// reaped is the CPU time of the postmaster's exited children
	// (cutime+cstime: their whole lifetimes).
	reaped time.Duration
}

// serverCPU reads, from /proc, the CPU time of every process of the server
// (which must run on this machine) and of its exited processes. prev, if
// not nil, is the previous reading: its processes that pg_stat_activity no
// longer lists are read too, for they may not have been reaped yet.
func serverCPU(ctx context.Context, pool *pgxpool.Pool, prev *serverSnap) (*serverSnap, error) {
	// The backend that runs the query is listed too: a pool may run the
	// next reading on another connection, and a process missing from one
	// reading would be taken as exited or new.
	rows, err := pool.Query(ctx, `
SELECT pid, CASE WHEN backend_type = 'client backend' AND datname = current_database() THEN
		CASE WHEN query ILIKE 'listen %' THEN 'client listener' ELSE 'client ' || coalesce(nullif(application_name, ''), '?') END
	ELSE backend_type END
FROM pg_stat_activity`)
	if err != nil {
		return nil, err
	}
	kinds := map[int]string{}
	for rows.Next() {
		var pid int
		var kind string
		if err := rows.Scan(&pid, &kind); err != nil {
			rows.Close()
			return nil, err
		}
		kinds[pid] = kind
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	parents := map[int]int{} // the postmaster is the parent of most listed processes
	for pid := range kinds {
		if st, ok := readProcStat(pid); ok {
			parents[st.ppid]++
		}
	}
	postmaster := 0
	for ppid, n := range parents {
		if postmaster == 0 || n > parents[postmaster] {
			postmaster = ppid
		}
	}
	if prev != nil {
		for pid, p := range prev.procs {
			if _, ok := kinds[pid]; !ok {
				kinds[pid] = p.kind
			}
		}
	}
	if postmaster == 0 {
		return nil, errors.New("server processes not found in /proc: is the server on another machine?")
	}
	// A child reaped between reading its own time and the postmaster's
	// would count twice, and one reaped between reading the postmaster's
	// and looking for it (now gone) not at all: read the postmaster before
	// and after the children, and again if it changed.
	var snap *serverSnap
	for range 3 {
		pm, ok := readProcStat(postmaster)
		if !ok {
			return nil, errors.New("the postmaster is gone from /proc")
		}
		snap = &serverSnap{procs: map[int]procCPU{}, reaped: pm.children}
		for pid, kind := range kinds {
			st, ok := readProcStat(pid)
			if !ok || st.ppid != postmaster {
				continue // exited (and reaped), or its pid already reused elsewhere
			}
			snap.procs[pid] = procCPU{kind: kind, start: st.start, cpu: st.self}
		}
		if pm2, ok := readProcStat(postmaster); ok && pm2.children == pm.children {
			break
		}
	}
	return snap, nil
}

// serverCPUSpent returns the CPU time the server's processes spent between
// readings a and b, by kind of process ("exited" for those that exited in
// between): only the time spent in between counts. A process in both
// readings (the same pid and start time) counts its difference; one in b
// only (a new pid, or a reused one) all of its time. Those that exited are
// in the growth of the postmaster's reaped children's time, which holds
// their whole lifetimes: the time that those alive at a had spent by then
// is taken out. Processes that started and exited in between are in that
// growth entirely.
func serverCPUSpent(a, b serverSnap) map[string]time.Duration {
	by := map[string]time.Duration{}
	for pid, e := range b.procs {
		d := e.cpu
		if p, ok := a.procs[pid]; ok && p.start == e.start {
			d -= p.cpu
		}
		if d > 0 {
			by[e.kind] += d
		}
	}
	exited := b.reaped - a.reaped
	for pid, p := range a.procs {
		if e, ok := b.procs[pid]; !ok || e.start != p.start {
			exited -= p.cpu // gone: its time before a is in the reaped time
		}
	}
	if exited > 0 { // the kernel rounds each child's time to ticks: a little below 0 is 0
		by["exited"] += exited
	}
	return by
}

// procStat is what readProcStat reads of /proc/PID/stat.
type procStat struct {
	ppid     int
	self     time.Duration // utime+stime
	children time.Duration // cutime+cstime: reaped children's
	start    int64         // starttime, clock ticks after boot
}

// readProcStat reads /proc/PID/stat (clock ticks are 1/100 s on Linux).
func readProcStat(pid int) (procStat, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, false
	}
	f := strings.Fields(s[i+1:]) // f[0] is field 3 (state)
	if len(f) < 20 {
		return procStat{}, false
	}
	num := func(k int) int64 { n, _ := strconv.ParseInt(f[k-3], 10, 64); return n }
	tick := 10 * time.Millisecond
	return procStat{
		ppid:     int(num(4)),
		self:     time.Duration(num(14)+num(15)) * tick,
		children: time.Duration(num(16)+num(17)) * tick,
		start:    num(22),
	}, true
}

// cpuReport sums the server's CPU time between two serverCPU readings by
// kind of process.
func cpuReport(a, b serverSnap, tasks int) string {
	by := serverCPUSpent(a, b)
	var total time.Duration
	kinds := make([]string, 0, len(by))
	for k, d := range by {
		kinds = append(kinds, k)
		total += d
	}
	sort.Slice(kinds, func(i, j int) bool { return by[kinds[i]] > by[kinds[j]] })
	parts := []string{fmt.Sprintf("total %.2fs (%.1f µs/task)", total.Seconds(), float64(total.Microseconds())/float64(max(tasks, 1)))}
	for _, k := range kinds {
		parts = append(parts, fmt.Sprintf("%s %.2fs", k, by[k].Seconds()))
	}
	return strings.Join(parts, ", ")
}

// pidReport lists the server's processes by kind.
func pidReport(s serverSnap) string {
	pids := make([]int, 0, len(s.procs))
	for pid := range s.procs {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	by := map[string][]string{}
	for _, pid := range pids {
		k := s.procs[pid].kind
		by[k] = append(by[k], strconv.Itoa(pid))
	}
	kinds := make([]string, 0, len(by))
	for k := range by {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = k + " " + strings.Join(by[k], ",")
	}
	return strings.Join(parts, "; ")
}

const waitSQL = `
SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU'), state
FROM pg_stat_activity
WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'
	AND backend_type = 'client backend'`

func (p *PGStats) sample(ctx context.Context) {
	defer close(p.done)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rows, err := p.pool.Query(ctx, waitSQL)
		if err != nil {
			continue
		}
		seen := map[string]int{}
		for rows.Next() {
			var ev, state string
			if rows.Scan(&ev, &state) == nil {
				if ev == "Client:ClientRead" && state == "idle in transaction" {
					ev = "idle in transaction"
				}
				seen[ev]++
			}
		}
		rows.Close()
		p.mu.Lock()
		p.samples++
		for k, v := range seen {
			p.waits[k] += v
		}
		p.mu.Unlock()
	}
}

// Stop ends the sampling and prints the top statements and wait events.
func (p *PGStats) Stop(ctx context.Context, w io.Writer, tasks int) {
	if p == nil {
		return
	}
	close(p.stop)
	<-p.done
	if p.cpu0 == nil {
		fmt.Fprintf(w, "  server CPU by process: unknown (no reading at the start)\n")
	} else if cpu1, err := serverCPU(ctx, p.pool, p.cpu0); err != nil {
		fmt.Fprintf(w, "  server CPU by process: unknown (%v)\n", err)
	} else {
		fmt.Fprintf(w, "  server CPU by process: %s\n", cpuReport(*p.cpu0, *cpu1, tasks))
		fmt.Fprintf(w, "  server processes (for perf --pid): %s\n", pidReport(*cpu1))
	}
	settleServerCounters(p.pool)
	if ctr1, err := readServerCounters(ctx, p.pool); err != nil {
		fmt.Fprintf(w, "  %v\n", err)
	} else {
		ctr1.report(w, p.ctr0, tasks)
	}
	rows, err := p.pool.Query(ctx, `
SELECT calls, total_exec_time, mean_exec_time, rows, shared_blks_hit, shared_blks_read,
	shared_blks_dirtied, wal_records, wal_bytes, query
FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC LIMIT 16`)
	if err != nil {
		fmt.Fprintf(w, "  pg_stat_statements: %v\n", err)
		return
	}
	t := NewTable("statement", "calls", "total ms", "mean ms", "rows/call", "blks hit/call", "dirtied/call", "wal KB/call")
	for rows.Next() {
		var calls, nrows, hit, read, dirtied, walRecs int64
		var total, mean float64
		var walBytes float64
		var q string
		if err := rows.Scan(&calls, &total, &mean, &nrows, &hit, &read, &dirtied, &walRecs, &walBytes, &q); err != nil {
			fmt.Fprintf(w, "  pg_stat_statements: %v\n", err)
			rows.Close()
			return
		}
		c := float64(max(calls, 1))
		t.Add(statementName(q), calls, fmt.Sprintf("%.0f", total), fmt.Sprintf("%.3f", mean),
			fmt.Sprintf("%.1f", float64(nrows)/c), fmt.Sprintf("%.0f", float64(hit+read)/c),
			fmt.Sprintf("%.0f", float64(dirtied)/c), fmt.Sprintf("%.1f", walBytes/1024/c))
	}
	rows.Close()
	var b strings.Builder
	t.Print(&b)
	for _, l := range strings.SplitAfter(b.String(), "\n") {
		if l != "" {
			fmt.Fprint(w, "  "+l)
		}
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	type kv struct {
		k string
		v int
	}
	var evs []kv
	for k, v := range p.waits {
		evs = append(evs, kv{k, v})
	}
	sort.Slice(evs, func(i, j int) bool { return evs[i].v > evs[j].v })
	var parts []string
	for _, e := range evs {
		parts = append(parts, fmt.Sprintf("%s %.2f", e.k, float64(e.v)/float64(max(p.samples, 1))))
	}
	fmt.Fprintf(w, "  active backends by wait event (average over %d samples): %s\n\n", p.samples, strings.Join(parts, ", "))
}

// statementName is the name a statement of the product carries in its
// leading comment (/* claims.succeed */, given where it is defined), or the
// statement's first words.
func statementName(q string) string {
	if rest, ok := strings.CutPrefix(q, "/* "); ok {
		if name, _, ok := strings.Cut(rest, " */"); ok {
			return name
		}
	}
	q = strings.Join(strings.Fields(q), " ")
	if len(q) > 40 {
		q = q[:40] + "…"
	}
	return q
}
