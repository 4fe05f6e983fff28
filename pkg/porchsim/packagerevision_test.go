package porchsim

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	kptfilev1 "github.com/porch-variants/variant-controller/pkg/apis/kptfile/v1"
	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim/porchsimtest"
)

func TestCreateDerivesName(t *testing.T) {
	cases := map[string]struct {
		repo, pkg, ws string
		want          string
	}{
		"top-level package": {repo: "deploy", pkg: "foo", ws: "packagevariant-1", want: "deploy.foo.packagevariant-1"},
		"nested package":    {repo: "deploy", pkg: "apps/foo", ws: "packagevariant-3", want: "deploy.apps.foo.packagevariant-3"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, c := fixture(t)
			got := create(t, c, newDraft(tc.repo, tc.pkg, tc.ws, cloneTask(upstreamV1)))
			if got.Name != tc.want {
				t.Errorf("name = %q, want %q (the client-provided name is ignored)", got.Name, tc.want)
			}
			if got.Spec.Lifecycle != porchv1alpha1.PackageRevisionLifecycleDraft || got.Spec.Revision != 0 {
				t.Errorf("lifecycle/revision = %s/%d, want Draft/0", got.Spec.Lifecycle, got.Spec.Revision)
			}
			// A retried create is refused as real Porch refuses it: a 500
			// saying the workspace is taken, never a second draft.
			_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
				newDraft(tc.repo, tc.pkg, tc.ws, cloneTask(upstreamV1)), metav1.CreateOptions{})
			if !apierrors.IsInternalError(err) || !helper.IsAlreadyExists(err) {
				t.Errorf("second create: got %v, want Porch's 500 that helper.IsAlreadyExists recognises", err)
			}
		})
	}
}

func TestCreateValidation(t *testing.T) {
	twoTasks := newDraft("deploy", "foo", "ws", cloneTask(upstreamV1))
	twoTasks.Spec.Tasks = append(twoTasks.Spec.Tasks, initTask())
	noTasks := newDraft("deploy", "foo", "ws", initTask())
	noTasks.Spec.Tasks = nil
	published := newDraft("deploy", "foo", "ws", initTask())
	published.Spec.Lifecycle = porchv1alpha1.PackageRevisionLifecyclePublished
	latest := newDraft("deploy", "foo", "ws", initTask())
	latest.Labels = map[string]string{porchv1alpha1.LatestPackageRevisionLabel: "true"}

	cases := map[string]struct {
		pr    *porchv1alpha1.PackageRevision
		check func(error) bool
	}{
		"repository is required":            {newDraft("", "foo", "ws", initTask()), apierrors.IsBadRequest},
		"init of an existing package":       {newDraft("blueprints", "app", "ws", initTask()), apierrors.IsInternalError},
		"repository must exist":             {newDraft("nowhere", "foo", "ws", initTask()), apierrors.IsNotFound},
		"package name is required":          {newDraft("deploy", "", "ws", initTask()), apierrors.IsInvalid},
		"package path has no empty segment": {newDraft("deploy", "a//b", "ws", initTask()), apierrors.IsInvalid},
		"workspace name is required":        {newDraft("deploy", "foo", "", initTask()), apierrors.IsInvalid},
		"workspace name is a DNS label":     {newDraft("deploy", "foo", "Not_A_Label", initTask()), apierrors.IsInvalid},
		"exactly one task, not two":         {twoTasks, apierrors.IsInvalid},
		"exactly one task, not none":        {noTasks, apierrors.IsInvalid},
		"created as Draft only":             {published, apierrors.IsInvalid},
		"latest-revision label is Porch's":  {latest, apierrors.IsInvalid},
		"other task types are rejected":     {newDraft("deploy", "foo", "ws", porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeRender}), apierrors.IsBadRequest},
		"clone needs an upstream":           {newDraft("deploy", "foo", "ws", porchv1alpha1.Task{Type: porchv1alpha1.TaskTypeClone}), apierrors.IsInvalid},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(), tc.pr, metav1.CreateOptions{})
			if !tc.check(err) {
				t.Errorf("create: got %v (%T), want a different kind of error", err, err)
			}
			// The fixture's revision 1 and the placeholder Porch made when
			// it was published.
			if got := len(s.PackageRevisions(ns)); got != 2 {
				t.Errorf("%d revisions stored, want only the fixture's two", got)
			}
		})
	}
}

func TestCreateWorkspaceUnique(t *testing.T) {
	_, c := fixture(t)
	create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))

	// Real Porch: 500 "package revision workspaceNames must be unique;
	// package revision with name foo in repo deploy with workspaceName
	// packagevariant-1 already exists" (not a 409 AlreadyExists).
	_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
		newDraft("deploy", "foo", "packagevariant-1", initTask()), metav1.CreateOptions{})
	want := "package revision workspaceNames must be unique; package revision with name foo in repo deploy with workspaceName packagevariant-1 already exists"
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("same workspace: got %v, want a 500 with Porch's message %q", err, want)
	}
	// Another package whose derived name collides is refused the same way.
	create(t, c, newDraft("deploy", "a/b", "ws", initTask()))
	_, err = c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
		newDraft("deploy", "a.b", "ws", initTask()), metav1.CreateOptions{})
	if !apierrors.IsInternalError(err) || !helper.IsAlreadyExists(err) {
		t.Errorf("colliding name of another package: got %v, want Porch's 500 for an existing revision", err)
	}
}

func TestCloneSourceRules(t *testing.T) {
	cases := map[string]struct {
		setup    func(t *testing.T, s *Sim)
		upstream string
		pkg      string
		wantErr  string
	}{
		"clone of a published revision": {
			upstream: upstreamV1, pkg: "foo",
		},
		"clone only makes a new package": {
			setup: func(t *testing.T, s *Sim) {
				if _, err := s.AddPublished(ns, "deploy", "foo", 1, nil); err != nil {
					t.Fatal(err)
				}
			},
			upstream: upstreamV1, pkg: "foo",
			wantErr: "`clone` cannot create a new revision for package \"foo\" that already exists in repo \"deploy\"; make subsequent revisions using `copy`",
		},
		"clone from the placeholder is refused": {
			// The fixture's publish made the placeholder.
			upstream: "blueprints.app.main", pkg: "foo",
			wantErr: "upstream revision may not be the placeholder package revision blueprints/blueprints.app.main",
		},
		"clone from a draft is refused": {
			setup: func(t *testing.T, s *Sim) {
				if _, err := s.clientset.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
					newDraft("blueprints", "app", "draft", editTask(upstreamV1)), metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			upstream: "blueprints.app.draft", pkg: "foo",
			wantErr: "only a published revision can be cloned",
		},
		"clone from a missing revision is refused": {
			upstream: "blueprints.app.v9", pkg: "foo",
			wantErr: "not found",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			if tc.setup != nil {
				tc.setup(t, s)
			}
			_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
				newDraft("deploy", tc.pkg, "packagevariant-1", cloneTask(tc.upstream)), metav1.CreateOptions{})
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("clone: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("clone: got %v, want an error containing %q", err, tc.wantErr)
			}
			if !apierrors.IsInternalError(err) {
				t.Errorf("clone: got %T, want the internal error Porch answers with", err)
			}
		})
	}
}

// TestCloneRecordsUpstream: a clone writes what real Porch writes (the
// measured transcripts, which kptengine's tests match byte for byte): the
// Kptfile's name, upstream and upstreamLock with .git URLs and no update
// strategy, a kpt-merge comment and an upstream-identifier annotation on
// every resource, and in a deployment repository package-context.yaml with
// name and package-path.
func TestCloneRecordsUpstream(t *testing.T) {
	cases := map[string]struct {
		repo, pkg          string
		wantName           string
		wantPackageContext bool
	}{
		"into a deployment repository": {repo: "deploy", pkg: "foo", wantName: "foo", wantPackageContext: true},
		// Porch passes the whole package path as the package's name.
		"nested package":              {repo: "deploy", pkg: "apps/foo", wantName: "apps/foo", wantPackageContext: true},
		"into a blueprint repository": {repo: "blueprints", pkg: "app-copy", wantName: "app-copy"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			pr := create(t, c, newDraft(tc.repo, tc.pkg, "packagevariant-1", cloneTask(upstreamV1)))
			files := resources(t, s, pr.Name)

			wantLock := kptfilev1.GitLock{
				Repo:      "https://git.example.com/ns/blueprints.git",
				Directory: "app",
				Ref:       "app/v1",
				Commit:    fakeCommit(ns, "blueprints", "app/v1"),
			}
			kf := parseKptfile(t, files[kptfileName])
			if kf.Metadata.Name != tc.wantName {
				t.Errorf("Kptfile metadata.name = %q, want %q", kf.Metadata.Name, tc.wantName)
			}
			wantUpstream := &kptfilev1.Upstream{Type: "git",
				Git: &kptfilev1.Git{Repo: wantLock.Repo, Directory: wantLock.Directory, Ref: wantLock.Ref}}
			checkDiff(t, wantUpstream, kf.Upstream, "Kptfile upstream")
			checkDiff(t, &kptfilev1.UpstreamLock{Type: "git", Git: &wantLock}, kf.UpstreamLock, "Kptfile upstreamLock")
			checkDiff(t, &porchv1alpha1.UpstreamLock{Type: "git", Git: &wantLock}, pr.Status.UpstreamLock, "status.upstreamLock")
			wantID := "kpt.dev|Kptfile|default|" + tc.wantName
			if got := kf.Metadata.Annotations["internal.kpt.dev/upstream-identifier"]; got != wantID {
				t.Errorf("Kptfile upstream-identifier = %q, want %q", got, wantID)
			}
			for _, want := range []string{"metadata: # kpt-merge: /app\n", "internal.kpt.dev/upstream-identifier: 'apps|Deployment|default|app'", "name: app # the app"} {
				if !strings.Contains(files["deployment.yaml"], want) {
					t.Errorf("deployment.yaml lacks %q:\n%s", want, files["deployment.yaml"])
				}
			}
			if conds := pr.Status.Conditions; len(conds) != 1 || conds[0].Type != "Rendered" || conds[0].Status != "True" {
				t.Errorf("status.conditions = %+v, want Rendered True (Porch renders a new draft)", conds)
			}

			pc, ok := files[packageContextFile]
			if ok != tc.wantPackageContext {
				t.Fatalf("package-context.yaml present = %v, want %v", ok, tc.wantPackageContext)
			}
			if ok {
				want := "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /kptfile.kpt.dev\n  name: kptfile.kpt.dev\n  annotations:\n" +
					"    config.kubernetes.io/local-config: \"true\"\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|kptfile.kpt.dev'\n" +
					"data:\n  name: " + tc.wantName + "\n  package-path: " + tc.wantName + "\n"
				checkDiff(t, want, pc, "package-context.yaml")
			}
		})
	}
}

// TestClonedPackageContextIsRegenerated: a clone into a deployment
// repository gets package-context.yaml named for the new package, whatever
// the upstream held in name and package-path.
func TestClonedPackageContextIsRegenerated(t *testing.T) {
	s, c := fixture(t)
	files := blueprint(1, "app:v1", "readme\n")
	files[packageContextFile] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\ndata:\n  name: app\n  package-path: app\n"
	if _, err := s.AddPublished(ns, "blueprints", "app", 2, files); err != nil {
		t.Fatal(err)
	}
	pr := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask("blueprints.app.v2")))
	got := resources(t, s, pr.Name)[packageContextFile]
	if !strings.Contains(got, "\n  name: foo\n") || !strings.Contains(got, "\n  package-path: foo\n") || strings.Contains(got, ": app\n") {
		t.Errorf("package-context.yaml = \n%s\nwant name and package-path foo", got)
	}
}

func TestEditSourceRules(t *testing.T) {
	cases := map[string]struct {
		source  string
		wantErr string
	}{
		"edit of a published revision of the same package": {source: "deploy.foo.packagevariant-1"},
		"source must be of the same package":               {source: upstreamV1, wantErr: "not of package \"foo\""},
		"source must be published":                         {source: "deploy.foo.packagevariant-2", wantErr: "only a published revision can be edited"},
		"source must not be the placeholder":               {source: "deploy.foo.main", wantErr: "source revision may not be the placeholder package revision deploy/deploy.foo.main"},
		"source must exist":                                {source: "deploy.foo.v7", wantErr: "not found"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			// deploy/foo: v1 cloned and published (which makes the
			// placeholder), and a draft.
			cloned := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
			if err := s.Publish(ns, cloned.Name); err != nil {
				t.Fatal(err)
			}
			create(t, c, newDraft("deploy", "foo", "packagevariant-2", editTask(cloned.Name)))

			pr, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
				newDraft("deploy", "foo", "edit", editTask(tc.source)), metav1.CreateOptions{})
			if porchsimtest.WantErr(t, "edit", err, tc.wantErr) {
				return
			}
			src := getPR(t, c, tc.source)
			if diff := cmp.Diff(resources(t, s, tc.source), resources(t, s, pr.Name)); diff != "" {
				t.Errorf("edit did not copy the files (-source +draft):\n%s", diff)
			}
			if diff := cmp.Diff(src.Status.UpstreamLock, pr.Status.UpstreamLock); diff != "" {
				t.Errorf("edit did not copy status.upstreamLock (-source +draft):\n%s", diff)
			}
		})
	}
}

// upgradeFixture publishes deploy/foo revision 1, a clone of blueprints/app
// v1 with local edits, and blueprints/app v2 with upstream changes.
func upgradeFixture(t *testing.T) (*Sim, string) {
	t.Helper()
	s, c := fixture(t)
	draft := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	files := resources(t, s, draft.Name)
	files["deployment.yaml"] = strings.Replace(files["deployment.yaml"], "replicas: 1", "replicas: 3", 1)
	files["local.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: local\ndata:\n  a: b\n"
	files["docs.md"] = "my docs\n"
	if err := s.SetResources(ns, draft.Name, files); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ns, draft.Name); err != nil {
		t.Fatal(err)
	}
	v2 := blueprint(1, "app:v2", "readme v2\n")
	v2["docs.md"] = "docs v2\n"
	v2["service.yaml"] = "apiVersion: v1\nkind: Service\nmetadata:\n  name: app\nspec:\n  port: 80\n"
	if _, err := s.AddPublished(ns, "blueprints", "app", 2, v2); err != nil {
		t.Fatal(err)
	}
	return s, draft.Name
}

func TestUpgradeMergesLocalAndUpstreamChanges(t *testing.T) {
	s, local := upgradeFixture(t)
	c := s.Clientset()
	pr := create(t, c, newDraft("deploy", "foo", "packagevariant-2", upgradeTask(upstreamV1, "blueprints.app.v2", local)))
	files := resources(t, s, pr.Name)

	var deployment struct {
		Spec struct {
			Replicas int `json:"replicas"`
			Template struct {
				Spec struct {
					Containers []struct {
						Image string `json:"image"`
					} `json:"containers"`
				} `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := yamlUnmarshal(files["deployment.yaml"], &deployment); err != nil {
		t.Fatal(err)
	}
	if deployment.Spec.Replicas != 3 {
		t.Errorf("replicas = %d, want the local edit 3", deployment.Spec.Replicas)
	}
	if img := deployment.Spec.Template.Spec.Containers[0].Image; img != "app:v2" {
		t.Errorf("image = %q, want the upstream change app:v2", img)
	}
	if !strings.Contains(files["deployment.yaml"], "# the app") {
		t.Errorf("the merge lost a comment:\n%s", files["deployment.yaml"])
	}
	for _, p := range []string{"service.yaml", "local.yaml", packageContextFile} {
		if _, ok := files[p]; !ok {
			t.Errorf("%s is missing after the upgrade", p)
		}
	}
	if got := files["README.md"]; got != "readme v2\n" {
		t.Errorf("README.md = %q, want the upstream's new version (not edited locally)", got)
	}
	if got := files["docs.md"]; got != "my docs\n" {
		t.Errorf("docs.md = %q, want the local edit", got)
	}

	wantLock := kptfilev1.GitLock{
		Repo: "https://git.example.com/ns/blueprints.git", Directory: "app", Ref: "app/v2",
		Commit: fakeCommit(ns, "blueprints", "app/v2"),
	}
	kf := parseKptfile(t, files[kptfileName])
	if kf.Metadata.Name != "foo" {
		t.Errorf("Kptfile metadata.name = %q, want foo", kf.Metadata.Name)
	}
	if kf.Upstream == nil || kf.Upstream.Git == nil || kf.Upstream.Git.Ref != "app/v2" {
		t.Errorf("Kptfile upstream = %+v, want ref app/v2", kf.Upstream)
	}
	checkDiff(t, &kptfilev1.UpstreamLock{Type: "git", Git: &wantLock}, kf.UpstreamLock, "Kptfile upstreamLock")
	checkDiff(t, &porchv1alpha1.UpstreamLock{Type: "git", Git: &wantLock}, pr.Status.UpstreamLock, "status.upstreamLock")
}

func TestUpgradeRefusesUnpublishedSources(t *testing.T) {
	cases := map[string]struct {
		oldUp, newUp, local string
		wantErr             string
	}{
		"local is a draft": {
			oldUp: upstreamV1, newUp: "blueprints.app.v2", local: "deploy.foo.packagevariant-2",
			wantErr: `all source PackageRevisions of upgrade task must be published, "deploy.foo.packagevariant-2" is not`,
		},
		"new upstream is a draft": {
			oldUp: upstreamV1, newUp: "blueprints.app.next", local: "deploy.foo.packagevariant-1",
			wantErr: "all source PackageRevisions of upgrade task must be published",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, local := upgradeFixture(t)
			c := s.Clientset()
			create(t, c, newDraft("deploy", "foo", "packagevariant-2", editTask(local)))
			create(t, c, newDraft("blueprints", "app", "next", editTask("blueprints.app.v2")))
			_, err := c.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
				newDraft("deploy", "foo", "packagevariant-3", upgradeTask(tc.oldUp, tc.newUp, tc.local)), metav1.CreateOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("upgrade: got %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestInitCreatesPackage(t *testing.T) {
	s, c := fixture(t)
	pr := create(t, c, newDraft("deploy", "apps/bar", "ws", initTask()))
	kf := parseKptfile(t, resources(t, s, pr.Name)[kptfileName])
	if kf.Metadata.Name != "bar" || kf.Info == nil || kf.Info.Description != "new" {
		t.Errorf("init Kptfile = %+v, want name bar and the task's description", kf)
	}
	// Real Porch: status.upstreamLock is {} for an init draft.
	checkDiff(t, &porchv1alpha1.UpstreamLock{}, pr.Status.UpstreamLock, "an init draft has no upstream")
}

// inLifecycle returns the name of a revision in the given lifecycle: a clone
// in deploy/foo for Draft and Proposed, blueprints/app v1 otherwise.
func inLifecycle(t *testing.T, s *Sim, lc porchv1alpha1.PackageRevisionLifecycle) string {
	t.Helper()
	c := s.Clientset()
	switch lc {
	case porchv1alpha1.PackageRevisionLifecycleDraft, porchv1alpha1.PackageRevisionLifecycleProposed:
		pr := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
		if lc == porchv1alpha1.PackageRevisionLifecycleProposed {
			if err := s.Propose(ns, pr.Name); err != nil {
				t.Fatal(err)
			}
		}
		return pr.Name
	case porchv1alpha1.PackageRevisionLifecycleDeletionProposed:
		proposeDeletion(t, c, upstreamV1)
	}
	return upstreamV1
}

func TestUpdateRules(t *testing.T) {
	const (
		draft            = porchv1alpha1.PackageRevisionLifecycleDraft
		proposed         = porchv1alpha1.PackageRevisionLifecycleProposed
		published        = porchv1alpha1.PackageRevisionLifecyclePublished
		deletionProposed = porchv1alpha1.PackageRevisionLifecycleDeletionProposed
	)
	owner := metav1.OwnerReference{APIVersion: "config.porch.kpt.dev/v1alpha1", Kind: "PackageVariant", Name: "pv"}
	cases := map[string]struct {
		from    porchv1alpha1.PackageRevisionLifecycle
		to      porchv1alpha1.PackageRevisionLifecycle // the lifecycle the update asks for, if any
		change  func(pr *porchv1alpha1.PackageRevision)
		wantErr bool
		check   func(t *testing.T, s *Sim, got *porchv1alpha1.PackageRevision)
	}{
		"draft to proposed":                                 {from: draft, to: proposed},
		"proposed back to draft":                            {from: proposed, to: draft},
		"a draft is not published by an update":             {from: draft, to: published, wantErr: true},
		"a proposed revision is not published by an update": {from: proposed, to: published, wantErr: true},
		"draft metadata is stored": {
			from: draft,
			change: func(pr *porchv1alpha1.PackageRevision) {
				pr.Labels = map[string]string{"l": "v"}
				pr.Annotations = map[string]string{"a": "v"}
				pr.Finalizers = []string{"example.com/f"}
				pr.OwnerReferences = []metav1.OwnerReference{owner}
			},
			check: func(t *testing.T, _ *Sim, got *porchv1alpha1.PackageRevision) {
				if got.Labels["l"] != "v" || got.Annotations["a"] != "v" || len(got.Finalizers) != 1 || len(got.OwnerReferences) != 1 {
					t.Errorf("metadata not stored: %+v", got.ObjectMeta)
				}
			},
		},
		"draft readiness gates go into the Kptfile": {
			from: draft,
			change: func(pr *porchv1alpha1.PackageRevision) {
				pr.Spec.ReadinessGates = []porchv1alpha1.ReadinessGate{{ConditionType: "config.injection.ConfigMap.x"}}
			},
			check: func(t *testing.T, s *Sim, got *porchv1alpha1.PackageRevision) {
				kf := parseKptfile(t, resources(t, s, got.Name)[kptfileName])
				if kf.Info == nil || len(kf.Info.ReadinessGates) != 1 || kf.Info.ReadinessGates[0].ConditionType != "config.injection.ConfigMap.x" {
					t.Errorf("Kptfile info = %+v, want the new readiness gate", kf.Info)
				}
				if len(got.Spec.ReadinessGates) != 1 {
					t.Errorf("spec.readinessGates = %v, want the new gate", got.Spec.ReadinessGates)
				}
			},
		},
		"draft package name is immutable": {
			from:    draft,
			change:  func(pr *porchv1alpha1.PackageRevision) { pr.Spec.PackageName = "bar" },
			wantErr: true,
		},
		"draft tasks are immutable": {
			from:    draft,
			change:  func(pr *porchv1alpha1.PackageRevision) { pr.Spec.Tasks = append(pr.Spec.Tasks, initTask()) },
			wantErr: true,
		},
		"published to deletion proposed":      {from: published, to: deletionProposed},
		"deletion proposed back to published": {from: deletionProposed, to: published},
		"published cannot go back to draft":   {from: published, to: draft, wantErr: true},
		"published metadata may change": {
			from: published,
			change: func(pr *porchv1alpha1.PackageRevision) {
				pr.Annotations = map[string]string{"a": "v"}
				pr.OwnerReferences = []metav1.OwnerReference{owner}
			},
			check: func(t *testing.T, _ *Sim, got *porchv1alpha1.PackageRevision) {
				if got.Annotations["a"] != "v" || len(got.OwnerReferences) != 1 {
					t.Errorf("metadata not stored: %+v", got.ObjectMeta)
				}
			},
		},
		"published spec is frozen": {
			from: published,
			change: func(pr *porchv1alpha1.PackageRevision) {
				pr.Spec.ReadinessGates = []porchv1alpha1.ReadinessGate{{ConditionType: "x"}}
			},
			wantErr: true,
		},
		"the latest-revision label is Porch's": {
			from:    published,
			change:  func(pr *porchv1alpha1.PackageRevision) { delete(pr.Labels, porchv1alpha1.LatestPackageRevisionLabel) },
			wantErr: true,
		},
		"status is not written by an update": {
			from:   draft,
			change: func(pr *porchv1alpha1.PackageRevision) { pr.Status.PublishedBy = "someone" },
			check: func(t *testing.T, _ *Sim, got *porchv1alpha1.PackageRevision) {
				if got.Status.PublishedBy != "" {
					t.Errorf("status.publishedBy = %q, want it untouched", got.Status.PublishedBy)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			// The owner exists: the Sim collects a revision whose owners
			// are all gone, as the garbage collector would.
			pv, err := c.ConfigV1alpha1().PackageVariants(ns).Create(context.Background(),
				&configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Name: owner.Name, Namespace: ns}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			owner.UID = pv.UID
			prName := inLifecycle(t, s, tc.from)
			before := getPR(t, c, prName)
			pr := before.DeepCopy()
			if tc.to != "" {
				pr.Spec.Lifecycle = tc.to
			}
			if tc.change != nil {
				tc.change(pr)
			}
			got, err := c.PorchV1alpha1().PackageRevisions(ns).Update(context.Background(), pr, metav1.UpdateOptions{})
			if tc.wantErr {
				if !apierrors.IsInvalid(err) {
					t.Fatalf("update: got %v, want Invalid", err)
				}
				if after := getPR(t, c, prName); after.ResourceVersion != before.ResourceVersion {
					t.Errorf("a refused update changed the revision")
				}
				return
			}
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if got.Spec.Lifecycle != pr.Spec.Lifecycle {
				t.Errorf("lifecycle = %s, want %s", got.Spec.Lifecycle, pr.Spec.Lifecycle)
			}
			if diff := cmp.Diff(got, getPR(t, c, prName)); diff != "" {
				t.Errorf("the update's response differs from what is stored (-response +stored):\n%s", diff)
			}
			if tc.check != nil {
				tc.check(t, s, got)
			}
		})
	}
}

func TestStaleResourceVersionConflicts(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	draft := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	prr := getPRR(t, c, draft.Name)
	if prr.ResourceVersion != draft.ResourceVersion {
		t.Fatalf("resources rv %s != revision rv %s: they are one object", prr.ResourceVersion, draft.ResourceVersion)
	}
	pv, err := c.ConfigV1alpha1().PackageVariants(ns).Create(ctx, newVariant("foo"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Somebody else writes everything first.
	if err := s.SetResources(ns, draft.Name, map[string]string{"a.txt": "x"}); err != nil {
		t.Fatal(err)
	}
	fresh, _ := c.ConfigV1alpha1().PackageVariants(ns).Get(ctx, "foo", metav1.GetOptions{})
	fresh.Labels = map[string]string{"x": "y"}
	if _, err := c.ConfigV1alpha1().PackageVariants(ns).Update(ctx, fresh, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	draft.Labels = map[string]string{"a": "b"}
	pv.Labels = map[string]string{"a": "b"}
	cases := map[string]func() error{
		"packagerevisions": func() error {
			return porchsimtest.ErrOf(c.PorchV1alpha1().PackageRevisions(ns).Update(ctx, draft, metav1.UpdateOptions{}))
		},
		"packagerevisionresources": func() error {
			return porchsimtest.ErrOf(c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{}))
		},
		"packagevariants": func() error {
			return porchsimtest.ErrOf(c.ConfigV1alpha1().PackageVariants(ns).Update(ctx, pv, metav1.UpdateOptions{}))
		},
		"packagevariants/status": func() error {
			return porchsimtest.ErrOf(c.ConfigV1alpha1().PackageVariants(ns).UpdateStatus(ctx, pv, metav1.UpdateOptions{}))
		},
	}
	for name, update := range cases {
		t.Run(name, func(t *testing.T) {
			err := update()
			switch name {
			case "packagerevisions", "packagerevisionresources":
				// Real Porch: 500 wrapping the API machinery's conflict,
				// "Operation cannot be fulfilled on <resource>.porch.kpt.dev
				// ...: the object has been modified; ...".
				want := "Operation cannot be fulfilled on " + name + ".porch.kpt.dev"
				if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), want) || !helper.IsConflict(err) {
					t.Errorf("update with a stale resourceVersion: got %v, want Porch's 500 containing %q", err, want)
				}
			default:
				if !apierrors.IsConflict(err) {
					t.Errorf("update with a stale resourceVersion: got %v, want Conflict", err)
				}
			}
		})
	}
}

func TestPublishNumberingAndLatestLabel(t *testing.T) {
	s, c := fixture(t)
	if _, err := s.AddPlaceholder(ns, "blueprints", "app"); err == nil {
		t.Errorf("AddPlaceholder after a publish must fail: the publish made the placeholder")
	}
	if _, err := s.AddPublished(ns, "blueprints", "app", 3, nil); err == nil {
		t.Errorf("AddPublished of revision 3 after 1 must fail: revisions are consecutive")
	}
	if _, err := s.AddPublished(ns, "blueprints", "app", 2, blueprint(2, "app:v2", "")); err != nil {
		t.Fatal(err)
	}
	d1 := create(t, c, newDraft("blueprints", "app", "d1", editTask("blueprints.app.v2")))
	d2 := create(t, c, newDraft("blueprints", "app", "d2", editTask("blueprints.app.v2")))
	if err := s.Propose(ns, d2.Name); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ns, d2.Name); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ns, d1.Name); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ns, d1.Name); err == nil {
		t.Errorf("publishing a Published revision must fail")
	}

	got := map[string]int{}
	var latest []string
	for _, pr := range s.PackageRevisions(ns) {
		got[pr.Name] = pr.Spec.Revision
		if pr.Labels[porchv1alpha1.LatestPackageRevisionLabel] == "true" {
			latest = append(latest, pr.Name)
		}
	}
	want := map[string]int{"blueprints.app.main": -1, "blueprints.app.v1": 1, "blueprints.app.v2": 2, d2.Name: 3, d1.Name: 4}
	checkDiff(t, want, got, "revisions")
	checkDiff(t, []string{d1.Name}, latest, "kpt.dev/latest-revision")
	if diff := cmp.Diff(resources(t, s, d1.Name), resources(t, s, "blueprints.app.main")); diff != "" {
		t.Errorf("the placeholder does not hold the latest revision's files (-latest +placeholder):\n%s", diff)
	}
	if pr := getPR(t, c, d1.Name); pr.Status.PublishedAt == nil || pr.Status.PublishedBy == "" {
		t.Errorf("publish did not record publishedBy/publishTimestamp: %+v", pr.Status)
	}
}

func TestResourcesUpdateOnlyOnDraft(t *testing.T) {
	cases := map[string]struct {
		lifecycle porchv1alpha1.PackageRevisionLifecycle
		wantErr   string
	}{
		"draft":     {lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft},
		"proposed":  {lifecycle: porchv1alpha1.PackageRevisionLifecycleProposed, wantErr: `cannot update a package revision with lifecycle value "Proposed"; package must be Draft`},
		"published": {lifecycle: porchv1alpha1.PackageRevisionLifecyclePublished, wantErr: `cannot update a package revision with lifecycle value "Published"; package must be Draft`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			s, c := fixture(t)
			prName := inLifecycle(t, s, tc.lifecycle)
			before := getPR(t, c, prName)
			prr := getPRR(t, c, prName)
			prr.Spec.Resources["new.txt"] = "hello"
			got, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{})
			if porchsimtest.WantErr(t, "update", err, tc.wantErr) {
				if _, ok := resources(t, s, prName)["new.txt"]; ok {
					t.Errorf("refused update stored the files")
				}
				return
			}
			if got.Status.RenderStatus.Err != "" {
				t.Errorf("renderStatus.error = %q, want none", got.Status.RenderStatus.Err)
			}
			if resources(t, s, prName)["new.txt"] != "hello" {
				t.Errorf("files not stored")
			}
			after := getPR(t, c, prName)
			if after.ResourceVersion == before.ResourceVersion || after.ResourceVersion != got.ResourceVersion {
				t.Errorf("revision rv %s -> %s, resources rv %s: a resources update is an update of the revision",
					before.ResourceVersion, after.ResourceVersion, got.ResourceVersion)
			}
		})
	}
}

func TestResourcesRenderAndMirror(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	draft := create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	prr := getPRR(t, c, draft.Name)
	prr.Spec.Resources[kptfileName] = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: foo
info:
  description: the app
  readinessGates:
  - conditionType: config.injection.ConfigMap.region
status:
  conditions:
  - type: config.injection.ConfigMap.region
    status: "False"
    reason: NoResourceSelected
`
	got, err := c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, prr, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.RenderStatus.Err != "" {
		t.Fatalf("render error %q for a valid package:\n%s", got.Status.RenderStatus.Err, prr.Spec.Resources[kptfileName])
	}
	pr := getPR(t, c, draft.Name)
	checkDiff(t, []porchv1alpha1.ReadinessGate{{ConditionType: "config.injection.ConfigMap.region"}}, pr.Spec.ReadinessGates, "spec.readinessGates not mirrored from the Kptfile")
	wantConds := []porchv1alpha1.Condition{
		{Type: "config.injection.ConfigMap.region", Status: "False", Reason: "NoResourceSelected"},
		{Type: "Rendered", Status: "True", Reason: "RenderSuccess"},
	}
	checkDiff(t, wantConds, pr.Status.Conditions, "status.conditions not mirrored from the Kptfile")

	// A Kptfile that does not parse is refused before the render, when
	// Porch heals the update (copies comments back): a 500 that stores
	// nothing.
	before := resources(t, s, draft.Name)
	got.Spec.Resources[kptfileName] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: [unclosed\n"
	_, err = c.PorchV1alpha1().PackageRevisionResources(ns).Update(ctx, got, metav1.UpdateOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to heal resources") {
		t.Fatalf("update with a broken Kptfile: got %v, want Porch's 500 \"failed to heal resources\"", err)
	}
	if diff := cmp.Diff(before, resources(t, s, draft.Name)); diff != "" {
		t.Errorf("a failed render stored files (-before +after):\n%s", diff)
	}
	if pr := getPR(t, c, draft.Name); len(pr.Spec.ReadinessGates) != 1 {
		t.Errorf("a failed render must leave the mirrors alone, got %v", pr.Spec.ReadinessGates)
	}
}

func TestResourcesVerbs(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	list := mustList(t, c.PorchV1alpha1().PackageRevisionResources(ns), metav1.ListOptions{FieldSelector: "spec.repository=deploy"})
	if len(list.Items) != 1 || list.Items[0].Name != "deploy.foo.packagevariant-1" || len(list.Items[0].Spec.Resources) == 0 {
		t.Errorf("list of resources = %+v, want the one draft with its files", list.Items)
	}

	gvr := porchv1alpha1.SchemeGroupVersion.WithResource(resPackageRevisionResources)
	fake := s.clientset
	prr := &porchv1alpha1.PackageRevisionResources{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deploy.bar.ws"}}
	if _, err := fake.Invokes(clienttestingCreate(gvr, prr), nil); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("create: got %v, want MethodNotSupported", err)
	}
	if _, err := fake.Invokes(clienttestingDelete(gvr, "deploy.foo.packagevariant-1"), nil); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("delete: got %v, want MethodNotSupported", err)
	}
	if _, err := fake.InvokesWatch(clienttestingWatch(gvr)); !apierrors.IsMethodNotSupported(err) {
		t.Errorf("watch: got %v, want MethodNotSupported", err)
	}
	if _, err := c.PorchV1alpha1().PackageRevisionResources(ns).Get(ctx, "deploy.nothing.ws", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get of a missing revision's resources: got %v, want NotFound", err)
	}
}

func TestDeleteRules(t *testing.T) {
	cases := map[string]struct {
		lifecycle porchv1alpha1.PackageRevisionLifecycle
		name      string
		wantErr   string
		forbidden bool // 403, as real Porch answers
	}{
		"draft":             {lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft},
		"proposed":          {lifecycle: porchv1alpha1.PackageRevisionLifecycleProposed},
		"deletion proposed": {lifecycle: porchv1alpha1.PackageRevisionLifecycleDeletionProposed},
		"published": {lifecycle: porchv1alpha1.PackageRevisionLifecyclePublished,
			wantErr: "published PackageRevisions must be proposed for deletion by setting spec.lifecycle to 'DeletionProposed' prior to deletion", forbidden: true},
		"placeholder": {name: "blueprints.app.main", wantErr: "cannot be deleted"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s, c := fixture(t)
			prName := tc.name
			if prName == "" {
				prName = inLifecycle(t, s, tc.lifecycle)
			}
			err := c.PorchV1alpha1().PackageRevisions(ns).Delete(context.Background(), prName, metav1.DeleteOptions{})
			_, getErr := s.PackageRevision(ns, prName)
			if porchsimtest.WantErr(t, "delete", err, tc.wantErr) {
				if tc.forbidden && !apierrors.IsForbidden(err) {
					t.Errorf("delete: got %v, want 403 Forbidden", err)
				}
				if getErr != nil {
					t.Errorf("a refused delete removed the revision")
				}
				return
			}
			if !apierrors.IsNotFound(getErr) {
				t.Errorf("revision still there after delete: %v", getErr)
			}
		})
	}
}

func TestMetadataOnCreate(t *testing.T) {
	s, c := fixture(t)
	in := newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1))
	in.Labels = map[string]string{"l": "v"}
	in.Annotations = map[string]string{"a": "v"}
	in.Finalizers = []string{"example.com/f"}
	in.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "X", Name: "x", UID: "x-uid", Controller: ptr.To(true)}}
	got := create(t, c, in)
	// Porch leaves generation at 0 and hands out commit SHAs as
	// resourceVersions.
	if got.UID == "" || got.CreationTimestamp.IsZero() || len(got.ResourceVersion) != 40 || got.Generation != 0 {
		t.Errorf("server metadata not as Porch's: %+v", got.ObjectMeta)
	}
	stored, _ := s.PackageRevision(ns, got.Name)
	checkDiff(t, in.ObjectMeta.Labels, stored.Labels, "labels")
	checkDiff(t, in.OwnerReferences, stored.OwnerReferences, "ownerReferences")
	if stored.Annotations["a"] != "v" || len(stored.Finalizers) != 1 {
		t.Errorf("annotations/finalizers not stored: %+v", stored.ObjectMeta)
	}
	if stored.UID == types.UID("") || stored.UID == getPR(t, c, upstreamV1).UID {
		t.Errorf("uids must be unique")
	}
}

func TestFieldSelectors(t *testing.T) {
	ctx := context.Background()
	s, c := fixture(t)
	create(t, c, newDraft("deploy", "foo", "packagevariant-1", cloneTask(upstreamV1)))
	_ = s
	cases := map[string]struct {
		selector string
		want     []string
	}{
		"by package":             {"spec.packageName=app", []string{"blueprints.app.main", upstreamV1}},
		"by lifecycle":           {"spec.lifecycle=Draft", []string{"deploy.foo.packagevariant-1"}},
		"by revision":            {"spec.revision=-1", []string{"blueprints.app.main"}},
		"by repository and name": {"spec.repository=blueprints,metadata.name!=blueprints.app.main", []string{upstreamV1}},
		"by workspace":           {"spec.workspaceName=packagevariant-1", []string{"deploy.foo.packagevariant-1"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			list := mustList(t, c.PorchV1alpha1().PackageRevisions(ns), metav1.ListOptions{FieldSelector: tc.selector})
			checkDiff(t, tc.want, itemNames(t, list), "list")
		})
	}
	if _, err := c.PorchV1alpha1().PackageRevisions(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.tasks=x"}); !apierrors.IsBadRequest(err) {
		t.Errorf("unsupported field selector: got %v, want BadRequest", err)
	}
}
