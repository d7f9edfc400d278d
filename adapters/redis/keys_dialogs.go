package redis

import "strconv"

// Keys of the conversation lists (seed 003 §11). A user's keys live in the user's slot group
// and a conversation's preview in the conversation's (DESIGN §11), so a script touches the
// lists of the users of one group only: the list store splits its work per group.

// ConversationGroup is the slot group of a conversation's keys.
func ConversationGroup(conversationID int64) int { return UserGroup(conversationID) }

// user is the builder of user's slot group.
func (k Keys) user(user int64) Keys { return k.Group(UserGroup(user)) }

// DialogUnread is the ZSET of a user's conversations with unread messages: member
// conversation id, score the last message time in ms.
func (k Keys) DialogUnread(user int64) string {
	return k.user(user).prefix + "dialog:unread:" + itoa(user)
}

// DialogRead is the ZSET of a user's other conversations, scored like DialogUnread.
func (k Keys) DialogRead(user int64) string { return k.user(user).prefix + "dialog:read:" + itoa(user) }

// DialogUnreadCount is the HASH conversation id → unread count of a user.
func (k Keys) DialogUnreadCount(user int64) string {
	return k.user(user).prefix + "dialog:unreadcnt:" + itoa(user)
}

// DialogMuted is the SET of conversations a user muted.
func (k Keys) DialogMuted(user int64) string {
	return k.user(user).prefix + "dialog:muted:" + itoa(user)
}

// DialogPinned is the ZSET of conversations a user pinned, scored by pin time.
func (k Keys) DialogPinned(user int64) string {
	return k.user(user).prefix + "dialog:pinned:" + itoa(user)
}

// DialogPreview is the STRING (JSON) preview of a conversation's last message.
func (k Keys) DialogPreview(conversationID int64) string {
	return k.Group(ConversationGroup(conversationID)).prefix + "dialog:preview:" + itoa(conversationID)
}

// DialogBuilt marks a user's lists as built; Redis loses it together with the lists (one slot
// group, so one master), which is how a lost list is noticed.
func (k Keys) DialogBuilt(user int64) string {
	return k.user(user).prefix + "dialog:built:" + itoa(user)
}

// DeliverListMarks is the HASH of the seqs of conversation conv that each recipient batch (a
// field) applied to the lists of its users in slot group g, as ranges (short TTL,
// applyListsScript): on a cluster each group's script keeps its own, on one node the
// conversation's group holds every batch's.
func (k Keys) DeliverListMarks(conv int64, g int) string {
	return k.Group(g).prefix + "deliver:listmarks:" + itoa(conv)
}

// DeliverListSeqs is where the code before DeliverListMarks kept batch b's marks, a STRING per
// batch in its users' group g: read while a batch has no field, so that a rolling upgrade
// counts nobody twice (applyListsScript).
func (k Keys) DeliverListSeqs(conv int64, b, g int) string {
	return k.Group(g).prefix + "deliver:listseqs:" + itoa(conv) + ":" + strconv.Itoa(b)
}

// ListGaps is the ZSET of a tenant's list gaps (ports.ListGaps): member
// "<conversation>:<from>:<to>:<topic>", score when the gap was first noted, in Unix ms. Gaps
// are rare (DESIGN §5), so the one set stays under the tenant's own tag.
func (k Keys) ListGaps() string { return k.prefix + "dialog:gaps" }
