package packagevariant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/mutate"
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

// injectedState is what one lookup of an injected object returned, as the
// digest of a variant's inputs records it.
type injectedState struct {
	Ref         configv1alpha1.InjectedObject
	Found       bool
	Err         string `json:",omitempty"`
	Fingerprint string `json:",omitempty"`
}

// readByInjection is what injection read, as it reported it: the digest
// recorded with a write describes exactly the content written, even if an
// object changed since.
func readByInjection(cands []mutate.Candidate) []injectedState {
	out := make([]injectedState, 0, len(cands))
	for _, cand := range cands {
		out = append(out, injectedState{Ref: injectedObject(cand), Found: cand.Found, Err: cand.Err, Fingerprint: cand.Fingerprint})
	}
	return out
}

// readNow looks the objects of refs up again in the cache and fingerprints
// them as injection would (mutate.Fingerprint).
func (c *Controller) readNow(ctx context.Context, pv *configv1alpha1.PackageVariant, refs []configv1alpha1.InjectedObject) []injectedState {
	out := make([]injectedState, 0, len(refs))
	for _, ref := range refs {
		st := injectedState{Ref: ref}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		if err != nil {
			st.Err = err.Error()
			out = append(out, st)
			continue
		}
		gvk := gv.WithKind(ref.Kind)
		obj, found, err := c.readInjected(ctx, pv, gvk, ref.Name)
		switch {
		case err != nil:
			st.Err = err.Error()
		case found:
			st.Found = true
			st.Fingerprint = mutate.Fingerprint(gvk, obj)
		}
		out = append(out, st)
	}
	return out
}

// inputsUnchanged reports whether the variant's last write went to pr and
// nothing it was made from (the upstream, the variant's spec, the injected
// objects) has changed since.
func (c *Controller) inputsUnchanged(ctx context.Context, st *state, pr, upstream *porchv1alpha1.PackageRevision) bool {
	a := st.applied
	return describes(a, pr) && a.Upstream == upstream.Name && c.inputsAsRecorded(ctx, st.pv, a)
}

// renderFailed reports whether the variant's last write to a revision
// failed to render (status.downstreamTargets says so): the write is made
// again, so that Porch renders again, even if the files need no change.
func renderFailed(pv *configv1alpha1.PackageVariant, name string) bool {
	for _, t := range pv.Status.DownstreamTargets {
		if t.Name == name {
			return t.RenderStatus.Err != ""
		}
	}
	return false
}

// writeOwed reports whether the variant owed draft name a write when its
// record a was made: the variant or an object it injects changed since, or
// the last render of the draft failed.
func (c *Controller) writeOwed(ctx context.Context, pv *configv1alpha1.PackageVariant, a *configv1alpha1.AppliedState, name string) bool {
	return renderFailed(pv, name) || !c.inputsAsRecorded(ctx, pv, a)
}

// inputsAsRecorded reports whether the variant, and the objects it
// injected, are what its record a says its last write was made from.
func (c *Controller) inputsAsRecorded(ctx context.Context, pv *configv1alpha1.PackageVariant, a *configv1alpha1.AppliedState) bool {
	return a.InputsDigest != "" && a.InputsDigest == inputsDigest(pv, a.Upstream, c.readNow(ctx, pv, a.Injected))
}

// inputsDigest fingerprints everything the mutations of a variant depend on.
// Equal digests mean that re-applying the variant to the downstream it last
// wrote would change nothing, so the controller need not read the package.
func inputsDigest(pv *configv1alpha1.PackageVariant, upstreamName string, injected []injectedState) string {
	// The mutations' input whole (mutationInput is its one mapping from the
	// spec): a field added to mutate.Input is in the digest without a
	// change here, so a change of it is never skipped as "up to date".
	in := struct {
		Input    mutate.Input
		Upstream string
		Injected []injectedState
	}{
		Input:    mutationInput(pv),
		Upstream: upstreamName,
		Injected: injected,
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

// mutationInput is what the variant asks of its downstream package.
func mutationInput(pv *configv1alpha1.PackageVariant) mutate.Input {
	return mutate.Input{
		VariantName:    pv.Name,
		PackageContext: pv.Spec.PackageContext,
		Pipeline:       pv.Spec.Pipeline,
		Injectors:      pv.Spec.Injectors,
	}
}

func (c *Controller) objectGetter(ctx context.Context, pv *configv1alpha1.PackageVariant) mutate.ObjectGetter {
	return func(gvk schema.GroupVersionKind, name string) (map[string]interface{}, bool, error) {
		return c.readInjected(ctx, pv, gvk, name)
	}
}

// readInjected reads an in-cluster object the variant asks to inject, if
// its ServiceAccount (spec.serviceAccountName, else the controller's
// default) may get it; otherwise the error says what is missing, and
// injection writes that, not the object, into the package.
func (c *Controller) readInjected(ctx context.Context, pv *configv1alpha1.PackageVariant, gvk schema.GroupVersionKind, name string) (map[string]interface{}, bool, error) {
	if err := c.access.MayGet(ctx, pv.Namespace, pv.Spec.ServiceAccountName, gvk, name); err != nil {
		return nil, false, err
	}
	return c.injection.Get(gvk, pv.Namespace, name)
}
