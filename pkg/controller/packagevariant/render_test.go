package packagevariant

import (
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// TestRenderRetriesBackOff: 5s, then doubling to 5m, per draft; a retry is
// due once its time has come; another draft, or success, starts over.
func TestRenderRetriesBackOff(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(now)
	r := newRenderRetries(clk)
	var got []time.Duration
	for range 9 {
		got = append(got, r.failed("uid", "d1"))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second,
		160 * time.Second, 5 * time.Minute, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff %v, want %v", got, want)
		}
	}
	if d := r.wait("uid", "d1"); d != 5*time.Minute {
		t.Errorf("wait = %v, want 5m", d)
	}
	clk.Step(5 * time.Minute)
	if d := r.wait("uid", "d1"); d != 0 {
		t.Errorf("wait once due = %v, want 0", d)
	}
	if d := r.wait("uid", "d2"); d != 0 {
		t.Errorf("wait for another draft = %v, want 0", d)
	}
	if d := r.failed("uid", "d2"); d != 5*time.Second {
		t.Errorf("first failure of another draft: %v, want 5s", d)
	}
	r.forget("uid")
	if d := r.wait("uid", "d2"); d != 0 {
		t.Errorf("wait after forget = %v, want 0", d)
	}
}
