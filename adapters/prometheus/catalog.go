package prometheus

// kind is how a metric aggregates.
type kind int

const (
	counter kind = iota + 1
	histogram
	gauge
)

func (k kind) String() string {
	switch k {
	case counter:
		return "counter"
	case histogram:
		return "histogram"
	case gauge:
		return "gauge"
	}
	return "unknown"
}

// spec declares one metric the product records (seed 000 §11, seed 003 §17). Label values
// are passed to Inc/Observe/Set positionally, in the order of labels.
type spec struct {
	name    string
	kind    kind
	help    string
	labels  []string
	buckets []float64 // histograms only
	// values are the values of a counter's one label that an alert watches: each series is
	// created at 0 on start, so the alert's rate() or increase() sees it before its first event
	// (a series born at 1 shows no increase).
	values []string
}

// Bucket layouts, in seconds for latencies.
var (
	latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5}
	// A forwarded push waits in a stream: seconds when a node is overloaded, which the
	// ImdCrossNodePushLag alert (10 s) must be able to see.
	forwardLagBuckets = []float64{.001, .005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}
	eventLoopBuckets  = []float64{.00001, .000025, .00005, .0001, .00025, .0005, .001, .0025, .005, .01, .05}
	tableBuckets      = []float64{1, 2, 3, 4, 6, 8, 12}
)

// catalog is every metric name the product uses. An unknown name is a programming error the
// adapter logs once instead of panicking in a request path.
func catalog() []spec {
	return []spec{
		// Group-message storage (seed 000 §11).
		{name: "group_message_persist_total", kind: counter, help: "Messages persisted, by shard month and outcome (ok|failed).", labels: []string{"month", "status"}},
		{name: "group_message_shard_missing_total", kind: counter, help: "Writes or preparations that found a month table missing."},
		{name: "group_message_dedup_hit_total", kind: counter, help: "Sends answered from an existing (topic, from, client_msg_id) record."},
		{name: "group_message_route_miss_total", kind: counter, help: "Queries whose Redis route was missing or unreadable."},
		{name: "group_message_route_rebuild_total", kind: counter, help: "Redis routes rebuilt from the MySQL mirror, by outcome (ok|failed).", labels: []string{"status"}, values: []string{"ok", "failed"}},
		{name: "group_message_route_repair_total", kind: counter, help: "Redis route updates repaired after a failed write-back."},
		{name: "group_message_seq_hole_closed_total", kind: counter, help: "Seqs allocated whose message never committed, closed with a tombstone by the seq-hole sweeper."},
		{name: "group_message_dead_letter_total", kind: counter, help: "Deliver jobs moved to the dead-letter list, and late writes into sealed months moved to the compensation list."},
		{name: "group_message_persist_latency", kind: histogram, help: "Seconds from accepting a send to its MySQL commit.", buckets: latencyBuckets},
		{name: "group_message_query_latency", kind: histogram, help: "Seconds per message query, by route source.", labels: []string{"source"}, buckets: latencyBuckets},
		{name: "group_message_query_tables", kind: histogram, help: "Month tables touched per message query.", buckets: tableBuckets},
		{name: "group_message_route_repair_backlog", kind: gauge, help: "Topics whose Redis route waits to be rebuilt from the mirror.", labels: []string{"tenant"}},
		{name: "group_message_route_reconcile_total", kind: counter, help: "Topics compared by the route reconciliation, by result (ok|missing|stale|mismatch|failed), plus mirror segments recounted from month tables (recounted).", labels: []string{"result"}, values: []string{"ok", "missing", "stale", "mismatch", "failed", "recounted"}},
		{name: "group_message_shard_ready", kind: gauge, help: "1 when the month table takes writes: the active month (set and writable), the current calendar month (writable) or the next one (ready to switch to).", labels: []string{"tenant", "month"}},
		{name: "group_message_compensation_backlog", kind: gauge, help: "Late writes into sealed months waiting on the compensation list.", labels: []string{"tenant"}},
		{name: "group_message_hot_cache_write_failed_total", kind: counter, help: "Committed messages the Redis hot cache failed to take (readers fall back to MySQL)."},

		// Background loops (core/runtime): a loop that failed and was restarted after a backoff.
		{name: "tenant_loop_restarts_total", kind: counter, help: "Background loop failures, each followed by a restart after a backoff, by loop and tenant (empty for a loop over all tenants).", labels: []string{"loop", "tenant"}},

		// Legacy single-table migration (seed 000 §9).
		{name: "migration_rows_total", kind: counter, help: "Legacy rows the migration job has handled, by outcome (copied|skipped|failed): a node taking the job over starts from the job's persisted counts, and a rerun adds on top.", labels: []string{"status"}},
		{name: "migration_batch_latency", kind: histogram, help: "Seconds per migration copy batch transaction.", buckets: latencyBuckets},
		{name: "migration_state", kind: gauge, help: "1 for the tenant's migration phase (none|copying|paused|verifying|verified|failed|finished), 0 for the others.", labels: []string{"tenant", "phase"}},
		{name: "migration_verify_mismatches_total", kind: counter, help: "Seq ranges in which verification found the legacy table and the month tables differing."},

		// Delivery and sync (seed 003 §17).
		{name: "deliver_idempotent_skip_total", kind: counter, help: "Deliver jobs skipped because they already acted."},
		{name: "deliver_job_latency", kind: histogram, help: "Seconds to process one deliver job.", buckets: latencyBuckets},
		{name: "deliver_delay_seconds", kind: histogram, help: "Seconds from a deliver job's enqueue to its handling: queue wait, reorder hold and handling.", buckets: latencyBuckets},
		{name: "deliver_queue_depth", kind: gauge, help: "Jobs waiting in deliver:queue, per partition.", labels: []string{"tenant", "partition"}},
		{name: "deliver_processing_depth", kind: gauge, help: "Jobs taken but not acknowledged (deliver:processing), per partition.", labels: []string{"tenant", "partition"}},
		{name: "deliver_queue_lag_seconds", kind: gauge, help: "Seconds the job at the head of a partition's queue has waited; 0 when the partition is empty.", labels: []string{"tenant", "partition"}},
		{name: "deliver_list_gap_total", kind: counter, help: "Runs of seqs a deliver consumer went past without their jobs (a failed send, a job still on its way, or one the queue lost), recorded for the list repair."},
		{name: "deliver_list_repair_total", kind: counter, help: "List repair outcomes (seed 003 §20 item 13): messages re-applied to the conversation lists a lost deliver job never changed (repaired), gaps left past the repair window (expired), gaps or topics whose repair failed and waits for the next pass (failed).", labels: []string{"result"}},
		{name: "redis_lineage_change_total", kind: counter, help: "Times this node saw the Redis masters replaced or restarted (a failover that may have lost the last writes, DESIGN §5 \"After a Redis failover\"); each is followed by a heal of the conversation lists, whose re-applied messages count in deliver_list_repair_total{result=\"repaired\"}."},
		{name: "deliver_dead_letters", kind: gauge, help: "Deliver jobs on the dead-letter list, waiting for an operator.", labels: []string{"tenant"}},
		{name: "outbound_drop_total", kind: counter, help: "Frames dropped because a connection's outbound buffer was full."},
		{name: "cross_node_push_total", kind: counter, help: "Pushes between nodes of one tenant, by result: forwarded|overflow|error|stale on the node that had them, delivered|failed|malformed on the node that holds the connection.", labels: []string{"result"}},
		{name: "cross_node_push_lag_seconds", kind: histogram, help: "Seconds from handing a push to another node's channel to that node reading it.", buckets: forwardLagBuckets},
		{name: "presence_changes_total", kind: counter, help: "Users this node saw come online (first device on any node) or go offline (last device gone, or its node retired), by state (online|offline); issue 31.", labels: []string{"state"}},
		{name: "presence_pushes_total", kind: counter, help: "PRESENCE pushes handed to devices (here, or to another node's channel) for presence changes."},
		{name: "presence_unknown_total", kind: counter, help: "Presence states answered unknown because the registry was unreadable or healing from a loss (DESIGN §13 \"Unknown until healed\")."},
		{name: "presence_heal_pushes_total", kind: counter, help: "Users whose state this node pushed after a registry heal (pushed), or left unpushed because the paced heal queue was full (dropped).", labels: []string{"result"}},
		{name: "typing_total", kind: counter, help: "TYPING requests, by result (accepted|limited: over the per-device rate, answered 42901).", labels: []string{"result"}},
		{name: "typing_pushes_total", kind: counter, help: "TYPING_NOTICE pushes handed to devices (here, or to another node's channel): the fan-out of typing."},
		{name: "receipts_pushed_total", kind: counter, help: "RECEIPT pushes handed to devices (here, or to another node's channel), by kind (read|delivered).", labels: []string{"kind"}},
		{name: "read_state_queries_total", kind: counter, help: "READ_STATE requests answered: a message's readers counted from the members' read marks."},
		{name: "push_ack_timeout_total", kind: counter, help: "Pushes whose PUSH_ACK did not arrive in time."},
		{name: "inbox_sync_total", kind: counter, help: "SYNC_INBOX requests served."},
		{name: "inbox_rebuild_total", kind: counter, help: "Conversation lists rebuilt from MySQL, by trigger (sync: lost from Redis|admin).", labels: []string{"trigger"}},
		{name: "deliver_mailbox_total", kind: counter, help: "MISSED_MESSAGE rows for connected devices a push did not reach or that never acknowledged it, by outcome (ok|failed|dropped).", labels: []string{"status"}},
		{name: "deliver_notify_total", kind: counter, help: "System-push notifications deliver jobs handed to the notifier, by outcome (ok|failed).", labels: []string{"status"}},
		{name: "push_notify_total", kind: counter, help: "System-push webhook posts, by outcome (ok|failed|dropped).", labels: []string{"status"}},
		// Native push (issue 32): alerts to APNs and FCM.
		{name: "push_send_total", kind: counter, help: "Native push alerts, by provider (apns|fcm; none: before a provider was chosen) and result (ok; invalid: the token is no more and was removed; retry: 429/5xx/no answer, tried again after a backoff; dead: the last attempt failed, a dead letter; dropped: the queue was full; failed: the tokens were not read).", labels: []string{"provider", "result"}},
		{name: "push_ack_wait_total", kind: counter, help: "Users a live MESSAGE push reached, once their wait for its PUSH_ACK (push.ack_wait) ended, by result (acked: a device acknowledged or the user read it in time, no alert; alerted: handed to the native push as an offline user's; dropped: the node's waits were full, no alert; failed: the watermark or the notifier failed, no alert; told: already notified for that message by another node's fallback or wait).", labels: []string{"result"}, values: []string{"alerted", "acked", "dropped", "failed", "told"}},
		{name: "message_sync_total", kind: counter, help: "SYNC_MESSAGES requests served (frames, client and admin HTTP API)."},
		{name: "message_send_total", kind: counter, help: "SEND_MESSAGE requests (frames and the client HTTP API), by outcome: ok or the error code of PROTOCOL §5.", labels: []string{"status"}, values: []string{"ok", "50001", "50301"}},
		{name: "send_ack_latency", kind: histogram, help: "Seconds from SEND_MESSAGE received to SEND_ACK written.", buckets: latencyBuckets},
		{name: "enqueue_latency", kind: histogram, help: "Seconds to push a deliver job.", buckets: latencyBuckets},
		{name: "persist_latency", kind: histogram, help: "Seconds per committed group-commit transaction, from BEGIN to COMMIT.", buckets: latencyBuckets},
		{name: "message_modify_total", kind: counter, help: "Recall, edit and delete requests, by action (recall|edit|delete|delete_self) and outcome (ok|refused|failed).", labels: []string{"action", "status"}},
		{name: "message_reaction_total", kind: counter, help: "ADD_REACTION and REMOVE_REACTION requests, by action (add|remove) and outcome (ok|refused|failed).", labels: []string{"action", "status"}},
		{name: "message_pin_total", kind: counter, help: "PIN_MESSAGE and UNPIN_MESSAGE requests, by action (pin|unpin) and outcome (ok|refused|failed).", labels: []string{"action", "status"}},

		// Transport.
		{name: "taskpool_rejected_total", kind: counter, help: "Tasks refused because the worker pool was full."},
		{name: "taskpool_depth", kind: gauge, help: "Tasks waiting in the worker pool."},
		{name: "realip_missing_total", kind: counter, help: "Connections without a usable PROXY header client address."},
		{name: "tcp_frames_in_total", kind: counter, help: "Frames received from clients."},
		{name: "tcp_frames_out_total", kind: counter, help: "Frames written to clients."},
		{name: "tcp_connections", kind: gauge, help: "Open client connections."},
		{name: "ws_connections", kind: gauge, help: "Open WebSocket client connections (GET /ws)."},
		{name: "ws_refused_total", kind: counter, help: "WebSocket upgrades refused (unavailable|subprotocol|handshake) and connections closed for a bad message (message).", labels: []string{"reason"}},
		{name: "tcp_tls_handshake_failures_total", kind: counter, help: "Native TLS handshakes that failed or timed out."},
		{name: "tcp_rate_limited_total", kind: counter, help: "Requests refused with 42901, by scope (device|ip) and budget.", labels: []string{"scope", "budget"}},
		{name: "eventloop_react_seconds", kind: histogram, help: "Seconds an event-loop callback ran.", buckets: eventLoopBuckets},

		// HTTP API (route is the template, e.g. /admin/v1/tenants/:tenant/users, so ids do not
		// make series).
		{name: "http_requests_total", kind: counter, help: "HTTP requests answered, by route template, method and status code.", labels: []string{"route", "method", "code"}},
		{name: "http_request_duration_seconds", kind: histogram, help: "Seconds to answer an HTTP request, by route template and method.", labels: []string{"route", "method"}, buckets: latencyBuckets},

		// Archive, references and long-term search (seed 000 §6.6, §10).
		{name: "group_message_archive_ops_total", kind: counter, help: "Month operations, by op (archive|drop|restore|purge) and outcome (ok|failed).", labels: []string{"op", "status"}},
		{name: "group_message_archive_read_total", kind: counter, help: "Reads served from archived months, by op (get|page|search).", labels: []string{"op"}},
		{name: "group_message_archive_chunk_cache_total", kind: counter, help: "Archive chunk lookups, by result (hit|miss).", labels: []string{"result"}},
		{name: "group_file_index_total", kind: counter, help: "Group file index updates after COMMIT, by outcome (ok|failed).", labels: []string{"status"}},
		// Thumbnails of confirmed image uploads (issue 32).
		{name: "media_thumbnail_total", kind: counter, help: "Thumbnails of confirmed image uploads, by outcome (made|failed: the store or the wait for a worker failed).", labels: []string{"status"}, values: []string{"made", "failed"}},
		{name: "media_thumbnail_refused_total", kind: counter, help: "Image uploads no thumbnail is made of, by reason (type|size|pixels|corrupt).", labels: []string{"reason"}},
		{name: "media_thumbnail_seconds", kind: histogram, help: "Seconds to make one thumbnail once read: decoding, scaling and encoding (the wait for a worker comes before the read).", buckets: latencyBuckets},
		// Event webhooks (issue 32): requests to the endpoints.
		{name: "webhook_deliveries_total", kind: counter, help: "Webhook requests, by outcome (ok: 2xx; retry: failed, tried again after a backoff; dead: the last attempt failed, the event is a dead letter).", labels: []string{"status"}, values: []string{"ok", "retry", "dead"}},
		{name: "webhook_oldest_undelivered_seconds", kind: gauge, help: "Age of the oldest event of a webhook endpoint not yet delivered (0: none waits), set by the node delivering its tenant.", labels: []string{"tenant", "endpoint"}},
		{name: "message_search_index_total", kind: counter, help: "Search index updates after COMMIT, by outcome (indexed|removed|failed|dropped).", labels: []string{"status"}},
	}
}

// Names lists every metric name of the catalog, for tests outside this package that check
// what reads or moves them (the e2e coverage table).
func Names() []string {
	specs := catalog()
	names := make([]string, len(specs))
	for i, s := range specs {
		names[i] = s.name
	}
	return names
}
