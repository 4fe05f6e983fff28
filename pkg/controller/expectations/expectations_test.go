package expectations

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"
)

const timeout = 2 * time.Minute

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newAt(c *clock) *Expectations {
	e := New(timeout)
	e.Now = c.now
	return e
}

// TestWaiting: what an owner waits for (the PackageVariant's use).
func TestWaiting(t *testing.T) {
	const uid, other types.UID = "uid-1", "uid-2"
	notInCache := func(string) bool { return false }
	inCache := func(name string) func(string) bool { return func(n string) bool { return n == name } }
	type step struct {
		do      func(e *Expectations, c *clock)
		inCache func(string) bool
		want    string
	}
	cases := map[string]struct {
		reason string
		steps  []step
	}{
		"NothingExpected": {reason: "an owner that created nothing waits for nothing", steps: []step{{want: ""}}},
		"WaitsUntilObserved": {
			reason: "a created object is waited for until the cache shows it, then never again",
			steps: []step{
				{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d1") }, want: "d1"},
				{want: "d1"},
				{do: func(e *Expectations, _ *clock) { e.Observed(uid, "d1") }, want: ""},
				{want: ""},
			},
		},
		"OtherNameDoesNotSettle": {
			reason: "another object of the same owner does not settle the expectation",
			steps:  []step{{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d2"); e.Observed(uid, "d1") }, want: "d2"}},
		},
		"OtherOwnerDoesNotSettle": {
			reason: "the same name seen for another owner does not settle it",
			steps:  []step{{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d1"); e.Observed(other, "d1") }, want: "d1"}},
		},
		"OldestFirst": {
			reason: "of two pending objects the older is waited for first",
			steps: []step{
				{do: func(e *Expectations, c *clock) { e.Expect(uid, "d2"); c.t = c.t.Add(time.Second); e.Expect(uid, "d1") }, want: "d2"},
				{do: func(e *Expectations, _ *clock) { e.Observed(uid, "d2") }, want: "d1"},
			},
		},
		"CacheCheckSettles": {
			reason: "an observation that raced with Expect is caught by the cache check, and the expectation is cleared",
			steps: []step{
				{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d1") }, inCache: inCache("d1"), want: ""},
				{want: ""},
			},
		},
		"CacheCheckOfOtherName": {
			reason: "only the expected name in the cache settles it",
			steps:  []step{{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d1") }, inCache: inCache("d0"), want: "d1"}},
		},
		"Forget": {
			reason: "a deleted owner's expectations are dropped",
			steps:  []step{{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d1"); e.Forget(uid) }, want: ""}},
		},
		"StillWaitingAtTimeout": {
			reason: "at exactly the timeout the owner still waits",
			steps:  []step{{do: func(e *Expectations, c *clock) { e.Expect(uid, "d1"); c.t = c.t.Add(timeout) }, want: "d1"}},
		},
		"TimesOut": {
			reason: "an object never seen (deleted before the cache showed it) stops blocking after the timeout, for good",
			steps: []step{
				{do: func(e *Expectations, _ *clock) { e.Expect(uid, "d1") }, want: "d1"},
				{do: func(_ *Expectations, c *clock) { c.t = c.t.Add(timeout + time.Second) }, want: ""},
				{do: func(_ *Expectations, c *clock) { c.t = c.t.Add(-time.Hour) }, want: ""},
			},
		},
		"ExpectAgainRestartsTheClock": {
			reason: "expecting a name again restarts its clock",
			steps: []step{{do: func(e *Expectations, c *clock) {
				e.Expect(uid, "d1")
				c.t = c.t.Add(timeout)
				e.Expect(uid, "d1")
				c.t = c.t.Add(time.Minute)
			}, want: "d1"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			e := newAt(c)
			var got, want []string
			for _, s := range tc.steps {
				if s.do != nil {
					s.do(e, c)
				}
				check := s.inCache
				if check == nil {
					check = notInCache
				}
				name, _ := e.Waiting(uid, check)
				got = append(got, name)
				want = append(want, s.want)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: Waiting after each step (-want +got):\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWaitedFor: Waiting says how long the owner has waited (the
// PackageVariant asks Porch after a while).
func TestWaitedFor(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	e := newAt(c)
	e.Expect("uid", "d1")
	c.t = c.t.Add(3 * time.Second)
	if name, waited := e.Waiting("uid", func(string) bool { return false }); name != "d1" || waited != 3*time.Second {
		t.Errorf("Waiting = %q, %v; want d1, 3s", name, waited)
	}
}

// TestAge: how long ago a pending name was created (the
// PackageVariantSet asks the server after CheckAfter); nothing for a name
// that is not pending.
func TestAge(t *testing.T) {
	c := &clock{t: time.Unix(1000, 0)}
	e := newAt(c)
	if age, ok := e.Age("uid", "v1"); ok {
		t.Errorf("Age of a name never expected = %v, true; want false", age)
	}
	e.Expect("uid", "v1")
	c.t = c.t.Add(3 * time.Second)
	if age, ok := e.Age("uid", "v1"); !ok || age != 3*time.Second {
		t.Errorf("Age = %v, %v; want 3s, true", age, ok)
	}
	c.t = c.t.Add(timeout)
	if age, ok := e.Age("uid", "v1"); ok {
		t.Errorf("Age of an overdue name = %v, true; want false", age)
	}
}

// TestPending: whether one name is still expected (the PackageVariantSet's
// use: it must not create a variant it created again).
func TestPending(t *testing.T) {
	const set, other types.UID = "set-1", "set-2"
	type step struct {
		do   func(*Expectations, *clock)
		want bool
	}
	expect := func(uid types.UID, name string) func(*Expectations, *clock) {
		return func(e *Expectations, _ *clock) { e.Expect(uid, name) }
	}
	observe := func(uid types.UID, name string) func(*Expectations, *clock) {
		return func(e *Expectations, _ *clock) { e.Observed(uid, name) }
	}
	cases := map[string]struct {
		reason string
		steps  []step
	}{
		"NothingExpected":      {reason: "a variant the set never created is not pending", steps: []step{{want: false}}},
		"CreatedUntilObserved": {reason: "a created variant is pending until the cache shows it", steps: []step{{do: expect(set, "v1"), want: true}, {want: true}, {do: observe(set, "v1"), want: false}}},
		"OtherNameDoesNotSettle": {reason: "another variant of the set appearing settles only its own expectation",
			steps: []step{{do: expect(set, "v1"), want: true}, {do: expect(set, "v2"), want: true}, {do: observe(set, "v2"), want: true}}},
		"OtherOwnerDoesNotSettle": {reason: "a variant of the same name of another set does not settle it",
			steps: []step{{do: func(e *Expectations, _ *clock) { e.Expect(set, "v1"); e.Observed(other, "v1") }, want: true}}},
		"Overdue": {reason: "a variant the cache never shows is created again after the timeout", steps: []step{
			{do: expect(set, "v1"), want: true},
			{do: func(_ *Expectations, c *clock) { c.t = c.t.Add(timeout - time.Second) }, want: true},
			{do: func(_ *Expectations, c *clock) { c.t = c.t.Add(2 * time.Second) }, want: false},
		}},
		"ForgottenWithTheOwner": {reason: "a deleted set's expectations go with it", steps: []step{
			{do: expect(set, "v1"), want: true},
			{do: func(e *Expectations, _ *clock) { e.Forget(set) }, want: false},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &clock{t: time.Unix(1000, 0)}
			e := newAt(c)
			for i, s := range tc.steps {
				if s.do != nil {
					s.do(e, c)
				}
				if got := e.Pending(set, "v1"); got != s.want {
					t.Errorf("%s\nstep %d: Pending = %v, want %v", tc.reason, i, got, s.want)
				}
			}
		})
	}
}

// TestUnconfirmed: a create whose outcome is unknown is reported until it
// is confirmed (expected again) or settled.
func TestUnconfirmed(t *testing.T) {
	e := New(timeout)
	if _, ok := e.Unconfirmed("uid"); ok {
		t.Fatal("unconfirmed before anything was tried")
	}
	e.ExpectUnconfirmed("uid", "d1")
	if name, ok := e.Unconfirmed("uid"); !ok || name != "d1" {
		t.Fatalf("Unconfirmed = %q, %v; want d1", name, ok)
	}
	if name, _ := e.Waiting("uid", func(string) bool { return false }); name != "d1" {
		t.Errorf("an unconfirmed create is waited for too: Waiting = %q", name)
	}
	e.Expect("uid", "d1")
	if _, ok := e.Unconfirmed("uid"); ok {
		t.Error("still unconfirmed after the create was confirmed")
	}
	e.ExpectUnconfirmed("uid", "d2")
	e.Observed("uid", "d2")
	if _, ok := e.Unconfirmed("uid"); ok {
		t.Error("still unconfirmed after Porch said it does not exist")
	}
}
