package memory

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"github.com/imdhq/imd/core/domain/msgref"
	"github.com/imdhq/imd/ports"
)

// References is ports.Favorites, ports.GroupFiles, ports.References and ports.MediaRefs in
// memory. Referenced covers favorites and file entries; reports live in the Reports fake.
type References struct {
	mu        sync.Mutex
	nextID    int64
	favorites map[string][]msgref.Favorite // tenant → favorites in id order
	files     map[string]map[topicSeqKey]msgref.File
	media     map[string]map[string][]string // tenant → key → topics, ascending
}

var (
	_ ports.Favorites  = (*References)(nil)
	_ ports.GroupFiles = (*References)(nil)
	_ ports.References = (*References)(nil)
	_ ports.MediaRefs  = (*References)(nil)
)

// NewReferences returns empty reference stores.
func NewReferences() *References {
	return &References{
		favorites: map[string][]msgref.Favorite{}, files: map[string]map[topicSeqKey]msgref.File{},
		media: map[string]map[string][]string{},
	}
}

func (s *References) AddFavorite(_ context.Context, tenant string, f msgref.Favorite) (msgref.Favorite, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, have := range s.favorites[tenant] {
		if have.User == f.User && have.Topic == f.Topic && have.Seq == f.Seq {
			return have, nil
		}
	}
	s.nextID++
	f.ID = s.nextID
	f.CreatedAt = f.CreatedAt.UTC().Truncate(1e6)
	s.favorites[tenant] = append(s.favorites[tenant], f)
	return f, nil
}

func (s *References) RemoveFavorite(_ context.Context, tenant string, user int64, topicName string, seq int64) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := len(s.favorites[tenant])
	s.favorites[tenant] = slices.DeleteFunc(s.favorites[tenant], func(f msgref.Favorite) bool {
		return f.User == user && f.Topic == topicName && f.Seq == seq
	})
	return len(s.favorites[tenant]) < n, nil
}

func (s *References) Favorites(_ context.Context, tenant string, user, before int64, limit int) ([]msgref.Favorite, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []msgref.Favorite
	all := s.favorites[tenant]
	for i := len(all) - 1; i >= 0 && len(out) < limit; i-- {
		if f := all[i]; f.User == user && (before <= 0 || f.ID < before) {
			out = append(out, f)
		}
	}
	return out, nil
}

func (s *References) AddFiles(_ context.Context, tenant string, files []msgref.File) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.files[tenant]
	if !ok {
		t = map[topicSeqKey]msgref.File{}
		s.files[tenant] = t
	}
	for _, f := range files {
		if _, have := t[topicSeqKey{f.Topic, f.Seq}]; !have {
			f.CreatedAt = f.CreatedAt.UTC().Truncate(1e6)
			t[topicSeqKey{f.Topic, f.Seq}] = f
		}
	}
	return nil
}

func (s *References) RemoveFile(_ context.Context, tenant, topicName string, seq int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.files[tenant], topicSeqKey{topicName, seq})
	return nil
}

func (s *References) RemoveFileRange(_ context.Context, tenant, topicName string, lo, hi int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for k := range s.files[tenant] {
		if k.topic == topicName && k.seq >= lo && k.seq <= hi {
			delete(s.files[tenant], k)
		}
	}
	return nil
}

func (s *References) Files(_ context.Context, tenant, topicName string, before int64, limit int) ([]msgref.File, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []msgref.File
	for k, f := range s.files[tenant] {
		if k.topic == topicName && (before <= 0 || k.seq < before) {
			out = append(out, f)
		}
	}
	slices.SortFunc(out, func(a, b msgref.File) int { return cmp.Compare(b.Seq, a.Seq) })
	return out[:min(len(out), limit)], nil
}

func (s *References) Referenced(_ context.Context, tenant, topicName string, lo, hi int64) ([]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int64
	for _, f := range s.favorites[tenant] {
		if f.Topic == topicName && f.Seq >= lo && f.Seq <= hi {
			out = append(out, f.Seq)
		}
	}
	for k := range s.files[tenant] {
		if k.topic == topicName && k.seq >= lo && k.seq <= hi {
			out = append(out, k.seq)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

func (s *References) AddMediaRef(_ context.Context, tenant, key, topicName string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.media[tenant] == nil {
		s.media[tenant] = map[string][]string{}
	}
	topics := s.media[tenant][key]
	if i, found := slices.BinarySearch(topics, topicName); !found {
		s.media[tenant][key] = slices.Insert(topics, i, topicName)
	}
	return nil
}

func (s *References) MediaTopics(_ context.Context, tenant, key string, limit int) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	topics := s.media[tenant][key]
	return slices.Clone(topics[:min(len(topics), limit)]), nil
}
