package offline

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
)

// BenchmarkFleet runs the fleet scenario (see fleet_test.go) at fleet
// scale and reports, for each phase, what it cost per variant: API requests
// (in total and by verb and resource), syncs of each controller, bytes
// allocated, and the wall time and peak heap of the phase. Run each size
// once (-benchtime=1x, as `make bench` does): a phase is one event for the
// whole fleet, not a loop body.
//
// The phases: converge (the set is created; every variant gets its draft),
// resync (every variant is queued again; all are up to date), publish
// (every draft is published by hand; nothing should happen) and bump (the
// blueprint gets revision 2; every variant makes an upgrade draft).
func BenchmarkFleet(b *testing.B) {
	for _, n := range []int{100, 1000, 10000} {
		b.Run(fmt.Sprintf("variants=%d", n), func(b *testing.B) {
			var sum fleetResult
			for range b.N {
				b.StopTimer()
				f := newFleet(b, n)
				b.StartTimer()
				res := runFleet(b, f)
				b.StopTimer()
				f.runner.Stop()
				sum.add(res)
			}
			sum.report(b, n, b.N)
		})
	}
}

func (r *fleetResult) add(o fleetResult) {
	r.converge.add(o.converge)
	r.resync.add(o.resync)
	r.publish.add(o.publish)
	r.bump.add(o.bump)
}

func (p *phase) add(o phase) {
	p.wall += o.wall
	p.allocated += o.allocated
	p.peakHeap = max(p.peakHeap, o.peakHeap)
	p.liveHeap = max(p.liveHeap, o.liveHeap)
	if p.requests == nil {
		p.requests = map[string]int{}
		p.syncs = map[string]int{}
	}
	for k, v := range o.requests {
		p.requests[k] += v
	}
	for k, v := range o.syncs {
		p.syncs[k] += v
	}
}

// report turns the sums of runs runs over n variants into metrics named
// "<phase>-<what>", for example "converge-req/variant".
func (r fleetResult) report(b *testing.B, n, runs int) {
	per := float64(n * runs)
	for _, ph := range []struct {
		name string
		p    phase
	}{{"converge", r.converge}, {"resync", r.resync}, {"publish", r.publish}, {"bump", r.bump}} {
		p := ph.p
		b.ReportMetric(p.wall.Seconds()/float64(runs), ph.name+"-s")
		b.ReportMetric(float64(p.totalRequests())/per, ph.name+"-req/variant")
		for _, k := range sortedKeys(p.requests) {
			// "update packagevariants/status" -> "update:packagevariants.status"
			unit := strings.ReplaceAll(strings.ReplaceAll(k, " ", ":"), "/", ".")
			b.ReportMetric(float64(p.requests[k])/per, ph.name+"-"+unit+"/variant")
		}
		b.ReportMetric(float64(p.syncs[packagevariant.ControllerName])/per, ph.name+"-pv-syncs/variant")
		b.ReportMetric(float64(p.syncs[packagevariantset.ControllerName])/float64(runs), ph.name+"-set-syncs")
		b.ReportMetric(float64(p.allocated)/per, ph.name+"-B/variant")
		b.ReportMetric(float64(p.peakHeap)/(1<<20), ph.name+"-peak-heap-MB")
		b.ReportMetric(float64(p.liveHeap)/(1<<20), ph.name+"-live-heap-MB")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
