// Package cliflags helps whoever mistyped a flag: agentd's and agentctl's
// flag errors name the flags they probably meant, as cobra already does for
// mistyped commands.
package cliflags
