package webhook

import (
	"encoding/json"
	"fmt"
	"time"
)

// Event is the JSON body of one webhook request. ID is the same on every retry of the event,
// so a receiver dedupes on it (delivery is at least once).
type Event struct {
	ID     string          `json:"id"`
	Type   EventType       `json:"type"`
	Tenant string          `json:"tenant"`
	Topic  string          `json:"topic"`
	Seq    int64           `json:"seq"`
	At     int64           `json:"at"` // Unix ms the event happened
	Data   json.RawMessage `json:"data"`
}

// EventID names the event of type t about topic's seq: `<topic>:<seq>:<type>`.
func EventID(topic string, seq int64, t EventType) string {
	return fmt.Sprintf("%s:%d:%s", topic, seq, t)
}

// Scan is where an endpoint's passes stand: Mark is from when the next pass looks for
// changed topics, ReplayFrom the point of the last replay (zero: none), before which a topic
// met anew has no events for the endpoint.
type Scan struct {
	Mark       time.Time
	ReplayFrom time.Time
}

// DeadLetter is an event given up on after the endpoint's last attempt; its topic moved on
// (docs/DESIGN.md issue-32 part 2 "Retries, dead letters").
type DeadLetter struct {
	EndpointID int64
	Topic      string
	Seq        int64
	Type       EventType
	Attempts   int
	LastError  string
	At         time.Time
}
