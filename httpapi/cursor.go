package httpapi

import (
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"

	"github.com/agentledger/agentledger"
)

// cursorVersion starts every cursor, so the format can change without old
// cursors being misread.
const cursorVersion = "v1."

// encodeCursor makes the opaque cursor of the page after the task with id
// lastID (pages run newest first, by id).
func encodeCursor(lastID int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(cursorVersion + strconv.FormatInt(lastID, 10)))
}

// decodeCursor reads a cursor made by encodeCursor.
func decodeCursor(c string) (int64, error) {
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err == nil {
		if s, ok := strings.CutPrefix(string(raw), cursorVersion); ok {
			if id, err := strconv.ParseInt(s, 10, 64); err == nil && id > 0 {
				return id, nil
			}
		}
	}
	return 0, fmt.Errorf("%w: %w", errBadParameter,
		agentledger.Invalid("cursor", "is not a cursor this API returned (pass next_cursor as it is)"))
}
