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
	"fmt"
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// Sim is an in-memory Porch (porch.kpt.dev/v1alpha1) plus API-server semantics
// for config.porch.kpt.dev objects (PackageVariant, PackageVariantSet,
// Repository). It is safe for concurrent use.
//
// It is three layers: the store (package internal/store, what
// kube-apiserver does, with the kinds of kinds.go),
// Porch's rules on top of it (porch.go and the files named for the rules),
// and the wrappers around every request of its clientsets: request
// counting (requests.go), fault injection (faults.go) and the following of
// writes into repositories (overlap.go).
type Sim struct {
	store *store.Store
	porch *porch

	clientset *clientset
	requests  requestCounter
	faults    faults
	// writes follows the writes into repositories in progress.
	writes writes
}

// New returns an empty Sim.
func New(opts ...Option) *Sim {
	p := newPorch(store.New(kinds...))
	s := &Sim{store: p.Store, porch: p}
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
	serve := counting(&s.requests, injecting(&s.faults, s.porch.serveLocked, s.writes.served))
	serveWatch := counting(&s.requests, refusing(&s.faults, func(r *request) (watch.Interface, error) { return s.store.WatchLocked(r.action) }))
	cs.AddReactor("*", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		defer concurrently(&cs.Fake)()
		r := newRequest(user, a)
		obj, err := locked(s.store, serve, r)
		// A fault's Delay is waited out after the Sim's lock is released.
		r.late.wait()
		return true, obj, err
	})
	cs.AddWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		defer concurrently(&cs.Fake)()
		w, err := locked(s.store, serveWatch, newRequest(user, a))
		return true, w, err
	})
	return &clientset{Clientset: cs, sim: s, user: user}
}

// concurrently lets the fake clientset's other requests in while a
// reactor serves one, as Porch serves requests side by side: the fake holds
// its lock from the moment a request arrives until its reactor answers, so
// one slow render would hold back every other client of the Sim. It also
// drops the actions the fake records (a copy of every request, objects
// included, kept until cleared: a long-running Sim grew without bound);
// the Sim counts requests itself (Requests). Called by a reactor, which
// runs with the fake's lock held; the function it returns takes the lock
// back before the reactor returns.
func concurrently(f *clienttesting.Fake) (relock func()) {
	f.Unlock()
	f.ClearActions()
	return f.Lock
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
// installed (its methods, such as PrependReactor, are there; its Tracker
// is not used and Actions records nothing), whose writes into repositories are followed from
// the moment a client makes them (see Overlaps). Informers built from it
// work (list + watch).
func (s *Sim) Clientset() versioned.Interface {
	return s.clientset
}

// AddRepository creates a Repository (deployment=true makes clones write
// package-context.yaml). An existing Repository of that name gets the new
// deployment flag and labels. The git URL is a made-up, stable one.
func (s *Sim) AddRepository(namespace, name string, deployment bool, labels map[string]string) *configv1alpha1.Repository {
	s.store.Lock()
	defer s.store.Unlock()
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
	return s.porch.putRepositoryLocked(repo, func(cur *configv1alpha1.Repository) {
		cur.Labels = maps.Clone(labels)
		cur.Spec.Deployment = deployment
	})
}

// PutRepository stores a Repository as given (name, namespace, labels,
// annotations, spec), or updates the one of that name: what a server that
// mirrors the cluster's Repositories needs, so that git URLs in locks are
// the Repository's own, as Porch writes them.
func (s *Sim) PutRepository(in *configv1alpha1.Repository) *configv1alpha1.Repository {
	s.store.Lock()
	defer s.store.Unlock()
	repo := &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Namespace: in.Namespace, Name: in.Name, Labels: maps.Clone(in.Labels), Annotations: maps.Clone(in.Annotations)},
		Spec:       *in.Spec.DeepCopy(),
	}
	return s.porch.putRepositoryLocked(repo, func(cur *configv1alpha1.Repository) {
		cur.Labels = maps.Clone(in.Labels)
		cur.Annotations = maps.Clone(in.Annotations)
		cur.Spec = *in.Spec.DeepCopy()
	})
}

// Requests returns counts of API requests served, keyed "verb resource", for
// example "create packagerevisions", "get packagerevisionresources",
// "update packagevariants/status", "list packagerevisions",
// "watch packagerevisions". Failed requests (including injected faults) are
// counted too. Requests made through the Sim's helper methods are not.
func (s *Sim) Requests() map[string]int {
	return s.requests.counts()
}

// ResetRequests zeroes the request counts.
func (s *Sim) ResetRequests() {
	s.requests.reset()
}

// HoldWatchEvents makes watches stop delivering events (they queue) until
// ReleaseWatchEvents, simulating a lagging informer cache. Writes still
// succeed, and reads (GET and LIST through the client) see the new state.
func (s *Sim) HoldWatchEvents() {
	s.store.Lock()
	defer s.store.Unlock()
	s.store.HoldLocked()
}

// ReleaseWatchEvents delivers the held events, in order, and lets later
// events flow again.
func (s *Sim) ReleaseWatchEvents() {
	s.store.Lock()
	defer s.store.Unlock()
	s.store.ReleaseLocked()
}

// Sequence is the change number behind a resourceVersion the Sim handed
// out (0 if it handed out no such version): tools that must know whether an
// informer has seen a change compare these, never the opaque strings.
func (s *Sim) Sequence(resourceVersion string) int64 {
	s.store.Lock()
	defer s.store.Unlock()
	return s.store.SequenceLocked(resourceVersion)
}

// Change is one change of a stored object, as Observe reports it: its
// Resource (the plural, such as "packagerevisions"), Type, Object (the
// stored state after the change, the last state for DELETED: it must not be
// modified) and Sequence (the order of the changes of every resource).
type Change = store.Change

// Observe makes f hear of every change, in order, at the moment it is made
// (whether or not watch events are held): a test checks invariants that
// must hold at every moment this way. f runs under the Sim's lock: it must
// be quick, must not modify the object and must not call the Sim.
func (s *Sim) Observe(f func(Change)) {
	s.store.Lock()
	defer s.store.Unlock()
	s.store.ObserveLocked(f)
}

// BreakWatches ends every open watch, as an API server does when it
// restarts or a connection drops: a client's reflector watches again from
// the last resourceVersion it saw (PackageRevision watches start over with
// every object ADDED, as Porch's do). It returns how many watches ended.
func (s *Sim) BreakWatches() int {
	s.store.Lock()
	defer s.store.Unlock()
	return s.store.BreakWatchesLocked()
}
