package bounded

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestChildHoldsPipe: a tool that exits at once but leaves a child holding
// its stdout (in a session of its own, out of its group) must not hold the
// caller: its output comes back about a second later.
func TestChildHoldsPipe(t *testing.T) {
	start := time.Now()
	res, err := Run(context.Background(), Options{Limit: 20 * time.Second}, "/bin/sh", "-c", "setsid sleep 30 & echo help")
	if err != nil || strings.TrimSpace(string(res.Out)) != "help" {
		t.Errorf("Run: %q, %v", res.Out, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestLimit: a tool that never ends is killed at its limit, its group
// with it.
func TestLimit(t *testing.T) {
	start := time.Now()
	res, err := Run(context.Background(), Options{Limit: time.Second}, "/bin/sh", "-c", "sleep 30 & sleep 30")
	if !errors.Is(err, context.DeadlineExceeded) || !res.TimedOut {
		t.Errorf("Run: %v, want a time-out", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}

// TestFlood: a tool that streams without end is stopped at the output cap
// at once, not at its limit, and no more than the cap is kept.
func TestFlood(t *testing.T) {
	start := time.Now()
	res, err := Run(context.Background(), Options{Limit: 30 * time.Second, MaxOutput: 1 << 20}, "/usr/bin/yes", "GPU-00000000-0000-0000-0000-000000000000")
	if !errors.Is(err, ErrTruncated) || !res.Truncated || len(res.Out) != 1<<20 {
		t.Errorf("Run: %d bytes, %v", len(res.Out), err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
}
