package cluster

import (
	"context"
	"fmt"

	"github.com/imdhq/imd/ports"
)

// UserForgetter drops what a node cached about a user's standing (authn.Service.ForgetUser).
type UserForgetter interface {
	ForgetUser(tenant string, user int64)
}

// Sessions is ports.UserSessions over the node channels (DESIGN §8.1): this node forgets the user at once, and every live node of the tenant, this one
// included, gets a user envelope on its channel; its Receiver forgets the user too and KICKs
// the user's connections there. A Receiver reads its channel as soon as an entry arrives, so a
// node is told within its channel's delivery time, not authn's UserTTL.
type Sessions struct {
	view  *View
	fwd   *Forwarder
	users UserForgetter
}

var _ ports.UserSessions = (*Sessions)(nil)

// NewSessions returns the user sessions of the nodes view knows.
func NewSessions(view *View, fwd *Forwarder, users UserForgetter) *Sessions {
	return &Sessions{view: view, fwd: fwd, users: users}
}

// EndUser tells every live node; an error names the nodes whose channel did not take it.
func (s *Sessions) EndUser(ctx context.Context, tenant string, user int64, reason string) error {
	s.users.ForgetUser(tenant, user)
	env := envelope{Kind: envUser, SentAt: s.fwd.clock.Now().UnixMilli(), User: user, Reason: reason}
	var missed []string
	for _, node := range s.view.nodes(tenant) {
		if !s.fwd.send(ctx, tenant, node, env) {
			missed = append(missed, node)
		}
	}
	if len(missed) > 0 {
		return fmt.Errorf("end the sessions of user %d: nodes %v not told", user, missed)
	}
	return nil
}
