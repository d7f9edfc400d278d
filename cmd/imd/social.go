package main

import (
	"crypto/hmac"
	"crypto/sha256"
	"log/slog"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/mysql"
	redisadapter "github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/adapters/s3blob"
	"github.com/imdhq/imd/core/admin"
	"github.com/imdhq/imd/core/authn"
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/dailystats"
	"github.com/imdhq/imd/core/directory"
	"github.com/imdhq/imd/core/history"
	"github.com/imdhq/imd/core/inbox"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/core/ratelimit"
	"github.com/imdhq/imd/core/read"
	"github.com/imdhq/imd/core/reports"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/send"
	"github.com/imdhq/imd/core/tenant"
	"github.com/imdhq/imd/core/tenants"
	"github.com/imdhq/imd/core/uploads"
	"github.com/imdhq/imd/ports"
)

// Social provides the social graph, the tenant registry, authentication with revocation,
// uploads and reports (issue 6).
func Social() fx.Option {
	return fx.Options(
		fx.Provide(
			func(c *mysql.Cluster) ports.Profiles { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Friends { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Blocks { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Groups { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.SendRules { return mysql.NewDirectory(c) },
			func(c *mysql.Cluster) ports.Reports { return mysql.NewReports(c) },
			func(c *mysql.Cluster) *mysql.Summaries { return mysql.NewSummaries(c) },
			func(s *mysql.Summaries) ports.Summaries { return s },
			func(c rueidis.Client) ports.DialogRemover { return redisadapter.NewDialogStore(c) },
			newDailyStats,
			fx.Annotate(func(c *dailystats.Counter) ports.CommitListener { return c }, fx.ResultTags(`group:"commit_listeners"`)),
			func(c *mysql.Cluster, cfg config.Config) *mysql.TenantRegistry {
				return mysql.NewTenantRegistry(c, cfg.Registry.Database)
			},
			func(c *mysql.Cluster) ports.TokenRevocations { return mysql.NewRevocations(c) },
			func(c rueidis.Client) ports.RevocationCache { return redisadapter.NewRevocationCache(c) },
			func(cfg config.Config) ports.TokenInspector { return jwt.New([]byte(cfg.TokenSecret)) },
			newObjectStore,
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

func newDailyStats(s *mysql.Summaries, log *slog.Logger) *dailystats.Counter {
	return dailystats.New(s, log)
}

// httpRateLimits turns the rate_limit section into the client API's budgets.
func httpRateLimits(r config.RateLimit) httpapi.ClientRateLimits {
	return httpapi.ClientRateLimits{
		User: ratelimit.Rate{Count: r.HTTPPerSecond, Per: time.Second},
		IP:   ratelimit.Rate{Count: r.PerIP.HTTPPerSecond, Per: time.Second},
	}
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

func newRegistry(cfg config.Config, store *mysql.TenantRegistry, rt *runtime.Runtime, c ports.Clock, log *slog.Logger) (*tenants.Registry, error) {
	configured := make([]tenant.Info, len(cfg.Tenants))
	for i, t := range cfg.Tenants {
		configured[i] = tenant.Info{Name: t.Name, Database: t.DatabaseName()}
	}
	return tenants.New(tenants.Config{Configured: configured, Reserved: []string{cfg.Registry.Database}},
		tenants.Deps{Store: store, Activate: rt.Add, Clock: c, Log: log})
}

// revocationCacheTTL is how long Redis keeps a token check's answer: a revocation overwrites it
// at once, so this bounds only a revocation whose cache write failed (and was refused with 50301).
const revocationCacheTTL = time.Minute

func newAuthn(i ports.TokenInspector, r ports.TokenRevocations, cache ports.RevocationCache, reg *tenants.Registry, c ports.Clock) *authn.Service {
	return authn.New(authn.Deps{
		Tokens: i, Revocations: r, Cache: cache, CacheTTL: revocationCacheTTL, Tenants: reg.Known, Clock: c,
	}, admin.MaxTokenTTL)
}

// mediaStores are where uploads go: the presigner of upload and download URLs, and the
// /files/ handler of the HTTP listener when the store is the local directory (nil for S3).
type mediaStores struct {
	signer ports.ObjectStore
	files  httpapi.FileStore
}

// newObjectStore is the uploads store: an S3-compatible bucket, or the local directory
// (default) whose URL secret is derived from the token secret unless configured, so a dev
// setup needs no extra key.
func newObjectStore(cfg config.Config) (mediaStores, error) {
	u := cfg.Uploads
	if u.Store == "s3" {
		s, err := s3blob.New(s3Config(u.S3))
		return mediaStores{signer: s}, err
	}
	secret := []byte(u.Secret)
	if len(secret) == 0 {
		m := hmac.New(sha256.New, []byte(cfg.TokenSecret))
		m.Write([]byte("imd uploads"))
		secret = m.Sum(nil)
	}
	base := u.BaseURL
	if base == "" {
		base = "http://" + cfg.HTTP.Addr
	}
	s, err := localfs.New(localfs.Config{Dir: u.Dir, BaseURL: base, Secret: secret})
	if err != nil {
		return mediaStores{}, err
	}
	return mediaStores{signer: s, files: s}, nil
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
	Tenants   *tenants.Registry
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
