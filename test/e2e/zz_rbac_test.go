//go:build e2e

// The file name sorts after every other test file, so this test runs last
// (go test runs files in name order, tests in source order): it reads the
// audit log of the whole run.

package e2e

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/porch-variants/variant-controller/test/e2eutil"
)

// rbacExceptions are the grants of deploy/rbac the suite does not make the
// controller use, keyed by request ("verb group/resource"), each with why it
// is granted all the same. A grant listed here that the run used, or that
// the manifests no longer hold, fails the test: the list stays true.
var rbacExceptions = map[string]string{
	"get config.porch.kpt.dev/packagevariants": "the set loop reads a variant live only when a create it made was answered " +
		"AlreadyExists and the cache still has not shown the variant expectations.CheckAfter (5s) later " +
		"(packagevariantset/manage.go, awaitCreated): a variant deleted in between, which a real API server's " +
		"watch does not let the suite arrange; TestExpectedVariantThatNeverComesIsCheckedLive covers it on a fake clientset",
}

// TestRBACGrantsAreUsed: every verb deploy/rbac grants the controller's
// ServiceAccount (read from the manifests now, so the check follows them)
// was used by that account during this run: the audit log holds a request
// RBAC allowed through the grant's binding. A grant nothing used is one
// the controller does not need, or one the suite does not reach: remove
// it, reach it, or list it in rbacExceptions with the reason. And the
// other way round: nothing the account asked was refused, but its Lease
// while TestLeaseLossFailsSafe had revoked that permission.
func TestRBACGrantsAreUsed(t *testing.T) {
	for _, name := range []string{"test.run", "test.skip"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			t.Skipf("-%s %q: only some tests ran (E2E_RUN), and the check that every grant was used needs the whole suite", strings.TrimPrefix(name, "test."), f.Value.String())
		}
	}
	grants, err := e2eutil.ServiceAccountGrants(filepath.Join(env.root, "deploy", "rbac"), controllerNS, controllerSA)
	if err != nil {
		t.Fatal(err)
	}
	events, _, err := env.audit.Since(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	mine := e2eutil.Select(events, e2eutil.ByUser(e2eutil.ControllerUser))
	uses := e2eutil.CountUses(grants, mine)

	granted := map[string]bool{}
	var report []string
	for i, g := range grants {
		key := g.Request.String()
		granted[key] = true
		reason, excepted := rbacExceptions[key]
		switch {
		case uses[i] > 0 && excepted:
			t.Errorf("%s was used %d times in this run, yet rbacExceptions says the suite does not reach it (%s): remove the exception", g, uses[i], reason)
		case uses[i] == 0 && !excepted:
			t.Errorf("%s was granted but never used by %s in this run: remove it from the manifest, make the suite reach the code that needs it, or list it in rbacExceptions with the reason", g, e2eutil.ControllerUser)
		}
		line := fmt.Sprintf("%6d  %s", uses[i], g)
		if excepted {
			line += "  [exception: " + reason + "]"
		}
		report = append(report, line)
	}
	for key := range rbacExceptions {
		if !granted[key] {
			t.Errorf("rbacExceptions lists %q, which deploy/rbac no longer grants the controller: remove the exception", key)
		}
	}
	reportf(t, "requests of %s (%d in the run) allowed through each grant of deploy/rbac:\n%s", e2eutil.ControllerUser, len(mine), strings.Join(report, "\n"))

	// TestLeaseLossFailsSafe revokes the leader election Role: the
	// leader's Lease requests are refused from then on, by design.
	notLease := func(e *auditv1.Event) bool {
		r := e2eutil.RequestOf(e)
		return r.Group != "coordination.k8s.io" || r.Resource != "leases"
	}
	refused := e2eutil.Select(mine, e2eutil.Forbidden, notLease)
	if len(refused) > 0 {
		t.Errorf("RBAC refused %d requests of %s that deploy/rbac should grant:\n%s", len(refused), e2eutil.ControllerUser, e2eutil.Summarize(refused))
	}
}
