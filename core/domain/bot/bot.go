// Package bot is the domain of bot accounts (docs/DESIGN.md issue-32 part 2 "Bots"): a user of
// the tenant an operator made to be driven by a program, which sends and reads through the
// HTTP API with its own token and receives through a webhook endpoint bound to it or a
// WebSocket.
package bot

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/imdhq/imd/core/domain/apperr"
)

// MaxName bounds a bot's name, the nickname of its user (the users table's limit).
const MaxName = 64

// ErrNotFound: no bot with that user id in the tenant.
var ErrNotFound = apperr.New(apperr.NotFound, "bot not found")

// Bot is a bot account: UserID is its user, the one its token speaks for.
type Bot struct {
	UserID    int64
	Name      string
	CreatedAt time.Time
}

// Validate checks what an operator gives: a positive user id and a short, non-empty name.
func (b Bot) Validate() error {
	if b.UserID <= 0 {
		return apperr.New(apperr.InvalidArgument, "bot_id must be positive")
	}
	if b.Name == "" || len(b.Name) > MaxName || !utf8.ValidString(b.Name) {
		return apperr.New(apperr.InvalidArgument, fmt.Sprintf("name must be 1-%d bytes of UTF-8", MaxName))
	}
	return nil
}
