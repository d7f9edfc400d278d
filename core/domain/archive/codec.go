package archive

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ChunkHeader is the first line of a chunk file: what the rows after it are.
type ChunkHeader struct {
	Format string `json:"format"`
	Tenant string `json:"tenant"`
	Month  string `json:"month"` // YYYYMM
	Topic  string `json:"topic"`
	MinSeq int64  `json:"min_seq"`
	MaxSeq int64  `json:"max_seq"`
	Count  int64  `json:"count"`
}

// ErrCorrupt: a file does not hold what its header or the manifest says.
var ErrCorrupt = errors.New("archive file corrupt")

// maxLine bounds one NDJSON line: a row holds at most 64 KB of content plus its other
// columns, escaped.
const maxLine = 1 << 20

// EncodeChunk writes recs (one topic, ascending seq) as a gzip-compressed NDJSON chunk: the
// header line, then one record per line.
func EncodeChunk(w io.Writer, h ChunkHeader, recs []Record) error {
	if err := checkRows(h, recs); err != nil {
		return err
	}
	zw := gzip.NewWriter(w)
	enc := json.NewEncoder(zw)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h); err != nil {
		return fmt.Errorf("encode chunk header: %w", err)
	}
	for _, r := range recs {
		if err := enc.Encode(r); err != nil {
			return fmt.Errorf("encode %s seq %d: %w", r.Topic, r.Seq, err)
		}
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("compress chunk: %w", err)
	}
	return nil
}

// DecodeChunk reads a chunk and checks it against its header: format, topic, ascending seqs
// within the range, and the row count.
func DecodeChunk(r io.Reader) (ChunkHeader, []Record, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return ChunkHeader{}, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	if !sc.Scan() {
		return ChunkHeader{}, nil, fmt.Errorf("%w: no header: %v", ErrCorrupt, sc.Err())
	}
	var h ChunkHeader
	if err := json.Unmarshal(sc.Bytes(), &h); err != nil || h.Format != ChunkFormat {
		return ChunkHeader{}, nil, fmt.Errorf("%w: header %q", ErrCorrupt, truncate(sc.Bytes()))
	}
	recs := make([]Record, 0, h.Count)
	for sc.Scan() {
		var rec Record
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			return ChunkHeader{}, nil, fmt.Errorf("%w: row %d: %v", ErrCorrupt, len(recs)+1, err)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return ChunkHeader{}, nil, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	if err := checkRows(h, recs); err != nil {
		return ChunkHeader{}, nil, err
	}
	return h, recs, nil
}

// checkRows verifies that recs are what h describes.
func checkRows(h ChunkHeader, recs []Record) error {
	if int64(len(recs)) != h.Count || len(recs) == 0 {
		return fmt.Errorf("%w: %d rows, header says %d", ErrCorrupt, len(recs), h.Count)
	}
	if recs[0].Seq != h.MinSeq || recs[len(recs)-1].Seq != h.MaxSeq {
		return fmt.Errorf("%w: seqs %d-%d, header says %d-%d", ErrCorrupt, recs[0].Seq, recs[len(recs)-1].Seq, h.MinSeq, h.MaxSeq)
	}
	for i, r := range recs {
		if r.Topic != h.Topic {
			return fmt.Errorf("%w: row of topic %q in a chunk of %q", ErrCorrupt, r.Topic, h.Topic)
		}
		if i > 0 && r.Seq <= recs[i-1].Seq {
			return fmt.Errorf("%w: seq %d after %d", ErrCorrupt, r.Seq, recs[i-1].Seq)
		}
	}
	return nil
}

func truncate(b []byte) string {
	const n = 80
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
