package redis

// Keys of the conversation lists (seed 003 §11). Every key carries the tenant's hash tag, so
// one script may touch the lists of many users.

// DialogUnread is the ZSET of a user's conversations with unread messages: member
// conversation id, score the last message time in ms.
func (k Keys) DialogUnread(user int64) string { return k.prefix + "dialog:unread:" + itoa(user) }

// DialogRead is the ZSET of a user's other conversations, scored like DialogUnread.
func (k Keys) DialogRead(user int64) string { return k.prefix + "dialog:read:" + itoa(user) }

// DialogUnreadCount is the HASH conversation id → unread count of a user.
func (k Keys) DialogUnreadCount(user int64) string {
	return k.prefix + "dialog:unreadcnt:" + itoa(user)
}

// DialogMuted is the SET of conversations a user muted.
func (k Keys) DialogMuted(user int64) string { return k.prefix + "dialog:muted:" + itoa(user) }

// DialogPinned is the ZSET of conversations a user pinned, scored by pin time.
func (k Keys) DialogPinned(user int64) string { return k.prefix + "dialog:pinned:" + itoa(user) }

// DialogPreview is the STRING (JSON) preview of a conversation's last message.
func (k Keys) DialogPreview(conversationID int64) string {
	return k.prefix + "dialog:preview:" + itoa(conversationID)
}

// DialogBuilt marks a user's lists as built; Redis loses it together with the lists, which is
// how a lost list is noticed.
func (k Keys) DialogBuilt(user int64) string { return k.prefix + "dialog:built:" + itoa(user) }

// DeliverLists is the HASH batch index → 1 of the recipient batches a deliver job applied to
// the lists (short TTL).
func (k Keys) DeliverLists(once string) string { return k.prefix + "deliver:lists:" + once }

// ListGaps is the ZSET of a tenant's list gaps (ports.ListGaps): member
// "<conversation>:<from>:<to>:<topic>", score when the gap was first noted, in Unix ms.
func (k Keys) ListGaps() string { return k.prefix + "dialog:gaps" }
