package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

// CompensationList is ports.CompensationList: a LIST of entries as JSON, the whole message
// included, and a SET of their msg_ids so client retries do not list a message twice.
type CompensationList struct {
	c rueidis.Client
}

var _ ports.CompensationList = (*CompensationList)(nil)

// NewCompensationList returns the compensation list on c.
func NewCompensationList(c rueidis.Client) *CompensationList { return &CompensationList{c: c} }

// pushCompensationScript appends the entry once per msg_id. KEYS: compensation,
// compensation_ids. ARGV: msg_id, entry JSON.
var pushCompensationScript = rueidis.NewLuaScript(`
if redis.call('SADD', KEYS[2], ARGV[1]) == 1 then
  redis.call('RPUSH', KEYS[1], ARGV[2])
  return 1
end
return 0
`)

// Push appends c unless its msg_id is listed already.
func (l *CompensationList) Push(ctx context.Context, tenant string, c ports.Compensation) (bool, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return false, fmt.Errorf("push compensation: %w", err)
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return false, fmt.Errorf("encode compensation of msg %d: %w", c.Message.MsgID, err)
	}
	keys := []string{k.Compensation(), k.CompensationIDs()}
	n, err := pushCompensationScript.Exec(ctx, l.c, keys, []string{strconv.FormatInt(c.Message.MsgID, 10), string(raw)}).AsInt64()
	if err != nil {
		return false, fmt.Errorf("push compensation of msg %d in %s: %w", c.Message.MsgID, tenant, err)
	}
	return n == 1, nil
}

// List returns the oldest limit entries.
func (l *CompensationList) List(ctx context.Context, tenant string, limit int) ([]ports.Compensation, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return nil, fmt.Errorf("list compensation: %w", err)
	}
	if limit <= 0 {
		return nil, nil
	}
	raw, err := l.c.Do(ctx, l.c.B().Lrange().Key(k.Compensation()).Start(0).Stop(int64(limit-1)).Build()).AsStrSlice()
	if err != nil {
		return nil, fmt.Errorf("list compensation of %s: %w", tenant, err)
	}
	out := make([]ports.Compensation, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal([]byte(r), &out[i]); err != nil {
			return nil, fmt.Errorf("compensation entry %d of %s: %w", i, tenant, err)
		}
	}
	return out, nil
}

// Len is the number of entries.
func (l *CompensationList) Len(ctx context.Context, tenant string) (int64, error) {
	k, err := KeysOf(tenant)
	if err != nil {
		return 0, fmt.Errorf("compensation length: %w", err)
	}
	n, err := l.c.Do(ctx, l.c.B().Llen().Key(k.Compensation()).Build()).AsInt64()
	if err != nil {
		return 0, fmt.Errorf("compensation length of %s: %w", tenant, err)
	}
	return n, nil
}
