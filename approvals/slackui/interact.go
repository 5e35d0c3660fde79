package slackui

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	slackgo "github.com/slack-go/slack"

	"github.com/agentledger/agentledger"
	"github.com/agentledger/agentledger/approvals"
	"github.com/agentledger/agentledger/problem"
)

// Path is where Slack sends the clicks (the app's interactivity URL).
const Path = "/slack/interactivity"

// maxBody bounds an interaction's body; a click's is a few kilobytes.
const maxBody = 64 << 10

// replyTimeout bounds the ephemeral answer, so that the click is
// answered within Slack's 3 seconds.
const replyTimeout = 2 * time.Second

// Interactions serves Slack's interactivity requests: a click on an
// approval request's Approve or Deny button decides it, once.
type Interactions struct {
	DB DB
	// Secret is the app's signing secret.
	Secret string
	// Groups lists the members of a Slack user group (usergroups.users.list);
	// nil: a user group among the approvers admits nobody.
	Groups func(ctx context.Context, group string) ([]string, error)
	// Client posts the ephemeral answers to the click's response_url.
	Client *http.Client
	Log    *slog.Logger
	// OnDecide, when set, is told of each click's outcome: decided,
	// refused (not an approver), already (decided before), unknown.
	OnDecide func(outcome string)
}

// ServeHTTP checks Slack's signature and timestamp (five minutes either
// way) from the headers and the raw body before reading anything, then
// decides the request a block_actions click names.
func (h *Interactions) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	log := h.log()
	sv, err := slackgo.NewSecretsVerifier(req.Header, h.Secret)
	if err != nil {
		log.Warn("slack interactivity: refused: no valid signature headers, or a timestamp more than 5 minutes off",
			"remote", req.RemoteAddr, "err", verifyError(err))
		problem.Write(w, agentledger.NewError(agentledger.CodeBadSignature, "signature or timestamp refused"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBody))
	if err != nil {
		problem.Write(w, agentledger.NewError(agentledger.CodeBodyTooLarge, "body too large or unreadable"))
		return
	}
	if _, err := sv.Write(body); err != nil || sv.Ensure() != nil {
		log.Warn("slack interactivity: refused: the signature does not match the body", "remote", req.RemoteAddr)
		problem.Write(w, agentledger.NewError(agentledger.CodeBadSignature, "signature or timestamp refused"))
		return
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		problem.Write(w, agentledger.NewError(agentledger.CodeMalformedRequest, "not a form"))
		return
	}
	var cb slackgo.InteractionCallback
	if err := json.Unmarshal([]byte(form.Get("payload")), &cb); err != nil {
		problem.Write(w, agentledger.NewError(agentledger.CodeMalformedRequest, "no interaction payload"))
		return
	}
	w.WriteHeader(http.StatusOK) // what the click did shows in the message, or in an ephemeral answer
	if cb.Type != slackgo.InteractionTypeBlockActions {
		return
	}
	for _, a := range cb.ActionCallback.BlockActions {
		if a.ActionID != ActionApprove && a.ActionID != ActionDeny {
			continue
		}
		id, err := strconv.ParseInt(a.Value, 10, 64)
		if err != nil || id <= 0 {
			log.Warn("slack interactivity: a button without a request id", "action", a.ActionID, "user", cb.User.ID)
			continue
		}
		ctx, cancel := context.WithTimeout(req.Context(), replyTimeout)
		h.reply(ctx, cb.ResponseURL, h.click(ctx, cb.User.ID, id, a.ActionID == ActionApprove))
		cancel()
		return // one click, one action
	}
}

// click decides request id for user and returns the ephemeral answer.
func (h *Interactions) click(ctx context.Context, user string, id int64, approve bool) string {
	log := h.log().With("request", id, "user", user)
	store := approvals.NewStore(h.DB)
	r, err := store.Get(ctx, "", id)
	if errors.Is(err, agentledger.ErrNotFound) {
		h.observe("unknown")
		return fmt.Sprintf("Approval request %d no longer exists.", id)
	}
	if err != nil {
		log.Error("slack interactivity: reading the request failed", "err", err)
		return fmt.Sprintf("Approval request %d could not be read; try again.", id)
	}
	if r.State != approvals.Pending {
		h.observe("already")
		return fmt.Sprintf("Approval request %d was already %s; your click changed nothing.", id, Decided(r))
	}
	if !h.mayDecide(ctx, &r, user) {
		log.Warn("slack interactivity: a click from someone not among the approvers; nothing decided", "approvers", r.Approvers)
		h.observe("refused")
		return fmt.Sprintf("You are not among the approvers of request %d (%s); nothing was decided.", id, strings.Join(r.Approvers, ", "))
	}
	var won bool
	err = pgx.BeginFunc(ctx, h.DB, func(tx pgx.Tx) error {
		var err error
		r, won, err = approvals.NewStore(tx).Decide(ctx, approvals.Decision{ID: id, Approve: approve, By: user, Via: "slack"})
		if err != nil || !won {
			return err
		}
		return decided(ctx, tx, r)
	})
	if err != nil {
		log.Error("slack interactivity: deciding failed", "err", err)
		return fmt.Sprintf("Approval request %d could not be decided; try again.", id)
	}
	if !won {
		h.observe("already")
		return fmt.Sprintf("Approval request %d was already %s; your click changed nothing.", id, Decided(r))
	}
	log.Info("slack interactivity: decided", "state", r.State)
	h.observe("decided")
	return fmt.Sprintf("You %s request %d; its message shows it shortly.", r.State, id)
}

// mayDecide reports whether user is among r's approvers, directly or by
// one of its user groups (S…).
func (h *Interactions) mayDecide(ctx context.Context, r *approvals.Request, user string) bool {
	if r.MayDecide(user, nil) {
		return true
	}
	var member []string
	for _, g := range r.Approvers {
		if !strings.HasPrefix(g, "S") || h.Groups == nil {
			continue
		}
		users, err := h.Groups(ctx, g)
		if err != nil {
			h.log().Warn("slack interactivity: listing a user group's members failed (the app needs usergroups:read)",
				"group", g, "err", err)
			continue
		}
		if slices.Contains(users, user) {
			member = append(member, g)
		}
	}
	return r.MayDecide(user, member)
}

// reply posts text to the click's response_url as an ephemeral message,
// seen by the clicker only.
func (h *Interactions) reply(ctx context.Context, responseURL, text string) {
	if !strings.HasPrefix(responseURL, "https://") && !strings.HasPrefix(responseURL, "http://") {
		return
	}
	body, _ := json.Marshal(map[string]any{"response_type": "ephemeral", "replace_original": false, "text": text}) // strings always encode
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, responseURL, bytes.NewReader(body))
	if err != nil {
		return
	}
	req.Header.Set("Content-Type", "application/json")
	c := h.Client
	if c == nil {
		c = http.DefaultClient
	}
	resp, err := c.Do(req)
	if err != nil {
		h.log().Warn("slack interactivity: the ephemeral answer failed", "err", err)
		return
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
}

func (h *Interactions) log() *slog.Logger {
	if h.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return h.Log
}

func (h *Interactions) observe(outcome string) {
	if h.OnDecide != nil {
		h.OnDecide(outcome)
	}
}

// verifyError says why the headers were refused, without anything of
// the secret or the signature.
func verifyError(err error) string {
	switch {
	case errors.Is(err, slackgo.ErrExpiredTimestamp):
		return "timestamp outside the 5-minute window"
	case errors.Is(err, slackgo.ErrMissingHeaders):
		return "missing X-Slack-Signature or X-Slack-Request-Timestamp"
	}
	return "malformed signature headers"
}
