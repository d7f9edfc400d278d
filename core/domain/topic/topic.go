// Package topic names conversations. Every conversation is a topic (DESIGN §1): groups are
// grp_<group_id>, P2P pairs are p2p_<small_uid>_<big_uid> so both users always share one.
package topic

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind tells group topics from P2P topics.
type Kind int

const (
	Group Kind = iota + 1
	P2P
)

// MaxLen is the column width of topic in every table.
const MaxLen = 64

var ErrInvalid = errors.New("invalid topic")

// Parsed is a validated topic.
type Parsed struct {
	Name    string
	Kind    Kind
	GroupID int64 // Group only
	UserA   int64 // P2P only: the smaller user id
	UserB   int64 // P2P only: the bigger user id
}

// ForGroup returns the topic of a group.
func ForGroup(groupID int64) string { return "grp_" + strconv.FormatInt(groupID, 10) }

// ForPair returns the P2P topic of two distinct users, whatever their order.
func ForPair(a, b int64) string {
	if a > b {
		a, b = b, a
	}
	return "p2p_" + strconv.FormatInt(a, 10) + "_" + strconv.FormatInt(b, 10)
}

// Parse validates a topic name strictly, so the canonical spelling is the only accepted one.
func Parse(name string) (Parsed, error) {
	if p, ok := parse(name); ok {
		return p, nil
	}
	// Built only on failure: Parse runs several times per message.
	return Parsed{}, fmt.Errorf("%w: %q", ErrInvalid, name)
}

func parse(name string) (Parsed, bool) {
	if len(name) > MaxLen {
		return Parsed{}, false
	}
	switch {
	case strings.HasPrefix(name, "grp_"):
		id, ok := positiveID(name[4:])
		return Parsed{Name: name, Kind: Group, GroupID: id}, ok
	case strings.HasPrefix(name, "p2p_"):
		a, b, found := strings.Cut(name[4:], "_")
		if !found {
			return Parsed{}, false
		}
		ua, okA := positiveID(a)
		ub, okB := positiveID(b)
		if !okA || !okB || ua >= ub {
			return Parsed{}, false
		}
		return Parsed{Name: name, Kind: P2P, UserA: ua, UserB: ub}, true
	}
	return Parsed{}, false
}

// Peer returns the other user of a P2P topic.
func (p Parsed) Peer(user int64) int64 {
	if p.UserA == user {
		return p.UserB
	}
	return p.UserA
}

// Has reports whether user is one of the two users of a P2P topic.
func (p Parsed) Has(user int64) bool { return p.Kind == P2P && (p.UserA == user || p.UserB == user) }

// positiveID accepts canonical decimal ids only (no sign, no leading zeros).
func positiveID(s string) (int64, bool) {
	if s == "" || s[0] == '0' {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	id, err := strconv.ParseInt(s, 10, 64)
	return id, err == nil && id > 0
}
