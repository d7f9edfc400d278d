package http

import (
	"encoding/json"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/imdhq/imd/clients/go/wire"
	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/message"
	"github.com/imdhq/imd/core/domain/month"
)

func TestMessageContext(t *testing.T) {
	s := newStack(t)
	s.seed()
	nov := month.Of(s.now)
	s.appendMessages(nov,
		message.Message{Seq: 1, From: 1, Content: json.RawMessage(`{"text":"1"}`)},
		message.Message{Seq: 2, From: 1, Content: json.RawMessage(`{"text":"2"}`)},
		message.Message{Seq: 3, From: 2, Status: message.StatusDeleted}, // a closed seq
		message.Message{Seq: 4, From: 2, Content: json.RawMessage(`{"text":"4"}`)},
		message.Message{Seq: 5, From: 3, Content: json.RawMessage(`{"text":"5"}`)},
	)
	cases := []struct {
		path string
		want string
	}{
		{"/topics/grp_5/messages/4/context?n=1", "[2 4 5]"},
		{"/topics/grp_5/messages/4/context", "[1 2 4 5]"},
		{"/topics/grp_5/messages/1/context?n=2", "[1 2 4]"},
	}
	for _, tc := range cases {
		var body struct {
			Messages []wire.Message `json:"messages"`
		}
		s.ok("GET", tc.path, "", &body)
		seqs := make([]int64, len(body.Messages))
		for i, m := range body.Messages {
			seqs[i] = m.Seq
		}
		if fmt.Sprint(seqs) != tc.want {
			t.Errorf("GET %s = %v, want %s", tc.path, seqs, tc.want)
		}
	}
	s.fails("GET", "/topics/grp_5/messages/3/context", "", 404, apperr.NotFound)
	s.fails("GET", "/topics/grp_5/messages/9/context", "", 404, apperr.NotFound)
	s.fails("GET", "/topics/grp_5/messages/4/context?n=101", "", 400, apperr.InvalidArgument)
	s.fails("GET", "/topics/grp_5/messages/4/context?n=-1", "", 400, apperr.InvalidArgument)
	s.fails("GET", "/topics/grp_5/messages/x/context", "", 400, apperr.InvalidArgument)
	s.fails("GET", "/topics/grp_05/messages/4/context", "", 400, apperr.InvalidArgument)
}

func TestSearchParameters(t *testing.T) {
	s := newStack(t)
	from, to := s.now.Add(-time.Hour), s.now
	ms := func(t time.Time) string { return fmt.Sprint(t.UnixMilli()) }
	cases := []struct {
		name   string
		q      url.Values
		status int
		code   apperr.Code
	}{
		// The stack has no search store: valid requests reach it and find it unavailable.
		{"unix ms", url.Values{"from": {ms(from)}, "to": {ms(to)}}, 503, apperr.Busy},
		{"rfc 3339 with an offset", url.Values{"from": {from.In(time.FixedZone("x", 3600)).Format(time.RFC3339)}, "to": {to.Format(time.RFC3339Nano)}}, 503, apperr.Busy},
		{"from missing", url.Values{"to": {ms(to)}}, 400, apperr.InvalidArgument},
		{"to missing", url.Values{"from": {ms(from)}}, 400, apperr.InvalidArgument},
		{"not a time", url.Values{"from": {"yesterday"}, "to": {ms(to)}}, 400, apperr.InvalidArgument},
		{"four months", url.Values{"from": {ms(from)}, "to": {ms(from.AddDate(0, 4, 0))}}, 400, apperr.InvalidArgument},
		{"limit too big", url.Values{"from": {ms(from)}, "to": {ms(to)}, "limit": {"201"}}, 400, apperr.InvalidArgument},
		{"bad topic", url.Values{"from": {ms(from)}, "to": {ms(to)}, "topic": {"x"}}, 400, apperr.InvalidArgument},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s.fails("GET", "/search?"+tc.q.Encode(), "", tc.status, tc.code)
		})
	}
}
