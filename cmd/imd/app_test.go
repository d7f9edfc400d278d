package main

import (
	"context"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/client"
	"github.com/imdhq/imd/adapters/config"
	httpapi "github.com/imdhq/imd/adapters/http"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/adapters/protocol"
	"github.com/imdhq/imd/adapters/push"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/runtime"
	"github.com/imdhq/imd/core/store/dualread"
	"github.com/imdhq/imd/core/usecase/admin"
	"github.com/imdhq/imd/core/usecase/conversation"
	"github.com/imdhq/imd/ports"
)

// memoryAdapters provides what Adapters does, from the memory fakes and in-process adapters
// (JWT, Prometheus, a local upload directory): no MySQL, no Redis.
func memoryAdapters(t *testing.T, cfg config.Config) fx.Option {
	clock := systemClock{}
	shards := memory.NewShardStore()
	store := memory.NewMessageStore(shards)
	dir := memory.NewDirectory()
	months := memory.NewMonthState(clock.Now)
	dellog := memory.NewDeleteLog(shards)
	rows := memory.NewMonthRows(shards)
	refs := memory.NewReferences()
	legacy := memory.NewLegacy(shards, clock.Now)
	routes := memory.NewRouteCache()
	dialogs := memory.NewDialogStore(clock.Now)
	tokens := jwt.New([]byte(cfg.TokenSecret))
	files, err := localfs.New(localfs.Config{Dir: t.TempDir(), BaseURL: "http://imd.test", Secret: []byte("files")})
	if err != nil {
		t.Fatal(err)
	}
	return fx.Provide(
		func() ports.MessageStore { return store },
		func() ports.QueuedMarks { return store },
		func() ports.SeqHoles { return store },
		func() *memory.Nodes { return memory.NewNodes(clock.Now) },
		func(n *memory.Nodes) ports.NodeLeases { return n },
		func(n *memory.Nodes) ports.Presence { return n },
		func(n *memory.Nodes) ports.NodeChannel { return n },
		func(n *memory.Nodes) ports.NodeInspector { return n },
		func() ports.MessageSearch { return store },
		func() ports.MessageFinder { return store },
		func() ports.Directory { return dir },
		func() ports.GroupOwners { return dir },
		func() ports.Profiles { return dir },
		func() ports.Friends { return dir },
		func() ports.Blocks { return dir },
		func() ports.Groups { return dir },
		func() ports.SendRules { return dir },
		func() conversation.Graph { return dir },
		func() baseEditor { return baseEditor{memory.NewMessageEditor(shards)} },
		func() ports.DeleteLog { return dellog },
		func() ports.HiddenRanges { return dellog },
		func() ports.ShardStore { return shards },
		func() ports.ReadStore { return memory.NewReadStore(dir, shards) },
		func() ports.Mailbox { return memory.NewMailbox() },
		func() ports.RouteMirror { return memory.NewRouteMirror(shards) },
		func() ports.ShardHousekeeping { return memory.NewHousekeeping(shards) },
		func() ports.Reports { return memory.NewReports() },
		func() *memory.Summaries { return memory.NewSummaries(shards, dir) },
		func(s *memory.Summaries) ports.Summaries { return s },
		func(s *memory.Summaries) ports.DailyCounter { return s },
		func() ports.TokenRevocations { return memory.NewRevocations() },
		func() ports.TenantStore { return memory.NewTenantStore() },
		func() ports.MonthRows { return rows },
		func() ports.MonthCatalog { return rows },
		func() ports.Favorites { return refs },
		func() ports.GroupFiles { return refs },
		func() ports.References { return refs },
		func() ports.LegacyMessages { return legacy },
		func() ports.MigrationStore { return legacy },
		func() dualread.Copier { return legacy },
		func() httpapi.ReadyCheck { return func(context.Context) error { return nil } },
		func() *memory.SeqAllocator { return memory.NewSeqAllocator(months, clock.Now) },
		func(s *memory.SeqAllocator) ports.SeqAllocator { return s },
		func(s *memory.SeqAllocator) ports.PendingSeqs { return s },
		func() ports.MonthState { return months },
		func() ports.RouteCache { return routes },
		func() ports.RouteFiller { return routes },
		func() ports.RoutePurger { return routes },
		func() *memory.HotCache { return memory.NewHotCache(clock.Now, time.Hour, 100) },
		func(h *memory.HotCache) ports.HotCache { return h },
		func() (ports.DeliverQueue, error) {
			return memory.NewDeliverQueue(clock.Now).WithPartitions(cfg.Deliver.Partitions)
		},
		func(r ports.RouteCache, h *memory.HotCache, q ports.DeliverQueue, s *memory.SeqAllocator) ports.CommitFollowUp {
			return &memory.CommitFollowUp{Routes: r, Hot: h, Queue: q, Seqs: s, Pending: s}
		},
		func() ports.DialogStore { return dialogs },
		func() ports.DialogRemover { return dialogs },
		func() ports.RouteRepairQueue { return memory.NewRepairQueue() },
		func() ports.CompensationList { return memory.NewCompensationList() },
		func() ports.Locks { return memory.NewLocks(clock.Now) },
		func() ports.IDGenerator { return memory.NewIDs(clock) },
		func() runtime.ReadyStorage { return func(context.Context, tenant.Info) error { return nil } },
		func() ports.Tokens { return tokens },
		func() ports.TokenInspector { return tokens },
		func() *prometheus.Metrics { return prometheus.New(nil) },
		func(m *prometheus.Metrics) ports.Metrics { return m },
		func(m *prometheus.Metrics) ports.CounterAdder { return m },
		func(m *prometheus.Metrics) http.Handler { return m.Handler() },
		func() ports.Clock { return clock },
		func() ports.SearchIndex { return memory.NewSearchIndex() },
		func() ports.BlobStore { return memory.NewBlobStore() },
		func() (ports.ObjectStore, httpapi.FileStore) { return files, files },
		func() ports.PushNotifier { return push.Noop{} },
	)
}

// TestWholeGraphCarriesAMessage assembles the server as main does, with the memory fakes in
// place of the adapters (DESIGN §2, level three), and sends a group message from one client
// to another through the frame listener.
func TestWholeGraphCarriesAMessage(t *testing.T) {
	cfg := config.Default()
	cfg.TCP.Addr, cfg.HTTP.Addr, cfg.TCP.ProxyProtocol = "127.0.0.1:0", "127.0.0.1:0", false
	cfg.TokenSecret, cfg.AdminKey = "a test token secret", "admin key"
	cfg.Tenants = []config.Tenant{{Name: "default"}}
	cfg.Migration.DualRead = true // the decorators are part of the graph too
	log := slog.New(slog.DiscardHandler)

	var tcp *tcpserver.Server
	var adm *admin.Service
	app := fx.New(
		fx.NopLogger,
		memoryAdapters(t, cfg),
		Application(cfg, log),
		fx.Populate(&tcp, &adm),
	)
	if err := app.Err(); err != nil {
		t.Fatalf("assemble: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := app.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	defer func() {
		if err := app.Stop(ctx); err != nil {
			t.Errorf("stop: %v", err)
		}
	}()

	const tn = "default"
	for _, u := range []int64{1, 2} {
		if err := adm.CreateUser(ctx, tn, social.User{ID: u}); err != nil {
			t.Fatal(err)
		}
	}
	group, err := adm.CreateGroup(ctx, tn, 10, 1, []int64{2})
	if err != nil {
		t.Fatal(err)
	}
	connect := func(user int64) *client.Conn {
		t.Helper()
		tok, err := adm.IssueToken(ctx, tn, user, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		c, err := client.Dial(ctx, client.Options{Addr: tcp.Addr().String(), RequestTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		if _, err := c.Auth(ctx, tok, uint64(user)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := connect(1), connect(2)
	ack, err := alice.Send(ctx, protocol.SendMessageRequest{
		Topic: group.Topic, ClientMsgID: "c1", Type: "text", Content: []byte(`{"text":"hello"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if ack.Topic != group.Topic || ack.Seq != 1 || ack.MsgID <= 0 {
		t.Fatalf("SEND_ACK %+v", ack)
	}
	for {
		select {
		case p := <-bob.Pushes():
			if p.Message == nil {
				continue
			}
			if m := p.Message; m.Topic != group.Topic || m.Seq != 1 || m.From != 1 || string(m.Content) != `{"text":"hello"}` {
				t.Fatalf("MESSAGE %+v", m)
			}
			return
		case <-ctx.Done():
			t.Fatal("bob got no MESSAGE")
		}
	}
}
