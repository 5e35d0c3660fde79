// Package keyset reads a list page by page after each page's last row,
// for tests of keyset paging.
package keyset

import "testing"

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
