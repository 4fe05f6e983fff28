package offline

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/google/pprof/profile"
	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

// The fleet scenario (issue 5) is one PackageVariantSet fanning the
// blueprint blueprints/app out to every repository labelled env=prod, run
// by both controllers against porchsim. BenchmarkFleet measures it at
// fleet scale; TestFleetPerVariantTargets runs it small and holds the
// controllers to the per-variant targets, so `make test` catches a
// regression without running the benchmark.

const (
	fleetNS  = "fleet"
	fleetSet = "app"
	// Repositories the set must leave alone: labelled for another
	// environment, or not labelled at all.
	fleetOtherRepos = 3
)

// The per-variant targets of the issue.
const (
	// maxConvergeRequests is the most API requests a new variant may cost:
	// its creation by the set, its draft, the draft's files, its status.
	maxConvergeRequests = 6
	// maxConvergeSyncs is the most PackageVariant syncs a new variant may
	// cost.
	maxConvergeSyncs = 4
)

var fleetRegions = []string{"eu-west", "us-east", "ap-south"}

// fleetBlueprint is the upstream package at a revision: a Kptfile, a
// Deployment and a ConfigMap. input.Revision 2 changes the Deployment and the
// ConfigMap, so an upgrade has something to merge.
func fleetBlueprint(revision int) map[string]string {
	return ctrlfixture.Blueprint(revision, "the fleet benchmark's blueprint", map[string]string{
		"configmap.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: app-settings
data:
  logLevel: info
  blueprintRevision: "%d"
`, revision),
	})
}

// fleetSetObject selects the prod repositories and computes each variant's
// labels and package context with CEL, so that every variant is rendered
// from templates.
func fleetSetObject() *configv1alpha2.PackageVariantSet {
	str := func(s string) *string { return &s }
	return &configv1alpha2.PackageVariantSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: fleetNS, Name: fleetSet},
		Spec: configv1alpha2.PackageVariantSetSpec{
			Upstream: &configv1alpha1.Upstream{Repo: "blueprints", Package: "app"},
			Targets: []configv1alpha2.Target{{
				RepositorySelector: &configv1alpha2.RepositorySelector{
					LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}},
				},
				Template: &configv1alpha2.PackageVariantTemplate{
					Labels: map[string]string{"fleet": "app"},
					LabelExprs: []configv1alpha2.MapExpr{
						{Key: str("region"), ValueExpr: str("repository.labels['region']")},
					},
					PackageContext: &configv1alpha2.PackageContextTemplate{
						DataExprs: []configv1alpha2.MapExpr{
							{Key: str("site"), ValueExpr: str("repository.name")},
							{Key: str("region"), ValueExpr: str("repository.labels['region']")},
						},
					},
				},
			}},
		},
	}
}

// fleet is the scenario's world: a Sim with the blueprint, n prod
// repositories and a few others, and both controllers running on it.
type fleet struct {
	n int
	// rollout says the set rolls changes out in waves, health that they
	// finish on each cluster's health object (rollout_fleet_test.go).
	rollout, health bool
	ctx             context.Context
	sim             *porchsim.Sim
	runner          *Runner
	// timeout bounds each wait for the controllers to settle.
	timeout time.Duration
}

// newFleet builds the Sim and starts the controllers, and waits until they
// have settled on it (nothing to do: there is no set yet). With rollout,
// the set rolls changes out in waves.
func newFleet(tb testing.TB, n int, kind fleetKind) *fleet {
	rollout := kind != plainFleet
	tb.Helper()
	// The controllers log every draft they make; at fleet scale that is
	// tens of thousands of lines of no interest here.
	ctx := klog.NewContext(context.Background(), discardLogger)
	sim := porchsim.New()
	sim.AddRepository(fleetNS, "blueprints", false, nil)
	if _, err := sim.AddPublished(fleetNS, "blueprints", "app", 1, fleetBlueprint(1)); err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		labels := map[string]string{"env": "prod", "region": fleetRegions[i%len(fleetRegions)]}
		if rollout {
			labels["wave"] = waveOf(i)
		}
		sim.AddRepository(fleetNS, prodRepo(i), true, labels)
	}
	for i := range fleetOtherRepos {
		sim.AddRepository(fleetNS, fmt.Sprintf("dev-%d", i), true, map[string]string{"env": "dev"})
		sim.AddRepository(fleetNS, fmt.Sprintf("scratch-%d", i), true, nil)
	}
	// The set is woken by its variants' readiness changes as in the
	// cluster: batched, after the default delay.
	opts := Options{ReadinessDelay: packagevariantset.DefaultReadinessDelay}
	if kind == healthFleet {
		opts.Objects = healthObjects(n)
	}
	r, err := Start(ctx, sim, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Stop)
	f := &fleet{n: n, rollout: rollout, health: kind == healthFleet, ctx: ctx, sim: sim, runner: r, timeout: 2*time.Minute + time.Duration(n)*20*time.Millisecond}
	if err := r.WaitIdle(ctx, f.timeout); err != nil {
		tb.Fatal(err)
	}
	return f
}

// discardLogger drops everything: the zero Logger has no sink.
var discardLogger = klog.Logger{}

func prodRepo(i int) string { return fmt.Sprintf("prod-%05d", i) }

// phase is what one step of the scenario cost, from the moment the step
// started until the controllers settled.
type phase struct {
	wall time.Duration
	// requests are the API requests served, by "verb resource".
	requests map[string]int
	// syncs are the syncs run, and syncTime the time they took in all
	// (wall time), by controller name.
	syncs    map[string]int
	syncTime map[string]time.Duration
	// syncCPU is the CPU the syncs used, by controller name, from a CPU
	// profile of the phase (nil when another profile was running, as
	// under go test -cpuprofile).
	syncCPU map[string]time.Duration
	// allocated is the bytes allocated by the whole process: controllers,
	// informers and the Sim alike.
	allocated uint64
	// peakHeap is the highest heap (bytes in heap objects, live or not yet
	// swept) sampled during the phase.
	peakHeap uint64
	// liveHeap is the heap after the phase and a full garbage collection:
	// what the fleet keeps.
	liveHeap uint64
}

func (p phase) totalRequests() int {
	n := 0
	for _, c := range p.requests {
		n += c
	}
	return n
}

// perVariant is a count divided by the fleet size.
func (f *fleet) perVariant(count int) float64 { return float64(count) / float64(f.n) }

// measure runs step and waits for the controllers to settle, counting what
// that cost.
func (f *fleet) measure(tb testing.TB, what string, step func() error) phase {
	tb.Helper()
	return f.measureUntil(tb, what, step, nil)
}

// measureUntil is measure that first waits until done is closed (nil:
// not at all).
func (f *fleet) measureUntil(tb testing.TB, what string, step func() error, done <-chan struct{}) phase {
	tb.Helper()
	runtime.GC()
	f.sim.ResetRequests()
	syncsBefore, timeBefore := f.runner.Syncs(), f.runner.SyncTime()
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	sampler := startHeapSampler(5 * time.Millisecond)
	var profile bytes.Buffer
	profiling := pprof.StartCPUProfile(&profile) == nil

	start := time.Now()
	if err := step(); err != nil {
		sampler.stop()
		tb.Fatalf("%s: %v", what, err)
	}
	if done != nil {
		select {
		case <-done:
		case <-time.After(f.timeout):
			sampler.stop()
			tb.Fatalf("%s: not done within %v", what, f.timeout)
		}
	}
	if err := f.runner.WaitIdle(f.ctx, f.timeout); err != nil {
		sampler.stop()
		tb.Fatalf("%s: %v", what, err)
	}
	p := phase{wall: time.Since(start), peakHeap: sampler.stop()}
	if profiling {
		pprof.StopCPUProfile()
		keepProfile(tb, what, profile.Bytes())
		cpu, err := cpuByLoop(&profile)
		if err != nil {
			tb.Fatalf("%s: read the CPU profile: %v", what, err)
		}
		p.syncCPU = cpu
	}

	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	p.allocated = after.TotalAlloc - before.TotalAlloc
	p.requests = f.sim.Requests()
	p.syncs, p.syncTime = map[string]int{}, map[string]time.Duration{}
	for name, n := range f.runner.Syncs() {
		p.syncs[name] = n - syncsBefore[name]
	}
	for name, d := range f.runner.SyncTime() {
		p.syncTime[name] = d - timeBefore[name]
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	p.liveHeap = after.HeapAlloc
	return p
}

// profileDirEnv names a directory where each phase's CPU profile is
// written as TEST-PHASE.pprof, for go tool pprof (unset: none is kept).
const profileDirEnv = "FLEET_PROFILE_DIR"

func keepProfile(tb testing.TB, phase string, data []byte) {
	dir := os.Getenv(profileDirEnv)
	if dir == "" {
		return
	}
	name := filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(tb.Name()+"-"+phase)+".pprof")
	if err := os.WriteFile(name, data, 0o644); err != nil {
		tb.Fatalf("keep the CPU profile of %s: %v", phase, err)
	}
	tb.Logf("CPU profile of %s: %s", phase, name)
}

// cpuByLoop sums the CPU samples of a profile by the "loop" label the
// workloop puts on each sync (goroutines a sync starts carry it too).
func cpuByLoop(r io.Reader) (map[string]time.Duration, error) {
	prof, err := profile.Parse(r)
	if err != nil {
		return nil, err
	}
	cpu := slices.IndexFunc(prof.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" && t.Unit == "nanoseconds" })
	if cpu < 0 {
		return nil, fmt.Errorf("no cpu/nanoseconds samples in %v", prof.SampleType)
	}
	out := map[string]time.Duration{}
	for _, s := range prof.Sample {
		for _, loop := range s.Label["loop"] {
			out[loop] += time.Duration(s.Value[cpu])
		}
	}
	return out, nil
}

// heapSampler records the highest heap seen while it runs. runtime/metrics
// reads it without stopping the world, unlike runtime.ReadMemStats.
type heapSampler struct {
	done chan struct{}
	peak chan uint64
}

const heapObjectsMetric = "/memory/classes/heap/objects:bytes"

func startHeapSampler(every time.Duration) *heapSampler {
	s := &heapSampler{done: make(chan struct{}), peak: make(chan uint64, 1)}
	go func() {
		sample := []metrics.Sample{{Name: heapObjectsMetric}}
		var peak uint64
		read := func() {
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > peak {
				peak = v
			}
		}
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			read()
			select {
			case <-s.done:
				read()
				s.peak <- peak
				return
			case <-ticker.C:
			}
		}
	}()
	return s
}

func (s *heapSampler) stop() uint64 {
	close(s.done)
	return <-s.peak
}

// converge creates the set and waits until every variant has its draft.
func (f *fleet) converge(tb testing.TB) phase {
	tb.Helper()
	return f.measure(tb, "converge", func() error {
		pvs := fleetSetObject()
		if f.rollout {
			withRollout(pvs, f.health)
		}
		_, err := f.sim.Clientset().ConfigV1alpha2().PackageVariantSets(fleetNS).Create(f.ctx, pvs, metav1.CreateOptions{})
		return err
	})
}

// resync queues every variant, as a full informer resync does; they are
// all up to date.
func (f *fleet) resync(tb testing.TB) phase {
	tb.Helper()
	return f.measure(tb, "resync", func() error {
		f.runner.ResyncVariants()
		return nil
	})
}

// publish publishes every draft, as an approver would (the Sim's helper,
// not counted as requests), so that the next upstream revision makes
// upgrade drafts: a draft the controller made and nobody edited would be
// replaced instead.
func (f *fleet) publish(tb testing.TB) phase {
	tb.Helper()
	drafts := f.downstream(porchv1alpha1.PackageRevisionLifecycleDraft)
	return f.measure(tb, "publish", func() error {
		for _, pr := range drafts {
			if err := f.sim.Publish(fleetNS, pr.Name); err != nil {
				return err
			}
		}
		return nil
	})
}

// bump publishes revision 2 of the blueprint.
func (f *fleet) bump(tb testing.TB) phase {
	tb.Helper()
	return f.measure(tb, "upstream bump", func() error {
		_, err := f.sim.AddPublished(fleetNS, "blueprints", "app", 2, fleetBlueprint(2))
		return err
	})
}

// downstream is the revisions of the downstream packages with the given
// lifecycle.
// downstream are the downstream revisions in lifecycle lc, without the
// placeholders Porch makes at each package's first publish.
func (f *fleet) downstream(lc porchv1alpha1.PackageRevisionLifecycle) []porchv1alpha1.PackageRevision {
	var out []porchv1alpha1.PackageRevision
	for _, pr := range f.sim.PackageRevisions(fleetNS) {
		if pr.Spec.RepositoryName != "blueprints" && pr.Spec.Lifecycle == lc && pr.Spec.Revision != porchv1alpha1.PlaceholderRevision {
			out = append(out, pr)
		}
	}
	return out
}

// checkVariants returns what is wrong with the fleet's variants: there must
// be exactly one per prod repository, made by the set, and each Ready.
func (f *fleet) checkVariants() []string {
	var problems []string
	seen := map[string]bool{}
	for _, pv := range f.sim.PackageVariants(fleetNS) {
		if ref := metav1.GetControllerOf(&pv); ref == nil || ref.Kind != "PackageVariantSet" || ref.Name != fleetSet {
			problems = append(problems, fmt.Sprintf("variant %s is not controlled by the set", pv.Name))
		}
		repo := pv.Spec.Downstream.Repo
		if !strings.HasPrefix(repo, "prod-") {
			problems = append(problems, fmt.Sprintf("variant %s targets %s, which is not labelled env=prod", pv.Name, repo))
		}
		seen[repo] = true
		if c := meta.FindStatusCondition(pv.Status.Conditions, "Ready"); c == nil || c.Status != metav1.ConditionTrue {
			problems = append(problems, fmt.Sprintf("variant %s is not Ready: %+v", pv.Name, c))
		}
	}
	if len(seen) != f.n {
		problems = append(problems, fmt.Sprintf("%d prod repositories have a variant, want %d", len(seen), f.n))
	}
	return problems
}

// checkConverged: every prod repository has a Ready variant and exactly
// one draft, cloned from revision 1 with the variant's package context.
func (f *fleet) checkConverged() []string {
	problems, drafts := f.checkDrafts("drafts", func(pr *porchv1alpha1.PackageRevision) string {
		if len(pr.Spec.Tasks) == 0 || pr.Spec.Tasks[0].Type != porchv1alpha1.TaskTypeClone {
			return fmt.Sprintf("draft %s is not a clone", pr.Name)
		}
		return ""
	})
	// One draft's files in full; checking all would make the check, not
	// the controllers, the slow part at 10,000.
	if len(drafts) > 0 {
		pr := drafts[len(drafts)/2]
		files, err := f.sim.Resources(fleetNS, pr.Name)
		if err != nil {
			problems = append(problems, err.Error())
		} else if ctx := files["package-context.yaml"]; !strings.Contains(ctx, "site: "+pr.Spec.RepositoryName) || !strings.Contains(ctx, "region: ") {
			problems = append(problems, fmt.Sprintf("draft %s has no package context from the template:\n%s", pr.Name, ctx))
		}
	}
	return append(problems, f.checkSet()...)
}

// checkSet: the set reports every variant desired, existing and Ready.
func (f *fleet) checkSet() []string {
	pvs, err := f.sim.Clientset().ConfigV1alpha2().PackageVariantSets(fleetNS).Get(f.ctx, fleetSet, metav1.GetOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	st := pvs.Status
	n := int32(f.n)
	if !meta.IsStatusConditionTrue(st.Conditions, "Ready") || st.DesiredVariants != n || st.ExistingVariants != n || st.ReadyVariants != n {
		return []string{fmt.Sprintf("set status: %d desired, %d exist, %d Ready, conditions %+v; want %d of each and Ready", st.DesiredVariants, st.ExistingVariants, st.ReadyVariants, st.Conditions, n)}
	}
	return nil
}

// checkPublished: every variant's downstream is one Published revision
// and nothing else.
func (f *fleet) checkPublished() []string {
	problems := f.checkVariants()
	if n := len(f.downstream(porchv1alpha1.PackageRevisionLifecyclePublished)); n != f.n {
		problems = append(problems, fmt.Sprintf("%d published downstream revisions, want %d", n, f.n))
	}
	if n := len(f.downstream(porchv1alpha1.PackageRevisionLifecycleDraft)); n != 0 {
		problems = append(problems, fmt.Sprintf("%d drafts after publishing every draft, want none", n))
	}
	return problems
}

// checkUpgraded: every prod repository has exactly one upgrade draft from
// its published revision to blueprint revision 2.
func (f *fleet) checkUpgraded() []string {
	problems, _ := f.checkDrafts("upgrade drafts", func(pr *porchv1alpha1.PackageRevision) string {
		t := pr.Spec.Tasks
		if len(t) == 0 || t[0].Type != porchv1alpha1.TaskTypeUpgrade || t[0].Upgrade.NewUpstream.Name != "blueprints.app.v2" {
			return fmt.Sprintf("draft %s is not an upgrade to blueprints.app.v2: %+v", pr.Name, t)
		}
		return ""
	})
	return append(problems, f.checkSet()...)
}

// checkDrafts: the variants are as checkVariants wants them, and every
// prod repository has exactly one draft, of which wrong says what is
// wrong ("" when nothing); what names the drafts in a problem. It returns
// the problems and the drafts.
func (f *fleet) checkDrafts(what string, wrong func(pr *porchv1alpha1.PackageRevision) string) ([]string, []porchv1alpha1.PackageRevision) {
	problems := f.checkVariants()
	drafts := f.downstream(porchv1alpha1.PackageRevisionLifecycleDraft)
	perRepo := map[string]int{}
	for i := range drafts {
		perRepo[drafts[i].Spec.RepositoryName]++
		if msg := wrong(&drafts[i]); msg != "" {
			problems = append(problems, msg)
		}
	}
	if len(drafts) != f.n || len(perRepo) != f.n {
		problems = append(problems, fmt.Sprintf("%d %s in %d repositories, want %d in %d", len(drafts), what, len(perRepo), f.n, f.n))
	}
	return problems, drafts
}

// fleetStep is one phase of the scenario and what must hold after it.
type fleetStep struct {
	name  string
	run   func(testing.TB) phase
	check func() []string
}

// steps are the phases of the scenario, in order; each starts from where
// the one before left the fleet.
func (f *fleet) steps() []fleetStep {
	if f.rollout {
		return []fleetStep{
			{"converge", f.converge, f.checkConverged},
			{"publish", f.publish, f.checkPublished},
			{"rollout", f.rollOut, f.checkRolledOut},
		}
	}
	return []fleetStep{
		{"converge", f.converge, f.checkConverged},
		{"resync", f.resync, f.checkConverged},
		{"publish", f.publish, f.checkPublished},
		{"bump", f.bump, f.checkUpgraded},
	}
}

// runStep runs a step and fails tb when its outcome is wrong, whatever it
// cost.
func (f *fleet) runStep(tb testing.TB, s fleetStep) phase {
	tb.Helper()
	p := s.run(tb)
	if problems := s.check(); len(problems) > 0 {
		tb.Fatalf("after %s (n=%d): %s", s.name, f.n, firstProblems(problems, 5))
	}
	return p
}

func firstProblems(problems []string, n int) string {
	sort.Strings(problems)
	if len(problems) <= n {
		return strings.Join(problems, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(problems[:n], "; "), len(problems)-n)
}

// TestFleetPerVariantTargets runs the fleet scenario small and holds the
// controllers to the per-variant targets: a new variant costs at
// most 6 API requests and 4 syncs; an up-to-date variant costs no request
// on a resync; its draft published costs one, the status write that says
// Published; an upstream bump costs a variant no more than converging did. BenchmarkFleet measures the same at
// fleet scale.
func TestFleetPerVariantTargets(t *testing.T) {
	f := newFleet(t, 20, plainFleet)
	var res struct{ converge, resync, publish, bump phase }
	for i, into := range []*phase{&res.converge, &res.resync, &res.publish, &res.bump} {
		*into = f.runStep(t, f.steps()[i])
	}
	pv := packagevariant.ControllerName

	if got := f.perVariant(res.converge.totalRequests()); got > maxConvergeRequests {
		t.Errorf("converge: %.2f API requests per variant, want at most %d: %v", got, maxConvergeRequests, res.converge.requests)
	}
	if got := res.converge.requests["create packagevariants"]; got != f.n {
		t.Errorf("converge: the set sent %d creates for %d variants: a create was repeated while the cache lagged", got, f.n)
	}
	if got := f.perVariant(res.converge.syncs[pv]); got > maxConvergeSyncs {
		t.Errorf("converge: %.2f syncs per variant, want at most %d", got, maxConvergeSyncs)
	}
	if got := res.resync.totalRequests(); got != 0 {
		t.Errorf("resync of up-to-date variants: %d API requests, want none: %v", got, res.resync.requests)
	}
	if got, want := res.resync.syncs[pv], f.n; got != want {
		t.Errorf("resync: %d syncs, want one per variant (%d)", got, want)
	}
	if got, want := res.publish.requests, map[string]int{"update packagevariants/status": f.n}; !maps.Equal(got, want) {
		t.Errorf("publishing the drafts: API requests %v, want %v (each variant reports Published)", got, want)
	}
	if got := f.perVariant(res.bump.totalRequests()); got > maxConvergeRequests {
		t.Errorf("upstream bump: %.2f API requests per variant, want at most %d: %v", got, maxConvergeRequests, res.bump.requests)
	}
	if got := f.perVariant(res.bump.syncs[pv]); got > maxConvergeSyncs {
		t.Errorf("upstream bump: %.2f syncs per variant, want at most %d", got, maxConvergeSyncs)
	}
	t.Logf("per variant: converge %.2f requests (the set's own included), %.2f syncs; bump %.2f requests, %.2f syncs; the set synced %d times",
		f.perVariant(res.converge.totalRequests()), f.perVariant(res.converge.syncs[pv]),
		f.perVariant(res.bump.totalRequests()), f.perVariant(res.bump.syncs[pv]), res.converge.syncs[packagevariantset.ControllerName])
}
