package main

import (

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/core/authn"
	"github.com/imdhq/imd/core/conversation"
	"github.com/imdhq/imd/core/dailystats"
	"github.com/imdhq/imd/core/directory"
	"github.com/imdhq/imd/core/membership"
	"github.com/imdhq/imd/core/reports"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/tenantregistry"
	"github.com/imdhq/imd/core/uploads"
	"github.com/imdhq/imd/ports"
)

// Social provides the social graph, the tenant registry, authentication with revocation,
// uploads and reports (issue 6).
func Social() fx.Option {
	return fx.Options(
		fx.Provide(
			dailystats.New,
			fx.Annotate(func(c *dailystats.Counter) ports.CommitListener { return c }, fx.ResultTags(`group:"commit_listeners"`)),
			newResolver,
			inject(directory.New),
			config.Config.TenantRegistry,
			func(rt *runtime.Runtime) tenantregistry.Activator { return rt.Add },
			inject(tenantregistry.New),
			config.Config.Authn,
			as(inject(authn.New), fx.Self(), new(ports.Authenticator)),
			config.Config.UploadLimits,
			func(m mediaStores) (ports.ObjectStore, httpapi.FileStore) { return m.signer, m.files },
			inject(uploads.New),
			inject(reports.New),
			// What the HTTP listener serves clients, each field from the graph.
			inject(func(d httpapi.SocialDeps) httpapi.SocialDeps { return d }),
		),
	)
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
