package main

import (
	"github.com/agentledger/agentledger/metrics"
)

// counterTotal sums a counter of the daemon's metrics over its series, or
// only the series whose sweep label is sweep when given.
func counterTotal(m *metrics.Metrics, name, sweep string) int64 {
	families, err := m.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, s := range f.GetMetric() {
			match := sweep == ""
			for _, l := range s.GetLabel() {
				match = match || l.GetName() == "sweep" && l.GetValue() == sweep
			}
			if match {
				total += s.GetCounter().GetValue()
			}
		}
	}
	return int64(total)
}
