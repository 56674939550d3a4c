package model

// The streaming messages of contract/proto/protobench/v1/stream.proto in
// their canonical JSON form (WebSocket text frames, SSE, polling).

// StreamMessage is protobench.v1.StreamMessage.
type StreamMessage struct {
	Seq     uint32 `json:"seq"`
	Payload string `json:"payload"`
}

// SubscribeRequest is protobench.v1.SubscribeRequest.
type SubscribeRequest struct {
	Count uint32 `json:"count"`
	Items uint32 `json:"items"`
	Rate  uint32 `json:"rate"`
}

// FeedEvent is protobench.v1.FeedEvent.
type FeedEvent struct {
	Seq         uint32 `json:"seq"`
	ScheduledNs int64  `json:"scheduledNs,string"`
	Items       []Item `json:"items"`
}

// UploadSummary is protobench.v1.UploadSummary.
type UploadSummary struct {
	Count    uint32 `json:"count"`
	Bytes    uint64 `json:"bytes,string"`
	Checksum uint32 `json:"checksum"`
}

// FeedPage is protobench.v1.FeedPage.
type FeedPage struct {
	Events []FeedEvent `json:"events"`
	Done   bool        `json:"done"`
}
