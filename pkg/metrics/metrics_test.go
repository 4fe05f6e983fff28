package metrics

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSetRollout(t *testing.T) {
	m := New()
	// want is every series: "<set> <wave> <state> <value>".
	check := func(want ...string) {
		t.Helper()
		var b strings.Builder
		b.WriteString("# HELP variant_controller_rollout_wave_variants Variants of each wave of a PackageVariantSet's rollout, by state (pending, open, finished, failed, skipped).\n")
		b.WriteString("# TYPE variant_controller_rollout_wave_variants gauge\n")
		for _, w := range want {
			f := strings.Fields(w)
			fmt.Fprintf(&b, "variant_controller_rollout_wave_variants{namespace=\"ns\",set=%q,state=%q,wave=%q} %s\n", f[0], f[2], f[1], f[3])
		}
		if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(b.String()), "variant_controller_rollout_wave_variants"); err != nil {
			t.Error(err)
		}
	}
	m.SetRollout("ns", "edge", []WaveVariants{{Wave: "canary", Finished: 1}, {Wave: "rest", Pending: 3, Open: 2, Failed: 1, Skipped: 2}})
	m.SetRollout("ns", "other", []WaveVariants{{Wave: "all", Open: 4}})
	check("edge canary pending 0", "edge canary open 0", "edge canary finished 1", "edge canary failed 0", "edge canary skipped 0",
		"edge rest pending 3", "edge rest open 2", "edge rest finished 0", "edge rest failed 1", "edge rest skipped 2",
		"other all pending 0", "other all open 4", "other all finished 0", "other all failed 0", "other all skipped 0")
	// A set whose waves change, or that has no rollout any more, keeps no
	// series of before.
	m.SetRollout("ns", "edge", []WaveVariants{{Wave: "all", Finished: 5}})
	m.SetRollout("ns", "other", nil)
	check("edge all pending 0", "edge all open 0", "edge all finished 5", "edge all failed 0", "edge all skipped 0")
}
