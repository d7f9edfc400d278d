package stages

import (
	"bytes"
	"compress/gzip"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

const pkg = "github.com/imdhq/imd/"

// TestStageOf: one stack per stage, leaf first, as the send, deliver and background
// goroutines of a W1 profile look.
func TestStageOf(t *testing.T) {
	tests := []struct {
		name  string
		stack []string
		want  string
	}{
		{"GC mark worker", []string{"runtime.scanobject", "runtime.gcDrain", "runtime.gcBgMarkWorker"}, "GC"},
		{"GC assist inside a send is GC's", []string{"runtime.gcAssistAlloc", "runtime.mallocgc", pkg + "core/usecase/send.(*Service).post", pkg + "adapters/protocol/dispatch.(*Dispatcher).run"}, "GC"},
		{"allocation outside GC stays with its owner", []string{"runtime.mallocgc", pkg + "core/usecase/send.(*Service).cacheHot", pkg + "core/usecase/send.(*Service).post"}, "post-commit"},
		{"search feed called from the send path", []string{"runtime.chansend", pkg + "core/usecase/longsearch.(*Indexer).Committed", pkg + "core/usecase/send.(*Service).post"}, "search index"},
		{"bleve merger", []string{"github.com/blevesearch/zapx/v17.mergeSegmentBases", "github.com/blevesearch/bleve/v2/index/scorch.(*Scorch).mergerLoop"}, "search index"},
		{"seq allocation: the Redis call is the allocator's", []string{"github.com/redis/rueidis.(*mux).Do", pkg + "adapters/redis.(*SeqAllocator).Allocate", pkg + "core/usecase/send.(*Service).allocate", pkg + "core/usecase/send.(*Service).post"}, "allocate"},
		{"permission", []string{pkg + "core/usecase/conversation.(*Resolver).ForSend", pkg + "core/usecase/send.(*Service).Send", pkg + "adapters/protocol/dispatch.(*Dispatcher).sendMessage"}, "permission"},
		{"draft validation", []string{"unicode/utf8.ValidString", pkg + "core/domain/message.Draft.Validate", pkg + "core/usecase/send.(*Service).Send"}, "decode"},
		{"request body", []string{"encoding/json.Unmarshal", pkg + "adapters/protocol/dispatch.decodeBody", pkg + "adapters/protocol/dispatch.(*Dispatcher).sendMessage"}, "decode"},
		{"frames in on the event loop", []string{pkg + "adapters/tcp/server.(*Server).readFrames", pkg + "adapters/tcp/server.(*events).OnTraffic", "github.com/panjf2000/gnet/v2.(*eventloop).read"}, "decode"},
		{"group commit through sqlc", []string{"github.com/go-sql-driver/mysql.(*mysqlConn).Exec", pkg + "adapters/mysql/sqlcdb.(*Queries).InsertMessages", pkg + "adapters/mysql.(*batchWrite).apply", pkg + "adapters/mysql.(*writer).commit"}, "group commit"},
		{"mark queued through sqlc is post-commit", []string{pkg + "adapters/mysql/sqlcdb.(*Queries).MarkQueued", pkg + "adapters/mysql.writeMarksAlone[...]", pkg + "adapters/mysql.(*marker).run"}, "post-commit"},
		{"deliver enqueue", []string{pkg + "adapters/redis.(*DeliverQueue).Push", pkg + "core/usecase/send.(*Service).enqueue", pkg + "core/usecase/send.(*Service).post"}, "post-commit"},
		{"deliver consumer", []string{pkg + "adapters/redis.(*DeliverQueue).TakeMore", pkg + "core/loop/deliver.(*Workers).take", pkg + "core/loop/deliver.(*Workers).consume"}, "deliver"},
		{"push from a deliver consumer", []string{pkg + "adapters/protocol/session.(*Registry).push", pkg + "adapters/protocol/session.(*Registry).PushReach", pkg + "core/loop/cluster.(*Pusher).PushReach", pkg + "core/loop/deliver.(*Workers).handle"}, "push"},
		{"rueidis pipe", []string{"internal/runtime/syscall/linux.Syscall6", "github.com/redis/rueidis.(*pipe)._backgroundWrite"}, "redis client I/O"},
		{"event loop write", []string{"github.com/panjf2000/gnet/v2/pkg/io.Writev", "github.com/panjf2000/gnet/v2.(*conn).asyncWritev", "github.com/panjf2000/gnet/v2.(*eventloop).orbit"}, "event loops"},
		{"scheduler", []string{"runtime.futex", "runtime.findRunnable", "runtime.schedule", "runtime.park_m", "runtime.mcall"}, "scheduler"},
		{"unclaimed", []string{"net/http.(*conn).serve"}, Other},
		{"empty stack", nil, Other},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := stageOf(tt.stack, Stages); got != tt.want {
				t.Fatalf("stage %q, want %q", got, tt.want)
			}
		})
	}
}

// encodeProfile writes a CPU profile as runtime/pprof does (gzipped, packed fields, inlined
// calls as several lines of one location); stacks are leaf first, each frame "a" or an inlined
// pair "inner+outer".
func encodeProfile(t *testing.T, samples map[string]int64) []byte {
	t.Helper()
	strs := []string{"", "samples", "count", "cpu", "nanoseconds"}
	str := func(s string) uint64 {
		for i, x := range strs {
			if x == s {
				return uint64(i)
			}
		}
		strs = append(strs, s)
		return uint64(len(strs) - 1)
	}
	funcs := map[string]uint64{}
	locs := map[string]uint64{}
	var b []byte
	msg := func(num protowire.Number, body []byte) {
		b = protowire.AppendTag(b, num, protowire.BytesType)
		b = protowire.AppendBytes(b, body)
	}
	varint := func(m []byte, num protowire.Number, v uint64) []byte {
		m = protowire.AppendTag(m, num, protowire.VarintType)
		return protowire.AppendVarint(m, v)
	}
	packed := func(m []byte, num protowire.Number, vs []uint64) []byte {
		var p []byte
		for _, v := range vs {
			p = protowire.AppendVarint(p, v)
		}
		m = protowire.AppendTag(m, num, protowire.BytesType)
		return protowire.AppendBytes(m, p)
	}
	msg(profileSampleType, varint(varint(nil, 1, str("samples")), valueTypeUnit, str("count")))
	msg(profileSampleType, varint(varint(nil, 1, str("cpu")), valueTypeUnit, str("nanoseconds")))
	var locBodies, funcBodies [][]byte
	for stack, nanos := range samples {
		var ids []uint64
		for _, frame := range strings.Fields(stack) {
			id, ok := locs[frame]
			if !ok {
				id = uint64(len(locs) + 1)
				locs[frame] = id
				loc := varint(nil, locationID, id)
				for _, fn := range strings.Split(frame, "+") {
					fid, ok := funcs[fn]
					if !ok {
						fid = uint64(len(funcs) + 1)
						funcs[fn] = fid
						funcBodies = append(funcBodies, varint(varint(nil, functionID, fid), functionName, str(fn)))
					}
					line := varint(nil, lineFunction, fid)
					loc = protowire.AppendTag(loc, locationLine, protowire.BytesType)
					loc = protowire.AppendBytes(loc, line)
				}
				locBodies = append(locBodies, loc)
			}
			ids = append(ids, id)
		}
		msg(profileSample, packed(packed(nil, sampleLocationID, ids), sampleValue, []uint64{uint64(nanos / 10_000_000), uint64(nanos)}))
	}
	for _, l := range locBodies {
		msg(profileLocation, l)
	}
	for _, f := range funcBodies {
		msg(profileFunction, f)
	}
	for _, s := range strs {
		msg(profileStringTable, []byte(s))
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(b)
	zw.Close()
	return gz.Bytes()
}

func TestParseAndAttribute(t *testing.T) {
	const ms = 1_000_000
	raw := encodeProfile(t, map[string]int64{
		"runtime.scanobject runtime.gcDrain runtime.gcBgMarkWorker":                                                   100 * ms,
		pkg + "core/usecase/send.(*Service).allocate+" + pkg + "core/usecase/send.(*Service).post " + pkg + "x.Serve": 200 * ms,
		"runtime.memmove " + pkg + "core/loop/deliver.(*Workers).handle":                                              300 * ms,
		"github.com/redis/rueidis.(*pipe)._backgroundRead":                                                            350 * ms,
		"net/http.(*conn).serve": 50 * ms,
	})
	samples, err := Parse(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 5 {
		t.Fatalf("%d samples", len(samples))
	}
	for _, s := range samples {
		if s.Nanos == 200*ms && (len(s.Stack) != 3 || s.Stack[0] != pkg+"core/usecase/send.(*Service).allocate" || s.Stack[1] != pkg+"core/usecase/send.(*Service).post") {
			t.Fatalf("inlined stack %q, want the inner call first", s.Stack)
		}
	}
	table := Attribute(samples, Stages)
	if table.Total != 1000*ms {
		t.Fatalf("total %d", table.Total)
	}
	want := map[string]float64{"GC": 0.1, "allocate": 0.2, "deliver": 0.3, "redis client I/O": 0.35, Other: 0.05}
	if len(table.Rows) != len(Stages)+1 || table.Rows[len(table.Rows)-1].Stage != Other {
		t.Fatalf("rows %+v", table.Rows)
	}
	for _, r := range table.Rows {
		if diff := r.Share - want[r.Stage]; diff > 1e-9 || diff < -1e-9 {
			t.Errorf("%s: share %.3f, want %.3f", r.Stage, r.Share, want[r.Stage])
		}
	}
	if len(table.OtherRoots) != 1 || table.OtherRoots[0].Stage != "net/http.(*conn).serve" {
		t.Errorf("other roots %+v", table.OtherRoots)
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, "w1", table, 400, Stages); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"| allocate | 20.0% | 80 |", "| other | 5.0% | 20 |", "net/http.(*conn).serve 5.0%", "- push: "} {
		if !strings.Contains(md.String(), line) {
			t.Errorf("markdown lacks %q:\n%s", line, md.String())
		}
	}
	md.Reset()
	if err := WriteMarkdown(&md, "w1", table, 0, Stages); err != nil || strings.Contains(md.String(), "µs per ACKed msg") {
		t.Errorf("without a report the µs column stays out:\n%s", md.String())
	}
}

func TestParseRejectsGarbage(t *testing.T) {
	for name, raw := range map[string][]byte{
		"truncated":      {0x12, 0x05, 0x01},
		"bad gzip":       {0x1f, 0x8b, 0x00},
		"no sample type": protowire.AppendBytes(protowire.AppendTag(nil, profileSample, protowire.BytesType), nil),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(bytes.NewReader(raw)); err == nil {
				t.Fatal("garbage parsed")
			}
		})
	}
}

// FuzzParse: a profile file is outside bytes; garbage must be an error, never a panic.
func FuzzParse(f *testing.F) {
	t := &testing.T{}
	f.Add(encodeProfile(t, map[string]int64{"a b+c": 10_000_000, "runtime.gcDrain": 20_000_000}))
	f.Add([]byte{0x12, 0x05, 0x01})
	f.Fuzz(func(t *testing.T, raw []byte) {
		samples, err := Parse(bytes.NewReader(raw))
		if err == nil {
			Attribute(samples, Stages)
		}
	})
}
