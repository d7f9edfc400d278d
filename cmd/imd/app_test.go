package main

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"go.uber.org/fx"

	"github.com/imdhq/imd/adapters/config"
	"github.com/imdhq/imd/adapters/httpclient"
	"github.com/imdhq/imd/adapters/jwt"
	"github.com/imdhq/imd/adapters/localfs"
	"github.com/imdhq/imd/adapters/memory"
	"github.com/imdhq/imd/adapters/prometheus"
	"github.com/imdhq/imd/adapters/push"
	"github.com/imdhq/imd/adapters/stdimage"
	tcpserver "github.com/imdhq/imd/adapters/tcp/server"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/social"
	"github.com/imdhq/imd/core/domain/tenant"
	"github.com/imdhq/imd/core/usecase/admin"
)

// memoryAdapters binds every port as Adapters does, to the memory fakes and in-process adapters
// (JWT, Prometheus, a local upload directory): no MySQL, no Redis.
func memoryAdapters(t *testing.T, cfg config.Config) fx.Option {
	clock := systemClock{}
	shards := memory.NewShardStore()
	store := memory.NewMessageStore(shards)
	events := memory.NewWebhookEvents()
	dir := memory.NewDirectory().RecordEventsIn(events)
	months := memory.NewMonthState(clock.Now)
	dellog := memory.NewDeleteLog(shards)
	rows := memory.NewMonthRows(shards)
	refs := memory.NewReferences()
	marks := memory.NewReactions()
	legacy := memory.NewLegacy(shards, clock.Now)
	routes := memory.NewRouteCache()
	dialogs := memory.NewDialogStore(clock.Now)
	summaries := memory.NewSummaries(shards, dir)
	nodes := memory.NewNodes(clock.Now)
	seqs := memory.NewSeqAllocator(months, clock.Now)
	hot := memory.NewHotCache(clock.Now, time.Hour, 100)
	tokens := jwt.New([]byte(cfg.TokenSecret))
	metrics := prometheus.New(nil)
	queue, err := memory.NewDeliverQueue(clock.Now).WithPartitions(cfg.Deliver.Partitions)
	if err != nil {
		t.Fatal(err)
	}
	files, err := localfs.New(localfs.Config{Dir: t.TempDir(), BaseURL: "http://imd.test", Secret: []byte("files")})
	if err != nil {
		t.Fatal(err)
	}
	seen := memory.NewPresence()
	reads := memory.NewReadStore(dir, shards)
	bound := Ports{
		MessageStore:  store,
		MessageSearch: store,
		MessageFinder: store,
		MessageEditor: memory.NewMessageEditor(shards),
		QueuedMarks:   store,
		SeqHoles:      store,

		Directory:   dir,
		GroupOwners: dir,
		Profiles:    dir,
		Friends:     dir,
		Blocks:      dir,
		Groups:      dir,
		Graph:       dir,

		DeleteLog:         dellog,
		HiddenRanges:      dellog,
		ShardStore:        shards,
		ReadStore:         reads,
		Mailbox:           memory.NewMailbox(),
		RouteMirror:       memory.NewRouteMirror(shards),
		ShardHousekeeping: memory.NewHousekeeping(shards),
		Reports:           memory.NewReports().RecordEventsIn(events),
		WebhookEndpoints:  memory.NewWebhookEndpoints(),
		WebhookCursors:    memory.NewWebhookCursors(),
		Bots:              memory.NewBots(),
		WebhookRevisions:  memory.NewWebhookRevisions(),
		WebhookEvents:     events,
		Summaries:         summaries,
		DailyCounter:      summaries,
		TokenRevocations:  memory.NewRevocations(),
		MonthRows:         rows,
		MonthCatalog:      rows,
		Favorites:         refs,
		GroupFiles:        refs,
		References:        refs,
		MediaRefs:         refs,
		Reactions:         marks,
		Pins:              marks,
		LegacyMessages:    legacy,
		MigrationStore:    legacy,
		MigrationCopier:   legacy,
		PresenceRecords:   seen,
		UserSettings:      seen,
		ReadReceipts:      memory.NewReceipts(dir, reads, seen),
		TenantStore:       memory.NewTenantStore(),

		Ready:               func(context.Context) error { return nil },
		NodeLeases:          nodes,
		Presence:            nodes,
		NodeChannel:         nodes,
		NodeInspector:       nodes,
		SeqAllocator:        seqs,
		PendingSeqs:         seqs,
		MonthState:          months,
		RouteCache:          routes,
		RouteFiller:         routes,
		RoutePurger:         routes,
		HotCache:            hot,
		CommitFollowUp:      &memory.CommitFollowUp{Routes: routes, Hot: hot, Queue: queue, Seqs: seqs, Pending: seqs},
		DialogStore:         dialogs,
		DialogRemover:       dialogs,
		ListGaps:            dialogs,
		RedisLineage:        memory.NewRedisLineage(),
		RouteRepairQueue:    memory.NewRepairQueue(),
		CompensationList:    memory.NewCompensationList(),
		Locks:               memory.NewLocks(clock.Now),
		DeliverQueue:        queue,
		DeliverInspector:    queue,
		DeliverLeaseHolders: queue,
		DeliverBacklog:      queue,
		DeliverLeases:       queue,
		DeliverDepth:        queue,

		IDs:            memory.NewIDs(clock),
		Clock:          clock,
		ReadyStorage:   func(context.Context, tenant.Info) error { return nil },
		Tokens:         tokens,
		TokenInspector: tokens,
		Metrics:        metrics,
		MetricsHandler: metrics.Handler(),
		SearchIndex:    memory.NewSearchIndex(),
		BlobStore:      memory.NewBlobStore(),
		ObjectStore:    files,
		Imager:         stdimage.New(stdimage.Config{}),
		Files:          files,
		PushNotifier:   push.Noop{},
		PushTokens:     memory.NewPushTokens(),
		WebhookSender:  httpclient.NewSender(time.Second),
	}
	return fx.Supply(bound, held{})
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
	ack, err := alice.Send(ctx, wire.SendMessageRequest{
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
