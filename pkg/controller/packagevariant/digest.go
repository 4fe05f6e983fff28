package packagevariant

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"sort"

	"k8s.io/apimachinery/pkg/runtime/schema"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
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
