package packagevariantset

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"k8s.io/client-go/tools/cache"
)

// What the integration tests (package packagevariantset_test, loop_test.go)
// reach inside the package. They run the controllers through pkg/offline,
// which imports this package, so they cannot be part of it; this file is
// compiled into the tests only.

// Enqueue queues a set, as a periodic resync would.
func (c *Controller) Enqueue(key cache.ObjectName) { c.queue.Add(key) }

// SetClock makes the controller's rollouts decide by now.
func (c *Controller) SetClock(now func() time.Time) { c.clock = now }

// CrossCheck makes every incremental sync from now on compare its fleet
// with a full sync's at the same moment, and report the differences
// ("" when none) to report.
func (c *Controller) CrossCheck(report func(pvs, diffs string)) {
	check := func(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, f *fleet) {
		report(pvs.Name, c.fleetDiffs(ctx, pvs, f))
	}
	c.verify.Store(&check)
}

// fleetDiffs compares an incremental sync's fleet with a full sync's,
// leaving out the variants changed since the sync began (the full sync may
// see them already).
func (c *Controller) fleetDiffs(ctx context.Context, pvs *configv1alpha2.PackageVariantSet, f *fleet) string {
	full := c.variantsOf(pvs)
	c.wantedVariants(ctx, pvs, full)
	key := cache.MetaObjectToName(pvs)
	var diffs []string
	// same compares two lists of names with what each is at.
	same := func(what string, incremental, full map[string]string) {
		for name := range keysOf(incremental, full) {
			a, inA := incremental[name]
			b, inB := full[name]
			if (inA != inB || a != b) && !c.changes.pending(key, name) {
				diffs = append(diffs, fmt.Sprintf("%s %s: %q in the incremental sync (kept: %t), %q in a full one (kept: %t)", what, name, a, inA, b, inB))
			}
		}
	}
	versions := func(m map[string]*configv1alpha1.PackageVariant) map[string]string {
		out := map[string]string{}
		for k, pv := range m {
			out[k] = pv.ResourceVersion
		}
		return out
	}
	specs := func(m map[string]change) map[string]string {
		out := map[string]string{}
		for _, ch := range m {
			spec, _ := json.Marshal(ch.spec)
			out[ch.name] = string(spec)
		}
		return out
	}
	same("variant", versions(f.byName), versions(full.byName))
	same("stale", versions(f.stale), versions(full.stale))
	same("change of", specs(f.changes), specs(full.changes))
	// Each fleet's index of creates is its changes without a variant.
	for which, fl := range map[string]*fleet{"incremental": f, "full": full} {
		for id, ch := range fl.changes {
			if (ch.current == nil) != fl.creates[id] {
				diffs = append(diffs, fmt.Sprintf("the %s sync's change of %s creates: %t, indexed as a create: %t", which, ch.name, ch.current == nil, fl.creates[id]))
			}
		}
		for id := range fl.creates {
			if _, ok := fl.changes[id]; !ok {
				diffs = append(diffs, fmt.Sprintf("the %s sync indexes %s as a create without a change", which, id))
			}
		}
	}
	sort.Strings(diffs)
	return strings.Join(diffs, "; ")
}

func keysOf(maps ...map[string]string) map[string]bool {
	out := map[string]bool{}
	for _, m := range maps {
		for k := range m {
			out[k] = true
		}
	}
	return out
}
