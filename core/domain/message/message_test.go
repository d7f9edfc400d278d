package message

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/apperr"
	"github.com/imdhq/imd/core/domain/objectkey"
)

func TestValidate(t *testing.T) {
	big := `{"text":"` + strings.Repeat("x", MaxContentSize) + `"}`
	tests := []struct {
		name string
		d    Draft
		code apperr.Code
	}{
		{"text ok", Draft{ClientMsgID: "c1", Type: "text", Content: json.RawMessage(`{"text":"hi"}`)}, apperr.OK},
		{"64 char id ok", Draft{ClientMsgID: strings.Repeat("a", 64), Type: "text", Content: json.RawMessage(`{}`)}, apperr.OK},
		{"empty client id", Draft{Type: "text", Content: json.RawMessage(`{}`)}, apperr.InvalidArgument},
		{"65 char id", Draft{ClientMsgID: strings.Repeat("a", 65), Type: "text", Content: json.RawMessage(`{}`)}, apperr.InvalidArgument},
		{"unknown type", Draft{ClientMsgID: "c", Type: "html", Content: json.RawMessage(`{}`)}, apperr.InvalidArgument},
		{"content not object", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`"hi"`)}, apperr.InvalidArgument},
		{"content null", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`null`)}, apperr.InvalidArgument},
		{"content too large", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(big)}, apperr.TooLarge},
		{"image by key", Draft{ClientMsgID: "c", Type: "image", Content: json.RawMessage(`{"key":"` + issuedKey + `","w":3}`)}, apperr.OK},
		{"image without key", Draft{ClientMsgID: "c", Type: "image", Content: json.RawMessage(`{"w":3}`)}, apperr.InvalidArgument},
		{"image with bytes", Draft{ClientMsgID: "c", Type: "file", Content: json.RawMessage(`{"key":"` + issuedKey + `","data":"AAAA"}`)}, apperr.InvalidArgument},
		// Issue 33: a media key is an issued key's shape, never a path.
		{"image key a path", Draft{ClientMsgID: "c", Type: "image", Content: json.RawMessage(`{"key":"../../../etc/passwd"}`)}, apperr.InvalidArgument},
		{"file key escaping its day", Draft{ClientMsgID: "c", Type: "file", Content: json.RawMessage(`{"key":"acme/7/../../other/7/20300405/0123456789abcdef0123456789abcdef.pdf"}`)}, apperr.InvalidArgument},
		{"image key not a string", Draft{ClientMsgID: "c", Type: "image", Content: json.RawMessage(`{"key":7}`)}, apperr.InvalidArgument},
		// Issue 32: a thumbnail is named only by the key derived from content.key.
		{"image with its thumbnail", Draft{ClientMsgID: "c", Type: "image", Content: image(`"thumb_key":"` + issuedKey + `.thumb.jpg","width":4032,"height":3024`)}, apperr.OK},
		{"thumbnail of another key", Draft{ClientMsgID: "c", Type: "image", Content: image(`"thumb_key":"acme/7/20300405/ffffffffffffffffffffffffffffffff.png.thumb.jpg"`)}, apperr.InvalidArgument},
		{"thumbnail a path", Draft{ClientMsgID: "c", Type: "image", Content: image(`"thumb_key":"../x.thumb.jpg"`)}, apperr.InvalidArgument},
		{"thumbnail the original", Draft{ClientMsgID: "c", Type: "image", Content: image(`"thumb_key":"` + issuedKey + `"`)}, apperr.InvalidArgument},
		{"thumbnail not a string", Draft{ClientMsgID: "c", Type: "image", Content: image(`"thumb_key":7`)}, apperr.InvalidArgument},
		{"thumbnail as the key", Draft{ClientMsgID: "c", Type: "image", Content: json.RawMessage(`{"key":"` + issuedKey + `.thumb.jpg"}`)}, apperr.InvalidArgument},
		// Issue 31: content.forward is the server's alone, in any spelling.
		{"client forward", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text":"hi","forward":` + serverRef + `}`)}, apperr.InvalidArgument},
		{"client Forward", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text":"hi","Forward":` + serverRef + `}`)}, apperr.InvalidArgument},
		{"client forward null", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text":"hi","forward":null}`)}, apperr.InvalidArgument},
		{"server forward", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text":"hi","forward":` + serverRef + `}`), Forward: json.RawMessage(serverRef)}, apperr.OK},
		{"server forward reordered", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"forward":{"seq":3,"topic":"grp_1","from":7,"msg_id":9}}`), Forward: json.RawMessage(serverRef)}, apperr.OK},
		{"another forward than the server's", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"forward":{"topic":"grp_2","seq":3,"msg_id":9,"from":7}}`), Forward: json.RawMessage(serverRef)}, apperr.InvalidArgument},
		{"server forward beside a Forward", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"forward":` + serverRef + `,"FORWARD":` + serverRef + `}`), Forward: json.RawMessage(serverRef)}, apperr.InvalidArgument},
		{"server forward dropped", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text":"edited"}`), Forward: json.RawMessage(serverRef)}, apperr.OK},
		{"zero width", Draft{ClientMsgID: "c", Type: "image", Content: image(`"width":0`)}, apperr.InvalidArgument},
		{"fractional height", Draft{ClientMsgID: "c", Type: "image", Content: image(`"height":1.5`)}, apperr.InvalidArgument},
		{"height beyond the bound", Draft{ClientMsgID: "c", Type: "image", Content: image(`"height":2000000`)}, apperr.InvalidArgument},
		{"width a string", Draft{ClientMsgID: "c", Type: "image", Content: image(`"width":"7"`)}, apperr.InvalidArgument},
		{"text may carry any key", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text":"hi","key":"../x"}`)}, apperr.OK},
		{"negative reply", Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{}`), ReplySeq: -1}, apperr.InvalidArgument},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := apperr.CodeOf(tt.d.Validate()); got != tt.code {
				t.Fatalf("code %d, want %d", got, tt.code)
			}
		})
	}
}

// image is image content of issuedKey with more members.
func image(members string) json.RawMessage {
	return json.RawMessage(`{"key":"` + issuedKey + `",` + members + `}`)
}

// issuedKey has the shape of a key the upload use case issues.
const issuedKey = "acme/7/20300405/0123456789abcdef0123456789abcdef.png"

func TestMediaKey(t *testing.T) {
	tests := []struct {
		name string
		d    Draft
		key  string
		ok   bool
	}{
		{"image", Draft{Type: "image", Content: json.RawMessage(`{"key":"` + issuedKey + `"}`)}, issuedKey, true},
		{"text", Draft{Type: "text", Content: json.RawMessage(`{"key":"` + issuedKey + `"}`)}, "", false},
		{"no key", Draft{Type: "file", Content: json.RawMessage(`{}`)}, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if key, ok := tt.d.MediaKey(); key != tt.key || ok != tt.ok {
				t.Fatalf("MediaKey = %q, %v; want %q, %v", key, ok, tt.key, tt.ok)
			}
		})
	}
}

// FuzzMediaKey: whatever content a media draft carries, a draft Validate accepts references
// an issued key's shape, which names no path outside its directory (issue 33).
func FuzzMediaKey(f *testing.F) {
	for _, seed := range []string{
		`{"key":"` + issuedKey + `"}`, `{"key":"../../../etc/passwd"}`, `{"key":"acme/7/20300405/x.png"}`,
		`{"key":"` + issuedKey + `","key":"../x"}`, `{"key":"` + issuedKey + `\u0000"}`, `{"KEY":"../x","key":"` + issuedKey + `"}`, `{"key":"` + issuedKey + `","KEY":"../x"}`,
	} {
		f.Add("image", seed)
	}
	f.Fuzz(func(t *testing.T, typ, content string) {
		d := Draft{ClientMsgID: "c", Type: typ, Content: json.RawMessage(content)}
		if d.Validate() != nil {
			return
		}
		key, ok := d.MediaKey()
		if !types[typ] {
			if ok {
				t.Fatalf("a %s draft has media key %q", typ, key)
			}
			return
		}
		if !ok || !objectkey.Valid(key) || strings.Contains(key, "..") || strings.HasPrefix(key, "/") {
			t.Fatalf("accepted %s draft %s references %q (ok %v)", typ, content, key, ok)
		}
	})
}

// serverRef is an origin reference as the forward command writes it.
const serverRef = `{"topic":"grp_1","seq":3,"msg_id":9,"from":7}`

// FuzzForwardFromServer: whatever content a client sends, a draft Validate accepts carries no
// forward reference, in any spelling, unless the server set it, and then only the server's
// (issue 31 part 5).
func FuzzForwardFromServer(f *testing.F) {
	for _, seed := range []string{
		`{"text":"hi"}`, `{"forward":` + serverRef + `}`, `{"Forward":` + serverRef + `}`, `{"forward":null}`,
		`{"forward":` + serverRef + `,"forward":{"topic":"grp_2","seq":1,"msg_id":1,"from":1}}`,
		`{"forward":{"topic":"grp_2","seq":1,"msg_id":1,"from":1},"forward":` + serverRef + `}`, `{"fOrWaRd":1}`,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, content string, server bool) {
		d := Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(content)}
		if server {
			d.Forward = json.RawMessage(serverRef)
		}
		var members map[string]json.RawMessage
		if want := json.Unmarshal([]byte(content), &members) == nil && members != nil; isObject(json.RawMessage(content)) != want {
			t.Fatalf("isObject(%s) = %v, decoding into a map says %v", content, !want, want)
		}
		if d.Validate() != nil {
			return
		}
		// Every member as a streaming reader meets it, duplicates included.
		dec := json.NewDecoder(strings.NewReader(content))
		if _, err := dec.Token(); err != nil {
			t.Fatalf("accepted content %s: %v", content, err)
		}
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				t.Fatalf("accepted content %s: %v", content, err)
			}
			var value json.RawMessage
			if err := dec.Decode(&value); err != nil {
				t.Fatalf("accepted content %s: %v", content, err)
			}
			name, _ := tok.(string)
			if strings.EqualFold(name, ForwardMember) && (!server || name != ForwardMember || !SameJSON(value, d.Forward)) {
				t.Fatalf("accepted content %s (server reference %v) carries %q: %s", content, server, name, value)
			}
		}
	})
}

// TestMayNameForward: the quick look says no only where no member can spell forward.
func TestMayNameForward(t *testing.T) {
	tests := []struct {
		content string
		want    bool
	}{
		{`{"text":"hi"}`, false},
		{`{"text":"你好，转发"}`, false},
		{`{"forward":1}`, true},
		{`{"FoRwArD":1}`, true},
		{`{"text":"forward this"}`, true}, // a value may say it: then every member is read
		{`{"\u0066orward":1}`, true},      // an escape may spell it
		{`{"text":"a\nb"}`, true},
		{`{"forwar":1}`, false},
	}
	for _, tt := range tests {
		if got := mayNameForward([]byte(tt.content)); got != tt.want {
			t.Errorf("mayNameForward(%s) = %v, want %v", tt.content, got, tt.want)
		}
	}
}

// BenchmarkValidateText is a text message's content check, on every SEND_MESSAGE.
func BenchmarkValidateText(b *testing.B) {
	d := Draft{ClientMsgID: "c-1", Type: "text", Content: json.RawMessage(`{"text":"` + strings.Repeat("hello ", 16) + `"}`)}
	b.ReportAllocs()
	for b.Loop() {
		if err := d.Validate(); err != nil {
			b.Fatal(err)
		}
	}
}

func TestValidateAppend(t *testing.T) {
	ok := Message{Topic: "grp_1", Seq: 1, MsgID: 7, ClientMsgID: "c", Month: 202609}
	tests := []struct {
		name    string
		edit    func(*Message)
		wantErr string
	}{
		{"ok", func(*Message) {}, ""},
		{"no topic", func(m *Message) { m.Topic = "" }, `append: invalid topic ""`},
		{"long topic", func(m *Message) { m.Topic = strings.Repeat("t", 65) }, "append: invalid topic"},
		{"seq 0", func(m *Message) { m.Seq = 0 }, "append grp_1: seq 0 and msg_id 7 must be positive"},
		{"msg_id 0", func(m *Message) { m.MsgID = 0 }, "append grp_1: seq 1 and msg_id 0 must be positive"},
		{"long client_msg_id", func(m *Message) { m.ClientMsgID = strings.Repeat("c", 65) }, "append grp_1: client_msg_id longer than 64"},
		{"no month", func(m *Message) { m.Month = 0 }, "append grp_1: invalid month"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := ok
			tt.edit(&m)
			err := m.ValidateAppend()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("ValidateAppend: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("ValidateAppend = %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

func TestHashTellsRetriesFromReuse(t *testing.T) {
	a := Draft{ClientMsgID: "c", Type: "text", Content: json.RawMessage(`{"text": "hi"}`)}
	b := a
	b.Content = json.RawMessage(`{"text":"hi"}`) // same JSON, other spacing: still a retry
	c := a
	c.Content = json.RawMessage(`{"text":"ho"}`)
	d := a
	d.MentionAll = true
	if a.Hash() != b.Hash() {
		t.Fatal("whitespace must not change the hash")
	}
	if a.Hash() == c.Hash() || a.Hash() == d.Hash() {
		t.Fatal("different payloads must hash differently")
	}
	if len(a.Hash()) != 32 {
		t.Fatalf("hash must fit CHAR(32): %q", a.Hash())
	}
}

func TestPageQueryTakes(t *testing.T) {
	msg := func(topic string, seq int64, st Status) Message { return Message{Topic: topic, Seq: seq, Status: st} }
	tests := []struct {
		name string
		q    PageQuery
		m    Message
		want bool
	}{
		{"unbounded", PageQuery{Topic: "grp_1"}, msg("grp_1", 1<<40, StatusNormal), true},
		{"other topic", PageQuery{Topic: "grp_1"}, msg("grp_2", 5, StatusNormal), false},
		{"after is exclusive", PageQuery{Topic: "grp_1", After: 5}, msg("grp_1", 5, StatusNormal), false},
		{"before is exclusive", PageQuery{Topic: "grp_1", Before: 5}, msg("grp_1", 5, StatusNormal), false},
		{"inside", PageQuery{Topic: "grp_1", After: 4, Before: 6}, msg("grp_1", 5, StatusNormal), true},
		{"tombstone hidden", PageQuery{Topic: "grp_1"}, msg("grp_1", 5, StatusDeleted), false},
		{"tombstone shown", PageQuery{Topic: "grp_1", IncludeDeleted: true}, msg("grp_1", 5, StatusDeleted), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Takes(tt.m); got != tt.want {
				t.Errorf("Takes = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPageQueryBoundsAndOrder(t *testing.T) {
	if after, before := (PageQuery{After: -3}).Bounds(); after != 0 || before != math.MaxInt64 {
		t.Errorf("Bounds of an unbounded query = %d, %d", after, before)
	}
	if after, before := (PageQuery{After: 3, Before: 9}).Bounds(); after != 3 || before != 9 {
		t.Errorf("Bounds = %d, %d, want 3, 9", after, before)
	}
	a, b := Message{Seq: 1}, Message{Seq: 2}
	if (PageQuery{}).Compare(a, b) >= 0 || (PageQuery{Desc: true}).Compare(a, b) <= 0 {
		t.Error("Compare: ascending must put seq 1 first, descending seq 2")
	}
}

func TestNewestFirst(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name  string
		first Message
		then  Message
	}{
		{"later created_at first", Message{CreatedAt: at.Add(time.Millisecond), Seq: 1, MsgID: 1}, Message{CreatedAt: at, Seq: 9, MsgID: 9}},
		{"same time: higher seq first", Message{CreatedAt: at, Seq: 2, MsgID: 1}, Message{CreatedAt: at, Seq: 1, MsgID: 9}},
		{"same time and seq: higher msg_id first", Message{CreatedAt: at, Seq: 1, MsgID: 2}, Message{CreatedAt: at, Seq: 1, MsgID: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if NewestFirst(tt.first, tt.then) >= 0 || NewestFirst(tt.then, tt.first) <= 0 {
				t.Fatalf("NewestFirst does not put %+v before %+v", tt.first, tt.then)
			}
			if NewestFirst(tt.first, tt.first) != 0 {
				t.Fatalf("NewestFirst(m, m) != 0")
			}
		})
	}
}
