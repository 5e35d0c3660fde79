package daemon

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Listen binds addr, the HTTP server's --listen address. An address in use
// is no mistake in the configuration (exit 1, not 2) but, most likely,
// another agentd on the defaults.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("--listen %s: the address is already in use, probably by another agentd: "+
			"stop it, choose another address with --listen, or run a worker without the HTTP API with --listen '': %w", addr, err)
	case err != nil:
		return nil, &ConfigError{fmt.Errorf("--listen %s: %w", addr, err)}
	}
	return ln, nil
}
