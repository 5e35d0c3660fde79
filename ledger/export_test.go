package ledger

// FencedSQL is the fenced statements a fence of f's kind composes, by
// name, for the plan tests of package ledger_test (which import claims,
// whose fence is one of them, and claims imports ledger).
func FencedSQL(f Fence) map[string]string {
	q := queriesOf(f)
	return map[string]string{"fence": q.fence, "reserveFast": q.reserveFast, "lookup": q.lookup,
		"insertOutcome": q.insertOutcome, "insertKeyedOutcome": q.insertKeyedOutcome, "insertKeyedOutcomes": q.insertKeyedOutcomes, "record": q.record, "landed": q.landed,
		"unbuilt": q.unbuilt, "clearUnbuilt": q.clearUnbuilt}
}
