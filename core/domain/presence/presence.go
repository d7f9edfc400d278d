// Package presence names where a device's connection lives when several imd nodes share a
// tenant (DESIGN §11): the node instance that holds it, and the token of that connection, so a
// stale entry can be told from a fresh one; and what others see of a user: online, offline
// with last_seen, or unknown (issue 31).
package presence

import (
	"fmt"
	"strconv"
	"strings"
)

// Entry says that node holds the connection of (user, device); Token names that connection
// among the ones the node held for the device over time.
type Entry struct {
	User   int64
	Device uint64
	Node   string
	Token  uint64
}

// Value is how an entry's node and token are stored: "node|token".
func (e Entry) Value() string { return e.Node + "|" + strconv.FormatUint(e.Token, 10) }

// ParseValue reads a stored "node|token" back; a malformed value is an error, never a panic.
func ParseValue(user int64, device uint64, v string) (Entry, error) {
	node, tok, ok := strings.Cut(v, "|")
	if !ok || !ValidNode(node) {
		return Entry{}, fmt.Errorf("presence of %d/%d: malformed value %q", user, device, v)
	}
	token, err := strconv.ParseUint(tok, 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("presence of %d/%d: bad token in %q", user, device, v)
	}
	return Entry{User: user, Device: device, Node: node, Token: token}, nil
}

// ValidNode accepts node instance names: "<node_id>-<boot hex>", letters, digits and '-'
// only, so a name can sit in a Redis key without leaving the tenant's hash slot.
func ValidNode(n string) bool {
	if n == "" || len(n) > 64 {
		return false
	}
	for _, r := range n {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r == '-') {
			return false
		}
	}
	return true
}

// NodeID is the configured node_id part of an instance name ("7-ab12…" → "7"): two
// instances with one node_id are one node restarted, since node_id is unique per node.
func NodeID(instance string) string {
	id, _, _ := strings.Cut(instance, "-")
	return id
}
