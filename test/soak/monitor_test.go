package soak

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
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
	// history is what happened to each object ("PackageRevision x").
	history map[string][]string
	// changed, when not nil, collects the objects that change.
	changed    map[string]bool
	events     []string
	violations []violation
}

type violation struct {
	objects []string
	msg     string
}

func newMonitor(start time.Time) *monitor {
	return &monitor{
		start:         start,
		open:          map[string]map[string]bool{},
		published:     map[string]bool{},
		edits:         map[string]map[string]string{},
		personDeleted: map[string]bool{},
		going:         map[types.UID]string{},
		history:       map[string][]string{},
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
		if _, owner := controllerOf(o); owner != "" {
			line += " owner=" + owner
		}
		if r := readyOf(o.Status.Conditions); r != nil {
			line += fmt.Sprintf(" Ready=%s/%s", r.Status, r.Reason)
		}
		m.noteLocked("PackageVariant "+o.Name, line)
	case *configv1alpha2.PackageVariantSet:
		line := fmt.Sprintf("#%d %s uid=%s gen=%d desired/existing/ready=%d/%d/%d", c.Sequence, c.Type, o.UID, o.Generation,
			o.Status.DesiredVariants, o.Status.ExistingVariants, o.Status.ReadyVariants)
		if o.DeletionTimestamp != nil {
			line += " deleting"
		}
		if r := readyOf(o.Status.Conditions); r != nil {
			line += fmt.Sprintf(" Ready=%s/%s %q", r.Status, r.Reason, r.Message)
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
	if pr.Spec.RepositoryName == "blueprints" || helper.IsPlaceholder(pr) {
		return
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
		fmt.Fprintf(&b, "history of %s:\n", o)
		for _, line := range m.history[o] {
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
