// Package porchsim is an in-memory Porch for tests: it serves
// porch.kpt.dev/v1alpha1 PackageRevisions and PackageRevisionResources with
// the rules the Porch server enforces (porch-wire-contract.md), and gives this
// project's config.porch.kpt.dev objects (PackageVariant, PackageVariantSet,
// Repository) the semantics of a Kubernetes API server: resourceVersions and
// conflicts, generation, the status subresource, finalizers and deletion
// timestamps, garbage collection through owner references, label and field
// selectors, and watches that resume from a resourceVersion.
//
// Everything is exposed through the generated fake clientset, so controllers
// built on the generated typed clients, informers and listers run against a
// Sim unchanged. The Sim also counts the requests it serves, injects faults
// and can hold watch events back to simulate a lagging informer cache.
package porchsim

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strconv"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	"github.com/porch-variants/variant-controller/pkg/porchsim/kptengine"
)

// publishedBy is recorded in status.publishedBy of revisions the Sim publishes.
const publishedBy = "porchsim"

// Sim is an in-memory Porch (porch.kpt.dev/v1alpha1) plus API-server semantics
// for config.porch.kpt.dev objects (PackageVariant, PackageVariantSet,
// Repository). It is safe for concurrent use.
//
// All state lives behind one mutex: every request is one atomic step, as it is
// for an API server backed by a single etcd revision counter. Stored objects
// are never mutated after they are stored (a change stores a new copy), so
// watch events can share them; everything handed out is a deep copy.
type Sim struct {
	clientset *clientset
	engine    engine

	mu sync.Mutex
	// rv is the last change's sequence number; one counter for every
	// resource, like etcd's revision. It is the resourceVersion of the
	// custom resources; PackageRevisions get an opaque one (a commit SHA
	// in Porch), and seqOf maps those back.
	rv      int64
	seqOf   map[string]int64
	uidSeq  int64
	objects map[string]map[objectKey]*entry // by resource
	uids    map[types.UID]objectRef
	// packages and dependents index objects (see index.go).
	packages   map[packageKey]map[string]struct{}
	dependents map[types.UID]map[objectRef]struct{}

	requests map[string]int
	faults   []*faultState
	chaos    func(Request) *Fault
	// observers hear of every change (see Observe).
	observers []func(Change)
	// watchers are the open watches (see BreakWatches).
	watchers map[*watcher]struct{}
	// writes follows the writes into repositories in progress.
	writes writes
	// deletedUIDs are the UIDs of the objects the Sim removed: owners
	// known to be gone (see collectIfOwnersGoneLocked).
	deletedUIDs map[types.UID]struct{}
	// rendering, set by tests, runs while a resources update heals and
	// renders without the Sim's lock.
	rendering func()
	// fileSource fetches the files of revisions imported without them
	// (see SetFileSource); fetched and fileErrors record what it did.
	fileSource func(ctx context.Context, namespace, name string) (map[string]string, error)
	fetched    map[objectKey]struct{}
	fileErrors map[objectKey]error

	logs map[string]*eventLog // watch event log by resource
	// watermark is the resourceVersion up to which events are delivered;
	// it stays put while events are held.
	watermark int64
	held      bool
	// changed is closed (and replaced) whenever watchers may have something
	// new to deliver.
	changed chan struct{}
}

type objectKey struct {
	namespace, name string
}

type objectRef struct {
	resource string
	key      objectKey
}

// entry is one stored object.
type entry struct {
	obj runtime.Object
	// files are the package files of a PackageRevision. Read them through
	// filesLocked: they are nil while lazy.
	files map[string]string
	// lazy marks a revision imported without its files: they are fetched
	// from the file source on first need (see SetFileSource). Storing
	// files clears it.
	lazy bool
	// fetchErr is the failure of the one fetch of a lazy revision; every
	// later need fails with it (see filesLocked).
	fetchErr error
	// skipped are the pipeline functions the last render of the files
	// did not run (not built into Porch, and the Sim runs none other).
	skipped []string
	// orphan records a delete with propagationPolicy Orphan that is waiting
	// for finalizers: when the object goes, its dependents are orphaned.
	orphan bool
}

// New returns an empty Sim.
func New(opts ...Option) *Sim {
	s := &Sim{
		engine:      engine{notBuiltin: kptengine.FailNotBuiltin, memo: newEngineMemo()},
		objects:     map[string]map[objectKey]*entry{},
		seqOf:       map[string]int64{},
		uids:        map[types.UID]objectRef{},
		packages:    map[packageKey]map[string]struct{}{},
		dependents:  map[types.UID]map[objectRef]struct{}{},
		deletedUIDs: map[types.UID]struct{}{},
		fetched:     map[objectKey]struct{}{},
		fileErrors:  map[objectKey]error{},
		requests:    map[string]int{},
		logs:        map[string]*eventLog{},
		watchers:    map[*watcher]struct{}{},
		changed:     make(chan struct{}),
	}
	for _, k := range kinds {
		s.objects[k.resource] = map[objectKey]*entry{}
	}
	for _, o := range opts {
		o(s)
	}
	s.clientset = s.newClientset("")
	return s
}

// newClientset returns a fake clientset whose requests the Sim serves as
// user's.
func (s *Sim) newClientset(user string) *clientset {
	cs := fake.NewSimpleClientset()
	// Replace the object tracker's reactors: the tracker knows nothing of
	// Porch's rules (and guesses the plural of PackageRevisionResources
	// wrong), so every request is served by the Sim instead.
	cs.ReactionChain = nil
	cs.WatchReactionChain = nil
	cs.ProxyReactionChain = nil
	cs.AddReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) { return s.react(user, a) })
	cs.AddWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) { return s.reactWatch(user, a) })
	return &clientset{Clientset: cs, sim: s, user: user}
}

// ClientsetAs returns another clientset on the same Sim whose requests are
// user's: a Fault with a User, and the chaos function (SetChaos), can then
// tell them from those of Clientset (user ""), as a test tells a person's
// kubectl from the controller.
func (s *Sim) ClientsetAs(user string) versioned.Interface {
	return s.newClientset(user)
}

// Clientset returns a clientset that serves every resource of our generated
// clientset through the Sim: the generated *fake.Clientset with reactors
// installed (its methods, such as PrependReactor and Actions, are there;
// its Tracker is not used), whose writes into repositories are followed from
// the moment a client makes them (see Overlaps). Informers built from it
// work (list + watch).
func (s *Sim) Clientset() versioned.Interface {
	return s.clientset
}

// AddRepository creates a Repository (deployment=true makes clones write
// package-context.yaml). An existing Repository of that name gets the new
// deployment flag and labels. The git URL is a made-up, stable one.
func (s *Sim) AddRepository(namespace, name string, deployment bool, labels map[string]string) *configv1alpha1.Repository {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := objectKey{namespace, name}
	if e, ok := s.objects[resRepositories][key]; ok {
		repo := e.obj.(*configv1alpha1.Repository).DeepCopy()
		repo.Labels = maps.Clone(labels)
		if repo.Spec.Deployment != deployment {
			repo.Spec.Deployment = deployment
			repo.Generation++
		}
		s.replaceLocked(resRepositories, e, repo)
		return repo.DeepCopy()
	}
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: maps.Clone(labels)},
		Spec: configv1alpha1.RepositorySpec{
			Type:       configv1alpha1.RepositoryTypeGit,
			Content:    "Package",
			Deployment: deployment,
			Git: &configv1alpha1.GitRepository{
				Repo:   fmt.Sprintf("https://git.example.com/%s/%s.git", namespace, name),
				Branch: "main",
			},
		},
	}
	s.insertLocked(resRepositories, repo, nil)
	return repo.DeepCopy()
}

// PutRepository stores a Repository as given (name, namespace, labels,
// annotations, spec), or updates the one of that name: what a server that
// mirrors the cluster's Repositories needs, so that git URLs in locks are
// the Repository's own, as Porch writes them.
func (s *Sim) PutRepository(in *configv1alpha1.Repository) *configv1alpha1.Repository {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := objectKey{in.Namespace, in.Name}
	if e, ok := s.objects[resRepositories][key]; ok {
		repo := e.obj.(*configv1alpha1.Repository).DeepCopy()
		repo.Labels = maps.Clone(in.Labels)
		repo.Annotations = maps.Clone(in.Annotations)
		if !equality.Semantic.DeepEqual(repo.Spec, in.Spec) {
			repo.Spec = *in.Spec.DeepCopy()
			repo.Generation++
		}
		s.replaceLocked(resRepositories, e, repo)
		return repo.DeepCopy()
	}
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, Labels: maps.Clone(in.Labels), Annotations: maps.Clone(in.Annotations)},
		Spec:       *in.Spec.DeepCopy(),
	}
	s.insertLocked(resRepositories, repo, nil)
	return repo.DeepCopy()
}

// Requests returns counts of API requests served, keyed "verb resource", for
// example "create packagerevisions", "get packagerevisionresources",
// "update packagevariants/status", "list packagerevisions",
// "watch packagerevisions". Failed requests (including injected faults) are
// counted too. Requests made through the Sim's helper methods are not.
func (s *Sim) Requests() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.requests)
}

// ResetRequests zeroes the request counts and clears the actions the fake
// clientset recorded.
func (s *Sim) ResetRequests() {
	s.mu.Lock()
	clear(s.requests)
	s.mu.Unlock()
	s.clientset.ClearActions()
}

// HoldWatchEvents makes watches stop delivering events (they queue) until
// ReleaseWatchEvents, simulating a lagging informer cache. Writes still
// succeed, and reads (GET and LIST through the client) see the new state.
func (s *Sim) HoldWatchEvents() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = true
}

// ReleaseWatchEvents delivers the held events, in order, and lets later
// events flow again.
func (s *Sim) ReleaseWatchEvents() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held = false
	s.watermark = s.rv
	s.notifyLocked()
}

// react serves every non-watch request of user's fake clientset. A fault's
// Delay is waited out after the Sim's lock is released.
func (s *Sim) react(user string, action clienttesting.Action) (bool, runtime.Object, error) {
	obj, err, fault := s.serve(user, action)
	fault.wait()
	return true, obj, err
}

// serve is react under the Sim's lock: the answer, and the fault that
// holds it back (nil when none). A write whose answer is held back is no
// longer in progress by the time anyone else can reach the Sim.
func (s *Sim) serve(user string, action clienttesting.Action) (runtime.Object, error, *Fault) {
	resource := action.GetResource().Resource
	sub := action.GetSubresource()
	verb := action.GetVerb()
	path := resource
	if sub != "" {
		path += "/" + sub
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	obj, err, fault := s.answerLocked(action, user, resource, sub, verb, path)
	if fault != nil && fault.Delay > 0 {
		s.writes.served(revisionRef{action.GetNamespace(), requestName(action)})
	}
	return obj, err, fault
}

// answerLocked serves a request, or fails it as the fault that applies to
// it says; it returns that fault (nil when none).
func (s *Sim) answerLocked(action clienttesting.Action, user, resource, sub, verb, path string) (runtime.Object, error, *Fault) {
	s.requests[verb+" "+path]++
	fault := s.faultLocked(Request{User: user, Verb: verb, Resource: path, Name: requestName(action)})
	if fault != nil && !fault.AfterEffect {
		return nil, fault.Err, fault
	}
	obj, err := s.serveLocked(action, resource, sub, verb)
	if err != nil {
		return nil, err, fault
	}
	if verb == "create" || verb == "update" || verb == "patch" {
		if _, stored := kindsByResource[resource]; stored || resource == resPackageRevisions {
			if m, err := meta.Accessor(obj); err == nil {
				s.collectIfOwnersGoneLocked(resource, m.GetNamespace(), m.GetName())
			}
		}
	}
	if fault != nil && fault.Err != nil {
		return nil, fault.Err, fault
	}
	return obj, nil, fault
}

// requestName is the object name a request is about, "" for collections.
func requestName(action clienttesting.Action) string {
	switch action.GetVerb() {
	case "get", "delete", "patch":
		if a, ok := action.(interface{ GetName() string }); ok {
			return a.GetName()
		}
	case "create", "update":
		obj := action.(clienttesting.CreateAction).GetObject()
		if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok && action.GetVerb() == "create" && pr.Spec.RepositoryName != "" {
			// Porch names a new revision itself; faults use that name.
			return helper.PackageRevisionName(pr.Spec.RepositoryName, pr.Spec.PackageName, string(pr.Spec.WorkspaceName))
		}
		if m, err := meta.Accessor(obj); err == nil {
			return m.GetName()
		}
	}
	return ""
}

func (s *Sim) serveLocked(action clienttesting.Action, resource, sub, verb string) (runtime.Object, error) {
	ns := action.GetNamespace()
	switch resource {
	case resPackageRevisions:
		return s.servePackageRevisionLocked(action, ns, sub, verb)
	case resPackageRevisionResources:
		return s.servePackageRevisionResourcesLocked(action, ns, sub, verb)
	}
	k, ok := kindsByResource[resource]
	if !ok {
		return nil, notServed(action)
	}
	return s.serveObjectLocked(k, action, ns, sub, verb)
}

// nextRVLocked counts a change of an object of resource and returns its
// new resourceVersion: the sequence number for custom resources (as etcd's
// revision), an opaque commit-like string for PackageRevisions, as Porch
// hands out git commit SHAs, which a client cannot order or parse.
func (s *Sim) nextRVLocked(resource string) string {
	s.rv++
	if resource != resPackageRevisions {
		return strconv.FormatInt(s.rv, 10)
	}
	rv := fakeCommit("porchsim-change", strconv.FormatInt(s.rv, 10))
	s.seqOf[rv] = s.rv
	return rv
}

// Sequence is the change number behind a resourceVersion the Sim handed
// out (0 if it handed out no such version): tools that must know whether an
// informer has seen a change compare these, never the opaque strings.
func (s *Sim) Sequence(resourceVersion string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.seqOf[resourceVersion]; ok {
		return n
	}
	n, err := strconv.ParseInt(resourceVersion, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// newUIDLocked makes the UID of a new object. A PackageRevision's UID is
// Porch's: derived from its namespace and name, so a revision deleted and
// made again has the same UID (a UID precondition protects nothing). Other
// objects get the next UID of the Sim's sequence that no object held:
// restored objects (Restore) bring their own UIDs, which may come from
// another Sim's sequence.
func (s *Sim) newUIDLocked(resource, namespace, name string) types.UID {
	if resource == resPackageRevisions {
		return helper.PackageRevisionUID(namespace, name)
	}
	for {
		s.uidSeq++
		uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", s.uidSeq))
		if !s.uidHeldLocked(uid) {
			return uid
		}
	}
}

// uidHeldLocked tells whether an object of the Sim has, or had, uid.
func (s *Sim) uidHeldLocked(uid types.UID) bool {
	if _, ok := s.uids[uid]; ok {
		return true
	}
	_, ok := s.deletedUIDs[uid]
	return ok
}

// now is the API server's clock: timestamps travel with second precision.
func now() metav1.Time {
	return metav1.NewTime(time.Now().Truncate(time.Second))
}

// insertLocked stores a new object: it fills in uid, creationTimestamp,
// generation and resourceVersion and emits ADDED.
func (s *Sim) insertLocked(resource string, obj runtime.Object, files map[string]string) *entry {
	m := mustAccessor(obj)
	m.SetUID(s.newUIDLocked(resource, m.GetNamespace(), m.GetName()))
	m.SetCreationTimestamp(now())
	// Porch leaves a PackageRevision's generation at 0.
	if resource != resPackageRevisions {
		m.SetGeneration(1)
	}
	return s.storeNewLocked(resource, obj, files)
}

// storeNewLocked stores a new object whose uid, creationTimestamp and
// generation are set (by insertLocked, or kept from a snapshot by Restore
// and Import): it assigns the resourceVersion, indexes the object and emits
// ADDED. It is the one place where objects enter the store, so the indexes
// and s.uids stay consistent whichever way they came.
func (s *Sim) storeNewLocked(resource string, obj runtime.Object, files map[string]string) *entry {
	m := mustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok {
		s.fillSelfLockLocked(pr)
	}
	e := &entry{obj: obj, files: files}
	ref := objectRef{resource, objectKey{m.GetNamespace(), m.GetName()}}
	s.objects[resource][ref.key] = e
	s.uids[m.GetUID()] = ref
	s.indexLocked(ref, obj)
	s.emitLocked(resource, watch.Added, obj, nil)
	return e
}

// replaceLocked stores a changed copy of an entry's object with a new
// resourceVersion and emits MODIFIED. The caller has already adjusted
// generation.
func (s *Sim) replaceLocked(resource string, e *entry, obj runtime.Object) {
	old := e.obj
	m := mustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok {
		pr.Generation = 0
		s.fillSelfLockLocked(pr)
	}
	e.obj = obj
	s.reindexLocked(objectRef{resource, objectKey{m.GetNamespace(), m.GetName()}}, old, obj)
	s.emitLocked(resource, watch.Modified, obj, old)
}

// removeLocked drops an object (its final state is obj) and collects the
// garbage it leaves: dependents that no other existing owner holds.
func (s *Sim) removeLocked(resource string, e *entry, obj runtime.Object) {
	m := mustAccessor(obj)
	m.SetResourceVersion(s.nextRVLocked(resource))
	ref := objectRef{resource, objectKey{m.GetNamespace(), m.GetName()}}
	delete(s.objects[resource], ref.key)
	delete(s.uids, m.GetUID())
	s.deletedUIDs[m.GetUID()] = struct{}{}
	// The index entries are those of the stored state, which obj (the
	// final state) may differ from.
	s.unindexLocked(ref, e.obj)
	s.emitLocked(resource, watch.Deleted, obj, nil)
	if pr, ok := obj.(*porchv1alpha1.PackageRevision); ok && !helper.IsPlaceholder(pr) {
		// The label is computed: deleting the latest revision moves it
		// back to the previous one.
		s.recomputeLatestLocked(pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName)
	}
	s.collectGarbageLocked(m.GetNamespace(), m.GetUID(), e.orphan)
}

// sortedKeysLocked lists the keys of a resource in a namespace ("" for all)
// in namespace/name order, so lists and cascades are deterministic.
func (s *Sim) sortedKeysLocked(resource, namespace string) []objectKey {
	var keys []objectKey
	for k := range s.objects[resource] {
		if namespace == "" || k.namespace == namespace {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].namespace != keys[j].namespace {
			return keys[i].namespace < keys[j].namespace
		}
		return keys[i].name < keys[j].name
	})
	return keys
}

func mustAccessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(fmt.Sprintf("porchsim: %T has no object metadata: %v", obj, err))
	}
	return m
}
