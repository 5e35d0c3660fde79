package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// The client address is the peer's unless the peer is a trusted proxy;
// then X-Forwarded-For is walked from the right past trusted proxies, and
// an entry that is not an address stops the walk at the hop that wrote it.
func TestClientAddr(t *testing.T) {
	t.Parallel()
	trusted, err := ParseTrustedProxies([]string{"10.0.0.0/8", "127.0.0.1", "2001:db8:1::/48"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"untrusted peer, header ignored", "192.0.2.7:4000", []string{"198.51.100.1"}, "192.0.2.7"},
		{"trusted peer, no header", "10.0.0.5:4000", nil, "10.0.0.5"},
		{"trusted peer names the client", "10.0.0.5:4000", []string{"198.51.100.1"}, "198.51.100.1"},
		{"what the client wrote is left of its address", "10.0.0.5:4000", []string{"203.0.113.9, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", "127.0.0.1:4000", []string{"198.51.100.1, 10.1.2.3", "10.9.9.9"}, "198.51.100.1"},
		{"only trusted hops: the farthest", "10.0.0.5:4000", []string{"10.0.0.6, 10.0.0.7"}, "10.0.0.6"},
		{"garbage from the client is never reached", "10.0.0.5:4000", []string{"nonsense, 198.51.100.1"}, "198.51.100.1"},
		{"garbage from a trusted hop: that hop", "10.0.0.5:4000", []string{"198.51.100.1, unknown, 10.0.0.6"}, "10.0.0.6"},
		{"garbage next to the peer: the peer", "10.0.0.5:4000", []string{"198.51.100.1, "}, "10.0.0.5"},
		{"ports and brackets", "10.0.0.5:4000", []string{"[2001:db8:2::1]:443, 10.0.0.6:80"}, "2001:db8:2::1"},
		{"bare IPv6 and a trusted IPv6 proxy", "[2001:db8:1::5]:4000", []string{"2001:db8:2::1"}, "2001:db8:2::1"},
		{"IPv4-mapped", "10.0.0.5:4000", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
		{"mapped peer matches an IPv4 prefix", "[::ffff:10.0.0.5]:4000", []string{"198.51.100.1"}, "198.51.100.1"},
	} {
		r := httptest.NewRequest("GET", "/v1/tasks", nil)
		r.RemoteAddr = tc.peer
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		r.Header.Set("Forwarded", "for=192.0.2.200") // never read: a proxy that writes XFF passes it as sent
		if got := clientAddr(r, trusted); got != tc.want {
			t.Errorf("%s: %s with %q = %s, want %s", tc.name, tc.peer, tc.xff, got, tc.want)
		}
		if got, peer := clientAddr(r, nil), strings.TrimPrefix(hostOf(tc.peer), "::ffff:"); got != peer {
			t.Errorf("%s without trusted proxies: %s, want the peer %s", tc.name, got, peer)
		}
	}
}

// Each entry is an address or a CIDR prefix; a bad one is named.
func TestParseTrustedProxies(t *testing.T) {
	t.Parallel()
	ps, err := ParseTrustedProxies([]string{" 10.1.2.3/8 ", "::1", "::ffff:192.168.0.0/112"})
	if err != nil || len(ps) != 3 || ps[0].String() != "10.0.0.0/8" || ps[1].String() != "::1/128" || ps[2].String() != "192.168.0.0/16" {
		t.Fatalf("parsed %v, %v", ps, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.internal", "", "10.0.0", "fe80::1%eth0", "10.0.0.1/8/8"} {
		ps, err := ParseTrustedProxies([]string{"127.0.0.1", bad})
		if err == nil || ps != nil || !strings.Contains(err.Error(), `trusted proxy "`+bad+`" is not an IP address or CIDR prefix`) {
			t.Errorf("%q: %v, %v", bad, ps, err)
		}
	}
}
