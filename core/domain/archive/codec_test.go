package archive_test

import (
	"bytes"
	"compress/gzip"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/archive"
)

func records(topic string, seqs ...int64) []archive.Record {
	content := `{"text":"归档 <b>&</b>"}`
	out := make([]archive.Record, len(seqs))
	for i, s := range seqs {
		out[i] = archive.Record{MessageID: s + 100, Topic: topic, Seq: s, Type: "text", Status: "normal", Content: &content,
			AuditStatus: "pass", Version: 1, CreatedAt: time.Date(2031, 1, 1, 0, 0, int(s), 0, time.UTC), UpdatedAt: time.Date(2031, 1, 1, 0, 0, int(s), 0, time.UTC)}
	}
	return out
}

func header(topic string, lo, hi, n int64) archive.ChunkHeader {
	return archive.ChunkHeader{Format: archive.ChunkFormat, Tenant: "t1", Month: "203101", Topic: topic, MinSeq: lo, MaxSeq: hi, Count: n}
}

func TestChunkRoundTrip(t *testing.T) {
	recs := records("grp_1", 3, 4, 9)
	var buf bytes.Buffer
	if err := archive.EncodeChunk(&buf, header("grp_1", 3, 9, 3), recs); err != nil {
		t.Fatal(err)
	}
	h, got, err := archive.DecodeChunk(&buf)
	if err != nil || h != header("grp_1", 3, 9, 3) || !reflect.DeepEqual(got, recs) {
		t.Fatalf("round trip: %+v %v", h, err)
	}
}

// TestChunksThatLieAreCorrupt: a chunk must hold exactly what its header says.
func TestChunksThatLieAreCorrupt(t *testing.T) {
	gz := func(lines string) *bytes.Buffer {
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write([]byte(lines))
		w.Close()
		return &b
	}
	row := func(topic string, seq int) string {
		return `{"topic":"` + topic + `","seqid":` + string(rune('0'+seq)) + `}` + "\n"
	}
	hdr := func(topic string, lo, hi, n int) string {
		return `{"format":"imd-archive-chunk/1","topic":"` + topic + `","min_seq":` + string(rune('0'+lo)) + `,"max_seq":` + string(rune('0'+hi)) + `,"count":` + string(rune('0'+n)) + "}\n"
	}
	tests := []struct {
		name string
		data *bytes.Buffer
	}{
		{"not gzip", bytes.NewBufferString("plain text")},
		{"no header", gz("")},
		{"another format", gz(`{"format":"csv"}` + "\n")},
		{"fewer rows", gz(hdr("grp_1", 1, 2, 2) + row("grp_1", 1))},
		{"seq outside the range", gz(hdr("grp_1", 1, 2, 2) + row("grp_1", 1) + row("grp_1", 3))},
		{"another topic", gz(hdr("grp_1", 1, 2, 2) + row("grp_1", 1) + row("grp_2", 2))},
		{"out of order", gz(hdr("grp_1", 1, 3, 3) + row("grp_1", 1) + row("grp_1", 1) + row("grp_1", 3))},
		{"broken row", gz(hdr("grp_1", 1, 1, 1) + `{"topic":`)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := archive.DecodeChunk(tc.data); !errors.Is(err, archive.ErrCorrupt) {
				t.Fatalf("DecodeChunk: %v, want ErrCorrupt", err)
			}
		})
	}
	if err := archive.EncodeChunk(&bytes.Buffer{}, header("grp_1", 1, 5, 2), records("grp_1", 1, 4)); !errors.Is(err, archive.ErrCorrupt) {
		t.Fatalf("encoding rows that differ from their header: %v", err)
	}
}

func TestManifestLookup(t *testing.T) {
	man := archive.Manifest{Topics: []archive.TopicEntry{
		{Topic: "grp_1", Chunks: []archive.Chunk{{MinSeq: 1, MaxSeq: 5}, {MinSeq: 6, MaxSeq: 9}}},
		{Topic: "grp_3"},
	}}
	for _, tc := range []struct {
		topic string
		seq   int64
		found bool
		chunk int
	}{{"grp_1", 1, true, 0}, {"grp_1", 6, true, 1}, {"grp_1", 10, true, -1}, {"grp_2", 1, false, -1}, {"grp_3", 1, true, -1}, {"grp_9", 1, false, -1}} {
		e, ok := man.Topic(tc.topic)
		if ok != tc.found || (ok && e.ChunkFor(tc.seq) != tc.chunk) {
			t.Errorf("%s seq %d: found %v", tc.topic, tc.seq, ok)
		}
	}
	if got := archive.ChunkKey("t1", 203101, "grp_1", 2); got != "t1/203101/grp_1/000002.ndjson.gz" {
		t.Errorf("ChunkKey = %s", got)
	}
}
