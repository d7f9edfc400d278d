package dialog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/message"
)

func TestCountsAsUnread(t *testing.T) {
	cases := []struct {
		typ, content string
		want         bool
	}{
		{"text", `{"text":"hi"}`, true},
		{"text", `{"event":"recall","seq":3}`, true},
		{"system", `{"text":"Ann joined"}`, true},
		{"system", `{"event":"recall","seq":3,"version":2}`, false},
		{"system", `{"event":"edit","seq":3,"version":2}`, false},
		{"system", `{"event":"delete","seq":3}`, false},
		{"system", `{"event":"party"}`, true},
		{"system", `not json`, true},
	}
	for _, c := range cases {
		m := message.Message{Type: c.typ, Content: json.RawMessage(c.content)}
		if got := CountsAsUnread(m); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.typ, c.content, got, c.want)
		}
	}
}

func TestPreviewOf(t *testing.T) {
	at := time.Date(2026, 5, 14, 10, 0, 0, 0, time.UTC)
	long := strings.Repeat("é", MaxPreviewRunes+10)
	cases := []struct {
		typ, content, want string
	}{
		{"text", `{"text":"hello"}`, "hello"},
		{"text", `{"text":"` + long + `"}`, strings.Repeat("é", MaxPreviewRunes)},
		{"image", `{"key":"obj/1"}`, ""},
		{"text", `[]`, ""},
	}
	for _, c := range cases {
		m := message.Message{Topic: "grp_1", ConversationID: 9, MsgID: 5, Seq: 2, From: 3, Type: c.typ, Content: json.RawMessage(c.content), CreatedAt: at}
		p := PreviewOf(m)
		if p.Text != c.want || p.Type != c.typ || p.Seq != 2 || p.MsgID != 5 || p.From != 3 || p.CreatedAt != at.UnixMilli() || p.Topic != "grp_1" {
			t.Errorf("%s %s: %+v", c.typ, c.content, p)
		}
	}
}

func TestRuns(t *testing.T) {
	a := []Batch{{Index: 1, Users: []int64{1, 2}}}
	b := []Batch{{Index: 1, Users: []int64{1, 3}}}
	up := func(conv int64, once string, batches []Batch) Update {
		return Update{ConversationID: conv, Once: once, Batches: batches}
	}
	tests := []struct {
		name string
		in   []Update
		want [][]string // Once of each update, per run
	}{
		{"none", nil, nil},
		{"one", []Update{up(1, "m1", a)}, [][]string{{"m1"}}},
		{"one conversation, same batches", []Update{up(1, "m1", a), up(1, "m2", a), up(1, "m3", a)}, [][]string{{"m1", "m2", "m3"}}},
		{"conversations alternate", []Update{up(1, "m1", a), up(2, "m2", a), up(1, "m3", a)}, [][]string{{"m1"}, {"m2"}, {"m3"}}},
		{"batches differ", []Update{up(1, "m1", a), up(1, "m2", b), up(1, "m3", b)}, [][]string{{"m1"}, {"m2", "m3"}}},
		{"no batches", []Update{up(1, "m1", nil), up(1, "m2", nil)}, [][]string{{"m1", "m2"}}},
		{"marker lifetimes differ", []Update{up(1, "m1", a), {ConversationID: 1, Once: "m2", OnceTTL: time.Hour, Batches: a}}, [][]string{{"m1"}, {"m2"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]string
			for _, run := range Runs(tt.in) {
				var onces []string
				for _, u := range run {
					onces = append(onces, u.Once)
				}
				got = append(got, onces)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Runs = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestBatchesOfSplitsByUserID(t *testing.T) {
	got := BatchesOf([]int64{ListBatches + 1, 1, 2, 3 * ListBatches})
	want := []Batch{{Index: 0, Users: []int64{3 * ListBatches}}, {Index: 1, Users: []int64{ListBatches + 1, 1}}, {Index: 2, Users: []int64{2}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("BatchesOf = %v; want %v", got, want)
	}
}
