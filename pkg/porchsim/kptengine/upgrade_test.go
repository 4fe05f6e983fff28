package kptengine

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// appV2Lock is where a second revision of app would be published.
var appV2Lock = GitLock{Repo: blueprintsRepo, Directory: "app", Ref: "app/v2", Commit: "5d1c8e3f0a9b7c6d4e2f1a0b9c8d7e6f5a4b3c2d"}

// TestUpgrade proves the upgrade task (resource-merge) followed by the
// render Porch runs after it. There is no transcript of a real upgrade:
// the inputs are measured (app v1 as published, its clone into the
// deployment repository), the edits are the test's, and the expected files
// follow from kpt's merge rules; they were read line by line. Each case's
// are in testdata/upgrade-<case>/want (the files not there are not
// compared).
func TestUpgrade(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason string
		// editLocal and editUpdated change the clone (then rendered, as
		// Porch stores it) and app v1 into the local and new upstream
		// revisions.
		editLocal   func(t *testing.T, files map[string]string)
		editUpdated func(t *testing.T, files map[string]string)
	}{
		"NamespaceChangedDownstream": {
			reason: "the downstream's set-namespace moved every resource from foo to east; the upstream changed region-config's data. " +
				"The resources are matched by their kpt-merge identity (foo/region-config), so each file keeps exactly one resource, " +
				"in the downstream's namespace, with the upstream's change (porchsim used to end up with the resource twice)",
			editLocal:   replacing("Kptfile", "namespace: foo", "namespace: east"),
			editUpdated: replacing("configmap.yaml", "region: us-east1", "region: us-west1"),
		},
		"LocalEditKeptUpstreamChangeTaken": {
			reason:      "the downstream changed the container image, the upstream the replicas: both survive in the one Deployment",
			editLocal:   replacing("deployment.yaml", "image: nginx:1.25", "image: nginx:1.26"),
			editUpdated: replacing("deployment.yaml", "replicas: 1", "replicas: 3"),
		},
		"UpstreamAddsAndDeletesResources": {
			reason: "a resource added upstream arrives with its merge key, and the render puts it in the downstream's namespace; " +
				"a resource deleted upstream stays downstream, as in Porch: kpt deletes it only when the downstream copy equals the old upstream's, " +
				"and the clone's upstream-identifier annotation already makes them differ",
			editLocal: replacing("Kptfile", "namespace: foo", "namespace: east"),
			editUpdated: func(t *testing.T, f map[string]string) {
				delete(f, "configmap2.yaml")
				f["configmap3.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: third\n  namespace: foo\ndata:\n  k: v\n"
			},
		},
		"LocalResourceAndFileEditsKept": {
			reason: "a resource added downstream stays; a non-KRM file changed downstream is kept, one changed only upstream is taken",
			editLocal: func(t *testing.T, f map[string]string) {
				f["local.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\n  namespace: foo\ndata:\n  k: v\n"
				f["NOTES.txt"] = "downstream notes\n"
			},
			editUpdated: func(t *testing.T, f map[string]string) {
				f["README.md"] = replaceOnce(t, f["README.md"], "sample app\n", "sample app, second revision\n")
				f["NOTES.txt"] = "upstream notes\n"
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			original := readPackageDir(t, "upstream-app-v1")
			updated := readPackageDir(t, "upstream-app-v1")
			if tc.editUpdated != nil {
				tc.editUpdated(t, updated)
			}
			local := readPackageDir(t, "clone-deploy-app-east/want")
			if tc.editLocal != nil {
				tc.editLocal(t, local)
				res, err := Render(context.Background(), local, RenderOptions{})
				if err != nil || res.Failed {
					t.Fatalf("render the local revision: %v %s", err, res.Message)
				}
				local = res.Files
			}

			want := readPackageDir(t, "upgrade-"+name+"/want")
			merged, err := Upgrade(original, updated, local, appV2Lock)
			if err != nil {
				t.Fatalf("%s\nUpgrade(...): %v", tc.reason, err)
			}
			res, err := Render(context.Background(), merged, RenderOptions{})
			if err != nil || res.Failed {
				t.Fatalf("%s\nRender(upgraded): %v %s", tc.reason, err, res.Message)
			}
			if diff := diffFiles(want, res.Files, true); diff != "" {
				t.Errorf("%s\nUpgrade then Render: -want +got:\n%s", tc.reason, diff)
			}
			for p := range want {
				if _, ok := res.Files[p]; !ok {
					t.Errorf("%s\nUpgrade then Render: %s missing", tc.reason, p)
				}
			}
			for p, content := range res.Files {
				if strings.HasSuffix(p, ".yaml") && documentCount(content) != 1 {
					t.Errorf("%s\nUpgrade then Render: %s holds %d resources, want 1:\n%s", tc.reason, p, documentCount(content), content)
				}
			}
			if got, want := res.Files["package-context.yaml"], local["package-context.yaml"]; got != want {
				t.Errorf("%s\nUpgrade then Render: package-context.yaml: -want +got:\n%s", tc.reason, cmp.Diff(want, got))
			}
			if !strings.Contains(res.Files["Kptfile"], "    ref: app/v2\n    commit: "+appV2Lock.Commit+"\n") {
				t.Errorf("%s\nUpgrade then Render: Kptfile does not record the new upstream:\n%s", tc.reason, res.Files["Kptfile"])
			}
		})
	}
}

// TestUpgradeRefusesBadInput proves that packages that cannot be merged
// give a clear error, never a panic.
func TestUpgradeRefusesBadInput(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason  string
		edit    func(local map[string]string)
		wantErr string
	}{
		"ResourceNotYAML": {
			reason:  "a local resource that does not parse",
			edit:    func(f map[string]string) { f["broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n" },
			wantErr: "upgrade package",
		},
		"KptfileNotAKptfile": {
			reason:  "a local Kptfile kpt cannot read",
			edit:    func(f map[string]string) { f["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nspec: {}\n" },
			wantErr: "upgrade package",
		},
		"PathOutsideThePackage": {
			reason:  "a file path leaving the package",
			edit:    func(f map[string]string) { f["../../x"] = "x" },
			wantErr: "invalid file path",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			local := readPackageDir(t, "clone-deploy-app-east/want")
			tc.edit(local)
			_, err := Upgrade(readPackageDir(t, "upstream-app-v1"), readPackageDir(t, "upstream-app-v1"), local, appV2Lock)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s\nUpgrade(...): error %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}

// replacing is an edit that replaces old with new, once, in the file at p.
func replacing(p, old, new string) func(t *testing.T, files map[string]string) {
	return func(t *testing.T, files map[string]string) {
		files[p] = replaceOnce(t, files[p], old, new)
	}
}
