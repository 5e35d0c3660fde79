package chaos

import (
	"flag"
	"os"
	"testing"
)

// TestMain lets every drill start at once where go test would hold them
// to GOMAXPROCS at a time (two on the machines CI runs on): most of them
// wait on a formation's promotions or on a pace, and those that keep the
// cores busy take turns among themselves (oneAtATime). Held to two, a
// drill waiting for its turn would keep a waiting drill from starting. An
// explicit -parallel still rules.
func TestMain(m *testing.M) {
	flag.Parse()
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		if err := flag.Set("test.parallel", "8"); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
