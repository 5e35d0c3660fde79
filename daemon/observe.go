package daemon

import (
	"time"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/worker"
)

// teeObserver tells both observers; extra may be nil.
func teeObserver(metrics, extra worker.Observer) worker.Observer {
	if extra == nil {
		return metrics
	}
	return tee{metrics, extra}
}

type tee [2]worker.Observer

func (t tee) Claimed(queue string, n int) {
	t[0].Claimed(queue, n)
	t[1].Claimed(queue, n)
}

func (t tee) LeaseLost() {
	t[0].LeaseLost()
	t[1].LeaseLost()
}

func (t tee) Finished(kind string, state agentledger.TaskState, d time.Duration) {
	t[0].Finished(kind, state, d)
	t[1].Finished(kind, state, d)
}

func (t tee) StartedAtEnqueue(queue string) {
	for _, o := range t {
		if s, ok := o.(worker.StartObserver); ok {
			s.StartedAtEnqueue(queue)
		}
	}
}

func (t tee) Deferred(kind, targetKind string) {
	for _, o := range t {
		if d, ok := o.(worker.DeferObserver); ok {
			d.Deferred(kind, targetKind)
		}
	}
}
