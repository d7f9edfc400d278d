package client

import (
	"context"

	"github.com/imdhq/imd/clients/go/wire"
)

// QueryPresence asks who of users (at most wire.MaxPresenceQuery) is online, and when the
// others were last seen (QUERY_PRESENCE).
func (c *Conn) QueryPresence(ctx context.Context, users ...int64) ([]wire.Presence, error) {
	var resp wire.QueryPresenceResponse
	err := c.call(ctx, wire.CmdQueryPresence, wire.QueryPresenceRequest{UserIDs: users}, &resp)
	return resp.Presence, err
}

// Typing tells the other members of the conversation req addresses that the user started
// (req.Typing) or stopped typing (TYPING); the answer says how long a start lasts unless
// sent again.
func (c *Conn) Typing(ctx context.Context, req wire.TypingRequest) (wire.TypingResponse, error) {
	var resp wire.TypingResponse
	err := c.call(ctx, wire.CmdTyping, req, &resp)
	return resp, err
}

// Settings changes the settings req names and returns them all as stored (SETTINGS); an
// empty req only reads them.
func (c *Conn) Settings(ctx context.Context, req wire.SettingsRequest) (wire.Settings, error) {
	var resp wire.Settings
	err := c.call(ctx, wire.CmdSettings, req, &resp)
	return resp, err
}
