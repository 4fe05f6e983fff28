package offline

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// The rollout scenario (issue 26) is the fleet scenario with spec.rollout:
// the set takes each variant's wave from its Repository's "wave" label
// (0 to 9, 10 % of the fleet each) and rolls a change out in 10 waves,
// each opening at most half of its variants at once; people publish every
// upgrade draft as soon as the controller has finished it.

// fleetWaves is how many waves the rollout scenario has.
const fleetWaves = 10

// waveOf is the wave of the i-th prod repository.
func waveOf(i int) string { return strconv.Itoa(i % fleetWaves) }

// fleetKind is which scenario a fleet plays.
type fleetKind int

const (
	// plainFleet: every change reaches every variant at once.
	plainFleet fleetKind = iota
	// rolloutFleet: the set rolls changes out in waves.
	rolloutFleet
	// healthFleet: in waves, each variant finishing once its cluster's
	// health object reports the revision it published.
	healthFleet
)

// The health scenario: each prod repository's cluster has a Flux
// Kustomization of its name, whose status says which revision of the
// downstream package it applied (1 at the start); people's Flux applies
// each revision as soon as it is published (the publisher writes it).

// healthObject is the Kustomization of repository repo, having applied
// downstream revision applied.
func healthObject(repo string, applied int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"name": repo, "namespace": fleetNS},
		"status": map[string]any{"lastAppliedRevision": strconv.Itoa(applied),
			"conditions": []any{map[string]any{"type": "Ready", "status": "True"}}},
	}}
}

func healthObjects(n int) []*unstructured.Unstructured {
	out := make([]*unstructured.Unstructured, 0, n)
	for i := range n {
		out = append(out, healthObject(prodRepo(i), 1))
	}
	return out
}

// withRollout adds the waves to the fleet's set, and with health the
// health check.
func withRollout(pvs *configv1alpha2.PackageVariantSet, health bool) {
	tpl := pvs.Spec.Targets[0].Template
	key, expr := "wave", "repository.labels['wave']"
	tpl.LabelExprs = append(tpl.LabelExprs, configv1alpha2.MapExpr{Key: &key, ValueExpr: &expr})
	half := intstr.FromString("50%")
	r := &configv1alpha2.Rollout{}
	for w := range fleetWaves {
		r.Waves = append(r.Waves, configv1alpha2.Wave{
			Name:          "wave-" + strconv.Itoa(w),
			Selector:      &metav1.LabelSelector{MatchLabels: map[string]string{"wave": strconv.Itoa(w)}},
			MaxConcurrent: &half,
		})
	}
	if health {
		r.Health = &configv1alpha2.RolloutHealth{
			APIVersion: "kustomize.toolkit.fluxcd.io/v1", Kind: "Kustomization", NameExpr: "repository.name",
			Current: "object.?status.?lastAppliedRevision.orValue('') == string(revision.revision) && object.status.conditions.exists(c, c.type == 'Ready' && c.status == 'True')",
		}
	}
	pvs.Spec.Rollout = r
}

// publisher publishes, as people would, each draft a variant waits on once
// the controller has finished it (the variant Ready, and Published=False
// waiting for approval of that draft, for its current generation).
type publisher struct {
	mu      sync.Mutex
	pending []string
	seen    map[string]bool
	wake    chan struct{}
	// rolledOut is closed once the set reports RolledOut=True for the
	// wanted upstream revision.
	rolledOut chan struct{}
	done      sync.Once
}

// startPublisher starts publishing the fleet's drafts until stop is
// closed, and watches the set roll revision out.
func (f *fleet) startPublisher(revision int, stop <-chan struct{}) *publisher {
	p := &publisher{seen: map[string]bool{}, wake: make(chan struct{}, 1), rolledOut: make(chan struct{})}
	f.sim.Observe(func(c porchsim.Change) {
		switch obj := c.Object.(type) {
		case *configv1alpha1.PackageVariant:
			if draft := waitingDraft(obj); draft != "" {
				p.add(draft)
			}
		case *configv1alpha2.PackageVariantSet:
			if st := obj.Status.Rollout; st != nil && st.UpstreamRevision == revision &&
				meta.IsStatusConditionTrue(obj.Status.Conditions, rollout.ConditionRolledOut) {
				p.done.Do(func() { close(p.rolledOut) })
			}
		}
	})
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-p.wake:
			}
			for _, name := range p.take() {
				// A draft replaced or published meanwhile is no longer
				// there to publish.
				if f.sim.Publish(fleetNS, name) == nil && f.health {
					// The cluster applies it at once. Each downstream
					// has one revision per upstream revision, so the
					// downstream revision is the upstream's number.
					repo, _, _ := strings.Cut(name, ".")
					_ = f.runner.UpdateObject(f.ctx, healthObject(repo, revision))
				}
			}
		}
	}()
	return p
}

// waitingDraft is the draft a Ready variant waits on to be published, for
// its current generation ("" when none).
func waitingDraft(pv *configv1alpha1.PackageVariant) string {
	ready := meta.FindStatusCondition(pv.Status.Conditions, "Ready")
	pub := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ConditionPublished)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != pv.Generation ||
		pub == nil || pub.Reason != configv1alpha1.ReasonWaitingForApproval || pub.ObservedGeneration != pv.Generation ||
		len(pv.Status.DownstreamTargets) == 0 {
		return ""
	}
	return pv.Status.DownstreamTargets[0].Name
}

func (p *publisher) add(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[name] {
		return
	}
	p.seen[name] = true
	p.pending = append(p.pending, name)
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *publisher) take() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.pending
	p.pending = nil
	return out
}

// rollOut publishes blueprint revision 2 and waits until the set has
// rolled it out to every variant, people publishing as drafts appear.
func (f *fleet) rollOut(tb testing.TB) phase {
	tb.Helper()
	stop := make(chan struct{})
	defer close(stop)
	p := f.startPublisher(2, stop)
	// The waves run one after the other, each paying for its upgrades
	// (porchsim's merge and render) and the readiness delay in turn: three
	// times the bound of the other phases.
	defer func(timeout time.Duration) { f.timeout = timeout }(f.timeout)
	f.timeout *= 3
	return f.measureUntil(tb, "rollout", func() error {
		_, err := f.sim.AddPublished(fleetNS, "blueprints", "app", 2, fleetBlueprint(2))
		return err
	}, p.rolledOut)
}

// checkRolledOut: every variant carries revision 2 and is Ready, every
// downstream has one Published revision from it and no draft, and the set
// reports the rollout complete over the whole fleet.
func (f *fleet) checkRolledOut() []string {
	problems := f.checkVariants()
	for _, pv := range f.sim.PackageVariants(fleetNS) {
		if pv.Spec.Upstream.Revision != 2 {
			problems = append(problems, fmt.Sprintf("variant %s is at upstream revision %d, want 2", pv.Name, pv.Spec.Upstream.Revision))
		}
	}
	if n := len(f.downstream(porchv1alpha1.PackageRevisionLifecycleDraft)); n != 0 {
		problems = append(problems, fmt.Sprintf("%d drafts left after the rollout, want none", n))
	}
	pvs, err := f.sim.Clientset().ConfigV1alpha2().PackageVariantSets(fleetNS).Get(f.ctx, fleetSet, metav1.GetOptions{})
	if err != nil {
		return append(problems, err.Error())
	}
	if st := pvs.Status.Rollout; st == nil || st.Progress != fmt.Sprintf("%d/%d", f.n, f.n) || len(st.Waves) != fleetWaves {
		problems = append(problems, fmt.Sprintf("set rollout status %+v, want %d/%d over %d waves", st, f.n, f.n, fleetWaves))
	}
	return append(problems, f.checkSet()...)
}

// TestFleetRolloutWithHealth runs the rollout scenario small, with and
// without a health check: both roll revision 2 out to every variant (the
// checks of each step); the rollout with the check costs at most one API
// request per variant more, its reads of the health objects counted in,
// and over the whole scenario the health objects cost one GET each, a
// list and a watch (their writes are the clusters', not the
// controllers').
func TestFleetRolloutWithHealth(t *testing.T) {
	requests := map[fleetKind]float64{}
	for _, kind := range []fleetKind{rolloutFleet, healthFleet} {
		f := newFleet(t, 20, kind)
		steps := f.steps()
		for _, s := range steps[:len(steps)-1] {
			f.runStep(t, s)
		}
		before := f.objectReads()
		last := f.runStep(t, steps[len(steps)-1])
		requests[kind] = f.perVariant(last.totalRequests() + f.objectReads()["all"] - before["all"])
		if kind == healthFleet {
			// Over the whole scenario: the informer's list and watch, and
			// one GET per object the first time it is judged (the
			// cache keeps it whole from its next change on).
			if reads := f.objectReads(); reads["get kustomizations"] > f.n || reads["all"] > f.n+2 {
				t.Errorf("reads of the health objects over the whole scenario: %v, want at most one GET per object, a list and a watch", reads)
			}
		}
		f.runner.Stop()
	}
	if extra := requests[healthFleet] - requests[rolloutFleet]; extra > 1 {
		t.Errorf("the rollout with health checks took %.2f API requests per variant, %.2f more than without (%.2f); want at most 1 more",
			requests[healthFleet], extra, requests[rolloutFleet])
	}
	t.Logf("rollout: %.2f API requests per variant without health checks, %.2f with", requests[rolloutFleet], requests[healthFleet])
}

// objectReads are the controllers' requests for in-cluster objects, by
// "<verb> <resource>", and in all under "all" (the writes to them are the
// scenario's, not the controllers').
func (f *fleet) objectReads() map[string]int {
	out := map[string]int{}
	for req, n := range f.runner.ObjectRequests() {
		if !strings.HasPrefix(req, "update ") && !strings.HasPrefix(req, "create ") {
			out[req] += n
			out["all"] += n
		}
	}
	return out
}
