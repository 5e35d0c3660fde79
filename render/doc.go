// Package render is the plain text agentctl and the console print for the
// same things: durations and ages, a journal row's outcome, a task's
// attempts and lease, a notification's source. It holds no styles and no
// layout: agentctl lays these out with a tabwriter, the console styles and
// cuts them to its columns, so both say the same thing in the same words.
package render
