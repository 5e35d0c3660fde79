// Package drills holds failure drills that need several worker processes:
// workers are this test binary re-executed, killed with SIGKILL at random
// points while a counting downstream server records business effects.
package drills
