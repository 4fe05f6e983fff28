//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/offline"
	"github.com/porch-variants/variant-controller/pkg/offline/fleetdiff"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// TestDiffPackage previews publishing the next revision of a blueprint
// (variantctl diff --package) as a ServiceAccount that may only read,
// against a fleet the controller settled on each backend: both variants
// get an upgrade draft now, the audit log shows the reader only read, and
// the fleet is unchanged. Then the revision is published for real, and the
// upgrade drafts the controller makes must hold, byte for byte, the files
// the preview wrote for them (--out): the offline merge, render, package
// context and injection are the live ones.
func TestDiffPackage(t *testing.T) {
	forEachBackend(t, testDiffPackage)
}

func testDiffPackage(t *testing.T, b *backend) {
	ctx := context.Background()
	s, v1 := diffFleet(t, b, "diff-package")
	ns := s.ns
	variants := map[string]string{"edge-edge-1-app": "edge-1", "edge-edge-2-app": "edge-2"}
	set := diffSet(ns)
	set.Spec.Upstream.Revision = 0 // follow the latest revision
	createSet(t, ctx, set)
	s.waitFor(t, step{name: "2 Ready variants with one draft each", want: map[string]readyWant{"edge-edge-1-app": ready, "edge-edge-2-app": ready}})
	for v := range variants {
		s.publishDraftOf(t, v)
	}
	s.waitFor(t, step{name: "both drafts published", want: map[string]readyWant{"edge-edge-1-app": published, "edge-edge-2-app": published}})

	// The next revision: the blueprint as the backend stores it, with its
	// default changed.
	next := resourcesOf(t, ns, v1)
	next["deployment.yaml"] = strings.Replace(next["deployment.yaml"], "replicas: 1", "replicas: 2", 1)
	dir := filepath.Join(t.TempDir(), "app")
	if err := offline.WritePackage(dir, next); err != nil {
		t.Fatal(err)
	}

	reader := diffReader(t, ns)
	before := fleetVersions(t, ns)
	out := t.TempDir()
	stdout, _ := runDiff(t, reader, 1, "-n", ns, "--package", "blueprints/app="+dir, "--out", out, "-o", "json")
	var d fleetdiff.Diff
	if err := json.Unmarshal([]byte(stdout), &d); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	if len(d.Previews) != 1 || d.Previews[0].Revision != 2 || len(d.Previews[0].Now) != 2 {
		t.Fatalf("previews %+v; want one, of blueprints/app revision 2, with both variants upgraded now", d.Previews)
	}
	predicted := map[string]string{} // variant → draft
	for _, v := range d.Previews[0].Now {
		name := strings.TrimPrefix(v.Name, ns+"/")
		if variants[name] == "" || v.Task != "upgrade" || v.Draft != variants[name]+".app.packagevariant-2" {
			t.Errorf("upgraded now: %+v; want an upgrade draft <repository>.app.packagevariant-2 of %v", v, variants)
		}
		predicted[name] = v.Draft
	}
	if after := fleetVersions(t, ns); !cmp.Equal(before, after) {
		t.Errorf("the preview changed the fleet (resourceVersions, -before +after):\n%s", cmp.Diff(before, after))
	}

	// Now for real: the same files published as revision 2.
	v2 := publishRevision(t, ns, repoBlueprints, "app", "v2", editTask(v1), next, true)
	if stored := resourcesOf(t, ns, v2); !cmp.Equal(next, stored) {
		t.Fatalf("%s: the backend stored revision 2 with other files than the preview published (-previewed +stored); the comparison below would not hold:\n%s", b.name, cmp.Diff(next, stored))
	}
	s.waitFor(t, step{name: "an upgrade draft each", want: map[string]readyWant{"edge-edge-1-app": ready, "edge-edge-2-app": ready}})
	for v, draft := range predicted {
		made := s.draftsOf(t, v)
		if len(made) != 1 || made[0].Name != draft {
			t.Errorf("%s: variant %s's drafts are %v, the preview predicted %s", b.name, v, names(made), draft)
			continue
		}
		live := resourcesOf(t, ns, draft)
		// What the comparison covers: the new revision's change, merged
		// into a downstream that carries the variant's package context.
		region := "r" + strings.TrimPrefix(variants[v], "edge-")
		if !strings.Contains(live["deployment.yaml"], "replicas: 2") || !strings.Contains(live["package-context.yaml"], "region: "+region) {
			t.Errorf("%s: the draft %s lacks revision 2's replicas: 2 or the package context's region: %s:\n%v", b.name, draft, region, live)
		}
		previewed, err := input.ReadPackageDir(offline.DraftDir(filepath.Join(out, ns), variants[v], "app", "packagevariant-2"))
		if err != nil {
			t.Fatalf("the preview's draft %s: %v", draft, err)
		}
		if b.name == backendPorch {
			previewed = withCommitOf(t, previewed, live)
		}
		if diff := cmp.Diff(previewed, live); diff != "" {
			t.Errorf("%s: the draft %s the controller made differs from the preview's (-previewed +made):\n%s", b.name, draft, diff)
		}
	}
	reportf(t, "%s: the preview of revision 2 predicted the upgrade drafts %v; their files equal the drafts the controller made when it was published", b.name, predicted)
}

// resourcesOf reads a package revision's files from the backend.
func resourcesOf(t *testing.T, ns, name string) map[string]string {
	t.Helper()
	prr, err := env.admin.PorchV1alpha1().PackageRevisionResources(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return prr.Spec.Resources
}

// upstreamCommit is the commit a Kptfile's upstreamLock records.
var upstreamCommit = regexp.MustCompile(`(?m)^(\s+commit: )([0-9a-f]{40})$`)

// withCommitOf puts the upstream commit of the made draft's Kptfile into
// the previewed one. A real Porch's commit of the revision is a git
// commit, which nobody can know before the revision is published; the
// preview records a stand-in. Everything else must match.
func withCommitOf(t *testing.T, previewed, made map[string]string) map[string]string {
	t.Helper()
	m := upstreamCommit.FindStringSubmatch(made["Kptfile"])
	if m == nil {
		return previewed
	}
	out := map[string]string{}
	for k, v := range previewed {
		out[k] = v
	}
	out["Kptfile"] = upstreamCommit.ReplaceAllString(previewed["Kptfile"], "${1}"+m[2])
	reportf(t, "porch: the previewed draft's upstream commit replaced with Porch's %s (a git commit made at the publish)", m[2])
	return out
}
