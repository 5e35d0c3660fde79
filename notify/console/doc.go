// Package console is the sink of package notify used when no Slack token is
// configured: it prints a readable line and appends a JSON record per post
// and per update to a file. Refs are "<file>:<line>", Find searches the
// post records and Update appends an edit record.
package console
