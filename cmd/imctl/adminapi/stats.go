package adminapi

import (
	"context"
	"net/http"
	"net/url"
)

// MonthStats is one month table of GET /stats.
type MonthStats struct {
	Month       string `json:"month"`
	Table       string `json:"table_name"`
	Status      string `json:"status"`
	Messages    int64  `json:"messages"`
	Topics      int64  `json:"topics"`
	GroupTopics int64  `json:"group_topics"`
	P2PTopics   int64  `json:"p2p_topics"`
	FirstAt     int64  `json:"first_at"`
	LastAt      int64  `json:"last_at"`
}

// DayStats is one UTC day of GET /stats.
type DayStats struct {
	Day           string `json:"day"`
	Messages      int64  `json:"messages"`
	GroupMessages int64  `json:"group_messages"`
	P2PMessages   int64  `json:"p2p_messages"`
}

// Stats is the answer of GET /stats.
type Stats struct {
	Users  int64        `json:"users"`
	Groups int64        `json:"groups"`
	Months []MonthStats `json:"months"`
	Days   []DayStats   `json:"days"`
}

// Stats reads the tenant's statistics; from and to are dates YYYY-MM-DD or months YYYYMM,
// empty for an open side.
func (c *Client) Stats(ctx context.Context, from, to string) (Stats, error) {
	q := url.Values{}
	if from != "" {
		q.Set("from", from)
	}
	if to != "" {
		q.Set("to", to)
	}
	path := "/stats"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	var out Stats
	err := c.do(ctx, http.MethodGet, path, nil, &out)
	return out, err
}

type ownerRequest struct {
	UserID int64 `json:"user_id"`
}

// TransferOwnership hands a group to another member; its owner becomes an admin.
func (c *Client) TransferOwnership(ctx context.Context, group, user int64) error {
	return c.do(ctx, http.MethodPut, "/groups/"+id(group)+"/owner", ownerRequest{user}, nil)
}
