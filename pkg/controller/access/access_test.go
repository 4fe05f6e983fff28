package access_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/access/accesstest"
	"k8s.io/apimachinery/pkg/runtime/schema"
	testingclock "k8s.io/utils/clock/testing"
)

var configMapGVK = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}

func newChecker(t *testing.T, defaultAccount string) (*access.Checker, *accesstest.RBAC, *testingclock.FakeClock) {
	t.Helper()
	r := accesstest.New()
	r.Grant("team-a", "reader", "configmaps", "settings")
	clk := testingclock.NewFakeClock(time.Unix(1000, 0))
	return r.Checker(access.Options{DefaultServiceAccount: defaultAccount, Clock: clk, DeniedTTL: access.DefaultDeniedTTL}), r, clk
}

// TestMayGet: a ServiceAccount reads what RBAC lets it get, nothing else;
// the refusal names the account, the object and what to grant.
func TestMayGet(t *testing.T) {
	ctx := context.Background()
	c, r, _ := newChecker(t, "")
	if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings"); err != nil {
		t.Errorf("an account allowed to get the ConfigMap was refused: %v", err)
	}
	err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "db-credentials")
	var denied *access.DeniedError
	if !errors.As(err, &denied) {
		t.Fatalf("an account not allowed to get the ConfigMap: %v, want a *DeniedError", err)
	}
	for _, want := range []string{`ServiceAccount team-a/reader may not get configmaps "db-credentials" in namespace team-a`,
		"grant it get on configmaps (a Role and RoleBinding in team-a)", "no RBAC rule allows it"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q does not say %q", err, want)
		}
	}
	if err := c.MayGet(ctx, "team-a", "", configMapGVK, "db-credentials"); err != nil {
		t.Errorf("no account and no default: the controller's own permissions apply, got %v", err)
	}
	if len(r.Asked()) != 2 {
		t.Errorf("asked %v, want two reviews", r.Asked())
	}
	if err := c.MayGet(ctx, "team-a", "reader", schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Nope"}, "x"); err == nil || errors.As(err, &denied) {
		t.Errorf("a kind the cluster does not serve: %v, want an error that is not a refusal", err)
	}
}

// TestAnswersAreCached: one review per account and object while the answer
// is fresh; a refusal is asked again after DeniedTTL (a grant takes
// effect), a permission after AllowedTTL (a revocation takes effect).
func TestAnswersAreCached(t *testing.T) {
	ctx := context.Background()
	c, r, clk := newChecker(t, "")
	for range 5 {
		_ = c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings")
		_ = c.MayGet(ctx, "team-a", "reader", configMapGVK, "other")
	}
	if len(r.Asked()) != 2 || c.Reviews() != 2 {
		t.Fatalf("asked %v (%d reviews) for ten reads of two objects, want two", r.Asked(), c.Reviews())
	}
	r.Grant("team-a", "reader", "configmaps", "other")
	clk.Step(access.DefaultDeniedTTL + time.Second)
	if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "other"); err != nil {
		t.Errorf("a grant made after a refusal is not seen after DeniedTTL: %v", err)
	}
	r.Revoke("team-a", "reader", "configmaps", "settings")
	if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings"); err != nil {
		t.Errorf("a permission is trusted for AllowedTTL: %v", err)
	}
	clk.Step(access.DefaultAllowedTTL)
	if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings"); err == nil {
		t.Error("a revoked permission is still trusted after AllowedTTL")
	}
}

// TestDefaultAccount: --default-service-account applies to what names no
// account; an account named wins.
func TestDefaultAccount(t *testing.T) {
	ctx := context.Background()
	c, _, _ := newChecker(t, "nobody")
	if got := c.Account(""); got != "nobody" {
		t.Errorf("Account(\"\") = %q, want the default", got)
	}
	if got := c.Account("reader"); got != "reader" {
		t.Errorf("Account(reader) = %q", got)
	}
	if err := c.MayGet(ctx, "team-a", c.Account(""), configMapGVK, "settings"); err == nil {
		t.Error("the default account, which may read nothing, read the ConfigMap")
	}
	var nilChecker *access.Checker
	if nilChecker.Account("") != "" || nilChecker.MayGet(ctx, "team-a", "x", configMapGVK, "y") != nil {
		t.Error("a nil Checker must allow everything (offline runs)")
	}
}

// TestReviewFails: a review that fails is an error, not a refusal, and is
// not remembered.
func TestReviewFails(t *testing.T) {
	ctx := context.Background()
	c, r, _ := newChecker(t, "")
	r.Fail(errors.New("connection refused"))
	err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings")
	var denied *access.DeniedError
	if err == nil || errors.As(err, &denied) || !strings.Contains(err.Error(), "SubjectAccessReview") {
		t.Fatalf("failed review: %v, want an error naming the review", err)
	}
	r.Fail(nil)
	if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings"); err != nil {
		t.Errorf("after the API server is back: %v", err)
	}
}

// BenchmarkMayGetCached is the cost of a check whose answer is cached (the
// common case: every sync of a variant checks each object it injects).
func BenchmarkMayGetCached(b *testing.B) {
	r := accesstest.New()
	r.Grant("team-a", "reader", "configmaps", "settings")
	c := r.Checker(access.Options{})
	ctx := context.Background()
	if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := c.MayGet(ctx, "team-a", "reader", configMapGVK, "settings"); err != nil {
			b.Fatal(err)
		}
	}
}
