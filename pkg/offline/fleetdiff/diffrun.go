package fleetdiff

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sort"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// Options tune Run.
type Options struct {
	// Namespace for objects of the change that name none.
	Namespace string
	// Delete deletes the change's objects instead of applying them.
	Delete bool
	// Timeout bounds the wait for the controllers to settle; 0 means
	// offline.DefaultTimeout.
	Timeout time.Duration
	// Live, when set, serves the cluster's in-cluster objects (those
	// injectors and objectSelectors name) on first need.
	Live offline.ClusterObjects
	// ShowInjected shows the values injected from in-cluster objects in
	// the files' diffs; by default they are masked (maskInjected).
	ShowInjected bool
	// Upgrades are new revisions of packages to publish into the live
	// fleet before the change is applied: the diff previews publishing
	// them (Diff.Previews).
	Upgrades []Upgrade
}

// Stats say what a diff read of the live fleet.
type Stats struct {
	// FilesRead are the revisions ("namespace/name") whose files were
	// read from the source (a cluster, a snapshot), in name order.
	FilesRead []string
}

// Diff loads the live fleet into a fresh Sim keeping every identity (uids,
// owner references, finalizers, status), applies the change as kubectl
// apply would (or deletes its objects), runs both controllers until they
// settle and returns what they did. Nothing is written anywhere but the
// Sim. input.Errors in the change are Errors; errors reading the live fleet
// (a revision's files the run needed) are returned as they are.
//
// With Options.Upgrades, a variant a rollout holds back gets, in its
// Preview, the drafts it will get when its wave opens: a second run of the
// same fleet and change with the rollouts left out (sharing the first
// run's files: each is read from the source once).
func Run(ctx context.Context, live, change *input.Input, opts Options) (*Diff, *Stats, error) {
	files := &fileCache{source: live.FileSource, files: map[string]map[string]string{}}
	for _, r := range live.Revisions {
		if r.Files != nil {
			files.files[r.PR.Namespace+"/"+r.PR.Name] = r.Files
		}
	}
	d, err := run(ctx, live, change, opts, files, false)
	if err != nil {
		return nil, nil, err
	}
	if heldBack(d) {
		open, err := run(ctx, live, change, opts, files, true)
		if err != nil {
			return nil, nil, fmt.Errorf("the run with every rollout's waves open: %w", err)
		}
		fillLater(d, open)
	}
	return d, &Stats{FilesRead: files.read()}, nil
}

// run is one run of Run; withoutRollouts drops spec.rollout from every set
// before the controllers start, as if every wave had opened.
func run(ctx context.Context, live, change *input.Input, opts Options, files *fileCache, withoutRollouts bool) (*Diff, error) {
	sim := porchsim.New(porchsim.SkipFunctionsNotBuiltIn())
	sim.SetFileSource(files.get)
	ns := opts.Namespace
	if ns == "" {
		ns = input.DefaultNamespace
	}
	published, before, err := loadLive(ctx, sim, live, ns, opts.Upgrades)
	if err != nil {
		return nil, err
	}
	objects, err := apply(ctx, sim, live, change, ns, opts.Delete)
	if err != nil {
		return nil, err
	}
	if withoutRollouts {
		if err := dropRollouts(ctx, sim); err != nil {
			return nil, err
		}
	}
	objs := liveObjects(opts, change, ns)
	failed := func() []error {
		errs := sim.FileSourceErrors()
		if objs != nil {
			errs = append(errs, objs.Errors()...)
		}
		return errs
	}
	runner, err := offline.Start(ctx, sim, offline.Options{Objects: objects, Live: objs})
	if err != nil {
		return nil, err
	}
	settleErr := settle(ctx, runner, opts.Timeout, failed)
	if errs := failed(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	after, err := CaptureState(ctx, sim)
	if err != nil {
		return nil, err
	}
	d, err := Compare(before, after, diffFiles{files: files, sim: sim}, opts.ShowInjected)
	if err != nil {
		return nil, err
	}
	if settleErr != nil {
		d.NotSettled = settleErr.Error()
	}
	if d.Previews, err = previews(published, before, after, d, diffFiles{files: files, sim: sim}, sim.FailedRenders(ns)); err != nil {
		return nil, err
	}
	return d, nil
}

// loadLive loads the live fleet into sim, publishes the upgrades into it
// and returns them with the state the diff starts from: the published
// upgrades are part of it, the difference is what the controllers make of
// them.
func loadLive(ctx context.Context, sim *porchsim.Sim, live *input.Input, ns string, upgrades []Upgrade) ([]*porchv1alpha1.PackageRevision, *State, error) {
	if err := live.Load(ctx, sim, ns); err != nil {
		return nil, nil, fmt.Errorf("load the live fleet: %w", err)
	}
	var published []*porchv1alpha1.PackageRevision
	if len(upgrades) > 0 {
		loaded, err := CaptureState(ctx, sim)
		if err != nil {
			return nil, nil, err
		}
		if published, err = publish(sim, loaded, ns, upgrades); err != nil {
			return nil, nil, err
		}
	}
	before, err := CaptureState(ctx, sim)
	if err != nil {
		return nil, nil, err
	}
	return published, before, nil
}

// liveObjects are the cluster's in-cluster objects the run sees: with
// --delete, without those the change deletes.
func liveObjects(opts Options, change *input.Input, ns string) offline.ClusterObjects {
	objs := opts.Live
	if objs == nil || !opts.Delete {
		return objs
	}
	deleted := map[string]bool{}
	for _, o := range change.Objects {
		deleted[objectID(o.Obj, ns)] = true
	}
	return omitting{ClusterObjects: objs, omit: func(u *unstructured.Unstructured) bool { return deleted[objectID(u, ns)] }}
}

// settle waits for the controllers to settle (timeout 0: the default)
// and stops them. A revision's files the run needs and the source cannot
// give (failed not empty) end the wait at once: the controllers would
// retry until the timeout, and the difference would be built on missing
// data.
func settle(ctx context.Context, runner *offline.Runner, timeout time.Duration, failed func() []error) error {
	if timeout <= 0 {
		timeout = offline.DefaultTimeout
	}
	waitCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-waitCtx.Done():
				return
			case <-tick.C:
				if len(failed()) > 0 {
					cancel()
					return
				}
			}
		}
	}()
	err := runner.WaitIdle(waitCtx, timeout)
	cancel()
	runner.Stop()
	return err
}

// omitting hides the cluster's objects a change deletes from the run.
type omitting struct {
	offline.ClusterObjects
	omit func(*unstructured.Unstructured) bool
}

func (o omitting) List(ctx context.Context, resource schema.GroupVersionResource, namespace string) ([]unstructured.Unstructured, bool, error) {
	items, fresh, err := o.ClusterObjects.List(ctx, resource, namespace)
	kept := items[:0]
	for _, item := range items {
		if !o.omit(&item) {
			kept = append(kept, item)
		}
	}
	return kept, fresh, err
}

// apply makes the change in the Sim: each set, variant and repository of
// the change is created, or replaces the one the fleet holds (keeping its
// identity and status, as kubectl apply does), or with del is deleted.
// It returns the in-cluster objects the run serves: the fleet's, with the
// change's in place of those of the same kind, namespace and name.
func apply(ctx context.Context, sim *porchsim.Sim, live, change *input.Input, ns string, del bool) ([]*unstructured.Unstructured, error) {
	client := sim.Clientset()
	var errs input.Errors
	fail := func(src input.Source, obj string, err error) {
		if err != nil {
			errs = append(errs, &input.Error{Source: src, Object: obj, Msg: err.Error()})
		}
	}
	if len(change.Revisions) > 0 {
		r := change.Revisions[0]
		return nil, input.Errors{{Source: r.Source, Object: "PackageRevision " + r.PR.Name,
			Msg: "variantctl diff applies PackageVariantSets, PackageVariants, Repositories and the objects injectors and objectSelectors read; package revisions are the controllers' output, not something to apply"}}
	}
	applyAll(change.Repositories, "Repository", ns, fail, func(repo *configv1alpha1.Repository) error {
		return applyOne(ctx, client.ConfigV1alpha1().Repositories(repo.Namespace), repo, del, func(cur *configv1alpha1.Repository) {
			cur.Labels, cur.Annotations, cur.Spec = repo.Labels, repo.Annotations, repo.Spec
		})
	})
	applyAll(change.Sets, "PackageVariantSet", ns, fail, func(set *configv1alpha2.PackageVariantSet) error {
		set.Status = configv1alpha2.PackageVariantSetStatus{}
		return applyOne(ctx, client.ConfigV1alpha2().PackageVariantSets(set.Namespace), set, del, func(cur *configv1alpha2.PackageVariantSet) {
			cur.Labels, cur.Annotations, cur.Spec = set.Labels, set.Annotations, set.Spec
		})
	})
	applyAll(change.Variants, "PackageVariant", ns, fail, func(pv *configv1alpha1.PackageVariant) error {
		pv.Status = configv1alpha1.PackageVariantStatus{}
		return applyOne(ctx, client.ConfigV1alpha1().PackageVariants(pv.Namespace), pv, del, func(cur *configv1alpha1.PackageVariant) {
			cur.Labels, cur.Annotations, cur.Spec = pv.Labels, pv.Annotations, pv.Spec
		})
	})

	// In-cluster objects: the change's replace the fleet's (or, deleted,
	// are left out).
	type key struct{ gk, ns, name string }
	keyOf := func(u *unstructured.Unstructured) key {
		n := u.GetNamespace()
		if n == "" {
			n = ns
		}
		return key{u.GroupVersionKind().GroupKind().String(), n, u.GetName()}
	}
	changed := map[key]*unstructured.Unstructured{}
	for _, o := range change.Objects {
		u := o.Obj.DeepCopy()
		if u.GetNamespace() == "" {
			u.SetNamespace(ns)
		}
		changed[keyOf(u)] = u
	}
	var objects []*unstructured.Unstructured
	for _, u := range live.ObjectList() {
		k := keyOf(u)
		if c, ok := changed[k]; ok {
			delete(changed, k)
			if del {
				continue
			}
			u = c
		}
		objects = append(objects, u)
	}
	if !del {
		keys := make([]key, 0, len(changed))
		for k := range changed {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			objects = append(objects, changed[k])
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return objects, nil
}

// objectID names an in-cluster object: group/kind namespace/name (the
// namespace defaulted to ns).
func objectID(u *unstructured.Unstructured, ns string) string {
	n := u.GetNamespace()
	if n == "" {
		n = ns
	}
	return u.GroupVersionKind().GroupKind().String() + " " + n + "/" + u.GetName()
}

// applyAll applies a copy of each of objs, in namespace ns when it names
// none, and reports what fails as kind namespace/name.
func applyAll[T interface {
	metav1.Object
	DeepCopy() T
}](objs []input.Sourced[T], kind, ns string, fail func(input.Source, string, error), apply func(obj T) error) {
	for _, o := range objs {
		obj := o.Obj.DeepCopy()
		if obj.GetNamespace() == "" {
			obj.SetNamespace(ns)
		}
		name := kind + " " + obj.GetNamespace() + "/" + obj.GetName()
		fail(o.Source, name, apply(obj))
	}
}

// typedClient is what applyOne needs of a typed client.
type typedClient[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// applyOne does to one object what kubectl apply (or, with del, kubectl
// delete) would: create it, or replace what merge sets on the object the
// Sim holds (keeping its identity and status), or delete it.
func applyOne[T metav1.Object](ctx context.Context, c typedClient[T], obj T, del bool, merge func(cur T)) error {
	cur, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case del && apierrors.IsNotFound(err):
		return errors.New("it does not exist, so there is nothing to delete")
	case del:
		return c.Delete(ctx, obj.GetName(), metav1.DeleteOptions{})
	case apierrors.IsNotFound(err):
		obj.SetUID("")
		obj.SetResourceVersion("")
		obj.SetGeneration(0)
		obj.SetCreationTimestamp(metav1.Time{})
		obj.SetDeletionTimestamp(nil)
		obj.SetManagedFields(nil)
		_, err = c.Create(ctx, obj, metav1.CreateOptions{})
		return err
	case err != nil:
		return err
	}
	merge(cur)
	_, err = c.Update(ctx, cur, metav1.UpdateOptions{})
	return err
}

// fileCache reads each revision's files from the source once and keeps
// them as the source gave them: the Sim asks for them when the run first
// needs them, and the diff compares with the same copy afterwards, even
// when the run changed or deleted the revision.
type fileCache struct {
	source func(ctx context.Context, namespace, name string) (map[string]string, error)
	mu     sync.Mutex
	files  map[string]map[string]string
	fresh  []string // read from the source
}

func (c *fileCache) get(ctx context.Context, namespace, name string) (map[string]string, error) {
	key := namespace + "/" + name
	c.mu.Lock()
	f, ok := c.files[key]
	c.mu.Unlock()
	if ok {
		return copyMap(f), nil
	}
	if c.source == nil {
		return nil, fmt.Errorf("the files of PackageRevision %s are not known", key)
	}
	f, err := c.source(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.files[key] = copyMap(f)
	c.fresh = append(c.fresh, key)
	c.mu.Unlock()
	return copyMap(f), nil
}

func (c *fileCache) read() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := append([]string(nil), c.fresh...)
	sort.Strings(out)
	return out
}

// copyMap is a copy of m, and an empty map (never nil) for a nil m.
func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return maps.Clone(m)
}

// diffFiles reads files for Compare: before from the cache (what the
// fleet held), after from the Sim.
type diffFiles struct {
	files *fileCache
	sim   *porchsim.Sim
}

func (d diffFiles) Before(namespace, name string) (map[string]string, error) {
	return d.files.get(context.Background(), namespace, name)
}

func (d diffFiles) After(namespace, name string) (map[string]string, error) {
	return d.sim.Resources(namespace, name)
}
