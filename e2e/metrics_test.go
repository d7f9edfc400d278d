package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/imdhq/imd/adapters/redis"
	"github.com/imdhq/imd/clients/go/client"
	"github.com/imdhq/imd/clients/go/frame"
	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/delivery"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

// deliverPartitions is the config default the e2e servers run with.
const deliverPartitions = 16

// series is one metric series, read as the sum of the samples whose labels contain labels.
type series struct {
	name   string
	labels []string
}

func (s series) String() string { return fmt.Sprintf("%s%v", s.name, s.labels) }

// count is the series of a histogram's observation count.
func count(name string, labels ...string) series { return series{name + "_count", labels} }

func metric(name string, labels ...string) series { return series{name, labels} }

// rises performs event and checks, by scraping /metrics before and after, that every series
// went up (a histogram: was observed). Values that follow the event asynchronously (deliver
// work, sampled gauges) get a generous while.
func rises(t *testing.T, srv *Server, event func(), want ...series) {
	t.Helper()
	before := make([]float64, len(want))
	for i, s := range want {
		before[i] = srv.metricValue(s.name, s.labels...)
	}
	event()
	for i, s := range want {
		eventually(t, 30*time.Second, s.String()+" rises", func() bool {
			return srv.metricValue(s.name, s.labels...) > before[i]
		})
	}
}

// TestMetricsMoveWithTheirEvents performs, against the real binary, the event behind every
// metric of seeds 000 §11 and 003 §17 this server can produce on its own, and sees each value
// move. The events that need a fault or another configuration have tests of their own below
// and elsewhere (see the list in README "Metrics").
func TestMetricsMoveWithTheirEvents(t *testing.T) {
	// A job whose seqs before it never come waits this long in processing (see "held").
	// Reconciliation samples the routes every second instead of every five minutes.
	srv := Start(t, Options{Env: map[string]string{
		"IMD_DELIVER_REORDER_WAIT": "20s", "IMD_SHARD_ROUTE_REPAIR_RECONCILE_INTERVAL": "1s",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 71, 3, 2)
	rc := srv.Redis()
	tenant := srv.Tenant

	t.Run("send", func(t *testing.T) {
		rises(t, srv, func() { sendN(t, ctx, c.conns[0], c.topic, "send", 1) },
			metric("message_send_total", "status", "ok"),
			count("send_ack_latency"), count("enqueue_latency"), count("persist_latency"),
			metric("group_message_persist_total", "month", Month(0), "status", "ok"), count("group_message_persist_latency"),
			metric("tcp_frames_in_total"), metric("tcp_frames_out_total"), count("eventloop_react_seconds"),
			count("deliver_job_latency"), count("deliver_delay_seconds"),
			metric("message_search_index_total", "status", "indexed"),
		)
	})
	t.Run("refused send", func(t *testing.T) {
		rises(t, srv, func() {
			if _, err := c.conns[0].Send(ctx, wire.SendMessageRequest{Topic: c.topic, ClientMsgID: "bad", Type: "no-such-type"}); !isCode(err, wire.CodeInvalidArgument) {
				t.Fatalf("send of an unknown type: %v, want 40001", err)
			}
		}, metric("message_send_total", "status", "40001"))
	})
	t.Run("retried send", func(t *testing.T) {
		rises(t, srv, func() {
			req := textMessage(c.topic, "retry", "once")
			for range 2 {
				if _, err := c.conns[0].Send(ctx, req); err != nil {
					t.Fatal(err)
				}
			}
		}, metric("group_message_dedup_hit_total"))
	})
	t.Run("file message", func(t *testing.T) {
		rises(t, srv, func() {
			mustSend(t, ctx, c.conns[0], fileMessage(srv.Tenant, 710001, c.topic, "file-1", "report.pdf", 1234))
		},
			metric("group_file_index_total", "status", "ok"))
	})
	t.Run("sync messages", func(t *testing.T) {
		rises(t, srv, func() {
			if _, _, err := c.conns[1].SyncMessages(ctx, c.topic, 0, 50); err != nil {
				t.Fatal(err)
			}
		}, metric("message_sync_total"), count("group_message_query_latency"), count("group_message_query_tables"))
	})
	t.Run("sync inbox", func(t *testing.T) {
		rises(t, srv, func() { syncInbox(t, ctx, c.conns[1], wire.SyncInboxRequest{}) },
			metric("inbox_sync_total"), metric("inbox_rebuild_total", "trigger", "sync"))
	})
	t.Run("recall", func(t *testing.T) {
		ack := sendN(t, ctx, c.conns[0], c.topic, "recall", 1)[0]
		rises(t, srv, func() {
			if _, err := c.conns[0].Request(ctx, wire.CmdRecallMessage, wire.RecallRequest{Topic: c.topic, Seq: ack.Seq}); err != nil {
				t.Fatal(err)
			}
		}, metric("message_modify_total", "action", "recall", "status", "ok"))
	})
	t.Run("http request", func(t *testing.T) {
		rises(t, srv, func() { srv.MustAdmin("GET", "/shards", nil, nil) },
			metric("http_requests_total", "route", "/admin/v1/tenants/:tenant/shards", "method", "GET", "code", "200"),
			count("http_request_duration_seconds", "route", "/admin/v1/tenants/:tenant/shards", "method", "GET"))
	})
	t.Run("connection", func(t *testing.T) {
		rises(t, srv, func() { srv.Dial(ctx) }, metric("tcp_connections"))
	})
	t.Run("route lost", func(t *testing.T) {
		k := srv.topicKeys(c.topic)
		rises(t, srv, func() {
			if err := rc.Do(ctx, rc.B().Del().Key(k.Route(c.topic), k.RouteMeta(c.topic)).Build()).Error(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.conns[0].History(ctx, c.topic, 0, 20); err != nil {
				t.Fatal(err)
			}
		}, metric("group_message_route_miss_total"), metric("group_message_route_rebuild_total", "status", "ok"))
	})

	t.Run("admin rebuilds a conversation list", func(t *testing.T) {
		rises(t, srv, func() { srv.MustAdmin("POST", "/users/710002/dialogs/rebuild", nil, nil) },
			metric("inbox_rebuild_total", "trigger", "admin"))
	})
	t.Run("routes reconciled", func(t *testing.T) {
		rises(t, srv, func() {}, metric("group_message_route_reconcile_total", "result", "ok"))
	})
	t.Run("hot cache write fails", func(t *testing.T) {
		// A hot-cache key of the wrong type: the message is stored, its cache write fails.
		k := srv.topicKeys(c.topic)
		if err := rc.Do(ctx, rc.B().Set().Key(k.HotMessages(c.topic)).Value("damaged").Build()).Error(); err != nil {
			t.Fatal(err)
		}
		rises(t, srv, func() { sendN(t, ctx, c.conns[0], c.topic, "hot", 1) }, metric("group_message_hot_cache_write_failed_total"))
		if err := rc.Do(ctx, rc.B().Del().Key(k.HotMessages(c.topic)).Build()).Error(); err != nil {
			t.Fatal(err)
		}
	})

	queue, err := redis.NewDeliverQueue(rc).WithPartitions(deliverPartitions)
	if err != nil {
		t.Fatal(err)
	}
	var conversation int64
	t.Run("job delivered twice", func(t *testing.T) {
		ack := sendN(t, ctx, c.conns[0], c.topic, "twice", 1)[0]
		conversation = ack.ConversationID
		job := messageJob(tenant, c.topic, ack.ConversationID, ack.MsgID, ack.Seq)
		rises(t, srv, func() { pushJob(t, ctx, queue, job) }, metric("deliver_idempotent_skip_total"))
	})
	t.Run("job held for the seqs before it", func(t *testing.T) {
		// A job far ahead of the topic waits in processing for the gap (reorder wait).
		last := sendN(t, ctx, c.conns[0], c.topic, "held", 1)[0]
		partition := strconv.Itoa(delivery.PartitionOf(c.topic, deliverPartitions))
		rises(t, srv, func() {
			pushJob(t, ctx, queue, messageJob(tenant, c.topic, conversation, last.MsgID+1, last.Seq+100))
		}, metric("deliver_processing_depth", "tenant", tenant, "partition", partition))
	})
	t.Run("consumer stuck", func(t *testing.T) {
		// A processing list of the wrong type makes the partition's consumer fail every take:
		// its queue grows and ages until the key is mended.
		other := otherPartitionGroup(t, srv, ctx, c.topic)
		partition := delivery.PartitionOf(other, deliverPartitions)
		k, _ := redis.KeysOf(tenant)
		processing := k.DeliverProcessingOf(partition, deliverPartitions)
		labels := []string{"tenant", tenant, "partition", strconv.Itoa(partition)}
		rises(t, srv, func() {
			if err := rc.Do(ctx, rc.B().Set().Key(processing).Value("damaged").Build()).Error(); err != nil {
				t.Fatal(err)
			}
			sendN(t, ctx, c.conns[0], other, "stuck", 2)
		}, metric("deliver_queue_depth", labels...), metric("deliver_queue_lag_seconds", labels...))
		if err := rc.Do(ctx, rc.B().Del().Key(processing).Build()).Error(); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the mended partition drains", func() bool {
			return srv.metricValue("deliver_queue_depth", labels...) == 0 && srv.metricValue("deliver_queue_lag_seconds", labels...) == 0
		})
	})

	t.Run("undecodable job", func(t *testing.T) {
		// A job nobody can read goes to the dead-letter list when taken.
		k, _ := redis.KeysOf(tenant)
		key := k.DeliverQueueOf(delivery.PartitionOf(c.topic, deliverPartitions), deliverPartitions)
		rises(t, srv, func() {
			if err := rc.Do(ctx, rc.B().Rpush().Key(key).Element("{not json").Build()).Error(); err != nil {
				t.Fatal(err)
			}
		}, metric("deliver_dead_letters", "tenant", tenant))
	})

	t.Run("always present", func(t *testing.T) {
		for _, s := range []series{
			metric("imd_build_info"), metric("go_goroutines"), metric("process_resident_memory_bytes"),
			metric("group_message_shard_ready", "tenant", tenant, "month", "active"),
		} {
			if v := srv.metricValue(s.name, s.labels...); v <= 0 {
				t.Errorf("%s = %v, want > 0", s, v)
			}
		}
	})
}

// TestMetricsOfTransportLimits sees the rate-limit and task-pool refusals counted.
func TestMetricsOfTransportLimits(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{
		"IMD_RATE_LIMIT_MESSAGE_PER_SECOND": "1",
		"IMD_TASKPOOL_WORKERS":              "1", "IMD_TASKPOOL_QUEUE": "1",
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 72, 2, 1)

	rises(t, srv, func() {
		for i := range 3 {
			_, _ = c.conns[0].Send(ctx, textMessage(c.topic, fmt.Sprintf("limited-%d", i), "x"))
		}
	}, metric("tcp_rate_limited_total", "scope", "device"))

	// Heartbeats are served on the event loop; history requests go to the pool of one worker
	// and one queue slot, so a burst of them overflows it.
	rises(t, srv, func() {
		var wg sync.WaitGroup
		for range 64 {
			wg.Go(func() { _, _ = c.conns[0].History(ctx, c.topic, 0, 50) })
		}
		wg.Wait()
	}, metric("taskpool_rejected_total"))
}

// TestMetricsOfMissingRealIP sees a connection without a PROXY header counted.
func TestMetricsOfMissingRealIP(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TCP_PROXY_PROTOCOL": "true"}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rises(t, srv, func() {
		c, err := client.Dial(ctx, client.Options{Addr: srv.TCPAddr, RequestTimeout: 5 * time.Second})
		if err != nil {
			return // the server may close before the dial finishes
		}
		defer c.Close()
		_ = c.Heartbeat(ctx)
	}, metric("realip_missing_total"))
}

// messageJob is a MESSAGE deliver job as the send path queues it.
func messageJob(tenant, topic string, conversation, msgID, seq int64) delivery.Job {
	content, _ := json.Marshal(map[string]string{"text": "injected"})
	return delivery.Job{
		Tenant: tenant, Kind: delivery.KindMessage, MsgID: msgID, Topic: topic, ConversationID: conversation,
		Message: &message.Message{
			Topic: topic, ConversationID: conversation, Seq: seq, MsgID: msgID, Type: "text", Content: content,
			Status: message.StatusNormal, Version: 1, CreatedAt: time.Now().UTC().Truncate(time.Millisecond),
			Month: month.Of(time.Now().UTC()),
		},
	}
}

func pushJob(t *testing.T, ctx context.Context, q *redis.DeliverQueue, job delivery.Job) {
	t.Helper()
	if err := q.Push(ctx, job); err != nil {
		t.Fatal(err)
	}
}

// otherPartitionGroup creates groups until one's topic falls in another deliver partition than
// topic's, and returns it; its owner is the first member of the chat of group 71.
func otherPartitionGroup(t *testing.T, srv *Server, ctx context.Context, topic string) string {
	t.Helper()
	for id := int64(7200); id < 7300; id++ {
		g := srv.Group(id, 710_001, 710_002)
		if delivery.PartitionOf(g, deliverPartitions) != delivery.PartitionOf(topic, deliverPartitions) {
			return g
		}
	}
	t.Fatal("no group in another partition")
	return ""
}

// TestMetricsOfUnacknowledgedPushes: a device that reads its pushes but never answers
// PUSH_ACK gets them counted as timed out and written to its mailbox (seed 003 §12.2).
func TestMetricsOfUnacknowledgedPushes(t *testing.T) {
	srv := Start(t, Options{Env: map[string]string{"IMD_TCP_PUSH_ACK_TIMEOUT": "1s"}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := newChat(t, srv, ctx, 73, 2, 1)

	// The client package acknowledges every push; this device speaks raw frames instead.
	nc, err := net.Dial("tcp", srv.TCPAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	body, _ := json.Marshal(wire.AuthRequest{Token: srv.User(730_002), DeviceID: 7})
	auth, err := frame.Append(nil, wire.CmdAuth, 1, 1, body, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write(auth); err != nil {
		t.Fatal(err)
	}
	authed := make(chan struct{})
	go func() { // read everything, answer nothing
		buf := make([]byte, 0, 64<<10)
		chunk := make([]byte, 32<<10)
		for {
			n, err := nc.Read(chunk)
			if err != nil {
				return
			}
			buf = append(buf, chunk[:n]...)
			for {
				f, used, err := frame.Decode(buf)
				if err != nil {
					break
				}
				buf = buf[used:]
				if f.Command == wire.ResponseCommand(wire.CmdAuth) {
					close(authed)
				}
			}
		}
	}()
	select {
	case <-authed:
	case <-ctx.Done():
		t.Fatal("no AUTH answer")
	}
	rises(t, srv, func() { sendN(t, ctx, c.conns[0], c.topic, "unacked", 1) },
		metric("push_ack_timeout_total"), metric("deliver_mailbox_total", "status", "ok"))
}
