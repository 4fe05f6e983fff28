package soak

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/conditions"
	"github.com/porch-variants/variant-controller/pkg/controller/rollout"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// historyLen bounds the history kept per object, timelineLen the global
// timeline of people's actions and disturbances.
const (
	historyLen  = 60
	timelineLen = 400
)

// monitor hears every change the Sim makes, at the moment it is made, and
// checks the invariants that must hold at every moment: at most one Draft
// or Proposed revision per package; a revision that was ever Published is
// deleted only by a person; a draft a person edited is deleted only by a
// person or because its variant is being deleted.
type monitor struct {
	start time.Time

	mu sync.Mutex
	// open are the Draft and Proposed revisions of each package.
	open map[string]map[string]bool
	// published are the revisions that were ever Published.
	published map[string]bool
	// edits are people's edits: revision -> file -> content.
	edits map[string]map[string]string
	// personDeleted are the revisions a person deleted (or tried to).
	personDeleted map[string]bool
	// going are variants being deleted or gone, by UID.
	going map[types.UID]string
	// history is what happened to each object ("PackageRevision x"), logs
	// what the controllers logged of it (logSink).
	history map[string][]string
	logs    map[string][]loggedLine
	// noted counts the lines ever noted in each object's history.
	noted map[string]int
	// changed, when not nil, collects the objects that change.
	changed    map[string]bool
	events     []string
	violations []violation
	// ro follows the set that rolls out in waves.
	ro *rolloutMonitor
}

type violation struct {
	objects []string
	msg     string
}

func newMonitor(start time.Time, ro *rolloutMonitor) *monitor {
	return &monitor{
		start:         start,
		open:          map[string]map[string]bool{},
		published:     map[string]bool{},
		edits:         map[string]map[string]string{},
		personDeleted: map[string]bool{},
		going:         map[types.UID]string{},
		history:       map[string][]string{},
		logs:          map[string][]loggedLine{},
		noted:         map[string]int{},
		ro:            ro,
	}
}

func (m *monitor) stamp() string {
	return fmt.Sprintf("%7.3fs", time.Since(m.start).Seconds())
}

// collectChanges starts (or, with false, stops) collecting the objects
// that change, and returns those collected so far.
func (m *monitor) collectChanges(on bool) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for o := range m.changed {
		out = append(out, o)
	}
	sort.Strings(out)
	m.changed = nil
	if on {
		m.changed = map[string]bool{}
	}
	return out
}

func (m *monitor) noteLocked(object, line string) {
	if m.changed != nil && !strings.HasPrefix(line, "a person") {
		m.changed[object] = true
	}
	m.noted[object]++
	h := append(m.history[object], m.stamp()+" "+line)
	if len(h) > historyLen {
		h = h[len(h)-historyLen:]
	}
	m.history[object] = h
}

func (m *monitor) timeline(line string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, m.stamp()+" "+line)
	if len(m.events) > timelineLen {
		m.events = m.events[len(m.events)-timelineLen:]
	}
}

func (m *monitor) violate(objects []string, format string, args ...any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.violateLocked(objects, format, args...)
}

func (m *monitor) violateLocked(objects []string, format string, args ...any) {
	m.violations = append(m.violations, violation{objects: objects, msg: m.stamp() + " " + fmt.Sprintf(format, args...)})
}

func (m *monitor) edited(pr, file, content string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.edits[pr] == nil {
		m.edits[pr] = map[string]string{}
	}
	m.edits[pr][file] = content
	m.noteLocked("PackageRevision "+pr, "a person adds "+file)
}

func (m *monitor) personDeletes(pr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.personDeleted[pr] = true
	m.noteLocked("PackageRevision "+pr, "a person deletes it")
}

func controllerOf(o metav1.Object) (types.UID, string) {
	for _, r := range o.GetOwnerReferences() {
		if r.Controller != nil && *r.Controller {
			return r.UID, r.Kind + " " + r.Name
		}
	}
	return "", ""
}

// observe runs under the Sim's lock for every change.
func (m *monitor) observe(c porchsim.Change) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch o := c.Object.(type) {
	case *porchv1alpha1.PackageRevision:
		m.observeRevision(c.Type, o)
	case *configv1alpha1.PackageVariant:
		line := fmt.Sprintf("#%d %s uid=%s gen=%d", c.Sequence, c.Type, o.UID, o.Generation)
		if o.DeletionTimestamp != nil || c.Type == watch.Deleted {
			m.going[o.UID] = o.Name
			line += " deleting"
		}
		_, owner := controllerOf(o)
		if owner != "" {
			line += " owner=" + owner
		}
		if r := readyOf(o.Status.Conditions); r != nil {
			line += fmt.Sprintf(" Ready=%s/%s", r.Status, r.Reason)
		}
		if owner == "PackageVariantSet "+rolloutSetName {
			if o.Spec.Upstream != nil {
				line += fmt.Sprintf(" upstream=%d", o.Spec.Upstream.Revision)
			}
			if p := meta.FindStatusCondition(o.Status.Conditions, configv1alpha1.ConditionPublished); p != nil {
				line += fmt.Sprintf(" Published=%s/%s@%d", p.Status, p.Reason, p.ObservedGeneration)
			}
		}
		m.noteLocked("PackageVariant "+o.Name, line)
		if owner == "PackageVariantSet "+rolloutSetName {
			m.observeRolloutVariant(c.Type, o)
		}
	case *configv1alpha2.PackageVariantSet:
		line := fmt.Sprintf("#%d %s uid=%s gen=%d desired/existing/ready=%d/%d/%d", c.Sequence, c.Type, o.UID, o.Generation,
			o.Status.DesiredVariants, o.Status.ExistingVariants, o.Status.ReadyVariants)
		if o.DeletionTimestamp != nil {
			line += " deleting"
		}
		if r := readyOf(o.Status.Conditions); r != nil {
			line += fmt.Sprintf(" Ready=%s/%s %q", r.Status, r.Reason, r.Message)
		}
		if o.Name == rolloutSetName {
			line += m.observeRolloutSet(o)
		}
		m.noteLocked("PackageVariantSet "+o.Name, line)
	case *configv1alpha1.Repository:
		m.noteLocked("Repository "+o.Name, fmt.Sprintf("#%d %s labels=%v", c.Sequence, c.Type, o.Labels))
	}
}

func readyOf(conds []metav1.Condition) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == "Ready" {
			return &conds[i]
		}
	}
	return nil
}

func (m *monitor) observeRevision(typ watch.EventType, pr *porchv1alpha1.PackageRevision) {
	if pr.Spec.RepositoryName == "blueprints" && typ != watch.Deleted {
		m.ro.observeUpstream(pr)
	}
	if pr.Spec.RepositoryName == "blueprints" || helper.IsPlaceholder(pr) {
		return
	}
	if typ == watch.Added && pr.Spec.PackageName == rolloutPkg {
		m.observeRolloutDraft(pr)
	}
	if typ != watch.Deleted && pr.Spec.PackageName == rolloutPkg {
		m.ro.observeRollingRevision(pr)
	}
	obj := "PackageRevision " + pr.Name
	uid, owner := controllerOf(pr)
	m.noteLocked(obj, fmt.Sprintf("%s %s owner=%s", typ, pr.Spec.Lifecycle, owner))
	pkg := pr.Spec.RepositoryName + "/" + pr.Spec.PackageName
	if m.open[pkg] == nil {
		m.open[pkg] = map[string]bool{}
	}
	switch {
	case typ == watch.Deleted:
		delete(m.open[pkg], pr.Name)
	case pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleDraft || pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecycleProposed:
		m.open[pkg][pr.Name] = true
	default:
		delete(m.open[pkg], pr.Name)
	}
	if len(m.open[pkg]) > 1 {
		var names, objects []string
		for n := range m.open[pkg] {
			names = append(names, n)
			objects = append(objects, "PackageRevision "+n)
		}
		sort.Strings(names)
		m.violateLocked(objects, "package %s has %d Draft or Proposed revisions at once: %s", pkg, len(names), strings.Join(names, ", "))
	}
	if pr.Spec.Lifecycle == porchv1alpha1.PackageRevisionLifecyclePublished {
		m.published[pr.Name] = true
	}
	if typ != watch.Deleted {
		return
	}
	// A later revision may get the same name: what is known of this one
	// ends here.
	defer func() {
		delete(m.published, pr.Name)
		delete(m.edits, pr.Name)
		delete(m.personDeleted, pr.Name)
	}()
	if m.personDeleted[pr.Name] {
		return
	}
	if m.published[pr.Name] {
		m.violateLocked([]string{obj}, "%s was Published and is deleted, though no person deleted it (last lifecycle %s, owner %s)", pr.Name, pr.Spec.Lifecycle, owner)
	}
	if len(m.edits[pr.Name]) > 0 {
		if _, going := m.going[uid]; uid == "" || !going {
			m.violateLocked([]string{obj}, "draft %s holds a person's edit and is deleted, though no person deleted it and its variant (%s) is not being deleted", pr.Name, owner)
		}
	}
}

// report fails the test with every violation, the seed and the history of
// the objects involved; it returns how many violations there were.
func (m *monitor) report(t *testing.T, seed int64) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.violations) == 0 {
		return 0
	}
	var b strings.Builder
	fmt.Fprintf(&b, "seed %d: %d violations (replay: go test -race ./test/soak -run TestSoak -soak.seeds 1 -soak.seed %d)\n", seed, len(m.violations), seed)
	involved := map[string]bool{}
	for i, v := range m.violations {
		if i < 30 {
			fmt.Fprintf(&b, "  %s\n", v.msg)
		}
		for _, o := range v.objects {
			involved[o] = true
		}
	}
	if len(m.violations) > 30 {
		fmt.Fprintf(&b, "  ... and %d more\n", len(m.violations)-30)
	}
	objects := make([]string, 0, len(involved))
	for o := range involved {
		objects = append(objects, o)
	}
	sort.Strings(objects)
	if len(objects) > 12 {
		objects = objects[:12]
	}
	for _, o := range objects {
		fmt.Fprintf(&b, "history of %s, with the controllers' log lines that name it:\n", o)
		for _, line := range m.timelineLocked(o) {
			fmt.Fprintf(&b, "    %s\n", line)
		}
	}
	fmt.Fprintf(&b, "last people's actions and disturbances:\n")
	events := m.events
	if len(events) > 80 {
		events = events[len(events)-80:]
	}
	for _, line := range events {
		fmt.Fprintf(&b, "    %s\n", line)
	}
	t.Error(b.String())
	return len(m.violations)
}

// rolloutMonitor follows the variants of the set that rolls out in waves
// (world.rolloutSet), whose variants are fixed (one per site it selects,
// never deleted), and checks, at the moment each change is made:
//
//   - a variant's update to upstream revision P (a spec change after its
//     creation) is in a wave that may have started for P: every earlier
//     wave is done for P, each of its variants having been seen carrying
//     P and finished (Published=True for its generation) or failed, as
//     the controller decides from its caches, which only ever hold states
//     the monitor saw before;
//   - no wave has more variants with an open change for P than its
//     maxConcurrent: updated to P (created ones are never held back and
//     not counted) and not seen finished for their generation.
//
// With spec.rollout.health (a health seed), a variant is done only once
// its site also reported, healthy or failed, on a Published revision of
// its package that carries P (the world tells the monitor of each report
// before the controllers can see it).
//
// Both are decided from the set's spec and the variants alone, never from
// the set's status, which the controller writes after the variants.
type rolloutMonitor struct {
	spec *configv1alpha2.Rollout
	// size is how many variants each wave has (every selected site of its
	// region).
	size []int
	// variants by name.
	variants map[string]*rolloutVariant
	// done[P][wave] is a wave done for upstream revision P; seen[P] the
	// variants seen carrying P and finished or failed.
	done map[int]map[int]bool
	seen map[int]map[string]bool
	// over[P][wave] is the most open changes already reported.
	over map[int]map[int]int
	// checked counts the variant updates checked; finished the waves the
	// set reported Finished (by rollout and wave), completed the rollouts
	// it reported RolledOut.
	checked  int
	finished map[string]bool
	// faults: the faults are on; checkedUnderFaults counts the updates
	// checked meanwhile.
	faults              bool
	checkedUnderFaults  int
	finishedUnderFaults int
	completed           map[string]bool

	// adopted: the set has had spec.rollout (from its creation, or since a
	// person added it to the live set). upstream are the upstream
	// revisions by name, afterAdoption those published after it; drafts
	// counts the upgrade drafts checked against them.
	adopted       bool
	upstream      map[string]int
	afterAdoption map[int]bool
	drafts        int

	// health: the waves are gated on health reports. carries are the
	// upstream revisions of the Published revisions of the rolling
	// packages, by revision name; judged[package][P]: the site reported
	// on a Published revision of package carrying P.
	health  bool
	carries map[string]int
	judged  map[string]map[int]bool
}

type rolloutVariant struct {
	// pkg is its downstream package (repository/package).
	pkg  string
	wave int
	pin  int
	// pinned are the revisions the set ever gave it.
	pinned map[int]bool
	gen    int64
	// updated: pin came by an update, not with the creation.
	updated bool
	// finishedGen is the generation seen Published=True (0: none);
	// failed: it is failed now.
	finishedGen int64
	failed      bool
}

func newRolloutMonitor(spec *configv1alpha2.Rollout, sites int, health bool) *rolloutMonitor {
	all := make([]rollout.Variant, 0, sites)
	for i := range sites {
		all = append(all, rollout.Variant{Name: siteName(i), Labels: rolloutVariantLabels(i)})
	}
	waves, err := rollout.Waves(spec, all)
	if err != nil {
		panic(err)
	}
	r := &rolloutMonitor{spec: spec, variants: map[string]*rolloutVariant{}, done: map[int]map[int]bool{},
		seen: map[int]map[string]bool{}, over: map[int]map[int]int{}, finished: map[string]bool{}, completed: map[string]bool{},
		upstream: map[string]int{}, afterAdoption: map[int]bool{}, health: health, carries: map[string]int{}, judged: map[string]map[int]bool{}}
	for _, vs := range waves.Waves {
		r.size = append(r.size, len(vs))
	}
	return r
}

// waveOf is the wave of a variant with labels (-1: none).
func (r *rolloutMonitor) waveOf(labels map[string]string) int {
	waves, _ := rollout.Waves(r.spec, []rollout.Variant{{Name: "v", Labels: labels}})
	for i, vs := range waves.Waves {
		if len(vs) > 0 {
			return i
		}
	}
	return -1
}

// failedNow is variantProgress's failure: Stalled, or Ready=False for
// something a person must fix, for the variant's generation.
func failedNow(pv *configv1alpha1.PackageVariant) bool {
	for _, c := range pv.Status.Conditions {
		if c.ObservedGeneration != pv.Generation {
			continue
		}
		if c.Type == conditions.Stalled && c.Status == metav1.ConditionTrue {
			return true
		}
		if c.Type == conditions.Ready && c.Status == metav1.ConditionFalse {
			switch c.Reason {
			case configv1alpha1.ReasonRenderFailed, configv1alpha1.ReasonRefused, configv1alpha1.ReasonConflict:
				return true
			}
		}
	}
	return false
}

// observeRolloutVariant runs under the monitor's lock for every change of
// a variant of the rollout set.
func (m *monitor) observeRolloutVariant(typ watch.EventType, pv *configv1alpha1.PackageVariant) {
	r := m.ro
	obj := "PackageVariant " + pv.Name
	if typ == watch.Deleted || pv.DeletionTimestamp != nil {
		delete(r.variants, pv.Name)
		return
	}
	pin := 0
	if pv.Spec.Upstream != nil {
		pin = pv.Spec.Upstream.Revision
	}
	v := r.variants[pv.Name]
	if v == nil {
		v = &rolloutVariant{wave: r.waveOf(pv.Spec.Labels), pin: pin, gen: pv.Generation, pinned: map[int]bool{pin: true}}
		if d := pv.Spec.Downstream; d != nil {
			v.pkg = d.Repo + "/" + d.Package
		}
		r.variants[pv.Name] = v
	} else if pv.Generation != v.gen {
		v.gen = pv.Generation
		if pin != v.pin {
			v.pin, v.updated = pin, true
			v.pinned[pin] = true
			r.checked++
			if r.faults {
				r.checkedUnderFaults++
			}
			for j := 0; j < v.wave; j++ {
				if !r.done[pin][j] {
					m.violateLocked([]string{obj, "PackageVariantSet " + rolloutSetName},
						"PackageVariant %s of wave %q got upstream revision %d before wave %q was done for it (%d of its %d variants seen finished with it)",
						pv.Name, r.spec.Waves[v.wave].Name, pin, r.spec.Waves[j].Name, r.doneIn(pin, j), r.size[j])
					break
				}
			}
		}
	}
	if pub := meta.FindStatusCondition(pv.Status.Conditions, configv1alpha1.ConditionPublished); pub != nil &&
		pub.Status == metav1.ConditionTrue && pub.ObservedGeneration == pv.Generation {
		v.finishedGen = pv.Generation
	}
	v.failed = failedNow(pv)
	r.markDone(pv.Name, v)
	// The open changes of the variant's wave for its revision.
	var open []string
	for name, o := range r.variants {
		if o.wave == v.wave && o.pin == v.pin && o.updated && o.finishedGen != o.gen {
			open = append(open, name)
		}
	}
	limit := rollout.MaxConcurrent(r.spec.Waves[v.wave], r.size[v.wave])
	if r.over[v.pin] == nil {
		r.over[v.pin] = map[int]int{}
	}
	if len(open) > limit && len(open) > r.over[v.pin][v.wave] {
		r.over[v.pin][v.wave] = len(open)
		sort.Strings(open)
		objects := []string{"PackageVariantSet " + rolloutSetName}
		for _, name := range open {
			objects = append(objects, "PackageVariant "+name)
		}
		m.violateLocked(objects, "wave %q has %d open changes to upstream revision %d, more than its maxConcurrent %d: %s",
			r.spec.Waves[v.wave].Name, len(open), v.pin, limit, strings.Join(open, ", "))
	}
}

// markDone notes variant name, v, as seen carrying its pin and finished
// (with health checks: and judged on it) or failed, and its wave as done
// once all of its variants are.
func (r *rolloutMonitor) markDone(name string, v *rolloutVariant) {
	finished := v.finishedGen == v.gen && (!r.health || r.judged[v.pkg][v.pin])
	if !finished && !v.failed {
		return
	}
	if r.seen[v.pin] == nil {
		r.seen[v.pin] = map[string]bool{}
	}
	r.seen[v.pin][name] = true
	if r.doneIn(v.pin, v.wave) == r.size[v.wave] {
		if r.done[v.pin] == nil {
			r.done[v.pin] = map[int]bool{}
		}
		r.done[v.pin][v.wave] = true
	}
}

// observeRollingRevision notes which upstream revision a Published
// revision of a rolling package carries.
func (r *rolloutMonitor) observeRollingRevision(pr *porchv1alpha1.PackageRevision) {
	if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		return
	}
	if rev, ok := helper.LockedUpstreamRevision(pr); ok {
		r.carries[pr.Name] = rev
	}
}

// healthReported is a site's report on revision (healthy or failed): the
// variants of its package that finished the upstream revision it carries
// are done.
func (m *monitor) healthReported(repo, revision string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.ro
	rev, ok := r.carries[revision]
	if !ok {
		return
	}
	pkg := repo + "/" + rolloutPkg
	if r.judged[pkg] == nil {
		r.judged[pkg] = map[int]bool{}
	}
	r.judged[pkg][rev] = true
	for name, v := range r.variants {
		if v.pkg == pkg {
			r.markDone(name, v)
		}
	}
}

// faultsOn says whether the faults are on, for the counts.
func (m *monitor) faultsOn(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ro.faults = on
}

// doneIn is how many variants of wave j were seen finished with revision p.
func (r *rolloutMonitor) doneIn(p, j int) int {
	n := 0
	for name := range r.seen[p] {
		if v := r.variants[name]; v != nil && v.wave == j {
			n++
		}
	}
	return n
}

// observeUpstream notes an upstream revision, and whether it was
// published after the rollout set had spec.rollout.
func (r *rolloutMonitor) observeUpstream(pr *porchv1alpha1.PackageRevision) {
	if pr.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		return
	}
	if _, seen := r.upstream[pr.Name]; !seen && r.adopted {
		r.afterAdoption[pr.Spec.Revision] = true
	}
	r.upstream[pr.Name] = pr.Spec.Revision
}

// observeRolloutDraft checks a new revision of a rollout set variant's
// package: an upgrade to an upstream revision published after the set had
// spec.rollout is one the set gave the variant (a pin, checked against
// the waves when it was made), never one the variant took by itself for
// following the latest revision. A clone (the variant's package is gone)
// is a create, which a rollout never holds back.
func (m *monitor) observeRolloutDraft(pr *porchv1alpha1.PackageRevision) {
	r := m.ro
	if len(pr.Spec.Tasks) == 0 || pr.Spec.Tasks[0].Upgrade == nil {
		return
	}
	_, owner := controllerOf(pr)
	name, ok := strings.CutPrefix(owner, "PackageVariant ")
	v := r.variants[name]
	if !ok || v == nil {
		return
	}
	rev, known := r.upstream[pr.Spec.Tasks[0].Upgrade.NewUpstream.Name]
	if !known || !r.afterAdoption[rev] {
		return
	}
	r.drafts++
	if !v.pinned[rev] {
		m.violateLocked([]string{"PackageRevision " + pr.Name, "PackageVariant " + name, "PackageVariantSet " + rolloutSetName},
			"%s upgrades PackageVariant %s to upstream revision %d, published after the set had spec.rollout, which the set never gave it (its spec.upstream.revision is %d)",
			pr.Name, name, rev, v.pin)
	}
}

// observeRolloutSet counts the waves and rollouts the set reports done.
func (m *monitor) observeRolloutSet(o *configv1alpha2.PackageVariantSet) string {
	if o.Spec.Rollout != nil && !m.ro.adopted {
		m.ro.adopted = true
		m.noteLocked("PackageVariantSet "+o.Name, "has spec.rollout from here on")
	}
	st := o.Status.Rollout
	if st == nil {
		return ""
	}
	var phases []string
	for _, w := range st.Waves {
		phases = append(phases, fmt.Sprintf("%s:%s(%d/%d)", w.Name, w.Phase, w.Finished, w.Variants))
		if w.Phase == configv1alpha2.WaveFinished && !m.ro.finished[st.ID+"/"+w.Name] {
			m.ro.finished[st.ID+"/"+w.Name] = true
			if m.ro.faults {
				m.ro.finishedUnderFaults++
			}
		}
	}
	line := fmt.Sprintf(" rollout %s rev %d %s", st.ID, st.UpstreamRevision, strings.Join(phases, " "))
	if c := meta.FindStatusCondition(o.Status.Conditions, rollout.ConditionRolledOut); c != nil {
		line += fmt.Sprintf(" RolledOut=%s/%s", c.Status, c.Reason)
		if c.Status == metav1.ConditionTrue {
			m.ro.completed[st.ID] = true
		}
	}
	return line
}
