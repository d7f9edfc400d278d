package cluster

import "testing"

// FuzzDecodeEnvelope: whatever a node channel holds, decoding it never panics, and what it
// accepts can be turned into pushes without indexing out of range.
func FuzzDecodeEnvelope(f *testing.F) {
	for _, seed := range []string{
		`{"kind":"pushes","sent_at":1,"sets":[[3,4]],"pushes":[{"set":0,"kind":"message","message":{"topic":"grp_1","seq":1}}]}`,
		`{"kind":"device","user":3,"device":1,"sets":[[3]],"pushes":[{"set":0,"kind":"event","data":{"type":"x"}}]}`,
		`{"kind":"kick","user":3,"device":1,"token":9}`,
		`{"kind":"pushes","sets":[],"pushes":[{"set":-1,"kind":"read"}]}`,
		`{`, ``, `null`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		e, err := decodeEnvelope(body)
		if err != nil {
			return
		}
		for _, a := range e.addressed() {
			_ = a.Target.Recipients
		}
	})
}
