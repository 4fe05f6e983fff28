package kptengine

import (
	"context"
	"strings"
	"testing"
)

// Porch's repository URL for the blueprints repository of the transcripts,
// and the commits its published revisions were at.
const (
	blueprintsRepo = "http://127.0.0.1:29446/blueprints"
	appV1Commit    = "3bd613254b91f48dbc7da878bca68d8239b1e6ae"
	noctxV1Commit  = "b4e77d8d8dc9b335722f7af6db12ca35812f8c66"
)

// appV1Lock is where app v1 was published.
var appV1Lock = GitLock{Repo: blueprintsRepo, Directory: "app", Ref: "app/v1", Commit: appV1Commit}

// TestCloneThenRender proves that a clone followed by the render Porch runs
// after every create gives the files real Porch stored for the same
// clone, byte for byte.
func TestCloneThenRender(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		reason string
		// The testdata directories of the upstream package and of the files
		// wanted.
		upstream, want string
		opts           CloneOptions
		// subset: the transcript shows only some files; compare those.
		subset bool
		// absent are files that must not exist.
		absent []string
	}{
		"CloneIntoDeploymentRepository": {
			reason:   "transcript 12: Kptfile name, upstream and upstreamLock (URL ending in .git, no updateStrategy), package-context.yaml with name and package-path, kpt-merge comments and upstream identifiers, then rendered",
			upstream: "upstream-app-v1",
			opts: CloneOptions{
				PackagePath: "app-east",
				Deployment:  true,
				Lock:        appV1Lock,
			},
			want: "clone-deploy-app-east/want",
		},
		"CloneIntoOtherRepositoryKeepsPackageContext": {
			reason:   "transcript 16 a: outside a deployment repository package-context.yaml is copied (name: example), only given its merge key",
			upstream: "upstream-app-v1",
			opts: CloneOptions{
				PackagePath: "app-copy",
				Lock:        GitLock{Repo: blueprintsRepo + ".git", Directory: "app", Ref: "app/v1", Commit: appV1Commit},
			},
			want:   "clone-blueprints-app-copy/want",
			subset: true,
		},
		"CloneWithoutPackageContextIntoDeploymentRepository": {
			reason:   "transcript 16 b5: a deployment clone of a package without package context gets one; a package without pipeline still gets the Rendered condition",
			upstream: "upstream-noctx-v1",
			opts: CloneOptions{
				PackagePath: "noctx-deploy",
				Deployment:  true,
				Lock:        GitLock{Repo: blueprintsRepo, Directory: "noctx", Ref: "noctx/v1", Commit: noctxV1Commit},
			},
			want:   "clone-deploy-noctx/want",
			subset: true,
		},
		"CloneWithoutPackageContextIntoOtherRepository": {
			reason:   "transcript 16 b6: outside a deployment repository no package context is generated",
			upstream: "upstream-noctx-v1",
			opts: CloneOptions{
				PackagePath: "noctx-copy",
				Lock:        GitLock{Repo: blueprintsRepo, Directory: "noctx", Ref: "noctx/v1", Commit: noctxV1Commit},
			},
			want:   "clone-blueprints-noctx-copy/want",
			subset: true,
			absent: []string{"package-context.yaml"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			upstream := readPackageDir(t, tc.upstream)
			cloned, err := Clone(upstream, tc.opts)
			if err != nil {
				t.Fatalf("%s\nClone(...): %v", tc.reason, err)
			}
			res, err := Render(context.Background(), cloned, RenderOptions{})
			if err != nil {
				t.Fatalf("%s\nRender(...): %v", tc.reason, err)
			}
			if res.Failed {
				t.Fatalf("%s\nRender(...): failed: %s", tc.reason, res.Message)
			}
			if diff := diffFiles(readPackageDir(t, tc.want), res.Files, tc.subset); diff != "" {
				t.Errorf("%s\nClone then Render: -want +got:\n%s", tc.reason, diff)
			}
			for _, p := range tc.absent {
				if _, ok := res.Files[p]; ok {
					t.Errorf("%s\nClone then Render: %s exists, want none", tc.reason, p)
				}
			}
			if _, ok := res.Files["README.md"]; !ok {
				t.Errorf("%s\nClone then Render: README.md lost", tc.reason)
			}
		})
	}
}

// TestCloneBeforeRender checks what Clone itself writes, the state Porch
// renders right away (and never shows): the upstream recorded with Porch's
// conventions and the upstream's render status kept until the render
// replaces it.
func TestCloneBeforeRender(t *testing.T) {
	t.Parallel()
	cloned, err := Clone(readPackageDir(t, "upstream-app-v1"), CloneOptions{
		PackagePath: "apps/east",
		Deployment:  true,
		Lock:        GitLock{Repo: blueprintsRepo, Directory: "/app", Ref: "app/v1", Commit: appV1Commit},
	})
	if err != nil {
		t.Fatalf("Clone(...): %v", err)
	}
	kptfile := cloned["Kptfile"]
	for _, want := range []string{
		"metadata: # kpt-merge: /apps/east\n  name: apps/east\n",
		"internal.kpt.dev/upstream-identifier: 'kpt.dev|Kptfile|default|apps/east'",
		"upstream:\n  type: git\n  git:\n    repo: http://127.0.0.1:29446/blueprints.git\n    directory: app\n    ref: app/v1\n",
		"upstreamLock:\n  type: git\n  git:\n    repo: http://127.0.0.1:29446/blueprints.git\n    directory: app\n    ref: app/v1\n    commit: " + appV1Commit + "\n",
		"renderStatus:",
		`message: namespace [default] updated to "foo", 1 value(s) changed`,
	} {
		if !strings.Contains(kptfile, want) {
			t.Errorf("Clone(...): Kptfile lacks %q:\n%s", want, kptfile)
		}
	}
	if strings.Contains(kptfile, "updateStrategy") {
		t.Errorf("Clone(...): Kptfile has an updateStrategy, Porch writes none:\n%s", kptfile)
	}
	wantContext := "apiVersion: v1\nkind: ConfigMap\nmetadata: # kpt-merge: /kptfile.kpt.dev\n  name: kptfile.kpt.dev\n  annotations:\n    config.kubernetes.io/local-config: \"true\"\n    internal.kpt.dev/upstream-identifier: '|ConfigMap|default|kptfile.kpt.dev'\ndata:\n  name: apps/east\n  package-path: apps/east\n"
	if got := cloned["package-context.yaml"]; got != wantContext {
		t.Errorf("Clone(...): package-context.yaml:\n%s\nwant:\n%s", got, wantContext)
	}
}

// TestCloneRefusesBadInput proves that input Porch could not clone gives a
// clear error, never a panic.
func TestCloneRefusesBadInput(t *testing.T) {
	t.Parallel()
	lock := appV1Lock
	cases := map[string]struct {
		reason string
		// edit changes app v1 into the input.
		edit    func(f map[string]string)
		opts    CloneOptions
		wantErr string
	}{
		"NoKptfile": {
			reason:  "a package without a Kptfile cannot record its upstream",
			edit:    func(f map[string]string) { delete(f, "Kptfile") },
			opts:    CloneOptions{PackagePath: "x", Lock: lock},
			wantErr: "upstream package has no Kptfile",
		},
		"KptfileNotYAML": {
			reason:  "a Kptfile that does not parse",
			edit:    func(f map[string]string) { f["Kptfile"] = "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata: [\n" },
			opts:    CloneOptions{PackagePath: "x", Lock: lock},
			wantErr: `clone package "x"`,
		},
		"ResourceNotYAML": {
			reason:  "Porch would store an empty package here; an error says why",
			edit:    func(f map[string]string) { f["broken.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [\n" },
			opts:    CloneOptions{PackagePath: "x", Lock: lock},
			wantErr: "broken.yaml",
		},
		"ResourceNotYAMLIntoDeploymentRepository": {
			reason:  "the package context cannot be generated over a file that does not parse",
			edit:    func(f map[string]string) { f["broken.yaml"] = "a: b: c\n" },
			opts:    CloneOptions{PackagePath: "x", Deployment: true, Lock: lock},
			wantErr: "generate package context",
		},
		"NoPackagePath": {
			reason:  "the new package needs a name",
			opts:    CloneOptions{Lock: lock},
			wantErr: "no package path",
		},
		"PathOutsideThePackage": {
			reason:  "a file path leaving the package",
			edit:    func(f map[string]string) { f["../evil.yaml"] = "a: b\n" },
			opts:    CloneOptions{PackagePath: "x", Lock: lock},
			wantErr: "invalid file path",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			files := readPackageDir(t, "upstream-app-v1")
			if tc.edit != nil {
				tc.edit(files)
			}
			_, err := Clone(files, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("%s\nClone(...): error %v, want one containing %q", tc.reason, err, tc.wantErr)
			}
		})
	}
}
