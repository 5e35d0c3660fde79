//go:build !race

package main

// raceEnabled says this test binary has the race detector (see
// scriptBinary).
const raceEnabled = false
