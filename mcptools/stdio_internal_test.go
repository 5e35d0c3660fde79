package mcptools

import (
	"bufio"
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Lines decode into the messages the SDK's own connection would make of
// them, and what it refuses is refused.
func TestDecodeLine(t *testing.T) {
	id := func(v any) jsonrpc.ID { i, _ := jsonrpc.MakeID(v); return i }
	for _, tc := range []struct {
		line string
		want []jsonrpc.Message // nil with wantErr
		err  string
	}{
		{line: `{"jsonrpc":"2.0","id":3,"result":{"content":[]}}` + "\n",
			want: []jsonrpc.Message{&jsonrpc.Response{ID: id(float64(3)), Result: []byte(`{"content":[]}`)}}},
		{line: `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"bad"}}`,
			want: []jsonrpc.Message{&jsonrpc.Response{ID: id("a"), Error: &jsonrpc.Error{Code: -32602, Message: "bad"}}}},
		{line: `{"jsonrpc":"2.0","id":4,"method":"ping"}`,
			want: []jsonrpc.Message{&jsonrpc.Request{ID: id(float64(4)), Method: "ping"}}},
		{line: `{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{}}`,
			want: []jsonrpc.Message{&jsonrpc.Request{Method: "notifications/tools/list_changed", Params: []byte(`{}`)}}},
		{line: `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"x"}]`,
			want: []jsonrpc.Message{&jsonrpc.Response{ID: id(float64(1)), Result: []byte(`{}`)}, &jsonrpc.Request{Method: "x"}}},
		{line: "  \n", want: nil},
		{line: `{"jsonrpc":"1.0","id":1,"result":{}}`, err: "version"},
		{line: `{"jsonrpc":"2.0","result":{}}`, err: "without an id"},
		{line: `{"jsonrpc":"2.0","Method":"x"}`, err: "without an id"}, // keys match exactly
		{line: `{"jsonrpc":"2.0","id":true,"result":{}}`, err: "ID type"},
		{line: `[]`, err: "empty"},
		{line: `{"jsonrpc":`, err: "JSON-RPC message"},
	} {
		got, err := decodeLine([]byte(tc.line))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %v, want an error about %q", tc.line, err, tc.err)
			}
			continue
		}
		if err != nil || len(got) != len(tc.want) {
			t.Errorf("%s: %v %v, want %d messages", tc.line, got, err, len(tc.want))
			continue
		}
		for i := range got {
			g, _ := jsonrpc.EncodeMessage(got[i])
			w, _ := jsonrpc.EncodeMessage(tc.want[i])
			if string(g) != string(w) {
				t.Errorf("%s: message %d is %s, want %s", tc.line, i, g, w)
			}
		}
	}
}

// A message longer than the SDK's limit ends the connection instead of
// growing the buffer without bound.
func TestReadRefusesAnOverlongMessage(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", maxFrame) + `"}` + "\n"
	c := &stdioConn{r: bufio.NewReader(strings.NewReader(long))}
	if _, err := c.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("read: %v, want the message refused", err)
	}
	ok := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("x", 100<<10) + `"}` // no final newline
	c = &stdioConn{r: bufio.NewReader(strings.NewReader(ok))}
	if m, err := c.Read(context.Background()); err != nil || len(m.(*jsonrpc.Response).Result) != 100<<10+2 {
		t.Fatalf("read a long last line: %v", err)
	}
}
