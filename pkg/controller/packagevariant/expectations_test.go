package packagevariant

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

// fakeClock is a settable clock for the expectations' now field.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestExpectations(t *testing.T) {
	const uid, other types.UID = "uid-1", "uid-2"
	notInCache := func(string) bool { return false }
	inCache := func(name string) func(string) bool { return func(n string) bool { return n == name } }

	// A step acts on the expectations and then asks waitingFor(uid).
	type step struct {
		do      func(e *expectations, clock *fakeClock)
		inCache func(string) bool
		want    string
	}
	cases := map[string]struct {
		reason string
		steps  []step
	}{
		"NothingExpected": {
			reason: "a variant that created nothing waits for nothing",
			steps:  []step{{want: ""}},
		},
		"WaitsUntilObserved": {
			reason: "a created draft is waited for until the cache shows it, then never again",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1") }, want: "d1"},
				{want: "d1"},
				{do: func(e *expectations, _ *fakeClock) { e.observe(uid, "d1") }, want: ""},
				{want: ""},
			},
		},
		"OtherNameDoesNotSettle": {
			reason: "another revision of the same variant does not settle the expectation",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d2"); e.observe(uid, "d1") }, want: "d2"},
			},
		},
		"OtherVariantDoesNotSettle": {
			reason: "the same name seen for another variant does not settle it",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1"); e.observe(other, "d1") }, want: "d1"},
			},
		},
		"ExpectationsAreKeptPerVariant": {
			reason: "one variant's observation leaves another variant's expectation alone",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) {
					e.expect(uid, "d1")
					e.expect(other, "o1")
					e.observe(other, "o1")
				}, want: "d1"},
			},
		},
		"CacheCheckSettles": {
			reason: "an observation that raced with expect is caught by the cache check, and the expectation is cleared",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1") }, inCache: inCache("d1"), want: ""},
				{want: ""},
			},
		},
		"CacheCheckOfOtherName": {
			reason: "only the expected name in the cache settles it",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1") }, inCache: inCache("d0"), want: "d1"},
			},
		},
		"LaterExpectationReplaces": {
			reason: "a variant waits for its latest creation only",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1"); e.expect(uid, "d2") }, want: "d2"},
				{do: func(e *expectations, _ *fakeClock) { e.observe(uid, "d1") }, want: "d2"},
				{do: func(e *expectations, _ *fakeClock) { e.observe(uid, "d2") }, want: ""},
			},
		},
		"Forget": {
			reason: "a deleted variant's expectation is dropped",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1"); e.forget(uid) }, want: ""},
			},
		},
		"StillWaitingAtTimeout": {
			reason: "at exactly the timeout the variant still waits",
			steps: []step{
				{do: func(e *expectations, clock *fakeClock) {
					e.expect(uid, "d1")
					clock.t = clock.t.Add(expectationTimeout)
				}, want: "d1"},
			},
		},
		"TimesOut": {
			reason: "a draft never seen (deleted before the cache showed it) stops blocking after the timeout",
			steps: []step{
				{do: func(e *expectations, _ *fakeClock) { e.expect(uid, "d1") }, want: "d1"},
				{do: func(_ *expectations, clock *fakeClock) { clock.t = clock.t.Add(expectationTimeout + time.Second) }, want: ""},
				{do: func(_ *expectations, clock *fakeClock) { clock.t = clock.t.Add(-time.Hour) }, want: ""},
			},
		},
		"TimeoutCountsFromLatestExpect": {
			reason: "a new creation restarts the clock",
			steps: []step{
				{do: func(e *expectations, clock *fakeClock) {
					e.expect(uid, "d1")
					clock.t = clock.t.Add(expectationTimeout)
					e.expect(uid, "d2")
					clock.t = clock.t.Add(time.Minute)
				}, want: "d2"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			e := newExpectations()
			e.now = clock.now
			var got, want []string
			for _, s := range tc.steps {
				if s.do != nil {
					s.do(e, clock)
				}
				check := s.inCache
				if check == nil {
					check = notInCache
				}
				got = append(got, e.waitingFor(uid, check))
				want = append(want, s.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: waitingFor after each step (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}
