package httpapi

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies reads the reverse proxies whose X-Forwarded-For is
// believed: each entry an IP address or a CIDR prefix. A bad entry is an
// error naming it; nothing is returned then.
func ParseTrustedProxies(entries []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(entries))
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if strings.Contains(e, "/") {
			p, err := netip.ParsePrefix(e)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q is not an IP address or CIDR prefix (such as 10.0.0.0/8 or 127.0.0.1)", e)
			}
			if p.Addr().Is4In6() && p.Bits() >= 96 { // addresses are matched unmapped
				p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(e)
		if err != nil || a.Zone() != "" {
			return nil, fmt.Errorf("trusted proxy %q is not an IP address or CIDR prefix (such as 10.0.0.0/8 or 127.0.0.1)", e)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// clientAddr is the address a request is counted and logged under: its
// peer's, unless the peer is a trusted proxy. Then X-Forwarded-For is read
// from the right (each proxy appends the address it was reached from),
// past the trusted proxies, to the first address that is not one: what is
// left of it was written by the client and could name anyone. An entry
// that is not an address stops the walk at the trusted hop that wrote it.
// Without trusted proxies the header is never read. The standard
// Forwarded header is not read: a proxy that maintains one of the two
// headers passes the other as the client wrote it.
func clientAddr(r *http.Request, trusted []netip.Prefix) string {
	peer, ok := peerAddr(r.RemoteAddr)
	if !ok {
		return hostOf(r.RemoteAddr)
	}
	if !isTrusted(peer, trusted) {
		return peer.String()
	}
	hops := forwardedFor(r.Header.Values("X-Forwarded-For"))
	last := peer
	for i := len(hops) - 1; i >= 0; i-- {
		a, ok := hopAddr(hops[i])
		if !ok {
			break
		}
		last = a
		if !isTrusted(a, trusted) {
			break
		}
	}
	return last.String()
}

// forwardedFor is the list X-Forwarded-For lines make together, left to
// right, as a comma-separated header repeated is one list.
func forwardedFor(lines []string) []string {
	var hops []string
	for _, l := range lines {
		hops = append(hops, strings.Split(l, ",")...)
	}
	return hops
}

// hopAddr reads one X-Forwarded-For entry: an address, optionally with a
// port ("192.0.2.1:4711", "[2001:db8::1]:4711") or in brackets.
func hopAddr(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.WithZone("").Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().WithZone("").Unmap(), true
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		if a, err := netip.ParseAddr(s[1 : len(s)-1]); err == nil && a.Is6() {
			return a.WithZone("").Unmap(), true
		}
	}
	return netip.Addr{}, false
}

// peerAddr is the address of the connection's peer (RemoteAddr is
// host:port).
func peerAddr(remote string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(hostOf(remote))
	if err != nil {
		return netip.Addr{}, false
	}
	return a.WithZone("").Unmap(), true
}

func hostOf(remote string) string {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return remote
	}
	return host
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
