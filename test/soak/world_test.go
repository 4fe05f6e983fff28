package soak

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

const (
	// personUser is the Sim user of the people (Sim.ClientsetAs);
	// watcherUser that of the person of a busy seed who edits drafts the
	// moment the controllers wrote them (watchDrafts). Two people write at
	// once through clients of their own, as two kubectl users do: the
	// Sim's overlap check is about one client's writes.
	personUser  = "person"
	watcherUser = "person-watching-drafts"
	ns          = "soak"
	decoyNS     = "decoy"
	setName     = "fleet"
	// rolloutSetName is the second set: the first rolloutSites sites get
	// the blueprint as package rolloutPkg, rolled out in waves by region
	// (rolloutSet).
	rolloutSetName = "waves"
	rolloutPkg     = "edge"
	rolloutSites   = 12
	handRepo       = "hand"
	// color is what the soak's settings ConfigMap holds; the decoy of the
	// same name in another namespace holds decoyColor.
	color      = "teal"
	decoyColor = "decoy-must-never-be-injected"
	// editMark is in every file a person adds.
	editMark = "by: a person"
	// maxUpstream bounds the upstream revisions people publish.
	maxUpstream = 6
)

// world is one seed's fleet: the Sim, the controllers, the people, the
// faults and the monitor.
type world struct {
	t       *testing.T
	cfg     config
	ctx     context.Context
	sim     *porchsim.Sim
	person  versioned.Interface
	watcher versioned.Interface // the person of watchDrafts
	objects []*unstructured.Unstructured
	mon     *monitor
	counts  *counts
	start   time.Time

	// live is the Sim user of the controllers running now ("" while they
	// are going down): each start is a client of its own, as a new process
	// is, and every request of another (a process going down, a restart
	// mid-sync) fails.
	live        atomic.Value // string
	incarnation int
	// chaosOn enables the random faults.
	chaosOn atomic.Bool
	// justWritten receives, in a busy seed, the drafts whose write by the
	// controllers was made but whose answer is held back: a person edits
	// each at once, inside the window between the write and the
	// controllers' next step, and then lets the answer go (see
	// config.busy).
	justWritten chan heldAnswer

	// mu guards runner, rng and counts.
	mu     sync.Mutex
	runner *offline.Runner
	rng    *rand.Rand
	// chaosRng draws the faults; the chaos function runs under the Sim's
	// lock, so it needs no lock of its own.
	chaosRng *rand.Rand
	upstream int // the newest published upstream revision
	// upstreamAt is when the newest upstream revision was published: new
	// ones are spread over the chaos phase, so that drafts go stale (and
	// are replaced) all through it, not only in its first seconds.
	upstreamAt time.Time
	// placeholders are the packages with a placeholder revision (main).
	placeholders map[string]bool
}

func blueprint(revision int) map[string]string {
	return ctrlfixture.Blueprint(revision, "the soak's blueprint", map[string]string{
		"settings.yaml": ctrlfixture.InjectionPoint("settings", "color"),
	})
}

func configMap(namespace, name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]interface{}{"namespace": namespace, "name": name},
		"data":       map[string]interface{}{"color": value},
	}}
}

func siteName(i int) string { return fmt.Sprintf("site-%02d", i) }

func siteLabels(i int, prod bool) map[string]string {
	env := "dev"
	if prod {
		env = "prod"
	}
	labels := map[string]string{"env": env, "region": []string{"eu", "us", "ap"}[i%3]}
	if i < rolloutSites {
		// people never change it: the rollout set's variants stay
		labels["rollout"] = rolloutSetName
	}
	return labels
}

// newWorld builds the fleet: the blueprint, the site repositories (about
// two thirds labelled env=prod), the hand repository, the settings
// ConfigMap and its decoy.
func newWorld(t *testing.T, cfg config) *world {
	w := &world{
		t:            t,
		cfg:          cfg,
		sim:          porchsim.New(),
		counts:       newCounts(),
		rng:          rand.New(rand.NewPCG(uint64(cfg.seed), 1)),
		chaosRng:     rand.New(rand.NewPCG(uint64(cfg.seed), 2)),
		placeholders: map[string]bool{},
		start:        time.Now(),
		justWritten:  make(chan heldAnswer, 64),
	}
	w.person = w.sim.ClientsetAs(personUser)
	w.watcher = w.sim.ClientsetAs(watcherUser)
	w.objects = []*unstructured.Unstructured{
		configMap(ns, "settings", color),
		configMap(decoyNS, "settings", decoyColor),
	}
	if cfg.health {
		for i := range w.rollingSites() {
			w.objects = append(w.objects, healthObject(i, "", "healthy"))
		}
	}
	w.mon = newMonitor(w.start, newRolloutMonitor(w.rolloutSet().Spec.Rollout, min(cfg.sites, rolloutSites), cfg.health))
	w.sim.Observe(w.mon.observe)
	w.ctx = klog.NewContext(context.Background(), logr.New(&logSink{mon: w.mon}))
	w.sim.AddRepository(ns, "blueprints", false, nil)
	if _, err := w.sim.AddPublished(ns, "blueprints", "app", 1, blueprint(1)); err != nil {
		t.Fatal(err)
	}
	w.upstream = 1
	w.sim.AddRepository(ns, handRepo, true, nil)
	for i := range cfg.sites {
		w.sim.AddRepository(ns, siteName(i), true, siteLabels(i, w.rng.IntN(3) > 0))
	}
	w.sim.SetChaos(w.chaos)
	return w
}

func (w *world) logf(format string, args ...any) {
	w.mon.timeline(fmt.Sprintf(format, args...))
}

// set is the PackageVariantSet: every env=prod site gets the blueprint,
// with a package context computed by CEL and the settings injected.
func (w *world) set() *configv1alpha2.PackageVariantSet {
	policy := configv1alpha1.DeletionPolicyDelete
	if w.cfg.seed%2 == 0 {
		policy = configv1alpha1.DeletionPolicyOrphan
	}
	return siteSet(setName, map[string]string{"env": "prod"}, &configv1alpha2.PackageVariantTemplate{
		DeletionPolicy: &policy,
		Labels:         map[string]string{"fleet": "app"},
		PackageContext: &configv1alpha2.PackageContextTemplate{
			DataExprs: []configv1alpha2.MapExpr{
				{Key: ptr.To("site"), ValueExpr: ptr.To("repository.name")},
				{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")},
			},
		},
		Injectors: []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("settings")}},
	})
}

// rolloutSet is the set that rolls out in waves: the first rolloutSites
// sites (labelled rollout=waves whatever their env, so people's relabelling
// never adds or removes its variants; few, so that waves finish under the
// faults even in a long soak, where the controllers take most of its
// length to make the other set's variants ready) get the blueprint as
// package edge, labelled with the site's region; a change reaches the eu
// sites first, two at a time, then the us sites, half of them at a time,
// then the rest, three at a time. People publish its drafts as they do the
// others'; no soak, and failures never halt it.
func (w *world) rolloutSet() *configv1alpha2.PackageVariantSet {
	policy := configv1alpha1.DeletionPolicyDelete
	pvs := siteSet(rolloutSetName, map[string]string{"rollout": rolloutSetName}, &configv1alpha2.PackageVariantTemplate{
		Downstream:     &configv1alpha2.DownstreamTemplate{Package: ptr.To(rolloutPkg)},
		DeletionPolicy: &policy,
		Labels:         map[string]string{"fleet": rolloutPkg},
		LabelExprs:     []configv1alpha2.MapExpr{{Key: ptr.To("region"), ValueExpr: ptr.To("repository.labels['region']")}},
		PackageContext: &configv1alpha2.PackageContextTemplate{
			DataExprs: []configv1alpha2.MapExpr{{Key: ptr.To("site"), ValueExpr: ptr.To("repository.name")}},
		},
		Injectors: []configv1alpha2.InjectionSelectorTemplate{{Kind: ptr.To("ConfigMap"), Name: ptr.To("settings")}},
	})
	pvs.Spec.Rollout = &configv1alpha2.Rollout{
		Waves: []configv1alpha2.Wave{
			{Name: "eu", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}, MaxConcurrent: ptr.To(intstr.FromInt32(2))},
			{Name: "us", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "us"}}, MaxConcurrent: ptr.To(intstr.FromString("50%"))},
			{Name: "rest", MaxConcurrent: ptr.To(intstr.FromInt32(3))},
		},
		SoakSeconds: ptr.To(int32(0)),
		MaxFailures: ptr.To(int32(1000)),
	}
	if w.cfg.health {
		pvs.Spec.Rollout.Health = rolloutHealth()
	}
	return pvs
}

// siteSet is a set named name of the blueprint for every site repository
// labelled with selector, each variant made from tpl.
func siteSet(name string, selector map[string]string, tpl *configv1alpha2.PackageVariantTemplate) *configv1alpha2.PackageVariantSet {
	return &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{LabelSelector: metav1.LabelSelector{MatchLabels: selector}},
				Template:           tpl,
			}},
		},
	}
}

// rolloutVariantLabels are the labels rolloutSet gives the variant of site
// i (what its wave is chosen by).
func rolloutVariantLabels(i int) map[string]string {
	return map[string]string{"fleet": rolloutPkg, "region": siteLabels(i, false)["region"]}
}

// handVariant is hand-written variant i: into hand/app-i, half of them
// deleting their packages when deleted, the first pinned to upstream
// revision 1, the second with a prepended function.
func (w *world) handVariant(i int) *configv1alpha1.PackageVariant {
	name := fmt.Sprintf("hand-%d", i)
	policy := configv1alpha1.DeletionPolicyOrphan
	if i%2 == 0 {
		policy = configv1alpha1.DeletionPolicyDelete
	}
	pv := &configv1alpha1.PackageVariant{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: configv1alpha1.PackageVariantSpec{
			Upstream:       &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Downstream:     &configv1alpha1.Downstream{Repo: handRepo, Package: fmt.Sprintf("app-%d", i)},
			DeletionPolicy: policy,
			// A recreated variant takes over what its predecessor left.
			AdoptionPolicy: configv1alpha1.AdoptionPolicyAdoptExisting,
			Labels:         map[string]string{"hand": name},
			PackageContext: &configv1alpha1.PackageContext{Data: map[string]string{"owner": name}},
			Injectors:      []configv1alpha1.InjectionSelector{{Name: "settings"}},
		},
	}
	switch i {
	case 0:
		pv.Spec.Upstream.Revision = 1
	case 1:
		pv.Spec.Pipeline = &kptfilev1.Pipeline{Mutators: []kptfilev1.Function{{
			Image:     "ghcr.io/kptdev/krm-functions-catalog/set-namespace:v0.4.5",
			ConfigMap: map[string]string{"namespace": "app-hand"},
		}}}
	}
	return pv
}

// chaos decides the fate of each request of the controllers.
func (w *world) chaos(r porchsim.Request) *porchsim.Fault {
	if r.User == personUser || r.User == watcherUser {
		return nil // people retry by hand; their requests are not faulted
	}
	if live, _ := w.live.Load().(string); r.User != live {
		w.count("fault", "process going down (restart)")
		return &porchsim.Fault{Err: errors.New("dial tcp 10.96.0.1:443: connect: connection refused")}
	}
	if !w.chaosOn.Load() {
		return nil
	}
	write := r.Verb == "create" || r.Verb == "update" || r.Verb == "patch" || r.Verb == "delete"
	// A write into a draft, in a busy seed: its answer may come late (or
	// be lost late), and a person edits the draft meanwhile.
	draftWrite := w.cfg.busy && (r.Verb == "create" && r.Resource == "packagerevisions" || r.Verb == "update" && r.Resource == "packagerevisionresources")
	if w.chaosRng.Float64() >= 0.05 {
		if !draftWrite || w.chaosRng.Float64() >= 0.4 {
			return nil
		}
		f := &porchsim.Fault{AfterEffect: true}
		if w.chaosRng.IntN(3) == 0 {
			w.count("fault", "answer late (busy machine)")
		} else {
			w.count("fault", "answer lost late (busy machine)")
			f.Err = porchsim.TimeoutError("the response was lost")
		}
		return w.holdForAPerson(r.Name, f)
	}
	kinds := []string{"500 without effect", "timeout without effect"}
	if write {
		kinds = append(kinds, "timeout after effect", "500 after effect")
		if r.Verb == "update" || r.Verb == "patch" {
			kinds = append(kinds, "conflict")
		}
	}
	if r.Verb == "watch" {
		kinds = []string{"watch refused"}
	}
	kind := kinds[w.chaosRng.IntN(len(kinds))]
	w.count("fault", kind)
	switch kind {
	case "timeout without effect":
		return &porchsim.Fault{Err: porchsim.TimeoutError("the request timed out")}
	case "timeout after effect", "500 after effect":
		f := &porchsim.Fault{Err: porchsim.ServerError("the response was lost"), AfterEffect: true}
		if kind == "timeout after effect" {
			f.Err = porchsim.TimeoutError("the response was lost")
		}
		if draftWrite {
			return w.holdForAPerson(r.Name, f)
		}
		return f
	case "conflict":
		return &porchsim.Fault{Err: porchsim.ConflictError(r.Resource, r.Name)}
	}
	return &porchsim.Fault{}
}

// heldAnswer is a draft the controllers just wrote, whose answer waits
// until done is closed.
type heldAnswer struct {
	draft string
	done  chan struct{}
}

// holdForAPerson makes f hold the controllers' answer about draft back
// until a person has edited the draft (a second at most), as a machine too
// busy to run the controllers would: the edit lands between their write and
// their next step. It is called with the Sim's lock held (from chaos), so
// it does not wait to hand the draft over.
func (w *world) holdForAPerson(draft string, f *porchsim.Fault) *porchsim.Fault {
	h := heldAnswer{draft: draft, done: make(chan struct{})}
	select {
	case w.justWritten <- h:
		f.Delay, f.Until = time.Second, h.done
	default:
	}
	return f
}

// count is called with the Sim's lock held (from chaos) or not; it only
// takes the world's own counter lock.
func (w *world) count(what, kind string) {
	countMu.Lock()
	defer countMu.Unlock()
	switch what {
	case "fault":
		w.counts.faults[kind]++
	case "person":
		w.counts.actions[kind]++
	}
}

var countMu sync.Mutex

func (w *world) startControllers() {
	w.incarnation++
	user := fmt.Sprintf("controllers-%d", w.incarnation)
	w.live.Store(user)
	w.mu.Lock()
	objects := w.objects
	w.mu.Unlock()
	ctx := klog.NewContext(w.ctx, klog.FromContext(w.ctx).WithValues("run", w.incarnation))
	r, err := offline.Start(ctx, w.sim, offline.Options{
		Objects:        objects,
		Workers:        4,
		ReadinessDelay: 20 * time.Millisecond,
		User:           user,
	})
	if err != nil {
		w.t.Fatalf("start the controllers: %v", err)
	}
	w.mu.Lock()
	w.runner = r
	w.mu.Unlock()
}

// restart stops the controllers as a crash would (every request fails
// from that moment, so syncs in flight stop half-way) and starts new ones
// with empty caches and queues.
func (w *world) restart() {
	w.mu.Lock()
	r := w.runner
	w.mu.Unlock()
	w.live.Store("")
	r.Stop()
	w.startControllers()
	countMu.Lock()
	w.counts.restarts++
	countMu.Unlock()
	w.logf("controllers restarted")
}

func (w *world) currentRunner() *offline.Runner {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.runner
}

// between draws a duration in [lo, hi).
func between(rng *rand.Rand, lo, hi time.Duration) time.Duration {
	return lo + time.Duration(rng.Int64N(int64(hi-lo)))
}

// disturb lags, breaks and restarts the controllers' view of the world
// until stop is closed.
func (w *world) disturb(stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(w.cfg.seed), 3))
	nextRestart := time.Now().Add(between(rng, time.Second, 3*time.Second))
	for {
		select {
		case <-stop:
			w.sim.ReleaseWatchEvents()
			return
		case <-time.After(between(rng, 50*time.Millisecond, 300*time.Millisecond)):
		}
		switch {
		case time.Now().After(nextRestart):
			w.restart()
			nextRestart = time.Now().Add(between(rng, time.Second, 3*time.Second))
		case rng.IntN(3) == 0:
			n := w.sim.BreakWatches()
			countMu.Lock()
			w.counts.breaks += n
			countMu.Unlock()
			w.logf("%d watches broken", n)
		default:
			hold := between(rng, 20*time.Millisecond, 400*time.Millisecond)
			w.sim.HoldWatchEvents()
			countMu.Lock()
			w.counts.holds++
			countMu.Unlock()
			select {
			case <-stop:
			case <-time.After(hold):
			}
			w.sim.ReleaseWatchEvents()
		}
	}
}

// act makes people act until stop is closed.
func (w *world) act(stop <-chan struct{}) {
	// A draw of its own, so that the other actions draw as they did before
	// the rollout set was there.
	rng := rand.New(rand.NewPCG(uint64(w.cfg.seed), 5))
	// adoption and health draw on their own too
	rolloutRng := rand.New(rand.NewPCG(uint64(w.cfg.seed), 6))
	var adoptAt time.Time
	if w.cfg.adopt {
		adoptAt = time.Now().Add(between(rolloutRng, w.cfg.duration/10, w.cfg.duration*6/10))
	}
	for {
		select {
		case <-stop:
			return
		case <-time.After(between(w.rng, 10*time.Millisecond, 60*time.Millisecond)):
		}
		w.actOnce()
		if rng.IntN(2) == 0 {
			w.publishRolloutDraft(rng)
		}
		if !adoptAt.IsZero() && time.Now().After(adoptAt) {
			w.adoptRollout()
			adoptAt = time.Time{}
		}
		if w.cfg.health && rolloutRng.IntN(3) == 0 {
			w.flipHealth(rolloutRng)
		}
	}
}

// publishRolloutDraft is a person publishing, as the rollout set's waves
// ask, the drafts and proposals of its variants that say they wait for
// approval (Published=False, WaitingForApproval, for their generation),
// and now and then one more open draft of them at random, ready or not:
// the waves go on under the faults.
func (w *world) publishRolloutDraft(rng *rand.Rand) {
	ready := map[string]bool{}
	for _, pv := range w.sim.PackageVariants(ns) {
		pub := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ConditionPublished)
		if _, owner := controllerOf(&pv); owner != "PackageVariantSet "+rolloutSetName || pub == nil ||
			pub.Reason != configv1alpha1.ReasonWaitingForApproval || pub.ObservedGeneration != pv.Generation {
			continue
		}
		for _, t := range pv.Status.DownstreamTargets {
			ready[t.Name] = true
		}
	}
	var open, publish []string
	for _, pr := range w.sim.PackageRevisions(ns) {
		if pr.Spec.PackageName == rolloutPkg && !helper.IsPlaceholder(&pr) &&
			(pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed) {
			open = append(open, pr.Name)
			if ready[pr.Name] {
				publish = append(publish, pr.Name)
			}
		}
	}
	sort.Strings(open)
	if len(open) > 0 && rng.IntN(4) == 0 {
		publish = append(publish, open[rng.IntN(len(open))])
	}
	for _, name := range publish {
		err := w.sim.Publish(ns, name)
		if err == nil {
			w.count("person", "publish a rollout draft")
		}
		w.logf("person publishes %s (rollout): %v", name, err)
	}
}

// watchDrafts is the person of a busy seed who edits each draft the
// controllers just wrote at once, as if they had opened it the moment it
// changed, and only then lets the controllers' answer go; until stop is
// closed.
func (w *world) watchDrafts(stop <-chan struct{}) {
	rng := rand.New(rand.NewPCG(uint64(w.cfg.seed), 4))
	for {
		select {
		case <-stop:
			return
		case h := <-w.justWritten:
			w.editDraft(w.watcher, h.draft, fmt.Sprintf("edit-%d.yaml", rng.Int64()), "edit a draft the controllers just wrote")
			close(h.done)
		}
	}
}

// editDraft adds file to a draft through Porch's API, as the person of
// client does; a revision that is not a Draft (any more) is left alone.
func (w *world) editDraft(client versioned.Interface, name, file, what string) {
	ctx := context.Background()
	content := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  %s\n", file[:len(file)-5], editMark)
	err := retry(func() error {
		pr, err := client.PorchV1alpha1().PackageRevisions(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
			return errNotADraft
		}
		prr, err := client.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		prr.Spec.Resources[file] = content
		_, err = client.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{})
		return err
	})
	if err == nil {
		w.mon.edited(name, file, content)
		w.count("person", what)
	}
	w.logf("person edits %s (%s): %v", name, file, err)
}

// errNotADraft: a person does not edit a revision once it left Draft.
var errNotADraft = errors.New("not a Draft")

// retry runs a person's request until it succeeds or fails for good; a
// person re-runs kubectl after a conflict.
func retry(f func() error) error {
	var err error
	for range 5 {
		if err = f(); err == nil || !apierrors.IsConflict(err) {
			return err
		}
	}
	return err
}

func (w *world) actOnce() {
	ctx := context.Background()
	prs := w.sim.PackageRevisions(ns)
	pick := func(ok func(*porchv1alpha1.PackageRevision) bool) *porchv1alpha1.PackageRevision {
		var c []*porchv1alpha1.PackageRevision
		for i := range prs {
			if prs[i].Spec.RepositoryName != "blueprints" && ok(&prs[i]) {
				c = append(c, &prs[i])
			}
		}
		if len(c) == 0 {
			return nil
		}
		return c[w.rng.IntN(len(c))]
	}
	lifecycle := func(l porchv1alpha1.PackageRevisionLifecycle) func(*porchv1alpha1.PackageRevision) bool {
		return func(pr *porchv1alpha1.PackageRevision) bool {
			return pr.Spec.Lifecycle == l && pr.Spec.WorkspaceName != "main"
		}
	}
	// deleteOne deletes a revision in lifecycle l, if there is one, as a
	// person; format logs its name and the answer.
	deleteOne := func(l porchv1alpha1.PackageRevisionLifecycle, action, format string) {
		pr := pick(lifecycle(l))
		if pr == nil {
			return
		}
		w.mon.personDeletes(pr.Name)
		err := w.person.PorchV1alpha1().PackageRevisions(ns).Delete(ctx, pr.Name, metav1.DeleteOptions{})
		w.count("person", action)
		w.logf(format, pr.Name, err)
	}
	switch n := w.rng.IntN(100); {
	case n < 22: // edit a draft
		pr := pick(lifecycle(porchv1alpha1.PackageRevisionLifecycleDraft))
		if pr == nil {
			return
		}
		w.editDraft(w.person, pr.Name, fmt.Sprintf("edit-%d.yaml", w.rng.Int64()), "edit a draft")
	case n < 34: // propose a draft
		pr := pick(lifecycle(porchv1alpha1.PackageRevisionLifecycleDraft))
		if pr == nil {
			return
		}
		err := retry(func() error {
			live, err := w.person.PorchV1alpha1().PackageRevisions(ns).Get(ctx, pr.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if live.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft {
				return nil
			}
			live.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleProposed
			_, err = w.person.PorchV1alpha1().PackageRevisions(ns).Update(ctx, live, metav1.UpdateOptions{})
			return err
		})
		w.count("person", "propose a draft")
		w.logf("person proposes %s: %v", pr.Name, err)
	case n < 46: // approve a proposal
		pr := pick(lifecycle(porchv1alpha1.PackageRevisionLifecycleProposed))
		if pr == nil {
			return
		}
		err := w.sim.Publish(ns, pr.Name)
		w.count("person", "publish a proposed revision")
		w.logf("person publishes %s: %v", pr.Name, err)
	case n < 52: // publish a new upstream revision
		if w.upstream >= maxUpstream || time.Since(w.upstreamAt) < w.cfg.duration/maxUpstream {
			return
		}
		w.upstream++
		w.upstreamAt = time.Now()
		_, err := w.sim.AddPublished(ns, "blueprints", "app", w.upstream, blueprint(w.upstream))
		w.count("person", "publish a new upstream revision")
		w.logf("person publishes blueprints/app revision %d: %v", w.upstream, err)
	case n < 62: // relabel a site
		i := w.rng.IntN(w.cfg.sites)
		prod := w.rng.IntN(3) > 0
		w.sim.AddRepository(ns, siteName(i), true, siteLabels(i, prod))
		w.count("person", "relabel a repository")
		w.logf("person labels %s env=%s", siteName(i), siteLabels(i, prod)["env"])
	case n < 70: // delete a hand variant
		name := fmt.Sprintf("hand-%d", w.rng.IntN(w.cfg.hand))
		err := w.person.ConfigV1alpha1().PackageVariants(ns).Delete(ctx, name, metav1.DeleteOptions{})
		if err == nil {
			w.count("person", "delete a variant")
		}
		w.logf("person deletes PackageVariant %s: %v", name, err)
	case n < 80: // create a missing hand variant
		i := w.rng.IntN(w.cfg.hand)
		_, err := w.person.ConfigV1alpha1().PackageVariants(ns).Create(ctx, w.handVariant(i), metav1.CreateOptions{})
		if err == nil {
			w.count("person", "create a variant")
		}
		w.logf("person creates PackageVariant hand-%d: %v", i, err)
	case n < 83: // change a hand variant
		name := fmt.Sprintf("hand-%d", w.rng.IntN(w.cfg.hand))
		value := fmt.Sprintf("v%d", w.rng.IntN(4))
		err := retry(func() error {
			pv, err := w.person.ConfigV1alpha1().PackageVariants(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			pv.Spec.PackageContext.Data["tier"] = value
			_, err = w.person.ConfigV1alpha1().PackageVariants(ns).Update(ctx, pv, metav1.UpdateOptions{})
			return err
		})
		if err == nil {
			w.count("person", "change a variant")
		}
		w.logf("person sets tier=%s on PackageVariant %s: %v", value, name, err)
	case n < 86: // delete the set
		err := w.person.ConfigV1alpha2().PackageVariantSets(ns).Delete(ctx, setName, metav1.DeleteOptions{})
		if err == nil {
			w.count("person", "delete the set")
		}
		w.logf("person deletes the PackageVariantSet: %v", err)
	case n < 92: // create the set
		_, err := w.person.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, w.set(), metav1.CreateOptions{})
		if err == nil {
			w.count("person", "create the set")
		}
		w.logf("person creates the PackageVariantSet: %v", err)
	case n < 96: // approve a proposed deletion
		deleteOne(porchv1alpha1.PackageRevisionLifecycleDeletionProposed, "approve a proposed deletion", "person deletes %s (DeletionProposed): %v")
	default: // delete a draft
		deleteOne(porchv1alpha1.PackageRevisionLifecycleDraft, "delete a draft", "person deletes draft %s: %v")
	}
}

// runSeed soaks one seed and checks the invariants; it returns what it
// did.
func runSeed(t *testing.T, cfg config) *counts {
	if cfg.busy {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	}
	w := newWorld(t, cfg)
	ctx := context.Background()
	// The starting fleet: the set and the hand variants.
	rolling := w.rolloutSet()
	if cfg.adopt {
		rolling.Spec.Rollout = nil // a person adds it while the set is live (act)
	}
	for _, set := range []*configv1alpha2.PackageVariantSet{w.set(), rolling} {
		if _, err := w.person.ConfigV1alpha2().PackageVariantSets(ns).Create(ctx, set, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range cfg.hand {
		if _, err := w.person.ConfigV1alpha1().PackageVariants(ns).Create(ctx, w.handVariant(i), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.startControllers()
	defer func() { w.currentRunner().Stop() }()

	w.chaosOn.Store(true)
	w.mon.faultsOn(true)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); w.act(stop) }()
	go func() { defer wg.Done(); w.watchDrafts(stop) }()
	go func() { defer wg.Done(); w.disturb(stop) }()
	time.Sleep(cfg.duration) // the length of the chaos phase, not a wait for a condition
	close(stop)
	wg.Wait()
	w.chaosOn.Store(false)
	w.mon.faultsOn(false)
	w.sim.ReleaseWatchEvents()
	w.logf("faults and people stop")
	before := w.sim.Requests()
	for _, v := range before {
		w.counts.requests += v
	}

	if err := w.currentRunner().WaitIdle(ctx, cfg.settle); err != nil {
		w.mon.violate([]string{}, "the controllers did not converge once faults stopped: %v", err)
	} else if err := w.finishRollout(); err != nil {
		w.mon.violate([]string{"PackageVariantSet " + rolloutSetName}, "the rollout did not finish once people published everything: %v", err)
	} else {
		w.checkConverged()
		w.checkRestartWritesNothing()
	}
	w.mon.mu.Lock()
	w.counts.rollout["variant updates checked against their waves"] += w.mon.ro.checked
	w.counts.rollout["variant updates checked against their waves, under faults"] += w.mon.ro.checkedUnderFaults
	w.counts.rollout["waves finished"] += len(w.mon.ro.finished)
	w.counts.rollout["waves finished, under faults"] += w.mon.ro.finishedUnderFaults
	w.counts.rollout["rollouts completed"] += len(w.mon.ro.completed)
	w.counts.rollout["upgrade drafts to revisions published after adoption, checked against the pins"] += w.mon.ro.drafts
	w.mon.mu.Unlock()
	w.counts.violations = w.mon.report(t, cfg.seed)
	return w.counts
}

// finishRollout is the people publishing, once faults stopped, every draft
// and proposal of the rollout set's variants, and again as the waves open
// more, until the set reports its rollout of the newest upstream revision
// done (the controllers idle in between).
func (w *world) finishRollout() error {
	ctx := context.Background()
	deadline := time.Now().Add(w.cfg.settle)
	idle, lastChange := 0, time.Now()
	// stuckAfter bounds how long the rollout may stay unfinished with
	// nothing left for people to do.
	const stuckAfter = 5 * time.Second
	poll := time.NewTicker(50 * time.Millisecond)
	defer poll.Stop()
	for {
		if w.rolledOut() {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not RolledOut for upstream revision %d within %s", w.upstream, w.cfg.settle)
		}
		// every site runs what is published, healthy
		published := 0
		if w.cfg.health && w.allHealthy() {
			published++
		}
		for _, pr := range w.sim.PackageRevisions(ns) {
			open := pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed
			if !open || pr.Spec.PackageName != rolloutPkg || helper.IsPlaceholder(&pr) {
				continue
			}
			err := w.sim.Publish(ns, pr.Name)
			w.logf("person publishes %s to finish the rollout: %v", pr.Name, err)
			if err == nil {
				published++
				w.count("person", "publish a rollout draft (settle)")
			}
		}
		// Nothing to publish and still not rolled out: the controllers may
		// be one step behind (a timed requeue, a GC pause); idle rounds
		// without anything to publish for stuckAfter are a stuck rollout.
		if published == 0 {
			if idle++; idle > 3 && time.Since(lastChange) > stuckAfter {
				return fmt.Errorf("nothing left to publish for %s, yet not RolledOut for upstream revision %d", time.Since(lastChange).Round(time.Millisecond), w.upstream)
			}
		} else {
			idle, lastChange = 0, time.Now()
		}
		if err := w.currentRunner().WaitIdle(ctx, time.Until(deadline)); err != nil {
			return err
		}
		if published == 0 {
			<-poll.C // the next look at the set
		}
	}
}

// rolledOut reports whether the rollout set says it rolled the newest
// upstream revision out.
func (w *world) rolledOut() bool {
	set, err := w.person.ConfigV1alpha2().PackageVariantSets(ns).Get(context.Background(), rolloutSetName, metav1.GetOptions{})
	if err != nil || set.Status.Rollout == nil || set.Status.Rollout.UpstreamRevision != w.upstream {
		return false
	}
	c := meta.FindStatusCondition(set.Status.Conditions, rollout.ConditionRolledOut)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == set.Generation
}

// checkRestartWritesNothing restarts the controllers on the converged
// world: they must find nothing to do.
func (w *world) checkRestartWritesNothing() {
	w.currentRunner().Stop()
	w.sim.ResetRequests()
	w.mon.collectChanges(true)
	before := w.variantStatuses()
	w.startControllers()
	err := w.currentRunner().WaitIdle(context.Background(), w.cfg.settle)
	changed := w.mon.collectChanges(false)
	defer func() {
		if len(changed) > 0 {
			w.explainRestart(before)
		}
	}()
	if err != nil {
		w.mon.violate(changed, "after a restart on the converged world the controllers did not settle: %v", err)
		return
	}
	// A write Porch refuses changes nothing (a variant Refused for good
	// tries once more after a restart); a write that changes something is
	// a violation.
	if len(changed) > 0 {
		var writes []string
		for req, n := range w.sim.Requests() {
			switch verb, _, _ := strings.Cut(req, " "); verb {
			case "create", "update", "patch", "delete", "delete-collection":
				writes = append(writes, fmt.Sprintf("%d × %s", n, req))
			}
		}
		sort.Strings(writes)
		w.mon.violate(changed, "a restart on the converged world changed %s (requests: %s)", strings.Join(changed, ", "), strings.Join(writes, ", "))
	}
}

// variantStatuses is every variant's status as YAML, by name.
func (w *world) variantStatuses() map[string]string {
	out := map[string]string{}
	list, err := w.person.ConfigV1alpha1().PackageVariants(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		w.logf("list the variants: %v", err)
		return out
	}
	for _, pv := range list.Items {
		b, _ := yaml.Marshal(pv.Status)
		out[pv.Name] = string(b)
	}
	return out
}

// explainRestart logs, for a restart that changed the converged world,
// how each variant's status changed and what the restarted controllers
// recorded as events: the figures alone do not say why.
func (w *world) explainRestart(before map[string]string) {
	after := w.variantStatuses()
	for name, a := range after {
		if b := before[name]; b != a {
			w.t.Logf("seed %d: status of PackageVariant %s before and after the restart:\n%s", w.cfg.seed, name,
				fleetdiff.UnifiedDiff("before", "after", map[string]string{name: b}, map[string]string{name: a}))
		}
	}
	for _, e := range w.currentRunner().Events() {
		w.t.Logf("seed %d: event of the restarted controllers: %s %s %s: %s", w.cfg.seed, e.Object, e.Type, e.Reason, e.Message)
	}
}
