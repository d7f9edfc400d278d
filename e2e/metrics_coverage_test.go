package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/imdhq/imd/adapters/prometheus"
)

// movedBy names, for every metric imd declares, the e2e test that performs its event against
// the real binary and sees the value move (issue 20 item 2).
var movedBy = map[string]string{
	// Seed 000 §11.
	"group_message_persist_total":        "TestMetricsMoveWithTheirEvents",
	"group_message_persist_latency":      "TestMetricsMoveWithTheirEvents",
	"group_message_shard_missing_total":  "TestShard11MissingMonthTableIsRetriedNeverWrittenElsewhere",
	"group_message_query_tables":         "TestMetricsMoveWithTheirEvents",
	"group_message_query_latency":        "TestMetricsMoveWithTheirEvents",
	"group_message_dedup_hit_total":      "TestMetricsMoveWithTheirEvents",
	"group_message_route_miss_total":     "TestMetricsMoveWithTheirEvents",
	"group_message_route_rebuild_total":  "TestMetricsMoveWithTheirEvents",
	"group_message_route_repair_backlog": "TestMetricsOfRouteRepairBacklog",
	"group_message_dead_letter_total":    "TestLifecycleLateWriteIntoSealedMonthIsCompensated",
	// Seed 003 §17.
	"tcp_frames_in_total":              "TestMetricsMoveWithTheirEvents",
	"tcp_frames_out_total":             "TestMetricsMoveWithTheirEvents",
	"tcp_connections":                  "TestMetricsMoveWithTheirEvents",
	"tcp_tls_handshake_failures_total": "TestMetricsOfTLSHandshakeFailures",
	"tcp_rate_limited_total":           "TestMetricsOfTransportLimits",
	"eventloop_react_seconds":          "TestMetricsMoveWithTheirEvents",
	"taskpool_depth":                   "TestMetricsOfTaskPoolDepth",
	"taskpool_rejected_total":          "TestMetricsOfTransportLimits",
	"message_send_total":               "TestMetricsMoveWithTheirEvents",
	"persist_latency":                  "TestMetricsMoveWithTheirEvents",
	"enqueue_latency":                  "TestMetricsMoveWithTheirEvents",
	"send_ack_latency":                 "TestMetricsMoveWithTheirEvents",
	"deliver_queue_depth":              "TestMetricsMoveWithTheirEvents",
	"deliver_processing_depth":         "TestMetricsMoveWithTheirEvents",
	"deliver_job_latency":              "TestMetricsMoveWithTheirEvents",
	"deliver_idempotent_skip_total":    "TestMetricsMoveWithTheirEvents",
	"outbound_drop_total":              "TestMetricsOfOutboundDrops",
	"push_ack_timeout_total":           "TestMetricsOfUnacknowledgedPushes",
	"inbox_sync_total":                 "TestMetricsMoveWithTheirEvents",
	"message_sync_total":               "TestMetricsMoveWithTheirEvents",
	"realip_missing_total":             "TestMetricsOfMissingRealIP",
	// imd's own.
	"presence_changes_total":                     "TestPresenceAndTypingAcrossNodes",
	"presence_pushes_total":                      "TestPresenceAndTypingAcrossNodes",
	"presence_unknown_total":                     "TestPresenceUnknownUntilTheRegistryHeals",
	"presence_heal_pushes_total":                 "TestPresenceUnknownUntilTheRegistryHeals",
	"typing_total":                               "TestPresenceAndTypingAcrossNodes",
	"typing_pushes_total":                        "TestPresenceAndTypingAcrossNodes",
	"receipts_pushed_total":                      "TestReceiptsAcrossNodes",
	"read_state_queries_total":                   "TestReceiptsAcrossNodes",
	"group_message_route_repair_total":           "TestLifecycleFailedRouteUpdateIsRepairedFromTheQueue",
	"group_message_route_reconcile_total":        "TestMetricsMoveWithTheirEvents",
	"group_message_seq_hole_closed_total":        "TestSeqHoleIsClosedWithATombstone",
	"group_message_shard_ready":                  "TestMetricsMoveWithTheirEvents",
	"group_message_compensation_backlog":         "TestLifecycleLateWriteIntoSealedMonthIsCompensated",
	"group_message_hot_cache_write_failed_total": "TestMetricsMoveWithTheirEvents",
	"migration_rows_total":                       "TestShard12MigrationKillMidCopyRerunAndCorruption",
	"migration_batch_latency":                    "TestShard12MigrationKillMidCopyRerunAndCorruption",
	"migration_state":                            "TestShard12MigrationKillMidCopyRerunAndCorruption",
	"migration_verify_mismatches_total":          "TestShard12MigrationKillMidCopyRerunAndCorruption",
	"deliver_delay_seconds":                      "TestMetricsMoveWithTheirEvents",
	"cross_node_push_total":                      "TestMetricsOfWebSocketAndCrossNodePushes",
	"cross_node_push_lag_seconds":                "TestMetricsOfWebSocketAndCrossNodePushes",
	"ws_connections":                             "TestMetricsOfWebSocketAndCrossNodePushes",
	"ws_refused_total":                           "TestMetricsOfWebSocketAndCrossNodePushes",
	"tenant_loop_restarts_total":                 "TestATenantLoopThatFailsIsRestartedAndHeals",
	"deliver_queue_lag_seconds":                  "TestMetricsMoveWithTheirEvents",
	"deliver_dead_letters":                       "TestMetricsMoveWithTheirEvents",
	"inbox_rebuild_total":                        "TestMetricsMoveWithTheirEvents",
	"deliver_mailbox_total":                      "TestMetricsOfUnacknowledgedPushes",
	"deliver_notify_total":                       "TestMetricsOfSystemPush",
	"push_notify_total":                          "TestMetricsOfSystemPush",
	"message_modify_total":                       "TestMetricsMoveWithTheirEvents",
	"message_reaction_total":                     "TestReactionsAndPinsCrossNodesOnSealedMonths",
	"message_pin_total":                          "TestReactionsAndPinsCrossNodesOnSealedMonths",
	"http_requests_total":                        "TestMetricsMoveWithTheirEvents",
	"http_request_duration_seconds":              "TestMetricsMoveWithTheirEvents",
	"group_message_archive_ops_total":            "TestLifecycleLateWriteIntoSealedMonthIsCompensated",
	"group_message_archive_read_total":           "TestArchiveDropAndReadBack",
	"group_message_archive_chunk_cache_total":    "TestArchiveDropAndReadBack",
	"group_file_index_total":                     "TestMetricsMoveWithTheirEvents",
	"message_search_index_total":                 "TestMetricsMoveWithTheirEvents",
	"media_thumbnail_total":                      "TestImageThumbnails",
	"webhook_oldest_undelivered_seconds":         "TestEditsAndRecallsReachAnEndpoint",
	"webhook_deliveries_total":                   "TestWebhooksDeliverSignedInOrderWithRetriesAndDeadLetters",
	"push_send_total":                            "TestNativePushReachesOfflineDevicesOnly",
	"push_ack_wait_total":                        "TestNativePushWhenNoDeviceAcked",
	"media_thumbnail_refused_total":              "TestImageThumbnails",
	"media_thumbnail_seconds":                    "TestImageThumbnails",
	"deliver_list_gap_total":                     "TestLostDeliverPartitionIsRepaired",
	"deliver_list_repair_total":                  "TestLostDeliverPartitionIsRepaired",
	"redis_lineage_change_total":                 "TestRedisSentinelFailoverLosesNoMessage",
}

// seedNames are the metric names of seed 000 §11 and seed 003 §17, as written there; a
// name ending in * stands for every declared metric it prefixes.
var seedNames = []string{
	"group_message_persist_total", "group_message_persist_latency", "group_message_shard_missing_total",
	"group_message_query_tables", "group_message_query_latency", "group_message_dedup_hit_total",
	"group_message_route_miss_total", "group_message_route_rebuild_total", "group_message_route_repair_backlog",
	"group_message_dead_letter_total",
	"tcp_*", "eventloop_react_seconds", "taskpool_depth", "taskpool_rejected_total",
	"message_send_*", "persist_latency", "enqueue_latency", "send_ack_latency",
	"deliver_queue_depth", "deliver_processing_depth", "deliver_job_latency", "deliver_idempotent_skip_total",
	"outbound_drop_total", "push_ack_timeout_total", "inbox_sync_total", "message_sync_total", "realip_missing_total",
}

// TestMetricsCoverEverySeedName checks the coverage table: every seed name is a declared
// metric, every declared metric has a test that moves it, and that test exists and reads it.
// With the seeds beside the repository (../shared/seeds, as CI lays them), the list above is
// checked against their text too, so a name the seeds add cannot go unnoticed.
func TestMetricsCoverEverySeedName(t *testing.T) {
	declared := prometheus.Names()
	for _, want := range seedNames {
		prefix, wildcard := strings.CutSuffix(want, "*")
		matched := 0
		for _, name := range declared {
			if name == want || (wildcard && strings.HasPrefix(name, prefix)) {
				matched++
				if movedBy[name] == "" {
					t.Errorf("seed metric %s: no e2e test moves it", name)
				}
			}
		}
		if matched == 0 {
			t.Errorf("seed metric %s is not declared in adapters/prometheus", want)
		}
	}
	for _, name := range declared {
		if movedBy[name] == "" {
			t.Errorf("metric %s: no e2e test moves it", name)
		}
	}
	bodies := testBodies(t)
	for name, test := range movedBy {
		if !slices.Contains(declared, name) {
			t.Errorf("%s is in the table but not declared", name)
			continue
		}
		body, ok := bodies[test]
		switch {
		case !ok:
			t.Errorf("%s: test %s does not exist", name, test)
		case !strings.Contains(body, `"`+name):
			t.Errorf("%s: test %s never reads it", name, test)
		}
	}

	if got := seedText(t); got != nil {
		slices.Sort(got)
		want := slices.Clone(seedNames)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("the seeds name %v, the list above %v", got, want)
		}
	}
}

var testFuncRE = regexp.MustCompile(`(?m)^func (Test\w+)\(`)

// testBodies maps each e2e test function to its source text.
func testBodies(t *testing.T) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot(), "e2e", "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := string(raw)
		locs := testFuncRE.FindAllStringSubmatchIndex(src, -1)
		for i, loc := range locs {
			end := len(src)
			if i+1 < len(locs) {
				end = locs[i+1][0]
			}
			if next := strings.Index(src[loc[1]:end], "\n}\n"); next >= 0 {
				end = loc[1] + next
			}
			out[src[loc[2]:loc[3]]] = src[loc[0]:end]
		}
	}
	return out
}

var (
	seedTableNameRE = regexp.MustCompile("^\\|\\s*`([a-z_]+)")
	seedWordRE      = regexp.MustCompile(`^[a-z_]+\*?$`)
)

// seedText reads the metric names of seed 000 §11 (the table's first column) and seed 003 §17
// (its text block), or nil when the seeds are not beside the repository.
func seedText(t *testing.T) []string {
	t.Helper()
	dir := filepath.Join(repoRoot(), "..", "shared", "seeds")
	read := func(prefix string) []string {
		files, _ := filepath.Glob(filepath.Join(dir, prefix+"_*.txt"))
		if len(files) != 1 {
			return nil
		}
		raw, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Split(string(raw), "\n")
	}
	seed000, seed003 := read("000"), read("003")
	if seed000 == nil || seed003 == nil {
		t.Logf("seeds not found in %s: the list is not compared with their text", dir)
		return nil
	}
	var names []string
	in := false
	for _, line := range seed000 {
		switch {
		case strings.HasPrefix(line, "## 11."):
			in = true
		case strings.HasPrefix(line, "## "):
			in = false
		case in:
			if m := seedTableNameRE.FindStringSubmatch(line); m != nil {
				names = append(names, m[1])
			}
		}
	}
	section, block, text := false, false, false
	for _, line := range seed003 {
		switch {
		case strings.HasPrefix(line, "# 17."):
			section = true
		case strings.HasPrefix(line, "# "):
			section = false
		case section && strings.HasPrefix(line, "```"):
			block = !block
			text = block && strings.TrimPrefix(line, "```") == "text" // not the Go errors
		case section && text:
			line, _, _ = strings.Cut(line, "#") // a comment
			for _, w := range strings.Fields(line) {
				if seedWordRE.MatchString(w) {
					names = append(names, w)
				}
			}
		}
	}
	if len(names) == 0 {
		t.Fatalf("no metric names found in the seeds of %s: their layout changed", dir)
	}
	return names
}
