package packagevariant_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// TestLoopDownstreamNamesPorchRefuses: a downstream Porch would refuse on
// every try (a package path that climbs out, a Repository name with upper
// case and a slash, a draft name over 253 characters) is a validation
// error at once, and nothing is sent.
func TestLoopDownstreamNamesPorchRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		repo, pkg string
		want      []string
	}{
		"climbing package path": {"deploy", "../../etc/passwd", []string{"spec.downstream.package", `".."`}},
		"repository name":       {"Prod_US/East", "app", []string{"spec.downstream.repo", "Prod_US/East"}},
		"draft name too long":   {"deploy", strings.Repeat("a", 250), []string{"spec.downstream", "253"}},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			pv := newVariant("bad", c.pkg)
			pv.Spec.Downstream.Repo = c.repo
			h.CreateVariant(pv)
			cond := h.WaitVariantCondition("bad", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonValidationError)
			mustContain(t, "Stalled message", cond.Message, c.want...)
			h.Settle()
			if n := h.Sim.Requests()["create packagerevisions"]; n != 0 {
				t.Errorf("%d creates sent for a downstream Porch refuses", n)
			}
		})
	}
}

// TestLoopRefusedForGoodIsNotRetried: an answer the same request gets every
// time (422 from the server, a downstream Repository that does not exist)
// becomes Stalled with reason Refused, the server's message and one Warning
// event; the variant is not retried until something changes, and a change
// that removes the cause brings it back.
func TestLoopRefusedForGoodIsNotRetried(t *testing.T) {
	t.Run("422", func(t *testing.T) {
		h := newHarness(t)
		h.Sim.InjectFault(porchsim.Fault{Verb: "create", Resource: "packagerevisions",
			Err: apierrors.NewInvalid(schema.GroupKind{Group: "porch.kpt.dev", Kind: "PackageRevision"}, "deploy.app.packagevariant-1",
				field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), "deploy.app.packagevariant-1", "refused by a webhook")})})
		h.CreateVariant(newVariant("app", "app"))
		cond := h.WaitVariantCondition("app", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonRefused)
		mustContain(t, "Stalled message", cond.Message, "refused by a webhook", "every try")
		h.Settle()
		sent := h.Sim.Requests()["create packagerevisions"]
		h.resync("app")
		h.Settle()
		if n := h.Sim.Requests()["create packagerevisions"]; n != sent+1 {
			t.Errorf("creates: %d after a resync, want %d (one try per sync, no retries)", n, sent+1)
		}
		if got := h.EventsMatching(packagevariant.ReasonRefused); len(got) != 1 {
			t.Errorf("Refused events %v, want exactly one", got)
		}
		h.Sim.ClearFaults()
		h.resync("app")
		h.waitReady("app")
		h.waitRevisions("app", "packagevariant-1:Draft")
	})
	t.Run("missing repository", func(t *testing.T) {
		h := newHarness(t)
		pv := newVariant("app", "app")
		pv.Spec.Downstream.Repo = "nowhere"
		h.CreateVariant(pv)
		cond := h.WaitVariantCondition("app", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonRefused)
		mustContain(t, "Stalled message", cond.Message, "nowhere", "every try")
		if r := h.condition("app", packagevariant.ConditionReady); r == nil || r.Status != metav1.ConditionFalse || r.Reason != packagevariant.ReasonRefused {
			t.Errorf("Ready %+v, want False with reason Refused", r)
		}
		h.Settle() // no failing key left: nothing is retried
		if n, syncs := h.Sim.Requests()["create packagerevisions"], h.syncCount("app"); n == 0 || n > syncs {
			t.Errorf("%d creates into a missing repository in %d syncs, want one per sync and no retries", n, syncs)
		}
		if got := h.EventsMatching(packagevariant.ReasonRefused); len(got) != 1 {
			t.Errorf("Refused events %v, want exactly one", got)
		}
	})
}

// TestLoopCloneIntoAPlaceholderIsRefused: the downstream package exists in
// Porch only as its placeholder on main (every revision was deleted after
// one was published): Porch refuses every clone. The variant says so,
// Stalled with reason Refused, and does not retry for ever.
func TestLoopCloneIntoAPlaceholderIsRefused(t *testing.T) {
	h := newHarness(t, withSim(func(s *porchsim.Sim) {
		if _, err := s.AddPlaceholder(testNS, "deploy", "app"); err != nil {
			t.Fatal(err)
		}
	}))
	h.CreateVariant(newVariant("app", "app"))
	cond := h.WaitVariantCondition("app", packagevariant.ConditionStalled, metav1.ConditionTrue, packagevariant.ReasonRefused)
	mustContain(t, "Stalled message", cond.Message, "cannot create a new revision", "main branch", "spec.downstream")
	h.Settle()
	sent := h.Sim.Requests()["create packagerevisions"]
	h.Settle()
	if n := h.Sim.Requests()["create packagerevisions"]; n != sent {
		t.Errorf("the refused clone was retried: %d creates, then %d", sent, n)
	}
}
