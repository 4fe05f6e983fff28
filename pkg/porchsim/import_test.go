package porchsim

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

// snapshotRevision is a PackageRevision as kubectl prints it from a Porch:
// with server metadata and status.
func snapshotRevision() *porchv1alpha1.PackageRevision {
	published := metav1.Now()
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ns,
			Name:            "blueprints.app.v2",
			UID:             "7f1c0a4e-0000-0000-0000-000000000001",
			ResourceVersion: "abc123",
			Labels:          map[string]string{porchv1alpha1.LatestPackageRevisionLabel: "true", "team": "edge"},
			Annotations:     map[string]string{"note": "from a snapshot"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: "t", UID: "0000-owner"}},
		},
		Spec: porchv1alpha1.PackageRevisionSpec{
			PackageName:    "app",
			RepositoryName: "blueprints",
			WorkspaceName:  "v2",
			Revision:       2,
			Lifecycle:      porchv1alpha1.PackageRevisionLifecyclePublished,
		},
		Status: porchv1alpha1.PackageRevisionStatus{PublishedBy: "alice@example.com", PublishedAt: &published},
	}
}

// TestImportKeepsWhatPorchReported: uid, spec, status, labels,
// annotations, finalizers and owner references are stored as given; the
// resourceVersion is the Sim's; the files are served as the revision's
// resources.
func TestImportKeepsWhatPorchReported(t *testing.T) {
	s, c := fixture(t)
	in := snapshotRevision()
	in.Finalizers = []string{"example.com/keep"}
	files := blueprint(2, "app:v2", "readme v2\n")
	got, err := s.Import(in, files)
	if err != nil {
		t.Fatal(err)
	}
	if got.UID != in.UID || got.ResourceVersion == in.ResourceVersion || got.ResourceVersion == "" {
		t.Errorf("uid %q resourceVersion %q: want the uid given (%q) and the Sim's own resourceVersion", got.UID, got.ResourceVersion, in.UID)
	}
	read := mustGet(t, c.PorchV1alpha1().PackageRevisions(ns), in.Name)
	if read.UID != in.UID || len(read.Finalizers) != 1 || read.Finalizers[0] != "example.com/keep" {
		t.Errorf("served uid %q finalizers %v: want %q and [example.com/keep]", read.UID, read.Finalizers, in.UID)
	}
	if read.Status.PublishedBy != "alice@example.com" || read.Labels["team"] != "edge" ||
		read.Annotations["note"] != "from a snapshot" || len(read.OwnerReferences) != 1 ||
		read.Spec.Revision != 2 || read.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecyclePublished {
		t.Errorf("stored revision lost what was reported: %+v", read)
	}
	if got := resources(t, s, in.Name); got["README.md"] != "readme v2\n" {
		t.Errorf("resources = %v", got)
	}
	// A clone from the imported revision works like from any other.
	create(t, c, newDraft("deploy", "app", "packagevariant-1", cloneTask(in.Name)))
}

// importSnapshot imports snapshotRevision, changed by change, with app v2's
// files into the fixture.
func importSnapshot(t *testing.T, change func(in *porchv1alpha1.PackageRevision)) *porchv1alpha1.PackageRevision {
	t.Helper()
	s, _ := fixture(t)
	in := snapshotRevision()
	change(in)
	got, err := s.Import(in, blueprint(2, "app:v2", ""))
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func TestImportDerivesTheName(t *testing.T) {
	got := importSnapshot(t, func(in *porchv1alpha1.PackageRevision) { in.Name = "" })
	if got.Name != "blueprints.app.v2" {
		t.Errorf("name = %q, want blueprints.app.v2", got.Name)
	}
}

// TestImportDerivesTheUID: without a uid, the revision gets Porch's
// (derived from namespace and name), as a create through the API does.
func TestImportDerivesTheUID(t *testing.T) {
	got := importSnapshot(t, func(in *porchv1alpha1.PackageRevision) { in.UID = "" })
	if want := helper.PackageRevisionUID(ns, snapshotRevision().Name); got.UID != want {
		t.Errorf("uid = %q, want Porch's %q", got.UID, want)
	}
}

// TestImportRefusesAUIDInUse: a uid names one object; a snapshot that gives
// the same uid twice is refused rather than served with one of them lost.
func TestImportRefusesAUIDInUse(t *testing.T) {
	s, _ := fixture(t)
	repo := s.AddRepository(ns, "other", false, nil)
	in := snapshotRevision()
	in.UID = repo.UID
	_, err := s.Import(in, blueprint(2, "app:v2", ""))
	if err == nil || !strings.Contains(err.Error(), "already the uid of repositories ns/other") {
		t.Fatalf("Import with the uid of a Repository: %v, want a refusal naming the Repository", err)
	}
	if _, err := s.PackageRevision(ns, in.Name); err == nil {
		t.Error("the refused revision was stored")
	}
}

func TestImportRefusals(t *testing.T) {
	cases := map[string]struct {
		edit    func(pr *porchv1alpha1.PackageRevision)
		noFiles bool
		want    string
	}{
		"no namespace":               {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Namespace = "" }, want: "metadata.namespace is required"},
		"unknown repository":         {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.RepositoryName = "nope" }, want: "spec.repository"},
		"no package":                 {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.PackageName = "" }, want: "spec.packageName is required"},
		"no workspace":               {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.WorkspaceName = "" }, want: "spec.workspaceName is required"},
		"bad lifecycle":              {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.Lifecycle = "Done" }, want: `spec.lifecycle "Done"`},
		"no lifecycle":               {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.Lifecycle = "" }, want: "spec.lifecycle is required"},
		"published without revision": {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.Revision = 0 }, want: "revision number of 1 or more"},
		"draft with revision": {edit: func(pr *porchv1alpha1.PackageRevision) {
			pr.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecycleDraft
		}, want: "has no revision number"},
		"placeholder with a revision": {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.WorkspaceName = "main" }, want: "the placeholder revision"},
		"name taken": {edit: func(pr *porchv1alpha1.PackageRevision) {
			pr.Name = "blueprints.app.v1"
		}, want: "already exists"},
		"workspace taken": {edit: func(pr *porchv1alpha1.PackageRevision) {
			pr.Name, pr.Spec.WorkspaceName = "other-name", "v1"
		}, want: `workspace "v1" of package "app"`},
		"revision taken":           {edit: func(pr *porchv1alpha1.PackageRevision) { pr.Spec.Revision = 1 }, want: "revision 1 of package"},
		"no files":                 {noFiles: true, want: "no files"},
		"file outside the package": {edit: func(*porchv1alpha1.PackageRevision) {}, want: "must be relative"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, _ := fixture(t)
			pr := snapshotRevision()
			if tc.edit != nil {
				tc.edit(pr)
			}
			files := blueprint(2, "app:v2", "")
			switch {
			case tc.noFiles:
				files = nil
			case name == "file outside the package":
				files["../escape.yaml"] = "x"
			}
			_, err := s.Import(pr, files)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Import error = %v, want one containing %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "PackageRevision ") {
				t.Errorf("error does not name the revision: %v", err)
			}
		})
	}
}
