package contract

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// ReferencesFixture is the reference stores of one fresh tenant: favorites, the group file
// index, and the Referenced view over both that archiving checks.
type ReferencesFixture struct {
	Tenant    string
	Favorites ports.Favorites
	Files     ports.GroupFiles
	Refs      ports.References
	Media     ports.MediaRefs
}

// References checks ports.Favorites, ports.GroupFiles and ports.References (seed 000 §8):
// saves and entries are kept first-come, pages run newest first below their cursor, and
// Referenced finds every seq something names in a range; ports.MediaRefs lists a key's topics
// once each, in order. fresh must return a new tenant on every call.
func References(t *testing.T, fresh func(t *testing.T) ReferencesFixture) {
	for _, c := range []struct {
		name string
		run  func(t *testing.T, f ReferencesFixture)
	}{
		{"favorites", favoritesKeptAndPaged},
		{"group files", filesKeptPagedAndRemoved},
		{"referenced seqs", referencedSeqs},
		{"media references", mediaTopicsKeptOnceInOrder},
	} {
		t.Run(c.name, func(t *testing.T) { c.run(t, fresh(t)) })
	}
}

// refTime is a stored time: whole milliseconds, UTC.
var refTime = time.Date(2030, 3, 4, 5, 6, 7, 8_000_000, time.UTC)

func favoritesKeptAndPaged(t *testing.T, f ReferencesFixture) {
	ctx := context.Background()
	add := func(user int64, topic string, seq int64, at time.Time) msgref.Favorite {
		t.Helper()
		got, err := f.Favorites.AddFavorite(ctx, f.Tenant, msgref.Favorite{User: user, Topic: topic, Seq: seq, CreatedAt: at})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	first := add(1, "grp_1", 5, refTime)
	if first.ID <= 0 || first.User != 1 || first.Topic != "grp_1" || first.Seq != 5 || !first.CreatedAt.Equal(refTime) {
		t.Fatalf("saved %+v", first)
	}
	if again := add(1, "grp_1", 5, refTime.Add(time.Hour)); again != first {
		t.Fatalf("saved again %+v, want the first %+v", again, first)
	}
	newer := add(1, "grp_1", 6, refTime)
	add(2, "grp_1", 5, refTime) // another user's
	if newer.ID <= first.ID {
		t.Fatalf("ids %d then %d: newer favorites need larger ids", first.ID, newer.ID)
	}
	seqs := func(before int64, limit int) []int64 {
		t.Helper()
		page, err := f.Favorites.Favorites(ctx, f.Tenant, 1, before, limit)
		if err != nil {
			t.Fatal(err)
		}
		var out []int64
		for _, fav := range page {
			out = append(out, fav.Seq)
		}
		return out
	}
	for _, tt := range []struct {
		before int64
		limit  int
		want   []int64
	}{{0, 10, []int64{6, 5}}, {0, 1, []int64{6}}, {newer.ID, 10, []int64{5}}, {first.ID, 10, nil}} {
		if got := seqs(tt.before, tt.limit); !slices.Equal(got, tt.want) {
			t.Errorf("Favorites(before %d, limit %d) = %v, want %v", tt.before, tt.limit, got, tt.want)
		}
	}
	for _, want := range []bool{true, false} {
		if removed, err := f.Favorites.RemoveFavorite(ctx, f.Tenant, 1, "grp_1", 5); err != nil || removed != want {
			t.Fatalf("RemoveFavorite = %v, %v; want %v", removed, err, want)
		}
	}
	if got := seqs(0, 10); !slices.Equal(got, []int64{6}) {
		t.Errorf("after removal %v, want [6]", got)
	}
}

func groupFile(topic string, seq int64, name string) msgref.File {
	return msgref.File{
		Topic: topic, Seq: seq, MsgID: 1000 + seq, From: 7, Name: name, Size: 42,
		Key: "acme/7/f" + name, ContentType: "application/pdf", CreatedAt: refTime,
	}
}

func filesKeptPagedAndRemoved(t *testing.T, f ReferencesFixture) {
	ctx := context.Background()
	if err := f.Files.AddFiles(ctx, f.Tenant, nil); err != nil {
		t.Fatalf("AddFiles of none: %v", err)
	}
	if err := f.Files.AddFiles(ctx, f.Tenant, []msgref.File{groupFile("grp_1", 3, "a"), groupFile("grp_1", 7, "b"), groupFile("grp_2", 4, "c")}); err != nil {
		t.Fatal(err)
	}
	if err := f.Files.AddFiles(ctx, f.Tenant, []msgref.File{groupFile("grp_1", 3, "renamed")}); err != nil {
		t.Fatal(err)
	}
	page := func(topic string, before int64) []msgref.File {
		t.Helper()
		got, err := f.Files.Files(ctx, f.Tenant, topic, before, 10)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got, want := page("grp_1", 0), []msgref.File{groupFile("grp_1", 7, "b"), groupFile("grp_1", 3, "a")}; !slices.EqualFunc(got, want, sameFile) {
		t.Fatalf("files %+v, want %+v (the first entry of seq 3 kept)", got, want)
	}
	if got := page("grp_1", 7); len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("files below 7: %+v", got)
	}
	if err := f.Files.RemoveFile(ctx, f.Tenant, "grp_1", 7); err != nil {
		t.Fatal(err)
	}
	if err := f.Files.RemoveFile(ctx, f.Tenant, "grp_1", 99); err != nil {
		t.Fatalf("removing a missing entry: %v", err)
	}
	if got := page("grp_1", 0); len(got) != 1 || got[0].Seq != 3 {
		t.Fatalf("after RemoveFile: %+v", got)
	}
	if err := f.Files.RemoveFileRange(ctx, f.Tenant, "grp_1", 1, 5); err != nil {
		t.Fatal(err)
	}
	if got := page("grp_1", 0); len(got) != 0 {
		t.Fatalf("after RemoveFileRange: %+v", got)
	}
	if got := page("grp_2", 0); len(got) != 1 || !sameFile(got[0], groupFile("grp_2", 4, "c")) {
		t.Fatalf("another topic's entries changed: %+v", got)
	}
}

func sameFile(a, b msgref.File) bool {
	at := a.CreatedAt.Equal(b.CreatedAt)
	a.CreatedAt, b.CreatedAt = time.Time{}, time.Time{}
	return at && a == b
}

func referencedSeqs(t *testing.T, f ReferencesFixture) {
	ctx := context.Background()
	for _, fav := range []msgref.Favorite{{User: 1, Topic: "grp_1", Seq: 5}, {User: 2, Topic: "grp_1", Seq: 5}, {User: 1, Topic: "grp_1", Seq: 9}, {User: 1, Topic: "grp_3", Seq: 6}} {
		fav.CreatedAt = refTime
		if _, err := f.Favorites.AddFavorite(ctx, f.Tenant, fav); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Files.AddFiles(ctx, f.Tenant, []msgref.File{groupFile("grp_1", 5, "a"), groupFile("grp_1", 7, "b"), groupFile("grp_2", 6, "c")}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		topic  string
		lo, hi int64
		want   []int64
	}{
		{"grp_1", 1, 100, []int64{5, 7, 9}},
		{"grp_1", 5, 8, []int64{5, 7}},
		{"grp_1", 6, 6, nil},
		{"grp_2", 1, 100, []int64{6}},
		{"grp_4", 1, 100, nil},
	} {
		got, err := f.Refs.Referenced(ctx, f.Tenant, tt.topic, tt.lo, tt.hi)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, tt.want) && (len(got) != 0 || len(tt.want) != 0) {
			t.Errorf("Referenced(%s, %d, %d) = %v, want %v", tt.topic, tt.lo, tt.hi, got, tt.want)
		}
	}
}

func mediaTopicsKeptOnceInOrder(t *testing.T, f ReferencesFixture) {
	ctx := context.Background()
	const key, other = "acme/1/20300304/0123456789abcdef0123456789abcdef.png", "acme/2/20300304/0123456789abcdef0123456789abcdef.png"
	for _, topic := range []string{"p2p_1_2", "grp_9", "grp_10", "grp_9"} {
		if err := f.Media.AddMediaRef(ctx, f.Tenant, key, topic); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Media.AddMediaRef(ctx, f.Tenant, other, "grp_7"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		key   string
		limit int
		want  []string
	}{
		{key, 10, []string{"grp_10", "grp_9", "p2p_1_2"}},
		{key, 2, []string{"grp_10", "grp_9"}},
		{other, 10, []string{"grp_7"}},
		{"acme/3/20300304/0123456789abcdef0123456789abcdef.png", 10, nil},
	} {
		got, err := f.Media.MediaTopics(ctx, f.Tenant, c.key, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("MediaTopics(%s, %d) = %q, want %q", c.key, c.limit, got, c.want)
		}
	}
}
