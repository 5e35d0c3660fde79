package agent

import (
	"encoding/json"
	"fmt"

	"github.com/agentledger/agentledger/grants"
	"github.com/agentledger/agentledger/ledger"
)

// budget is what one completion may spend of its task's token budget
// (grants.Grant.MaxTokens). The zero budget is unbounded.
type budget struct {
	tenant       string
	limit, spent int64 // tokens per task, and what the task's completions reported so far
}

// budgetOf is the budget grant g leaves a task of tenant that spent spent
// tokens. The operator's grant (All) and a MaxTokens of 0 bound nothing.
func budgetOf(tenant string, g *grants.Grant, spent int) budget {
	if g == nil || g.All || g.MaxTokens <= 0 {
		return budget{}
	}
	return budget{tenant: tenant, limit: g.MaxTokens, spent: int64(spent)}
}

// bound sets req's max_tokens to what the budget leaves the answer once the
// prompt is counted — at most capTokens, since endpoints refuse a
// max_tokens above the model's output limit — or refuses a prompt whose
// estimate alone takes all the budget left. The refusal is
// ledger.NotPerformed: nothing is sent, nothing recorded, the task fails
// for good, and a replay after the operator raised the budget asks again.
//
// It runs only when the completion is to be performed: a step served from
// the ledger spends nothing, so a replay of a recorded conversation is
// served whatever the estimate says (grants.Grant.Allow still refuses a
// task that already spent its budget).
func (b budget) bound(req *chatRequest, capTokens int) error {
	if b.limit == 0 {
		return nil
	}
	size, est, err := estimatePrompt(*req)
	if err != nil {
		return err
	}
	left := b.limit - b.spent
	if est >= left {
		return ledger.NotPerformed(&grants.DeniedError{Tenant: b.tenant, Flag: "--max-tokens N", Missing: fmt.Sprintf(
			"a prompt of an estimated %d tokens (its request's %d bytes / 4) with %d of its %d tokens per task left "+
				"(this task spent %d)", est, size, left, b.limit, b.spent)})
	}
	req.MaxTokens = int(min(left-est, int64(capTokens)))
	return nil
}

// estimatePrompt estimates the prompt tokens of req: the bytes of its body
// as sent (every message and tool schema, as JSON) over four, rounded up.
// It is an estimate, not a tokenizer's count, and it errs towards counting
// more: English text runs about four bytes a token in the GPT tokenizers,
// and the JSON around each message and the escapes within tool results
// (a tool message's body is JSON quoted in a string) are counted as bytes
// but sent as far fewer tokens or none. So a prompt near the budget may be
// refused although it would fit, and an answer is cut a little shorter than
// the budget allows. It counts fewer than the model may for text of fewer
// bytes a token (digits, some scripts, dense code); the task then spends
// past its budget by that difference on that one completion, and the next
// one is refused as the reported usage is booked.
func estimatePrompt(req chatRequest) (size int, tokens int64, err error) {
	req.MaxTokens = 0 // omitted from the body, as when no budget applies
	body, err := json.Marshal(req.toOpenAI())
	if err != nil {
		return 0, 0, fmt.Errorf("encoding the request to estimate its tokens: %w", err)
	}
	return len(body), int64(len(body)+3) / 4, nil
}
