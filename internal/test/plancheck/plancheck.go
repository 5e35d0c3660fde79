// Package plancheck reads PostgreSQL's plan for a statement, under a
// forced plan-cache mode, and tells whether a batched statement is driven
// by the ids it is given. Tests of the packages that own batched
// statements use it to show that no statistics and no plan-cache decision
// can turn an id-driven write into a scan of a partial index nested over
// the batch's arrays (the quadratic plan).
package plancheck

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agentledger/agentledger/internal/pgplan"
)

// Modes are the two plan-cache modes a prepared statement can end up in:
// a custom plan built for the parameters' values, and the generic plan
// PostgreSQL may switch to after five executions.
var Modes = []string{"force_custom_plan", "force_generic_plan"}

// Node is one node of an EXPLAIN (FORMAT JSON) plan.
type Node struct {
	NodeType     string  `json:"Node Type"`
	Relationship string  `json:"Parent Relationship"`
	Relation     string  `json:"Relation Name"`
	Alias        string  `json:"Alias"`
	Index        string  `json:"Index Name"`
	IndexCond    string  `json:"Index Cond"`
	TIDCond      string  `json:"TID Cond"` // a Tid Scan's: the row addresses it fetches
	Filter       string  `json:"Filter"`
	Function     string  `json:"Function Name"`
	CTEName      string  `json:"CTE Name"`
	Subplan      string  `json:"Subplan Name"`
	PlanRows     float64 `json:"Plan Rows"`
	TotalCost    float64 `json:"Total Cost"` // the planner's estimate, which picks custom or generic plans
	Plans        []Node  `json:"Plans"`
}

// Explain prepares sql on conn, sets plan_cache_mode to mode for the
// session, and returns the plan of executing it with args. The statement
// is deallocated and the mode reset before it returns.
func Explain(ctx context.Context, conn *pgx.Conn, mode, sql string, args ...any) (*Node, error) {
	const name = "plancheck_stmt"
	if _, err := conn.Exec(ctx, "SELECT set_config('plan_cache_mode', $1, false)", mode); err != nil {
		return nil, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "RESET plan_cache_mode") //nolint:errcheck
	desc, err := conn.Prepare(ctx, name, sql)
	if err != nil {
		return nil, fmt.Errorf("prepare: %w", err)
	}
	defer conn.Deallocate(context.WithoutCancel(ctx), name) //nolint:errcheck
	if len(args) != len(desc.ParamOIDs) {
		return nil, fmt.Errorf("statement takes %d parameters, got %d", len(desc.ParamOIDs), len(args))
	}
	// EXECUTE inside EXPLAIN takes no protocol parameters: each argument
	// becomes a literal of the parameter's type, rendered by the server.
	lits := make([]string, len(args))
	for i, a := range args {
		var typ string
		if err := conn.QueryRow(ctx, "SELECT format_type($1, NULL)", desc.ParamOIDs[i]).Scan(&typ); err != nil {
			return nil, err
		}
		var lit string
		if err := conn.QueryRow(ctx, "SELECT quote_nullable($1::"+typ+")", a).Scan(&lit); err != nil {
			return nil, fmt.Errorf("parameter $%d (%s): %w", i+1, typ, err)
		}
		lits[i] = lit + "::" + typ
	}
	q := "EXPLAIN (FORMAT JSON, VERBOSE) EXECUTE " + name
	if len(lits) > 0 {
		q += "(" + strings.Join(lits, ", ") + ")"
	}
	var raw []byte
	if err := conn.QueryRow(ctx, q).Scan(&raw); err != nil {
		return nil, fmt.Errorf("explain: %w", err)
	}
	var out []struct {
		Plan Node `json:"Plan"`
	}
	if err := json.Unmarshal(raw, &out); err != nil || len(out) != 1 {
		return nil, fmt.Errorf("explain: unexpected output %.200s", raw)
	}
	return &out[0].Plan, nil
}

// Walk calls fn for n and every node beneath it, with the chain of nodes
// above it (outermost first).
func (n *Node) Walk(fn func(n *Node, above []*Node)) {
	var walk func(n *Node, above []*Node)
	walk = func(n *Node, above []*Node) {
		fn(n, above)
		above = append(above, n)
		for i := range n.Plans {
			walk(&n.Plans[i], above)
		}
	}
	walk(n, nil)
}

// String is an indented outline of the plan, for failure messages.
func (n *Node) String() string {
	var b strings.Builder
	n.Walk(func(n *Node, above []*Node) {
		b.WriteString(strings.Repeat("  ", len(above)))
		b.WriteString(n.NodeType)
		if n.Relationship != "" {
			fmt.Fprintf(&b, " (%s)", n.Relationship)
		}
		if n.Relation != "" {
			fmt.Fprintf(&b, " on %s", n.Relation)
		}
		if n.Index != "" {
			fmt.Fprintf(&b, " using %s", n.Index)
		}
		if n.Function != "" {
			fmt.Fprintf(&b, " %s()", n.Function)
		}
		if n.CTEName != "" {
			fmt.Fprintf(&b, " cte %s", n.CTEName)
		}
		if n.IndexCond != "" {
			fmt.Fprintf(&b, " cond %s", clip(n.IndexCond))
		}
		if n.TIDCond != "" {
			fmt.Fprintf(&b, " tids %s", clip(n.TIDCond))
		}
		if n.Filter != "" {
			fmt.Fprintf(&b, " filter %s", clip(n.Filter))
		}
		fmt.Fprintf(&b, " rows=%.0f\n", n.PlanRows)
	})
	return b.String()
}

// DrivenBy checks that every read of table in the plan goes through one
// of the indexes allowed (typically the primary key, looked up by the
// statement's ids), never a sequential scan or another index, and that no
// nested loop rescans an array (a Function Scan such as unnest, or a CTE
// built from one) or a scan of table that is not an index look-up for each
// outer row (but a CTE of one computed row): the shapes whose cost grows with the product of the batch and
// the table's matching rows. It returns nil or an error naming the first
// offending node.
func DrivenBy(plan *Node, table string, allowed ...string) error {
	return check(plan, table, allowed, true)
}

// Reads checks only that every read of table goes through one of the
// indexes allowed: for statements of one row, where a loop has one turn.
func Reads(plan *Node, table string, allowed ...string) error {
	return check(plan, table, allowed, false)
}

func check(plan *Node, table string, allowed []string, loops bool) error {
	// CTEs of one computed row (WITH now AS (SELECT now())) cost nothing
	// to rescan.
	constant := map[string]bool{}
	plan.Walk(func(n *Node, _ []*Node) {
		if name, ok := strings.CutPrefix(n.Subplan, "CTE "); ok && n.NodeType == "Result" && len(n.Plans) == 0 {
			constant[name] = true
		}
	})
	var bad error
	plan.Walk(func(n *Node, above []*Node) {
		if bad != nil {
			return
		}
		if n.Relation == table {
			switch n.NodeType {
			case "Index Scan", "Index Only Scan":
				switch {
				case !contains(allowed, n.Index):
					bad = fmt.Errorf("%s of %s uses %s, not the ids (%s)", n.NodeType, table, n.Index, strings.Join(allowed, ", "))
				case n.IndexCond == "" && !limited(above):
					// an index read end to end: a merge join's
					// sorted feed walks every row of the table (a
					// queue's head read in index order under a LIMIT
					// stops at the LIMIT)
					bad = fmt.Errorf("%s of %s through %s has no index condition and no LIMIT: it reads the whole index", n.NodeType, table, n.Index)
				}
			case "Tid Scan":
				// rows fetched by their address (ctid): a look-up
				// without an index, once; a list of them fetched again
				// for each outer row is the loop this check refuses
				switch {
				case n.TIDCond == "":
					bad = fmt.Errorf("Tid Scan of %s without a TID condition", table)
				case strings.Contains(n.TIDCond, "ANY") && (innerOfLoop(above, n) || inSubPlan(n, above)):
					bad = fmt.Errorf("Tid Scan of %s fetches its whole list (%s) once per outer row", table, clip(n.TIDCond))
				}
			case "Bitmap Heap Scan", "ModifyTable", "LockRows":
				// their Bitmap Index Scan children (which carry no
				// relation name), or the rows fed to them, are
				// checked on their own
			default:
				bad = fmt.Errorf("%s of %s (filter %q): not driven by its ids", n.NodeType, table, n.Filter)
			}
		}
		if n.NodeType == "Bitmap Index Scan" && n.Relation == "" && !contains(allowed, n.Index) && indexOf(table, n.Index) {
			bad = fmt.Errorf("Bitmap Index Scan uses %s, not the ids", n.Index)
		}
		// A nested loop rescans its inner side once per outer row.
		if loops && innerOfLoop(above, n) && !ruleDriven(above, n) {
			switch {
			case n.NodeType == "Function Scan":
				bad = fmt.Errorf("nested loop rescans function scan %s for every outer row", n.Alias)
			case n.NodeType == "CTE Scan" && !constant[n.CTEName] && n.Relationship != "InitPlan":
				// (an InitPlan takes no outer value: it runs once)
				bad = fmt.Errorf("nested loop rescans CTE %s for every outer row", n.CTEName)
			case n.Relation == table && n.IndexCond == "":
				bad = fmt.Errorf("nested loop rescans %s through %s with no index condition", table, n.Index)
			}
		}
	})
	if bad != nil {
		return fmt.Errorf("%w\n%s", bad, plan)
	}
	return nil
}

// Lookups checks that every read of table that runs once per row of
// something else — the inner side of a nested loop, or a correlated
// subquery — uses one of the indexes allowed, with an index condition.
func Lookups(plan *Node, table string, allowed ...string) error {
	var bad error
	plan.Walk(func(n *Node, above []*Node) {
		if bad != nil || n.Relation != table || n.NodeType == "ModifyTable" || n.NodeType == "LockRows" {
			return
		}
		if !innerOfLoop(above, n) && !inSubPlan(n, above) {
			return
		}
		if n.NodeType == "Tid Scan" && n.TIDCond != "" && !strings.Contains(n.TIDCond, "ANY") {
			return // a look-up of one row address
		}
		if !contains(allowed, n.Index) || n.IndexCond == "" {
			bad = fmt.Errorf("%s of %s runs once per outer row through %q (cond %q), not a look-up by %s",
				n.NodeType, table, n.Index, clip(n.IndexCond), strings.Join(allowed, ", "))
		}
	})
	if bad != nil {
		return fmt.Errorf("%w\n%s", bad, plan)
	}
	return nil
}

// ReadOnce checks that table is read once per statement: never on the
// inner side of a nested loop nor in a correlated subquery (the
// notification rules, which each changed row used to rescan).
func ReadOnce(plan *Node, table string) error {
	var bad error
	plan.Walk(func(n *Node, above []*Node) {
		if bad == nil && n.Relation == table && (innerOfLoop(above, n) || inSubPlan(n, above)) {
			bad = fmt.Errorf("%s of %s runs once per outer row", n.NodeType, table)
		}
	})
	if bad != nil {
		return fmt.Errorf("%w\n%s", bad, plan)
	}
	return nil
}

// inSubPlan tells whether n is part of a correlated subquery (run per row;
// an InitPlan runs once).
func inSubPlan(n *Node, above []*Node) bool {
	if n.Relationship == "SubPlan" {
		return true
	}
	for _, p := range above {
		if p.Relationship == "SubPlan" {
			return true
		}
	}
	return false
}

// innerOfLoop tells whether n, below the nodes above, is on the inner
// (rescanned) side of a nested loop. A Materialize or Memoize between them
// still rescans its source's result once per outer row, so it counts as
// part of the inner side.
func innerOfLoop(above []*Node, n *Node) bool { return loopOver(above, n) != nil }

// loopOver is the nearest nested loop above n with n on its inner side,
// or nil.
func loopOver(above []*Node, n *Node) *Node {
	child := n
	for i := len(above) - 1; i >= 0; i-- {
		if above[i].NodeType == "Nested Loop" && child.Relationship == "Inner" {
			return above[i]
		}
		child = above[i]
	}
	return nil
}

// limited tells whether a LIMIT is among the nodes above: a read below it
// stops once the LIMIT has its rows.
func limited(above []*Node) bool {
	for _, p := range above {
		if p.NodeType == "Limit" {
			return true
		}
	}
	return false
}

// FewRows are the tables of configuration, a handful of rows each that no
// batch multiplies (the notification rules). A nested loop whose outer side
// reads only them rescans its inner side once per row of configuration:
// the cost of a batch times a handful, not times the batch or the table.
var FewRows = map[string]bool{"notification_rules": true}

// ruleDriven tells whether the nested loop above n whose inner side n is
// on is driven by a read of FewRows tables alone.
func ruleDriven(above []*Node, n *Node) bool {
	loop := loopOver(above, n)
	if loop == nil {
		return false
	}
	for i := range loop.Plans {
		if outer := &loop.Plans[i]; outer.Relationship == "Outer" {
			return readsOnly(outer, FewRows)
		}
	}
	return false
}

// readsOnly tells whether every scan under n reads one of tables.
func readsOnly(n *Node, tables map[string]bool) bool {
	only := true
	n.Walk(func(m *Node, _ []*Node) {
		if strings.HasSuffix(m.NodeType, "Scan") && !tables[m.Relation] {
			only = false
		}
	})
	return only
}

// indexOf guesses whether index belongs to table by its name (PostgreSQL
// names indexes table_…); Bitmap Index Scans carry no relation name.
func indexOf(table, index string) bool { return strings.HasPrefix(index, table+"_") }

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// clip shortens a condition that spells out a literal array.
func clip(s string) string {
	if len(s) <= 160 {
		return s
	}
	return s[:160] + "…"
}

// trap fills tasks with finished rows, gathers statistics, then adds
// running ones and (when events > 0) as many pending outbox events of
// distinct tasks on top of as many delivered ones: the planner believes no
// task runs and no event is pending, the statistics a queue has after a
// quiet hour and the ones under which a cached plan of a batched write
// started from the partial index of that state. It returns the ids and
// lease tokens of up to 1,000 running tasks, and the ids of pending events.
func trap(ctx context.Context, conn *pgx.Conn, finished, running, events int) (ids, tokens, eventIDs []int64, err error) {
	for _, q := range []string{
		fmt.Sprintf(`INSERT INTO tasks (kind, state, attempt, finished_at, lease_token, attempted_at)
		 SELECT 'noop', 'succeeded', 1, now() - interval '1 hour', 1, now() - interval '1 hour'
		 FROM generate_series(1, %d)`, finished),
		fmt.Sprintf(`INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload, state, delivered_at)
		 SELECT 'default', g, 1, 1, 'succeeded', 'r', '#c', '{}', 'delivered', now()
		 FROM generate_series(1, %d) g`, events),
		`ANALYZE tasks`,
		`ANALYZE outbox`,
		fmt.Sprintf(`INSERT INTO tasks (kind, state, attempt, lease_owner, lease_token, lease_expires_at, attempted_at)
		 SELECT 'noop', 'running', 1, 'w', 7, now() + interval '1 hour', now()
		 FROM generate_series(1, %d)`, running),
		fmt.Sprintf(`INSERT INTO outbox (tenant, task_id, generation, attempt, event, rule, channel, payload,
			lease_owner, lease_token, lease_expires_at)
		 SELECT 'default', %d + g, 1, 1, 'succeeded', 'r', '#c', '{}', 'd', g, now() + interval '1 hour'
		 FROM generate_series(1, %d) g`, events, events),
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return nil, nil, nil, fmt.Errorf("%.60s…: %w", strings.TrimSpace(q), err)
		}
	}
	err = conn.QueryRow(ctx, `SELECT array_agg(id ORDER BY id), array_agg(lease_token ORDER BY id)
		FROM (SELECT id, lease_token FROM tasks WHERE state = 'running' ORDER BY id LIMIT 1000) r`).Scan(&ids, &tokens)
	if err != nil {
		return nil, nil, nil, err
	}
	err = conn.QueryRow(ctx, `SELECT coalesce(array_agg(id ORDER BY id), '{}')
		FROM (SELECT id FROM outbox WHERE state = 'pending' ORDER BY id LIMIT 1000) r`).Scan(&eventIDs)
	return ids, tokens, eventIDs, err
}

// Trapped is what TrapConn set up: up to 1,000 running tasks' ids and
// tokens, and the pending events' ids.
type Trapped struct {
	IDs, Tokens, Events []int64
}

// TrapConn connects to the database at url (a fresh, migrated one), sets it
// up as trap does and the session as the daemon's are, and closes the
// connection when t ends.
func TrapConn(t testing.TB, url string, finished, running, events int) (*pgx.Conn, Trapped) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	var tr Trapped
	if tr.IDs, tr.Tokens, tr.Events, err = trap(ctx, conn, finished, running, events); err != nil {
		t.Fatal(err)
	}
	if err := DaemonSession(ctx, conn); err != nil {
		t.Fatal(err)
	}
	return conn, tr
}

// DaemonSession sets conn's session as the daemon's connections are set
// (package pgplan).
func DaemonSession(ctx context.Context, conn *pgx.Conn) error {
	_, err := conn.Exec(ctx, pgplan.ConnectQuery())
	return err
}
