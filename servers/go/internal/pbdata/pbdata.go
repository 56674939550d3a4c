// Package pbdata holds the dataset's items as generated protobuf messages
// and builds the streaming feed's events from them, for the front ends that
// send protobuf (gRPC streams, WebSocket binary frames).
package pbdata

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"

	"protobench.dev/servers/go/internal/core"
	pb "protobench.dev/servers/go/internal/gen/protobenchv1"
)

// Items loads dataset.json's `items` (exactly the JSON form of ItemList).
func Items(rawDataset []byte) (*pb.ItemList, error) {
	items := &pb.ItemList{}
	if err := (protojson.UnmarshalOptions{DiscardUnknown: true}).Unmarshal(rawDataset, items); err != nil {
		return nil, fmt.Errorf("dataset items: %w", err)
	}
	return items, nil
}

// Event builds event seq of a feed with n items per event, stamped stampNs,
// when it is sent (the items are the shared, read-only dataset messages).
func Event(items []*pb.Item, seq, n uint32, stampNs int64) *pb.FeedEvent {
	ev := &pb.FeedEvent{Seq: seq, ScheduledNs: stampNs, Items: make([]*pb.Item, n)}
	for j := range n {
		ev.Items[j] = items[core.ItemIndex(seq, n, j, len(items))]
	}
	return ev
}
