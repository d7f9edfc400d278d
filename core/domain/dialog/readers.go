package dialog

// Readers is who read one message of a conversation, from the members' read watermarks
// (issue 31, docs/DESIGN.md issue-31): Read members other than its sender reached its seq,
// out of Of members other than its sender; Users are the first of those readers by id.
// Members who hide receipts count in Of, never in Read or Users.
type Readers struct {
	Read  int
	Of    int
	Users []int64
}
