// Package atonce runs functions in goroutines released together, for tests
// that race two writers against each other.
package atonce

import "sync"

// Run starts each of fs in its own goroutine, releases them at once, and
// returns when all have returned.
func Run(fs ...func()) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f()
		}()
	}
	close(start)
	wg.Wait()
}
