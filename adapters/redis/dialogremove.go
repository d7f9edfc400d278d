package redis

import (
	"context"
	"fmt"

	"github.com/redis/rueidis"

	"github.com/imdhq/imd/ports"
)

var _ ports.DialogRemover = (*DialogStore)(nil)

// removeDialogScript takes one conversation off every list of a user in one step, so a reader
// never sees it counted but unlisted.
// KEYS: unread, read, unreadcnt, muted, pinned. ARGV: conversation.
var removeDialogScript = rueidis.NewLuaScript(`
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
redis.call('SREM', KEYS[4], ARGV[1])
redis.call('ZREM', KEYS[5], ARGV[1])
return 1
`)

// RemoveDialog drops the conversation from the user's lists; the shared preview stays.
func (s *DialogStore) RemoveDialog(ctx context.Context, tenant string, user, conversationID int64) error {
	k, err := KeysOf(tenant)
	if err != nil {
		return fmt.Errorf("remove dialog: %w", err)
	}
	keys := []string{k.DialogUnread(user), k.DialogRead(user), k.DialogUnreadCount(user), k.DialogMuted(user), k.DialogPinned(user)}
	if err := removeDialogScript.Exec(ctx, s.c, keys, []string{itoa(conversationID)}).Error(); err != nil {
		return fmt.Errorf("remove conversation %d from the lists of %d in %s: %w", conversationID, user, tenant, err)
	}
	return nil
}
