package porchsim

import (
	"context"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	porchclient "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/typed/porch/v1alpha1"
)

// Overlap is two writes of one client (see ClientsetAs) into one repository
// that were in progress at the same time. Real Porch commits each write to the repository's branch and
// loses one of two such writes after answering it (a created draft vanishes
// and its name is blocked, or it comes back without its metadata), so a
// client must never overlap them; the Sim serves both and records the
// overlap for the test (or tool) to fail on.
type Overlap struct {
	// User is the client whose writes overlapped ("" for Clientset).
	User                  string
	Namespace, Repository string
	// First was in progress when Second arrived; each reads
	// "<verb> <resource> <name>".
	First, Second string
}

func (o Overlap) String() string {
	who := "writes"
	if o.User != "" {
		who = fmt.Sprintf("client %s's writes", o.User)
	}
	return fmt.Sprintf("%s into repository %s/%s overlapped: %q was still in progress when %q arrived",
		who, o.Namespace, o.Repository, o.First, o.Second)
}

// writes tracks the writes into repositories in progress. It has its own
// lock: a write is in progress from the moment it reaches the Sim, while it
// waits for the Sim's lock too.
type writes struct {
	mu       sync.Mutex
	inflight map[repoRef]map[int64]inflightWrite // by write id
	revision map[revisionRef]int                 // writes in progress per revision
	// onRevision is the write in progress on each revision (at most one:
	// a second is refused).
	onRevision map[revisionRef]*write
	seq        int64
	overlaps   []Overlap
	hook       func(namespace, repository, what string)
	// onOverlap, when set, hears of each overlap as it happens (under the
	// lock: it must not call back into the Sim).
	onOverlap func(Overlap)
}

type repoRef struct{ namespace, repository string }

// inflightWrite is what a write in progress is ("<verb> <resource> <name>")
// and whose it is: only a client's own writes can overlap, since a
// controller cannot serialise its writes with a person's.
type inflightWrite struct{ what, user string }

type revisionRef struct{ namespace, name string }

// write is one write in progress.
type write struct {
	repo repoRef
	rev  revisionRef
	id   int64
}

// begin records a write into a repository. A write on a revision another
// write is still working on is refused with Porch's 409 (its per-revision
// lock); a write into a repository another write is still working on is
// served, and recorded as an Overlap.
func (w *writes) begin(repo repoRef, rev revisionRef, what, user string) (*write, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inflight == nil {
		w.inflight = map[repoRef]map[int64]inflightWrite{}
		w.revision = map[revisionRef]int{}
		w.onRevision = map[revisionRef]*write{}
	}
	if rev.name != "" && w.revision[rev] > 0 {
		return nil, conflictInProgress(rev.namespace, rev.name)
	}
	for _, other := range w.inflight[repo] {
		if other.user != user {
			continue
		}
		o := Overlap{User: user, Namespace: repo.namespace, Repository: repo.repository, First: other.what, Second: what}
		w.overlaps = append(w.overlaps, o)
		if w.onOverlap != nil {
			w.onOverlap(o)
		}
		break
	}
	w.seq++
	if w.inflight[repo] == nil {
		w.inflight[repo] = map[int64]inflightWrite{}
	}
	w.inflight[repo][w.seq] = inflightWrite{what: what, user: user}
	wr := &write{repo: repo, rev: rev, id: w.seq}
	if rev.name != "" {
		w.revision[rev]++
		w.onRevision[rev] = wr
	}
	return wr, nil
}

// end ends a write; ending one already ended does nothing.
func (w *writes) end(wr *write) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.inflight[wr.repo][wr.id]; !ok {
		return
	}
	if w.onRevision[wr.rev] == wr {
		delete(w.onRevision, wr.rev)
	}
	delete(w.inflight[wr.repo], wr.id)
	if len(w.inflight[wr.repo]) == 0 {
		delete(w.inflight, wr.repo)
	}
	if wr.rev.name != "" {
		if w.revision[wr.rev]--; w.revision[wr.rev] <= 0 {
			delete(w.revision, wr.rev)
		}
	}
}

// served ends the write in progress on the revision a request named once
// the Sim has served it, before its answer reaches the client: as in
// Porch, which releases a revision when it has handled a request, an answer
// the client gets late holds nothing up.
func (w *writes) served(r *request) {
	rev := revisionRef{r.action.GetNamespace(), r.Name}
	w.mu.Lock()
	wr := w.onRevision[rev]
	w.mu.Unlock()
	if wr != nil {
		w.end(wr)
	}
}

// Overlaps returns the overlapping writes into one repository the Sim has
// seen (see Overlap). A controller that serialises its writes per
// repository never causes one.
func (s *Sim) Overlaps() []Overlap {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	return append([]Overlap(nil), s.writes.overlaps...)
}

// OverlapsOf returns the overlaps of one client's writes (see ClientsetAs;
// "" for Clientset): a test whose people write from several goroutines
// through one client of their own holds the controllers to account for
// the controllers' writes alone.
func (s *Sim) OverlapsOf(user string) []Overlap {
	var out []Overlap
	for _, o := range s.Overlaps() {
		if o.User == user {
			out = append(out, o)
		}
	}
	return out
}

// OnWrite makes f run at the start of every client's write into a
// repository, before the Sim serves it and outside every lock of the Sim
// and of the fake clientset, so that f may block to stage a race (the
// write counts as in progress meanwhile). what reads
// "<verb> <resource> <name>". nil removes the hook.
func (s *Sim) OnWrite(f func(namespace, repository, what string)) {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	s.writes.hook = f
}

// OnOverlap makes f hear of every overlap as it is recorded (see
// Overlaps), for a server that has no test to fail: porchsim-apiserver logs
// them. f must not call the Sim.
func (s *Sim) OnOverlap(f func(Overlap)) {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	s.writes.onOverlap = f
}

// WritesInProgress is how many writes into a repository clients have made
// that the Sim has not answered yet; tests use it to stage a race.
func (s *Sim) WritesInProgress(namespace, repository string) int {
	s.writes.mu.Lock()
	defer s.writes.mu.Unlock()
	return len(s.writes.inflight[repoRef{namespace, repository}])
}

// start marks the start of a client's write into a repository, from the
// moment the client makes it, and runs the OnWrite hook; the caller ends
// it once answered.
func (w *writes) start(user, namespace, repo, name, what string) (*write, error) {
	if repo == "" {
		return nil, nil // refused as invalid anyway
	}
	wr, err := w.begin(repoRef{namespace, repo}, revisionRef{namespace, name}, what, user)
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	hook := w.hook
	w.mu.Unlock()
	if hook != nil {
		hook(namespace, repo, what)
	}
	return wr, nil
}

// repositoryOf is the repository of a stored revision ("" if none).
func (p *porch) repositoryOf(namespace, name string) string {
	p.Lock()
	defer p.Unlock()
	if pr, _, ok := p.packageRevisionLocked(namespace, name); ok {
		return pr.Spec.RepositoryName
	}
	return ""
}

// clientset is the Sim's clientset: the generated fake, whose reactors the
// Sim serves. The fake serialises every request under one lock, so a write
// that waits for another one would never look like an overlap from inside
// the Sim; the Porch clients below mark a write as in progress before they
// hand it to the fake.
type clientset struct {
	*fake.Clientset
	sim  *Sim
	user string
}

// PorchV1alpha1 returns the porch.kpt.dev client with writes followed.
func (c *clientset) PorchV1alpha1() porchclient.PorchV1alpha1Interface {
	return &porchClient{PorchV1alpha1Interface: c.Clientset.PorchV1alpha1(), sim: c.sim, user: c.user}
}

type porchClient struct {
	porchclient.PorchV1alpha1Interface
	sim  *Sim
	user string
}

func (p *porchClient) PackageRevisions(namespace string) porchclient.PackageRevisionInterface {
	return &trackedRevisions{PackageRevisionInterface: p.PorchV1alpha1Interface.PackageRevisions(namespace), sim: p.sim, ns: namespace, user: p.user}
}

func (p *porchClient) PackageRevisionResources(namespace string) porchclient.PackageRevisionResourcesInterface {
	return &trackedResources{PackageRevisionResourcesInterface: p.PorchV1alpha1Interface.PackageRevisionResources(namespace), sim: p.sim, ns: namespace, user: p.user}
}

type trackedRevisions struct {
	porchclient.PackageRevisionInterface
	sim  *Sim
	ns   string
	user string
}

func (t *trackedRevisions) track(repo, name, verb string) (func(), error) {
	w, err := t.sim.writes.start(t.user, t.ns, repo, name, verb+" "+resPackageRevisions+" "+name)
	if err != nil || w == nil {
		return func() {}, err
	}
	return func() { t.sim.writes.end(w) }, nil
}

func (t *trackedRevisions) Create(ctx context.Context, pr *porchv1alpha1.PackageRevision, opts metav1.CreateOptions) (*porchv1alpha1.PackageRevision, error) {
	done, err := t.track(pr.Spec.RepositoryName, helper.PackageRevisionName(pr.Spec.RepositoryName, pr.Spec.PackageName, string(pr.Spec.WorkspaceName)), "create")
	if err != nil {
		return nil, err
	}
	defer done()
	return t.PackageRevisionInterface.Create(ctx, pr, opts)
}

func (t *trackedRevisions) Update(ctx context.Context, pr *porchv1alpha1.PackageRevision, opts metav1.UpdateOptions) (*porchv1alpha1.PackageRevision, error) {
	done, err := t.track(t.sim.porch.repositoryOf(t.ns, pr.Name), pr.Name, "update")
	if err != nil {
		return nil, err
	}
	defer done()
	return t.PackageRevisionInterface.Update(ctx, pr, opts)
}

func (t *trackedRevisions) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	done, err := t.track(t.sim.porch.repositoryOf(t.ns, name), name, "delete")
	if err != nil {
		return err
	}
	defer done()
	return t.PackageRevisionInterface.Delete(ctx, name, opts)
}

func (t *trackedRevisions) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*porchv1alpha1.PackageRevision, error) {
	done, err := t.track(t.sim.porch.repositoryOf(t.ns, name), name, "patch")
	if err != nil {
		return nil, err
	}
	defer done()
	return t.PackageRevisionInterface.Patch(ctx, name, pt, data, opts, subresources...)
}

type trackedResources struct {
	porchclient.PackageRevisionResourcesInterface
	sim  *Sim
	ns   string
	user string
}

func (t *trackedResources) Update(ctx context.Context, prr *porchv1alpha1.PackageRevisionResources, opts metav1.UpdateOptions) (*porchv1alpha1.PackageRevisionResources, error) {
	w, err := t.sim.writes.start(t.user, t.ns, t.sim.porch.repositoryOf(t.ns, prr.Name), prr.Name, "update "+resPackageRevisionResources+" "+prr.Name)
	if err != nil {
		return nil, err
	}
	if w != nil {
		defer t.sim.writes.end(w)
	}
	return t.PackageRevisionResourcesInterface.Update(ctx, prr, opts)
}
