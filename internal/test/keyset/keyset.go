// Package keyset reads a list page by page after each page's last row,
// for tests of keyset paging.
package keyset

import (
	"fmt"
	"testing"
)

// All calls page with nil, then with the position of each page's last
// row, until a page comes back empty, and returns the rows of every page
// in order. It fails t on an error, or when more than limit pages come
// (a position that does not move on).
func All[T, P any](t *testing.T, limit int, page func(after *P) ([]T, error), position func(T) P) []T {
	t.Helper()
	var all []T
	var after *P
	for pages := 0; ; pages++ {
		if pages > limit {
			t.Fatalf("still paging after %d pages", pages)
		}
		rows, err := page(after)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			return all
		}
		all = append(all, rows...)
		p := position(rows[len(rows)-1])
		after = &p
	}
}

// Same fails t unless paged, the rows All read, are whole, the list read
// at once, row for row in the same order, told apart by id; what names
// the rows in the message.
func Same[T any](t *testing.T, what string, paged, whole []T, id func(T) int64) {
	t.Helper()
	if len(paged) != len(whole) {
		t.Fatalf("pages held %d %s, the list %d", len(paged), what, len(whole))
	}
	for i := range whole {
		if id(paged[i]) != id(whole[i]) {
			t.Fatalf("%s of the pages in order %v, of the list %v", what, ids(paged, id), ids(whole, id))
		}
	}
}

func ids[T any](rows []T, id func(T) int64) string {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = id(r)
	}
	return fmt.Sprint(out)
}
