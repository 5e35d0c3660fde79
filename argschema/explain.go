package argschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/jsonschema-go/jsonschema"
)

// explain says in words the first way v breaks the keywords of s that
// most schemas are made of — type, required, unknown properties, enum,
// const, lengths, pattern, bounds, items — walking into properties and
// items; at is v's path ("" for the value checked). It returns "" when
// the cause lies elsewhere ($ref, anyOf, …): Check then falls back on the
// validator's own message. It runs only after the validator refused v, so
// it never has to decide whether v fits.
func explain(s *jsonschema.Schema, v any, at string) string {
	if s == nil || s.Ref != "" || s.DynamicRef != "" || len(s.AllOf)+len(s.AnyOf)+len(s.OneOf) > 0 ||
		s.Not != nil || s.If != nil {
		return ""
	}
	got := typeOf(v)
	if want := types(s); len(want) > 0 && !typeFits(got, want) {
		if slices.Equal(want, []string{"integer"}) && got == "number" {
			return say(at, "must be an integer, not %s", number(v.(float64)))
		}
		return say(at, "must be %s, not %s", typeList(want), typeName(got))
	}
	if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e any) bool { return reflect.DeepEqual(e, v) }) {
		return say(at, "must be one of %s, not %s", enumList(s.Enum), value(v))
	}
	if s.Const != nil && !reflect.DeepEqual(*s.Const, v) {
		return say(at, "must be %s, not %s", value(*s.Const), value(v))
	}
	switch x := v.(type) {
	case string:
		return explainString(s, x, at)
	case float64:
		return explainNumber(s, x, at)
	case []any:
		return explainArray(s, x, at)
	case map[string]any:
		return explainObject(s, x, at)
	}
	return ""
}

func explainString(s *jsonschema.Schema, x, at string) string {
	n := utf8.RuneCountInString(x)
	switch {
	case s.MinLength != nil && n < *s.MinLength && *s.MinLength == 1:
		return say(at, "must not be empty")
	case s.MinLength != nil && n < *s.MinLength:
		return say(at, "must be at least %d characters long, not %d", *s.MinLength, n)
	case s.MaxLength != nil && n > *s.MaxLength:
		return say(at, "must be at most %d characters long, not %d", *s.MaxLength, n)
	}
	if s.Pattern != "" {
		if re, err := regexp.Compile(s.Pattern); err == nil && !re.MatchString(x) {
			msg := say(at, "is %s, which does not match %s", value(x), s.Pattern)
			if s.Description != "" {
				msg += " (" + s.Description + ")"
			}
			return msg
		}
	}
	return ""
}

func explainNumber(s *jsonschema.Schema, x float64, at string) string {
	switch {
	case s.Minimum != nil && x < *s.Minimum:
		return say(at, "must be at least %s, not %s", number(*s.Minimum), number(x))
	case s.Maximum != nil && x > *s.Maximum:
		return say(at, "must be at most %s, not %s", number(*s.Maximum), number(x))
	case s.ExclusiveMinimum != nil && x <= *s.ExclusiveMinimum:
		return say(at, "must be greater than %s, not %s", number(*s.ExclusiveMinimum), number(x))
	case s.ExclusiveMaximum != nil && x >= *s.ExclusiveMaximum:
		return say(at, "must be less than %s, not %s", number(*s.ExclusiveMaximum), number(x))
	}
	return ""
}

func explainArray(s *jsonschema.Schema, x []any, at string) string {
	switch {
	case s.MinItems != nil && len(x) < *s.MinItems:
		return say(at, "must have at least %d items, not %d", *s.MinItems, len(x))
	case s.MaxItems != nil && len(x) > *s.MaxItems:
		return say(at, "must have at most %d items, not %d", *s.MaxItems, len(x))
	case len(s.PrefixItems) > 0 || len(s.ItemsArray) > 0:
		return ""
	}
	for i, e := range x {
		if msg := explain(s.Items, e, fmt.Sprintf("%s[%d]", at, i)); msg != "" {
			return msg
		}
	}
	return ""
}

func explainObject(s *jsonschema.Schema, x map[string]any, at string) string {
	var missing []string
	for _, name := range s.Required {
		if _, ok := x[name]; !ok {
			missing = append(missing, strconv.Quote(join(at, name)))
		}
	}
	switch len(missing) {
	case 0:
	case 1:
		return missing[0] + " is required"
	default:
		return and(missing) + " are required"
	}
	keys := make([]string, 0, len(x))
	for k := range x {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	if isFalse(s.AdditionalProperties) && len(s.PatternProperties) == 0 {
		for _, k := range keys {
			if _, ok := s.Properties[k]; !ok {
				known := make([]string, 0, len(s.Properties))
				for name := range s.Properties {
					known = append(known, name)
				}
				sort.Strings(known)
				return fmt.Sprintf("%q is unknown (known: %s)", join(at, k), strings.Join(known, ", "))
			}
		}
	}
	for _, k := range keys {
		sub, ok := s.Properties[k]
		if !ok {
			if len(s.PatternProperties) > 0 {
				continue
			}
			sub = s.AdditionalProperties
		}
		if msg := explain(sub, x[k], join(at, k)); msg != "" {
			return msg
		}
	}
	return ""
}

// say words a problem of the value at path at: the checked value itself
// ("must be …") or one inside it ("\"text\" must be …").
func say(at, format string, args ...any) string {
	if at == "" {
		return fmt.Sprintf(format, args...)
	}
	return strconv.Quote(at) + " " + fmt.Sprintf(format, args...)
}

// join is the path of property name of the value at at.
func join(at, name string) string {
	if at == "" {
		return name
	}
	return at + "." + name
}

// isFalse reports whether s is the schema false (what jsonschema-go reads
// `false` as), which no value fits.
func isFalse(s *jsonschema.Schema) bool {
	return s != nil && s.Not != nil && reflect.DeepEqual(*s.Not, jsonschema.Schema{})
}

// typeOf is v's JSON Schema type; a whole number is an integer.
func typeOf(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if _, frac := math.Modf(x); frac == 0 {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return ""
}

func types(s *jsonschema.Schema) []string {
	if s.Type != "" {
		return []string{s.Type}
	}
	return s.Types
}

func typeFits(got string, want []string) bool {
	return slices.Contains(want, got) || got == "integer" && slices.Contains(want, "number")
}

// typeName names a JSON type with its article: "a string", "null".
func typeName(t string) string {
	switch t {
	case "null":
		return "null"
	case "integer":
		return "a number"
	case "array", "object":
		return "an " + t
	}
	return "a " + t
}

func typeList(want []string) string {
	names := make([]string, len(want))
	for i, t := range want {
		names[i] = typeName(t)
		if t == "integer" {
			names[i] = "an integer"
		}
	}
	return or(names)
}

func enumList(enum []any) string {
	out := make([]string, len(enum))
	for i, e := range enum {
		if s, ok := e.(string); ok {
			out[i] = s
		} else {
			out[i] = value(e)
		}
	}
	return strings.Join(out, ", ")
}

// value is v as JSON, shortened past 60 bytes.
func value(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	b := bytes.TrimSpace(buf.Bytes())
	if len(b) > 60 {
		cut := 57
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

// number writes f as a person would: whole numbers up to 2^53 in full
// (3600000, not 3.6e+06), others in the shortest form.
func number(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) <= 1<<53 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// and lists names as "a, b and c"; or as "a, b or c".
func and(names []string) string { return list(names, " and ") }
func or(names []string) string  { return list(names, " or ") }

func list(names []string, last string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + last + names[len(names)-1]
}
