// Package presence is what others see of a user's connections (issue 31): online while any
// device is connected to any live node, offline with the time last seen, unknown while the
// registry cannot be read. It answers QUERY_PRESENCE and SETTINGS, and pushes PRESENCE to
// the user's friends and to the members of the user's groups up to a configured size when the
// user comes online or goes offline. Liveness is the node registry of DESIGN §11, so a node
// that dies takes its users offline within its lease.
package presence

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/presence"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/ports"
)

// Config sizes the feed; zero fields take the defaults.
type Config struct {
	// GroupLimit is the largest group whose members are pushed a member's changes; members of
	// bigger groups query (issue 31). Default 200.
	GroupLimit int
	// MaxQuery is how many users one query may name; more is 40001. Default 200.
	MaxQuery int
	// HealRate is how many users a second this node pushes the state of after a registry heal
	// (DESIGN §13 "Unknown until healed"), so a heal is no storm. Default 200.
	HealRate int
	// HealQueue bounds the users waiting for such a push; more are not pushed (counted).
	// Default 10,000.
	HealQueue int
}

func (c Config) withDefaults() Config {
	if c.GroupLimit <= 0 {
		c.GroupLimit = 200
	}
	if c.MaxQuery <= 0 {
		c.MaxQuery = 200
	}
	if c.HealRate <= 0 {
		c.HealRate = 200
	}
	if c.HealQueue <= 0 {
		c.HealQueue = 10_000
	}
	return c
}

// Liveness says which node instances are alive (cluster.View): an entry of a dead node is
// not a connection.
type Liveness interface {
	Live(tenant, node string) bool
}

// Members lists a group topic's members (the membership cache).
type Members interface {
	Members(ctx context.Context, tenant, topic string) ([]int64, error)
}

// Deps are the ports the feed uses.
type Deps struct {
	Presence ports.Presence
	Nodes    Liveness
	Records  ports.PresenceRecords
	Settings ports.UserSettings
	Friends  ports.Friends
	Groups   ports.Groups
	Members  Members
	Pusher   ports.DevicePusher
	Clock    ports.Clock
	Metrics  ports.Metrics
	Log      *slog.Logger
}

// Service answers presence queries and settings and pushes presence changes.
type Service struct {
	cfg   Config
	d     Deps
	heals *healQueue
}

// New returns the presence service.
func New(cfg Config, d Deps) *Service {
	cfg = cfg.withDefaults()
	return &Service{cfg: cfg, d: d, heals: newHealQueue(cfg.HealQueue)}
}

// errIncomplete is the registry after a loss, before every node claimed its devices again.
var errIncomplete = errors.New("presence registry not whole since a loss")

// online returns which of users have a device on a live node. The registry not whole (a loss
// healing) is errIncomplete: a missing entry may be a device not claimed again yet, and an
// entry may be one whose removal the loss undid (DESIGN §13 "Unknown until healed").
func (s *Service) online(ctx context.Context, tenant string, users []int64) (map[int64]bool, error) {
	entries, whole, err := s.d.Presence.LookupWhole(ctx, tenant, users)
	if err != nil {
		return nil, fmt.Errorf("presence of %d users: %w", len(users), err)
	}
	if !whole {
		return nil, errIncomplete
	}
	on := make(map[int64]bool, len(entries))
	for _, e := range entries {
		if s.d.Nodes.Live(tenant, e.Node) {
			on[e.User] = true
		}
	}
	return on, nil
}

// Query answers QUERY_PRESENCE: one status per distinct id, in the order asked. The registry
// unreadable or not whole makes every state unknown, never online or offline; last_seen still
// comes from MySQL. A user sees its own state even when hidden.
func (s *Service) Query(ctx context.Context, tenant string, asker int64, users []int64) ([]presence.Status, error) {
	if len(users) > s.cfg.MaxQuery {
		return nil, apperr.New(apperr.InvalidArgument, fmt.Sprintf("at most %d user ids per presence query", s.cfg.MaxQuery))
	}
	ids := make([]int64, 0, len(users))
	for _, u := range users {
		if u <= 0 {
			return nil, apperr.New(apperr.InvalidArgument, "user ids are positive")
		}
		if !slices.Contains(ids, u) {
			ids = append(ids, u)
		}
	}
	if len(ids) == 0 {
		return []presence.Status{}, nil
	}
	records, err := s.d.Records.Records(ctx, tenant, ids)
	if err != nil {
		return nil, apperr.Wrap(apperr.Busy, "presence records unavailable", err)
	}
	on, err := s.online(ctx, tenant, ids)
	switch {
	case errors.Is(err, errIncomplete): // the keeper logged the loss; once a query, not at warn
		s.d.Log.DebugContext(ctx, "presence registry healing; states answered unknown", "tenant", tenant)
	case err != nil:
		s.d.Log.WarnContext(ctx, "presence registry unreadable; states answered unknown", "tenant", tenant, "err", err)
	}
	out := make([]presence.Status, len(ids))
	for i, u := range ids {
		r := records[u]
		if u == asker {
			r.Hidden = false
		}
		out[i] = presence.Seen(u, on[u], r)
		if err != nil && !r.Hidden {
			out[i].State = presence.Unknown
			s.d.Metrics.Inc("presence_unknown_total")
		}
	}
	return out, nil
}

// Arriving reports whether user already has a device on a live node, before this node claims
// another: only the first device makes the user come online. Asked before the claim, two
// devices arriving at once on two nodes both announce (a repeat) rather than neither (a user
// wrongly offline). Unreadable or healing, it answers true: no announcement rather than a
// wrong one; the user waits, and the next keeper pass that finds the registry whole pushes
// the user's state (Healed).
func (s *Service) Arriving(ctx context.Context, tenant string, user int64) bool {
	on, err := s.online(ctx, tenant, []int64{user})
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence not read before a claim; online pushed once whole", "tenant", tenant, "user_id", user, "err", err)
		s.heals.wait(tenant, []int64{user}, s.d.Metrics)
		return true
	}
	return on[user]
}

// Arrived follows the claim of a device of a user Arriving found offline: the user is online
// now, recorded as seen and pushed to those who see it.
func (s *Service) Arrived(ctx context.Context, tenant string, user int64) {
	s.changed(ctx, tenant, user, presence.Online)
}

// Left follows the removal of devices of users (a connection closed, a dead node retired):
// each user with no device left on a live node went offline. Unreadable or not whole, nobody
// is announced yet: the users are seen now (last_seen) and wait for the heal, after which
// their state is pushed (Healed).
func (s *Service) Left(ctx context.Context, tenant string, users []int64) {
	if len(users) == 0 {
		return
	}
	on, err := s.online(ctx, tenant, users)
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence not read after a release; offline pushed after the heal", "tenant", tenant, "err", err)
		now := s.d.Clock.Now()
		for _, u := range users {
			if err := s.d.Records.Seen(ctx, tenant, u, now); err != nil {
				s.d.Log.WarnContext(ctx, "last_seen not written", "tenant", tenant, "user_id", u, "err", err)
			}
		}
		s.heals.wait(tenant, users, s.d.Metrics)
		return
	}
	for _, u := range users {
		if !on[u] {
			s.changed(ctx, tenant, u, presence.Offline)
		}
	}
}

// changed records the user as seen now (at each change, never per heartbeat: the coarse
// write issue 31 asks for) and pushes the new state unless the user hides it.
func (s *Service) changed(ctx context.Context, tenant string, user int64, state presence.State) {
	now := s.d.Clock.Now()
	if err := s.d.Records.Seen(ctx, tenant, user, now); err != nil {
		s.d.Log.WarnContext(ctx, "last_seen not written", "tenant", tenant, "user_id", user, "err", err)
	}
	s.d.Metrics.Inc("presence_changes_total", string(state))
	records, err := s.d.Records.Records(ctx, tenant, []int64{user})
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence setting unreadable; change not pushed", "tenant", tenant, "user_id", user, "err", err)
		return
	}
	if records[user].Hidden {
		return
	}
	st := presence.Status{User: user, State: state}
	if state == presence.Offline {
		st.LastSeen = now
	}
	s.push(ctx, tenant, st)
}

// push sends st to the user's audience: friends and members of groups up to GroupLimit.
func (s *Service) push(ctx context.Context, tenant string, st presence.Status) {
	audience, err := s.audience(ctx, tenant, st.User)
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence audience unreadable; change not pushed", "tenant", tenant, "user_id", st.User, "err", err)
		return
	}
	if len(audience) == 0 {
		return
	}
	data, err := json.Marshal(Wire(st))
	if err != nil {
		s.d.Log.ErrorContext(ctx, "presence push not encoded", "err", err)
		return
	}
	out := s.d.Pusher.PushReach(ctx, tenant, delivery.Addressed{
		Target: delivery.Target{Recipients: audience, NotMailbox: true, NotPush: true},
		Push:   delivery.Push{Kind: delivery.KindPresence, Data: data},
	})
	s.d.Metrics.Add("presence_pushes_total", float64(out[0].Delivered))
}

// audiencePage is how many friends or group conversations one read lists.
const audiencePage = 500

// audience is who sees user's changes: friends, and members of the user's groups of at most
// GroupLimit members; sorted, the user left out.
func (s *Service) audience(ctx context.Context, tenant string, user int64) ([]int64, error) {
	seen := map[int64]bool{}
	for after := int64(0); ; {
		page, err := s.d.Friends.Friends(ctx, tenant, user, after, audiencePage)
		if err != nil {
			return nil, fmt.Errorf("friends of %d: %w", user, err)
		}
		for _, f := range page {
			seen[f] = true
		}
		if len(page) < audiencePage {
			break
		}
		after = page[len(page)-1]
	}
	for after := int64(0); ; {
		convs, err := s.d.Groups.UserConversations(ctx, tenant, user, social.KindGroup, after, audiencePage)
		if err != nil {
			return nil, fmt.Errorf("groups of %d: %w", user, err)
		}
		for _, c := range convs {
			members, err := s.d.Members.Members(ctx, tenant, c.Topic)
			if err != nil {
				return nil, fmt.Errorf("members of %s: %w", c.Topic, err)
			}
			if len(members) > s.cfg.GroupLimit {
				continue
			}
			for _, m := range members {
				seen[m] = true
			}
		}
		if len(convs) < audiencePage {
			break
		}
		after = convs[len(convs)-1].ID
	}
	delete(seen, user)
	out := make([]int64, 0, len(seen))
	for u := range seen {
		out = append(out, u)
	}
	slices.Sort(out)
	return out, nil
}

// Settings returns the user's settings.
func (s *Service) Settings(ctx context.Context, tenant string, user int64) (social.Settings, error) {
	st, err := s.d.Settings.Settings(ctx, tenant, user)
	if err != nil {
		return social.Settings{}, apperr.Wrap(apperr.Busy, "settings unavailable", err)
	}
	return st, nil
}

// ChangeSettings applies c and returns the settings as stored. Only the settings c names are
// written, in one step, so a concurrent change of another setting stands (issue 31). Hiding
// presence tells the audience the user is offline (with no last_seen); showing it again tells
// them the truth.
func (s *Service) ChangeSettings(ctx context.Context, tenant string, user int64, c social.SettingsChange) (social.Settings, error) {
	old, err := s.Settings(ctx, tenant, user)
	if err != nil {
		return social.Settings{}, err
	}
	if old.With(c) == old {
		return old, nil
	}
	next, err := s.d.Settings.ChangeSettings(ctx, tenant, user, c)
	if err != nil {
		return social.Settings{}, apperr.Wrap(apperr.Busy, "settings not saved", err)
	}
	if next.HidePresence != old.HidePresence {
		s.reveal(ctx, tenant, user, next.HidePresence)
	}
	return next, nil
}

// reveal pushes what the audience sees of user after the hide setting changed.
func (s *Service) reveal(ctx context.Context, tenant string, user int64, hidden bool) {
	if hidden {
		s.push(ctx, tenant, presence.Status{User: user, State: presence.Offline})
		return
	}
	on, err := s.online(ctx, tenant, []int64{user})
	if err != nil {
		s.d.Log.WarnContext(ctx, "presence unreadable; unhidden state not pushed", "tenant", tenant, "user_id", user, "err", err)
		return
	}
	records, err := s.d.Records.Records(ctx, tenant, []int64{user})
	if err != nil {
		s.d.Log.WarnContext(ctx, "last_seen unreadable; unhidden state not pushed", "tenant", tenant, "user_id", user, "err", err)
		return
	}
	r := records[user]
	r.Hidden = false
	s.push(ctx, tenant, presence.Seen(user, on[user], r))
}

// WireStatus is a status as the PRESENCE push and QUERY_PRESENCE carry it.
type WireStatus struct {
	UserID   int64  `json:"user_id"`
	State    string `json:"state"`
	LastSeen int64  `json:"last_seen,omitempty"`
}

// Wire is st on the wire (PROTOCOL.md §3 PRESENCE).
func Wire(st presence.Status) WireStatus {
	w := WireStatus{UserID: st.User, State: string(st.State)}
	if !st.LastSeen.IsZero() {
		w.LastSeen = st.LastSeen.UnixMilli()
	}
	return w
}
