package claims

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// sent is one statement as a Store handed it to its connection: the text
// pgx puts in its Parse message unchanged, and how many arguments went
// with it.
type sent struct {
	sql  string
	args int
}

// recorder is a DB that runs nothing: it keeps every statement a Store
// sends and answers each with no rows, so that the Store's own code
// decides what is sent, without a database.
type recorder struct{ sent []sent }

func (r *recorder) note(sql string, args []any) { r.sent = append(r.sent, sent{sql, len(args)}) }

func (r *recorder) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	r.note(sql, args)
	return pgconn.NewCommandTag("SELECT 1"), nil
}

func (r *recorder) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	r.note(sql, args)
	return noRows{}, nil
}

func (r *recorder) QueryRow(_ context.Context, sql string, args ...any) pgx.Row {
	r.note(sql, args)
	return noRow{}
}

func (r *recorder) Begin(context.Context) (pgx.Tx, error) { return recordingTx{r: r}, nil }

// recordingTx is a transaction of the recorder: its statements are noted
// like the recorder's own (BEGIN and COMMIT are not statements of the
// store's).
type recordingTx struct {
	pgx.Tx // never called: the store uses only the methods below
	r      *recorder
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

// noRows is a result of no rows (the methods the store does not read
// are left to the nil interface).
type noRows struct{ pgx.Rows }

func (noRows) Close()                        {}
func (noRows) Err() error                    { return nil }
func (noRows) CommandTag() pgconn.CommandTag { return pgconn.NewCommandTag("SELECT 0") }
func (noRows) Next() bool                    { return false }
func (noRows) Scan(...any) error             { return pgx.ErrNoRows }

type noRow struct{}

func (noRow) Scan(...any) error { return pgx.ErrNoRows }
