package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestSetRollout(t *testing.T) {
	const header = `
# HELP variant_controller_rollout_wave_variants Variants of each wave of a PackageVariantSet's rollout, by state (pending, open, finished, failed).
# TYPE variant_controller_rollout_wave_variants gauge`
	m := New()
	m.SetRollout("ns", "edge", []WaveVariants{{Wave: "canary", Finished: 1}, {Wave: "rest", Pending: 3, Open: 2, Failed: 1}})
	m.SetRollout("ns", "other", []WaveVariants{{Wave: "all", Open: 4}})
	want := header + `
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="failed",wave="canary"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="failed",wave="rest"} 1
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="finished",wave="canary"} 1
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="finished",wave="rest"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="open",wave="canary"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="open",wave="rest"} 2
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="pending",wave="canary"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="pending",wave="rest"} 3
variant_controller_rollout_wave_variants{namespace="ns",set="other",state="failed",wave="all"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="other",state="finished",wave="all"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="other",state="open",wave="all"} 4
variant_controller_rollout_wave_variants{namespace="ns",set="other",state="pending",wave="all"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "variant_controller_rollout_wave_variants"); err != nil {
		t.Error(err)
	}
	// A set whose waves change, or that has no rollout any more, keeps no
	// series of before.
	m.SetRollout("ns", "edge", []WaveVariants{{Wave: "all", Finished: 5}})
	m.SetRollout("ns", "other", nil)
	want = header + `
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="failed",wave="all"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="finished",wave="all"} 5
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="open",wave="all"} 0
variant_controller_rollout_wave_variants{namespace="ns",set="edge",state="pending",wave="all"} 0
`
	if err := testutil.GatherAndCompare(m.Registry, strings.NewReader(want), "variant_controller_rollout_wave_variants"); err != nil {
		t.Error(err)
	}
}
