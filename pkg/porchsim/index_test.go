package porchsim

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/internal/store"
)

// TestIndexesMatchFullScan drives Sims with random workloads and, after
// every step, compares the indexes with what a scan of the whole store
// finds, and the garbage collector's visiting order with the order of a scan
// (kind, then name). An index update missed on any path (a create, an owner
// reference change, a finalizer removal that deletes, a cascade) fails it.
func TestIndexesMatchFullScan(t *testing.T) {
	var cascades, ownerChanges int
	for seed := range uint64(10) {
		s := New()
		objects := 0
		workload(t, s, seed, 300, func(step string) {
			t.Helper()
			checkIndexes(t, s, step)
			n := s.store.Len()
			succeeded := strings.HasSuffix(step, ": <nil>")
			if succeeded && strings.Contains(step, ": delete ") && objects-n > 1 {
				cascades++
			}
			if succeeded && (strings.Contains(step, ": set owners of ") || strings.Contains(step, ": patch owners of ")) {
				ownerChanges++
			}
			objects = n
		})
	}
	t.Logf("%d cascading deletes, %d owner reference changes", cascades, ownerChanges)
	// The workload must have done what the test is about.
	if cascades == 0 || ownerChanges == 0 {
		t.Errorf("the workloads ran %d cascading deletes and %d owner reference changes, want some of each", cascades, ownerChanges)
	}
}

// checkIndexes compares the store's indexes with a scan of the store (see
// store.CheckIndexes), and the revisions of each package Porch's rules see
// with those a scan of every PackageRevision by its spec finds, in name
// order.
func checkIndexes(t *testing.T, s *Sim, step string) {
	t.Helper()
	if err := s.store.CheckIndexes(); err != nil {
		t.Fatalf("after %s: %v", step, err)
	}
	s.store.Lock()
	defer s.store.Unlock()
	revisions := map[packageKey][]*store.Entry{}
	for _, e := range s.store.SortedEntriesLocked(resPackageRevisions, "") {
		pr := e.Object().(*porchv1alpha1.PackageRevision)
		pk := packageKey{pr.Namespace, pr.Spec.RepositoryName, pr.Spec.PackageName}
		revisions[pk] = append(revisions[pk], e)
	}
	for pk, want := range revisions {
		if got := s.porch.packageEntriesLocked(pk.namespace, pk.repository, pk.pkg); !slices.Equal(got, want) {
			t.Fatalf("after %s: the revisions of package %v are not those a scan finds, in name order", step, pk)
		}
	}
}

// workloadNamespaces are the namespaces of the random workload: owner
// references that cross namespaces must not reach the garbage collector.
var workloadNamespaces = []string{ns, "other"}

// workloadPackages are the downstream packages of the random workload, few
// enough that packages get several revisions.
var workloadPackages = []string{"p0", "p1", "p2", "p3/sub"}

// workload drives a Sim with a random mix of requests and helper calls:
// creates with owner references, owner reference changes by update and
// patch, finalizers added and removed, deletes with every propagation
// policy, cascades, publishes and repository changes. Requests may fail (a
// clone into an existing package, a delete Porch refuses); that is part of
// the mix. After every step it calls check with a description of the step,
// and it returns the description of every step with its outcome.
func workload(t testing.TB, s *Sim, seed uint64, steps int, check func(step string)) []string {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, seed))
	c := s.Clientset()
	for _, n := range workloadNamespaces {
		s.AddRepository(n, "blueprints", false, nil)
		s.AddRepository(n, "deploy", true, nil)
		if _, err := s.AddPublished(n, "blueprints", "app", 1, blueprint(1, "app:v1", "readme\n")); err != nil {
			t.Fatal(err)
		}
	}

	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	// ownerRefs names existing objects, removed ones and ones not created
	// yet (UIDs are handed out in sequence), sometimes the same one twice.
	ownerRefs := func() []metav1.OwnerReference {
		last := s.store.LastUID()
		var refs []metav1.OwnerReference
		for range rng.IntN(4) {
			uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", 1+rng.Int64N(last+3)))
			refs = append(refs, metav1.OwnerReference{APIVersion: "v1", Kind: "Owner", Name: "owner", UID: uid})
		}
		if len(refs) > 0 && rng.IntN(8) == 0 {
			refs = append(refs, refs[0])
		}
		return refs
	}
	finalizers := func() []string {
		if rng.IntN(4) == 0 {
			return []string{configv1alpha1.Finalizer}
		}
		return nil
	}
	// existing picks a stored object of resource, "" if there is none.
	existing := func(resource, namespace string) string {
		s.store.Lock()
		defer s.store.Unlock()
		keys := s.store.SortedKeysLocked(resource, namespace)
		if len(keys) == 0 {
			return ""
		}
		return keys[rng.IntN(len(keys))].Name
	}
	propagation := func() *metav1.DeletionPropagation {
		switch rng.IntN(4) {
		case 0:
			return nil
		case 1:
			return ptr.To(metav1.DeletePropagationOrphan)
		case 2:
			return ptr.To(metav1.DeletePropagationForeground)
		}
		return ptr.To(metav1.DeletePropagationBackground)
	}
	resources := []string{resPackageVariants, resPackageVariantSets, resPackageRevisions, resRepositories}
	// setMeta sets what (owners or finalizers) of an object to value, and
	// says so in the step it returns.
	setMeta := func(n, resource, name, what string, value any, change func(*metav1.ObjectMeta)) (string, error) {
		return fmt.Sprintf("set %s of %s %s/%s to %v", what, resource, n, name, value), updateMeta(ctx, s, resource, n, name, change)
	}

	var trace []string
	for i := range steps {
		n := pick(workloadNamespaces)
		pvs := c.ConfigV1alpha1().PackageVariants(n)
		sets := c.ConfigV1alpha2().PackageVariantSets(n)
		prs := c.PorchV1alpha1().PackageRevisions(n)
		repos := c.ConfigV1alpha1().Repositories(n)
		var step string
		var err error
		switch op := rng.IntN(16); op {
		case 0, 1:
			in := newVariant(fmt.Sprintf("pv-%d", rng.IntN(40)))
			in.Namespace = n
			in.OwnerReferences = ownerRefs()
			in.Finalizers = finalizers()
			in.Labels = map[string]string{"group": pick([]string{"a", "b"})}
			step = fmt.Sprintf("create variant %s/%s owners %v", n, in.Name, in.OwnerReferences)
			_, err = pvs.Create(ctx, in, metav1.CreateOptions{})
		case 2:
			in := &configv1alpha2.PackageVariantSet{ObjectMeta: metav1.ObjectMeta{
				Namespace: n, Name: fmt.Sprintf("set-%d", rng.IntN(10)), OwnerReferences: ownerRefs(), Finalizers: finalizers(),
			}}
			step = fmt.Sprintf("create set %s/%s owners %v", n, in.Name, in.OwnerReferences)
			_, err = sets.Create(ctx, in, metav1.CreateOptions{})
		case 3, 4:
			pkg := pick(workloadPackages)
			var task porchv1alpha1.Task
			switch rng.IntN(3) {
			case 0:
				task = cloneTask(upstreamV1)
			case 1:
				task = initTask()
			default:
				task = editTask(helper.PackageRevisionName("deploy", pkg, fmt.Sprintf("w%d", rng.IntN(20))))
			}
			in := newDraft("deploy", pkg, fmt.Sprintf("w%d", rng.IntN(20)), task)
			in.Namespace = n
			in.OwnerReferences = ownerRefs()
			in.Finalizers = finalizers()
			step = fmt.Sprintf("create revision %s/%s task %s owners %v", n, in.Spec.PackageName, task.Type, in.OwnerReferences)
			_, err = prs.Create(ctx, in, metav1.CreateOptions{})
		case 5, 6:
			resource := pick(resources)
			name := existing(resource, n)
			refs := ownerRefs()
			step, err = setMeta(n, resource, name, "owners", refs, func(m *metav1.ObjectMeta) { m.OwnerReferences = refs })
		case 7:
			resource := pick([]string{resPackageVariants, resPackageRevisions})
			name := existing(resource, n)
			refs := ownerRefs()
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"ownerReferences": refs}})
			step = fmt.Sprintf("patch owners of %s %s/%s to %v", resource, n, name, refs)
			if resource == resPackageVariants {
				_, err = pvs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			} else {
				_, err = prs.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
			}
		case 8, 9:
			resource := pick(resources)
			if resource == resRepositories && rng.IntN(4) > 0 {
				resource = resPackageVariants
			}
			name := existing(resource, n)
			opts := metav1.DeleteOptions{PropagationPolicy: propagation()}
			step = fmt.Sprintf("delete %s %s/%s propagation %v", resource, n, name, deref(opts.PropagationPolicy))
			switch resource {
			case resPackageVariants:
				err = pvs.Delete(ctx, name, opts)
			case resPackageVariantSets:
				err = sets.Delete(ctx, name, opts)
			case resPackageRevisions:
				err = prs.Delete(ctx, name, opts)
			case resRepositories:
				err = repos.Delete(ctx, name, opts)
			}
		case 10:
			resource := pick(resources)
			name := existing(resource, n)
			fin := finalizers()
			step, err = setMeta(n, resource, name, "finalizers", fin, func(m *metav1.ObjectMeta) { m.Finalizers = fin })
		case 11:
			name := existing(resPackageRevisions, n)
			if rng.IntN(2) == 0 {
				step = fmt.Sprintf("propose %s/%s", n, name)
				err = s.Propose(n, name)
			} else {
				step = fmt.Sprintf("publish %s/%s", n, name)
				err = s.Publish(n, name)
			}
		case 12:
			repo, pkg := "deploy", pick(workloadPackages)
			if rng.IntN(2) == 0 {
				repo, pkg = "blueprints", "app"
			}
			s.store.Lock()
			next := s.porch.nextRevisionLocked(n, repo, pkg)
			s.store.Unlock()
			step = fmt.Sprintf("add published %s/%s/%s v%d", n, repo, pkg, next)
			_, err = s.AddPublished(n, repo, pkg, next, blueprint(next, "app:v1", "readme\n"))
		case 13:
			pkg := pick(workloadPackages)
			step = fmt.Sprintf("add placeholder %s/deploy/%s", n, pkg)
			_, err = s.AddPlaceholder(n, "deploy", pkg)
		case 14:
			name := existing(resPackageRevisions, n)
			step = fmt.Sprintf("set resources of %s/%s", n, name)
			err = s.SetResources(n, name, blueprint(rng.IntN(5), "app:v2", "edited\n"))
		case 15:
			if rng.IntN(2) == 0 {
				step = fmt.Sprintf("delete variants of group a in %s", n)
				err = pvs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "group=a"})
			} else {
				repo, deployment := pick([]string{"blueprints", "deploy"}), rng.IntN(2) == 0
				step = fmt.Sprintf("add repository %s/%s deployment=%t", n, repo, deployment)
				s.AddRepository(n, repo, deployment, map[string]string{"step": fmt.Sprint(i)})
			}
		}
		step = fmt.Sprintf("%d: %s: %v", i, step, err)
		trace = append(trace, step)
		check(step)
	}
	return trace
}

// updateMeta changes the metadata of a stored object through an update
// request.
func updateMeta(ctx context.Context, s *Sim, resource, namespace, name string, change func(*metav1.ObjectMeta)) error {
	c := s.Clientset()
	switch resource {
	case resPackageVariants:
		return updateMetaWith(ctx, c.ConfigV1alpha1().PackageVariants(namespace), name, change)
	case resPackageVariantSets:
		return updateMetaWith(ctx, c.ConfigV1alpha2().PackageVariantSets(namespace), name, change)
	case resPackageRevisions:
		return updateMetaWith(ctx, c.PorchV1alpha1().PackageRevisions(namespace), name, change)
	case resRepositories:
		return updateMetaWith(ctx, c.ConfigV1alpha1().Repositories(namespace), name, change)
	}
	return fmt.Errorf("unknown resource %q", resource)
}

// getUpdater is the part of a typed client updateMetaWith uses.
type getUpdater[T any] interface {
	getter[T]
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// updateMetaWith gets the object name through client, changes its
// metadata and updates it.
func updateMetaWith[T interface{ GetObjectMeta() metav1.Object }](ctx context.Context, client getUpdater[T], name string, change func(*metav1.ObjectMeta)) error {
	o, err := client.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	change(o.GetObjectMeta().(*metav1.ObjectMeta))
	_, err = client.Update(ctx, o, metav1.UpdateOptions{})
	return err
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}
