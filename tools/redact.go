package tools

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// What stands for a secret a downstream echoed.
const (
	// redacted replaces a string (a JSON string or key, a Location) that
	// holds a secret.
	redacted = "[redacted]"
	// redactedBody replaces a whole body that holds a secret only in an
	// encoded form, or that cannot be read as text to look.
	redactedBody = "[redacted: the response held a secret header's value in an encoded form, or was not text]"
)

const (
	// minSecret is the shortest value (or credential) looked for: shorter
	// ones would match ordinary text.
	minSecret = 6
	// maxReadings bounds how many decodings deep a string is read; a
	// string that still decodes further counts as holding a secret.
	maxReadings = 8
)

// redactor finds the operator's secret header values in the answer to a
// call that carried them, however the answer writes them: as sent, in any
// (ASCII) case, or after any chain of the decodings a downstream applies —
// backslash escapes (JSON's, as PHP writes `\/`, `\u00xx`, JavaScript's
// `\xNN`), so JSON inside a string too, percent-encoding (`+` as space or
// not), HTML character references, base64 (standard or URL, any offset,
// lines broken) and hex (its bytes run together or written apart by ":",
// "-" or " "). What it finds never leaves the tool. It is made only for a
// call that carried secrets: other calls pay nothing.
type redactor struct {
	needles []string // ASCII lower case
	min     int      // the shortest needle's length
	max     int      // the longest's
}

// newRedactor looks for each secret value whole, the credential of an
// "<scheme> <credential>" value, and for Basic the decoded
// "user:password" and password; nil when none is long enough to look for.
func newRedactor(secrets http.Header) *redactor {
	var r *redactor
	add := func(s string) {
		if len(s) < minSecret {
			return
		}
		s = asciiLower(s)
		if r == nil {
			r = &redactor{min: len(s)}
		}
		if !slices.Contains(r.needles, s) {
			r.needles = append(r.needles, s)
			r.min = min(r.min, len(s))
			r.max = max(r.max, len(s))
		}
	}
	for _, vs := range secrets {
		for _, v := range vs {
			add(v)
			f := strings.Fields(v)
			if len(f) != 2 {
				continue
			}
			add(f[1])
			if strings.EqualFold(f[0], "Basic") {
				if b, err := base64.StdEncoding.DecodeString(f[1]); err == nil {
					add(string(b))
					if _, pw, ok := strings.Cut(string(b), ":"); ok {
						add(pw)
					}
				}
			}
		}
	}
	return r
}

// body is what may be kept of a response body: itself when it holds no
// secret; a JSON body with each string (keys too) that holds one replaced
// by "[redacted]"; a text body with each occurrence written as sent
// replaced, or wholly redactedBody when a secret is there only encoded. A
// body that is not UTF-8 text, or is still content-encoded, cannot be
// read to look, and is redactedBody too: so is one with control bytes
// other than white space, which UTF-16 text (every other byte NUL) and
// binary formats have and text has not.
func (r *redactor) body(data []byte, encoded bool) []byte {
	switch {
	case len(data) == 0:
		return data
	case encoded || !utf8.Valid(data) || hasControl(data):
		return []byte(redactedBody)
	case json.Valid(data):
		return r.json(data)
	}
	return []byte(r.text(string(data), redactedBody))
}

// hasControl reports whether data holds a C0 control byte other than tab,
// line feed, form feed and carriage return, or DEL.
func hasControl(data []byte) bool {
	for _, c := range data {
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r') || c == 0x7f {
			return true
		}
	}
	return false
}

// text is s with every occurrence of a secret as sent replaced, or marker
// when a secret remains in a reading of it.
func (r *redactor) text(s, marker string) string {
	if r.holds(s) {
		s = r.replace(s)
	}
	if r.tainted(s) {
		return marker
	}
	return s
}

// json is data, valid JSON, with every string, key and number that holds
// a secret replaced by the string "[redacted]", walked token by token so
// that order, duplicate keys and the spelling of numbers stay; data itself
// when none does. A number is looked in as written and as jsonb prints it
// (a numeric API key echoed as 7315.0428e4 is stored as 73150428).
func (r *redactor) json(data []byte) []byte {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	type level struct {
		object bool
		n      int // keys and values so far
	}
	var stack []level
	changed := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil { // not after json.Valid; fail closed all the same
			return []byte(redactedBody)
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			stack = stack[:len(stack)-1]
			out.WriteByte(byte(d))
			continue
		}
		if len(stack) > 0 {
			top := &stack[len(stack)-1]
			switch {
			case top.object && top.n%2 == 1:
				out.WriteByte(':')
			case top.n > 0:
				out.WriteByte(',')
			}
			top.n++
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			stack = append(stack, level{object: v == '{'})
		case string:
			if r.tainted(v) {
				v, changed = redacted, true
			}
			_ = enc.Encode(v) // a string always encodes
			out.Truncate(out.Len() - 1)
		case json.Number:
			if n := string(v); r.tainted(n) || r.tainted(plainNumber(n, r.max)) {
				out.WriteString(`"` + redacted + `"`)
				changed = true
			} else {
				out.WriteString(n)
			}
		case bool:
			out.WriteString(strconv.FormatBool(v))
		case nil:
			out.WriteString("null")
		}
	}
	if !changed {
		return data
	}
	return out.Bytes()
}

// holds reports whether s holds a secret as sent, in any ASCII case.
func (r *redactor) holds(s string) bool {
	l := asciiLower(s)
	for _, n := range r.needles {
		if strings.Contains(l, n) {
			return true
		}
	}
	return false
}

// replace blanks every occurrence of a secret as sent in s: overlapping
// ones (a value and its credential) as one.
func (r *redactor) replace(s string) string {
	l := asciiLower(s) // the same length, byte for byte
	hit := make([]bool, len(s))
	for _, n := range r.needles {
		for i := 0; ; {
			j := strings.Index(l[i:], n)
			if j < 0 {
				break
			}
			for k := i + j; k < i+j+len(n); k++ {
				hit[k] = true
			}
			i += j + 1
		}
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case !hit[i]:
			b.WriteByte(s[i])
		case i == 0 || !hit[i-1]:
			b.WriteString(redacted)
		}
	}
	return b.String()
}

// tainted reports whether s holds a secret as sent or in any reading of
// it. It fails closed: a string whose readings go deeper than maxReadings
// or cost more than its budget counts as holding one.
func (r *redactor) tainted(s string) bool {
	if r.holds(s) {
		return true
	}
	w := walk{r: r, budget: 64*len(s) + 1024}
	return w.search(s, 1)
}

// walk is one string's search through its readings.
type walk struct {
	r      *redactor
	seen   map[string]bool
	budget int // bytes of readings left
}

func (w *walk) search(s string, depth int) bool {
	for _, v := range w.r.readings(s) {
		if w.seen[v] {
			continue
		}
		if w.seen == nil {
			w.seen = map[string]bool{}
		}
		w.seen[v] = true
		if w.budget -= len(v); w.budget < 0 || depth > maxReadings {
			return true
		}
		// Binary readings (base64 and hex of something not text) are
		// looked in, not decoded further.
		if w.r.holds(v) || utf8.ValidString(v) && w.search(v, depth+1) {
			return true
		}
	}
	return false
}

// readings are the decodings of s that change it.
func (r *redactor) readings(s string) []string {
	var out []string
	add := func(v string) {
		if v != s {
			out = append(out, v)
		}
	}
	if strings.IndexByte(s, '\\') >= 0 {
		add(unbackslash(s))
	}
	if strings.IndexByte(s, '%') >= 0 {
		add(unpercent(s, false))
	}
	if strings.IndexByte(s, '+') >= 0 {
		add(unpercent(s, true))
	}
	if strings.IndexByte(s, '&') >= 0 {
		add(html.UnescapeString(s))
	}
	out = append(out, unbase64(s, (4*r.min+2)/3)...)
	out = append(out, unhex(s, 2*r.min)...)
	if j := joinHex(s); j != s {
		out = append(out, unhex(j, 2*r.min)...)
	}
	return out
}

// isHexSep reports whether c may stand between the bytes of hex written
// apart, as dumps and fingerprints write them (73:6b:2d, 73-6b, 73 6b).
func isHexSep(c byte) bool { return c == ':' || c == '-' || c == ' ' }

// joinHex is s without the separators that stand between two hex digits;
// s itself when it has none.
func joinHex(s string) string {
	joins := func(i int) bool { return i > 0 && i+1 < len(s) && isHexSep(s[i]) && isHex(s[i-1]) && isHex(s[i+1]) }
	i := 0
	for i < len(s) && !joins(i) {
		i++
	}
	if i == len(s) {
		return s
	}
	b := []byte(s[:i])
	for ; i < len(s); i++ {
		if !joins(i) {
			b = append(b, s[i])
		}
	}
	return string(b)
}

// plainNumber is JSON number n without its exponent, as PostgreSQL
// prints it (7315.0428e4 is 73150428, 5e-3 is 0.005); n itself when it
// has none. It adds at most pad zeros on either side: more zeros cannot
// hold a secret of at most pad bytes that pad zeros do not.
func plainNumber(n string, pad int) string {
	k := strings.IndexAny(n, "eE")
	if k < 0 {
		return n
	}
	mant, sign := n[:k], ""
	if mant != "" && mant[0] == '-' {
		mant, sign = mant[1:], "-"
	}
	const far = 1 << 20 // beyond any pad; keeps the sums below from overflowing
	exp, err := strconv.Atoi(n[k+1:])
	switch {
	case err != nil && strings.HasPrefix(n[k+1:], "-"):
		exp = -far
	case err != nil:
		exp = far
	}
	exp = min(max(exp, -far), far)
	ip, fp, _ := strings.Cut(mant, ".")
	digits := ip + fp
	switch point := len(ip) + exp; {
	case point <= 0:
		return sign + "0." + strings.Repeat("0", min(-point, pad)) + digits
	case point >= len(digits):
		return sign + digits + strings.Repeat("0", min(point-len(digits), pad))
	default:
		return sign + digits[:point] + "." + digits[point:]
	}
}

// unbackslash undoes backslash escapes, leniently: JSON's, \xNN and
// \UXXXXXXXX; any other escaped character stands for itself.
func unbackslash(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'x':
			if v, ok := hexAt(s, i+1, 2); ok {
				b.WriteByte(byte(v))
				i += 2
			} else {
				b.WriteByte(c)
			}
		case 'U':
			if v, ok := hexAt(s, i+1, 8); ok {
				b.WriteRune(rune(v))
				i += 8
			} else {
				b.WriteByte(c)
			}
		case 'u':
			v, ok := hexAt(s, i+1, 4)
			if !ok {
				b.WriteByte(c)
				break
			}
			i += 4
			ru := rune(v)
			if utf16.IsSurrogate(ru) && i+6 < len(s) && s[i+1] == '\\' && s[i+2] == 'u' {
				if v2, ok := hexAt(s, i+3, 4); ok {
					if p := utf16.DecodeRune(ru, rune(v2)); p != utf8.RuneError {
						ru = p
						i += 6
					}
				}
			}
			b.WriteRune(ru)
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// unpercent undoes %XX (and %uXXXX) escapes, leniently: a % that starts
// none stays; plus decodes + as a space, as a query does.
func unpercent(s string, plus bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '+' && plus:
			b.WriteByte(' ')
		case c != '%':
			b.WriteByte(c)
		case i+1 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U'):
			if v, ok := hexAt(s, i+2, 4); ok {
				b.WriteRune(rune(v))
				i += 5
			} else {
				b.WriteByte(c)
			}
		default:
			if v, ok := hexAt(s, i+1, 2); ok {
				b.WriteByte(byte(v))
				i += 2
			} else {
				b.WriteByte(c)
			}
		}
	}
	return b.String()
}

// unbase64 decodes every run of base64 (either alphabet; line breaks
// inside a run skipped) at least n long, at each of the four offsets
// where it may begin.
func unbase64(s string, n int) []string {
	var out []string
	var run []byte
	flush := func() {
		for k := 0; k < 4 && len(run)-k >= n; k++ {
			t := run[k:]
			if len(t)%4 == 1 {
				t = t[:len(t)-1]
			}
			b := make([]byte, base64.RawStdEncoding.DecodedLen(len(t)))
			if m, err := base64.RawStdEncoding.Decode(b, t); err == nil {
				out = append(out, string(b[:m]))
			}
		}
		run = run[:0]
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9', c == '+', c == '/':
			run = append(run, c)
		case c == '-':
			run = append(run, '+')
		case c == '_':
			run = append(run, '/')
		case c == '\r', c == '\n':
		default:
			flush()
		}
	}
	flush()
	return out
}

// unhex decodes every run of hex digits at least n long, at both offsets.
func unhex(s string, n int) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && isHex(s[i]) {
			continue
		}
		for k := 0; k < 2 && i-start-k >= n; k++ {
			t := s[start+k : i]
			if b, err := hex.DecodeString(t[:len(t)&^1]); err == nil {
				out = append(out, string(b))
			}
		}
		start = i + 1
	}
	return out
}

// hexAt reads n hex digits of s at i.
func hexAt(s string, i, n int) (uint64, bool) {
	if i < 0 || i+n > len(s) {
		return 0, false
	}
	for j := i; j < i+n; j++ {
		if !isHex(s[j]) {
			return 0, false
		}
	}
	v, err := strconv.ParseUint(s[i:i+n], 16, 32)
	return v, err == nil
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// asciiLower is s with ASCII letters in lower case, byte for byte.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if c := b[j]; c >= 'A' && c <= 'Z' {
					b[j] = c + 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
