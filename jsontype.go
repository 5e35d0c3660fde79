package agentledger

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
)

// TypeProblem words a JSON value that does not decode into its Go field,
// quoting what was sent: "must be an integer, not 1e2", "99999999999 is
// out of range (-2147483648..2147483647)", "must not be a JSON string".
func TypeProblem(te *json.UnmarshalTypeError) string {
	num, isNum := strings.CutPrefix(te.Value, "number ")
	t := te.Type
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || !isNum {
		return "must not be a JSON " + te.Value
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if strings.ContainsAny(num, ".eE") {
			return fmt.Sprintf("must be an integer, not %s", num)
		}
		bits := t.Bits()
		return fmt.Sprintf("%s is out of range (%d..%d)", num, -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if strings.ContainsAny(num, ".eE-") {
			return fmt.Sprintf("must be a whole number, not %s", num)
		}
		return fmt.Sprintf("%s is out of range (0..%d)", num, uint64(1)<<(t.Bits()-1)*2-1)
	}
	return "must not be a JSON " + te.Value
}
