package main

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestDrainWebSocket: a WebSocket subscription in flight when SIGTERM
// arrives still gets all its events and the clean close (net/http's
// Shutdown does not wait for hijacked connections; the server does), and
// the server then exits 0.
func TestDrainWebSocket(t *testing.T) {
	s := startServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws://"+s.addr["rest"]+"/v1/stream/ws/subscribe", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.CloseNow()
	// 8 events at 4/s: about 1.75 s after the first.
	if err := c.Write(ctx, websocket.MessageText, []byte(`{"count":8,"rate":4}`)); err != nil {
		t.Fatal(err)
	}
	seqs := []uint32{}
	for {
		_, b, err := c.Read(ctx)
		if err != nil {
			var ce websocket.CloseError
			if !errors.As(err, &ce) || ce.Code != websocket.StatusNormalClosure {
				t.Fatalf("after %v: %v, want close 1000", seqs, err)
			}
			break
		}
		var ev struct{ Seq uint32 }
		json.Unmarshal(b, &ev)
		seqs = append(seqs, ev.Seq)
		if len(seqs) == 1 {
			if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(seqs) != 8 || seqs[7] != 8 {
		t.Errorf("events %v, want 1..8", seqs)
	}
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v, want 0", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("still running 30 s after SIGTERM")
	}
}
