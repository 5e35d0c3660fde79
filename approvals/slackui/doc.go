// Package slackui asks for approvals in Slack: a request the gate finds
// pending is posted once (through the outbox, an event keyed by the
// request's id) with Approve and Deny buttons, a click on them is decided
// by the interactivity endpoint (Slack's signature and timestamp checked
// before anything is read), and the message is edited in place once the
// request is decided — from Slack, the console, agentctl, the API, by its
// timeout or by its task's cancel.
package slackui
