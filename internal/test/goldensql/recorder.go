package goldensql

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// Sent is one statement as a store handed it to its connection: the text
// pgx puts in its Parse message unchanged, and how many arguments went
// with it.
type Sent struct {
	SQL  string
	Args int
}

// Recorder is a database that runs nothing: it keeps every statement a
// store sends and answers each with no rows, so that the store's own code
// decides what is sent, without a database. It has the methods of pgx's
// pool that the stores use (Exec, Query, QueryRow, Begin).
type Recorder struct{ Sent []Sent }

func (r *Recorder) note(sql string, args []any) { r.Sent = append(r.Sent, Sent{sql, len(args)}) }

// Exec notes sql.
func (r *Recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.note(sql, args)
	return pgconn.NewCommandTag("SELECT 1"), nil
}

// Query notes sql and answers no rows.
func (r *Recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.note(sql, args)
	return noRows{}, nil
}

// QueryRow notes sql and answers no row.
func (r *Recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.note(sql, args)
	return noRow{}
}

// Begin starts a transaction whose statements are noted like the
// recorder's own.
func (r *Recorder) Begin(context.Context) (pgx.Tx, error) { return recordingTx{r: r}, nil }

// recordingTx is a transaction of the recorder: its statements are noted
// like the recorder's own (BEGIN and COMMIT are not statements of the
// store's).
type recordingTx struct {
	pgx.Tx // never called: the stores use only the methods below
	r      *Recorder
}

func (tx recordingTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return tx.r.Exec(ctx, sql, args...)
}

func (tx recordingTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return tx.r.Query(ctx, sql, args...)
}

func (tx recordingTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return tx.r.QueryRow(ctx, sql, args...)
}

func (tx recordingTx) Commit(context.Context) error   { return nil }
func (tx recordingTx) Rollback(context.Context) error { return nil }

// noRows is a result of no rows (the methods the stores do not read are
// left to the nil interface).
type noRows struct{ pgx.Rows }

func (noRows) Close()                        {}
func (noRows) Err() error                    { return nil }
func (noRows) CommandTag() pgconn.CommandTag { return pgconn.NewCommandTag("SELECT 0") }
func (noRows) Next() bool                    { return false }
func (noRows) Scan(...any) error             { return pgx.ErrNoRows }

type noRow struct{}

func (noRow) Scan(...any) error { return pgx.ErrNoRows }
