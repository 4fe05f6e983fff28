package packagevariant

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/mutate"
)

func TestResourcesDigest(t *testing.T) {
	a := map[string]string{"Kptfile": "k", "a.yaml": "x", "b.yaml": "y"}
	b := map[string]string{"b.yaml": "y", "a.yaml": "x", "Kptfile": "k"}
	if resourcesDigest(a) != resourcesDigest(b) {
		t.Error("digest depends on map order")
	}
	for name, other := range map[string]map[string]string{
		"changed content": {"Kptfile": "k", "a.yaml": "x", "b.yaml": "z"},
		"renamed file":    {"Kptfile": "k", "a.yaml": "x", "c.yaml": "y"},
		"file boundary":   {"Kptfile": "k", "a.yaml": "xb.yaml", "": "y"},
		"removed file":    {"Kptfile": "k", "a.yaml": "x"},
	} {
		if resourcesDigest(other) == resourcesDigest(a) {
			t.Errorf("%s: same digest", name)
		}
	}
}

// injectionController is a Controller whose injection watcher reads the
// given ConfigMaps.
func injectionController(t *testing.T, objs ...runtime.Object) *Controller {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(cancel)
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{configMapGVR: "ConfigMapList"}, objs...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}, meta.RESTScopeRoot)
	c := &Controller{}
	c.injection = ondemand.New(ctx, ondemand.Options{Dynamic: dyn, Mapper: mapper})
	return c
}

// digestNow is the digest of a variant's inputs with the injected objects
// as the cache holds them now (what the up-to-date check computes).
func digestNow(c *Controller, pv *configv1alpha1.PackageVariant, upstream string, refs []configv1alpha1.InjectedObject) string {
	return inputsDigest(pv, upstream, c.readNow(context.Background(), pv, refs))
}

func TestInputsDigest(t *testing.T) {
	cm := configMap("eu-west", map[string]string{"region": "eu-west-1"})
	c := injectionController(t, cm)
	base := customised("app", "app")
	injected := []configv1alpha1.InjectedObject{{APIVersion: "v1", Kind: "ConfigMap", Name: "eu-west"}}
	d := digestNow(c, base, "blueprints.app.v1", injected)
	if d == "" || d != digestNow(c, base.DeepCopy(), "blueprints.app.v1", injected) {
		t.Fatal("digest is empty or not stable")
	}
	changes := map[string]func() string{
		"upstream": func() string { return digestNow(c, base, "blueprints.app.v2", injected) },
		"package context": func() string {
			pv := base.DeepCopy()
			pv.Spec.PackageContext.Data["cluster"] = "eu-2"
			return digestNow(c, pv, "blueprints.app.v1", injected)
		},
		"pipeline": func() string {
			pv := base.DeepCopy()
			pv.Spec.Pipeline.Mutators[0].Image = "other"
			return digestNow(c, pv, "blueprints.app.v1", injected)
		},
		"injectors": func() string {
			pv := base.DeepCopy()
			pv.Spec.Injectors[0].Name = "us-east"
			return digestNow(c, pv, "blueprints.app.v1", injected)
		},
		"variant name": func() string {
			pv := base.DeepCopy()
			pv.Name = "other"
			return digestNow(c, pv, "blueprints.app.v1", injected)
		},
		"injected object missing": func() string {
			return digestNow(c, base, "blueprints.app.v1", []configv1alpha1.InjectedObject{{APIVersion: "v1", Kind: "ConfigMap", Name: "gone"}})
		},
		"injected object unreadable": func() string {
			return digestNow(c, base, "blueprints.app.v1", []configv1alpha1.InjectedObject{{APIVersion: "v1/x/y", Kind: "ConfigMap", Name: "eu-west"}})
		},
		"nothing injected": func() string { return digestNow(c, base, "blueprints.app.v1", nil) },
	}
	for name, digest := range changes {
		if digest() == d {
			t.Errorf("%s: a change that matters left the digest unchanged", name)
		}
	}
	// Labels and annotations for new revisions do not touch the package.
	pv := base.DeepCopy()
	pv.Spec.Labels = map[string]string{"x": "y"}
	if digestNow(c, pv, "blueprints.app.v1", injected) != d {
		t.Error("labels changed the inputs digest")
	}
}

func TestInjectedContentChangesDigest(t *testing.T) {
	before := injectionController(t, configMap("eu-west", map[string]string{"region": "eu-west-1"}))
	after := injectionController(t, configMap("eu-west", map[string]string{"region": "eu-west-2"}))
	pv := customised("app", "app")
	injected := []configv1alpha1.InjectedObject{{APIVersion: "v1", Kind: "ConfigMap", Name: "eu-west"}}
	if digestNow(before, pv, "u", injected) == digestNow(after, pv, "u", injected) {
		t.Error("new ConfigMap data left the digest unchanged")
	}
	relabelled := configMap("eu-west", map[string]string{"region": "eu-west-1"})
	relabelled.SetLabels(map[string]string{"touched": "yes"})
	if digestNow(before, pv, "u", injected) != digestNow(injectionController(t, relabelled), pv, "u", injected) {
		t.Error("a label on the ConfigMap changed the digest; only its data is injected")
	}
}

// TestDigestOfWhatInjectionRead: the digest recorded with a write is built
// from what injection reported it read; with nothing changed since, the
// up-to-date check (which reads the cache again, fingerprinting through the
// same rule) computes the same digest, and a change made after the
// injection's read is not taken into the recorded digest.
func TestDigestOfWhatInjectionRead(t *testing.T) {
	gvk := schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	cm := configMap("eu-west", map[string]string{"region": "eu-west-1"})
	c := injectionController(t, cm)
	pv := customised("app", "app")
	read := []mutate.Candidate{
		{GVK: gvk, Name: "eu-west", Found: true, Fingerprint: mutate.Fingerprint(gvk, cm.Object)},
		{GVK: gvk, Name: "gone"},
	}
	refs := injectedObjects(read)
	recorded := inputsDigest(pv, "u", readByInjection(read))
	if now := digestNow(c, pv, "u", refs); now != recorded {
		t.Errorf("the up-to-date check's digest %s differs from the recorded %s with nothing changed", now, recorded)
	}
	changed := injectionController(t, configMap("eu-west", map[string]string{"region": "eu-west-2"}))
	if digestNow(changed, pv, "u", refs) == recorded {
		t.Error("a change of the injected object after the write left the digest unchanged")
	}
}
