package daemon

import (
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Listen binds addr, the HTTP server's address (API.Listen, agentd's
// --listen). An address in use
// is no mistake in the configuration (exit 1, not 2) but, most likely,
// another agentd on the defaults.
func Listen(addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	switch {
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s %s: the address is already in use, probably by another agentd: "+
			"stop it, choose another address, or run a worker without the HTTP API (an empty address: agentd --listen ''): %w", setting("API.Listen", "--listen"), addr, err)
	case err != nil:
		return nil, &ConfigError{fmt.Errorf("%s %s: %w", setting("API.Listen", "--listen"), addr, err)}
	}
	return ln, nil
}
