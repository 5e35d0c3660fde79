package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"time"
)

// costRatios returns r's claim p50 and burn-down tasks/s over those of the
// 1-tenant run among runs (one repeat's), NaN where there is none or either
// burn-down timed out.
func costRatios(r FairCost, runs []FairCost) (p50, burn float64) {
	p50, burn = math.NaN(), math.NaN()
	for _, one := range runs {
		if one.Tenants != 1 {
			continue
		}
		if one.Claim.P50 > 0 {
			p50 = float64(r.Claim.P50) / float64(one.Claim.P50)
		}
		if !one.Burn.TimedOut && !r.Burn.TimedOut && one.Burn.Rate > 0 {
			burn = r.Burn.Rate / one.Burn.Rate
		}
	}
	return p50, burn
}

func ratioCell(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return fmt.Sprintf("%.2f", x)
}

// spread formats the median and range of xs (NaNs left out) with prec
// decimals: "7.20 (3.50–8.00)", or "-" when none is left.
func spread(xs []float64, prec int) string {
	xs = slices.DeleteFunc(slices.Clone(xs), math.IsNaN)
	if len(xs) == 0 {
		return "-"
	}
	slices.Sort(xs)
	med := xs[len(xs)/2]
	if len(xs)%2 == 0 {
		med = (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
	}
	return fmt.Sprintf("%.*f (%.*f–%.*f)", prec, med, prec, xs[0], prec, xs[len(xs)-1])
}

// printCostMedians prints, per tenant count, the median and range over the
// repeats of the claim's p50 and p99, the burn-down's tasks/s and the
// ratios to one tenant.
func printCostMedians(out io.Writer, tenants []int, repeats [][]FairCost) {
	t := NewTable("tenants", "repeats", "claim p50 ms", "claim p99 ms", "tasks/s", "p50 vs 1", "tasks/s vs 1")
	for i, n := range tenants {
		var p50, p99, rate, p50x, burnx []float64
		for _, runs := range repeats {
			r := runs[i]
			px, bx := costRatios(r, runs)
			p50 = append(p50, float64(r.Claim.P50)/float64(time.Millisecond))
			p99 = append(p99, float64(r.Claim.P99)/float64(time.Millisecond))
			rate = append(rate, math.NaN())
			if !r.Burn.TimedOut {
				rate[len(rate)-1] = r.Burn.Rate
			}
			p50x, burnx = append(p50x, px), append(burnx, bx)
		}
		t.Add(n, len(repeats), spread(p50, 2), spread(p99, 2), spread(rate, 0), spread(p50x, 2), spread(burnx, 2))
	}
	t.Print(out)
}
