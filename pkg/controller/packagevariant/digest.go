package packagevariant

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
)

// resourcesDigest fingerprints a package's files, independent of map order.
func resourcesDigest(files map[string]string) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		h.Write([]byte(p))
		h.Write([]byte{0})
		h.Write([]byte(files[p]))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// injectedContent is the part of an in-cluster object that injection copies.
func injectedContent(gvk schema.GroupVersionKind, obj map[string]interface{}) interface{} {
	if gvk.Group == "" && gvk.Kind == "ConfigMap" {
		return obj["data"]
	}
	return obj["spec"]
}

// inputsDigest fingerprints everything the mutations of a variant depend on.
// Equal digests mean that re-applying the variant to the downstream it last
// wrote would change nothing, so the controller need not read the package.
func (c *Controller) inputsDigest(pv *configv1alpha1.PackageVariant, upstreamName string, injected []configv1alpha1.InjectedObject) string {
	type objectState struct {
		Ref     configv1alpha1.InjectedObject
		Found   bool
		Err     string      `json:",omitempty"`
		Content interface{} `json:",omitempty"`
	}
	in := struct {
		Variant        string
		Upstream       string
		PackageContext *configv1alpha1.PackageContext
		Pipeline       interface{}
		Injectors      []configv1alpha1.InjectionSelector
		Injected       []objectState
	}{
		Variant:        pv.Name,
		Upstream:       upstreamName,
		PackageContext: pv.Spec.PackageContext,
		Pipeline:       pv.Spec.Pipeline,
		Injectors:      pv.Spec.Injectors,
	}
	for _, ref := range injected {
		st := objectState{Ref: ref}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			st.Err = err.Error()
		} else {
			gvk := gv.WithKind(ref.Kind)
			obj, found, err := c.injection.Get(gvk, pv.Namespace, ref.Name)
			switch {
			case err != nil:
				st.Err = err.Error()
			case found:
				st.Found = true
				st.Content = injectedContent(gvk, obj)
			}
		}
		in.Injected = append(in.Injected, st)
	}
	b, err := json.Marshal(in)
	if err != nil {
		// Unreachable for these types; an empty digest never matches, so the
		// package is read and checked instead.
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
