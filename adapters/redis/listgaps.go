package redis

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/imdhq/imd/core/domain/dialog"
	"github.com/imdhq/imd/ports"
)

// The list gaps (ports.ListGaps) are one ZSET per tenant beside the lists (Keys.ListGaps): a
// gap is rare (a failed send, a lost job), so the set stays small while the repair keeps up.

var _ ports.ListGaps = (*DialogStore)(nil)

// Note adds the gaps with NX, so a gap noted again keeps its first time.
func (s *DialogStore) Note(ctx context.Context, tenant string, at time.Time, gaps ...dialog.Gap) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("note list gaps: %w", err)
	}
	if len(gaps) == 0 {
		return nil
	}
	cmd := s.c.B().Zadd().Key(k.ListGaps()).Nx().ScoreMember()
	for _, g := range gaps {
		cmd = cmd.ScoreMember(float64(at.UnixMilli()), gapMember(g))
	}
	if err := s.c.Do(ctx, cmd.Build()).Error(); err != nil {
		return fmt.Errorf("note %d list gaps in %s: %w", len(gaps), tenant, err)
	}
	return nil
}

// Due reads the oldest gaps up to notedBy.
func (s *DialogStore) Due(ctx context.Context, tenant string, notedBy time.Time, limit int) ([]dialog.Gap, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("due list gaps: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	scored, err := s.c.Do(ctx, s.c.B().Zrange().Key(k.ListGaps()).Min("-inf").Max(itoa(notedBy.UnixMilli())).
		Byscore().Limit(0, int64(limit)).Withscores().Build()).AsZScores()
	if err != nil {
		return nil, fmt.Errorf("due list gaps of %s: %w", tenant, err)
	}
	out := make([]dialog.Gap, 0, len(scored))
	for _, z := range scored {
		g, err := parseGap(z.Member)
		if err != nil {
			return nil, fmt.Errorf("list gap of %s: %w", tenant, err)
		}
		g.Noted = time.UnixMilli(int64(z.Score))
		out = append(out, g)
	}
	return out, nil
}

// Close removes the gaps' members.
func (s *DialogStore) Close(ctx context.Context, tenant string, gaps ...dialog.Gap) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("close list gaps: %w", err)
	}
	if len(gaps) == 0 {
		return nil
	}
	members := make([]string, len(gaps))
	for i, g := range gaps {
		members[i] = gapMember(g)
	}
	if err := s.c.Do(ctx, s.c.B().Zrem().Key(k.ListGaps()).Member(members...).Build()).Error(); err != nil {
		return fmt.Errorf("close %d list gaps in %s: %w", len(gaps), tenant, err)
	}
	return nil
}

// gapMember is the gap's ZSET member; the topic goes last, whatever it holds.
func gapMember(g dialog.Gap) string {
	return itoa(g.ConversationID) + ":" + itoa(g.From) + ":" + itoa(g.To) + ":" + g.Topic
}

func parseGap(member string) (dialog.Gap, error) {
	parts := strings.SplitN(member, ":", 4)
	if len(parts) != 4 {
		return dialog.Gap{}, fmt.Errorf("malformed member %q", member)
	}
	var nums [3]int64
	for i := range nums {
		n, err := strconv.ParseInt(parts[i], 10, 64)
		if err != nil {
			return dialog.Gap{}, fmt.Errorf("malformed member %q: %w", member, err)
		}
		nums[i] = n
	}
	return dialog.Gap{Topic: parts[3], ConversationID: nums[0], From: nums[1], To: nums[2]}, nil
}
