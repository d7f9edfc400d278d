package main

import (
	"log/slog"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/core/admin"
	"github.com/imdhq/imd/core/authn"
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/dailystats"
	"github.com/imdhq/imd/core/directory"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/core/read"
	"github.com/imdhq/imd/core/reports"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/send"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/core/uploads"
	"github.com/imdhq/imd/ports"
)

// Social provides the social graph, the tenant registry, authentication with revocation,
// uploads and reports (issue 6).
func Social() fx.Option {
	return fx.Options(
		fx.Provide(
			newDailyStats,
			fx.Annotate(func(c *dailystats.Counter) ports.CommitListener { return c }, fx.ResultTags(`group:"commit_listeners"`)),
			newResolver,
			newDirectory,
			newRegistry,
			newAuthn,
			func(a *authn.Service) ports.Authenticator { return a },
			newUploads,
			newReports,
			newSocialHTTP,
		),
	)
}

func newDailyStats(s ports.DailyCounter, log *slog.Logger) *dailystats.Counter {
	return dailystats.New(s, log)
}

func newResolver(cfg config.Config, d ports.Directory, r ports.SendRules, ids ports.IDGenerator, m *membership.Cache, c ports.Clock) *conversation.Resolver {
	graph := struct {
		ports.Directory
		ports.SendRules
	}{d, r}
	return conversation.NewResolver(graph, ids, m,
		conversation.WithClock(c), conversation.WithRulesTTL(memberCacheTTL),
		conversation.WithSystemAccounts(cfg.Message.SystemAccounts))
}

type directoryParams struct {
	fx.In
	Directory ports.Directory
	Profiles  ports.Profiles
	Friends   ports.Friends
	Blocks    ports.Blocks
	Groups    ports.Groups
	Resolver  *conversation.Resolver
	IDs       ports.IDGenerator
	Clock     ports.Clock
	// The inbox's mailer stores and pushes the friend and member events.
	Mailer *inbox.Mailer `optional:"true"`
	// The send path writes group events (mute-all) into group topics.
	Send    *send.Service
	Dialogs ports.DialogRemover
	Log     *slog.Logger
}

func newDirectory(p directoryParams) *directory.Service {
	d := directory.Deps{
		Directory: p.Directory, Profiles: p.Profiles, Friends: p.Friends, Blocks: p.Blocks, Groups: p.Groups,
		Resolver: p.Resolver, IDs: p.IDs, Clock: p.Clock, Topics: p.Send, Dialogs: p.Dialogs, Log: p.Log,
	}
	if p.Mailer != nil {
		d.Events = p.Mailer
	}
	return directory.New(d)
}

func newRegistry(cfg config.Config, store ports.TenantStore, rt *runtime.Runtime, c ports.Clock, log *slog.Logger) (*tenantregistry.Registry, error) {
	configured := make([]tenant.Info, len(cfg.Tenants))
	for i, t := range cfg.Tenants {
		configured[i] = tenant.Info{Name: t.Name, Database: t.DatabaseName(), DSN: t.DSN}
	}
	return tenantregistry.New(tenantregistry.Config{Configured: configured, Reserved: []string{cfg.Registry.Database}},
		tenantregistry.Deps{Store: store, Activate: rt.Add, Clock: c, Log: log})
}

// revocationCacheTTL is how long Redis keeps a token check's answer: a revocation overwrites it
// at once, so this bounds only a revocation whose cache write failed (and was refused with 50301).
const revocationCacheTTL = time.Minute

func newAuthn(i ports.TokenInspector, r ports.TokenRevocations, cache ports.RevocationCache, reg *tenantregistry.Registry, c ports.Clock) *authn.Service {
	return authn.New(authn.Deps{
		Tokens: i, Revocations: r, Cache: cache, CacheTTL: revocationCacheTTL, Tenants: reg.Known, Clock: c,
	}, admin.MaxTokenTTL)
}

func newUploads(cfg config.Config, m mediaStores, c ports.Clock) *uploads.Service {
	return uploads.New(uploads.Config{MaxSize: cfg.Uploads.MaxSize, URLTTL: cfg.Uploads.URLTTL}, uploads.Deps{Store: m.signer, Clock: c})
}

func newReports(s ports.Reports, h *history.Service, ids ports.IDGenerator, c ports.Clock) *reports.Service {
	return reports.New(reports.Deps{Store: s, History: h, IDs: ids, Clock: c})
}

type socialHTTPParams struct {
	fx.In
	Auth      *authn.Service
	Directory *directory.Service
	Tenants   *tenantregistry.Registry
	Send      *send.Service
	Uploads   *uploads.Service
	Reports   *reports.Service
	Media     mediaStores
	Inbox     *inbox.Service `optional:"true"`
	Read      *read.Service  `optional:"true"`
}

func newSocialHTTP(p socialHTTPParams) httpapi.SocialDeps {
	d := httpapi.SocialDeps{
		Auth: p.Auth, Directory: p.Directory, Tenants: p.Tenants, Send: p.Send, Uploads: p.Uploads,
		Reports: p.Reports, Files: p.Media.files,
	}
	if p.Inbox != nil {
		d.Dialogs, d.Settings = p.Inbox, p.Inbox
	}
	if p.Read != nil {
		d.Reads = p.Read
	}
	return d
}
