package main

import (
	"bytes"
	"context"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/pkg/porchsim/porchsimtest"
	"github.com/porch-variants/variant-controller/test/kit/ctrlfixture"
)

const repositoriesYAML = `# the fleet's repositories
apiVersion: config.porch.kpt.dev/v1alpha1
kind: Repository
metadata:
  name: blueprints
  namespace: platform
spec:
  type: git
  git:
    repo: https://git.example.com/blueprints.git
---
apiVersion: v1
kind: List
items:
- apiVersion: config.porch.kpt.dev/v1alpha1
  kind: Repository
  metadata:
    name: deploy
    namespace: platform
    labels:
      env: prod
  spec:
    deployment: true
- apiVersion: config.porch.kpt.dev/v1alpha1
  kind: Repository
  metadata:
    name: elsewhere
  spec: {}
`

func writeFile(t *testing.T, dir, name, content string) string {
	ctrlfixture.WriteFiles(t, dir, map[string]string{name: content})
	return filepath.Join(dir, name)
}

func TestReadRepositories(t *testing.T) {
	type repo struct {
		Namespace, Name string
		Deployment      bool
		Labels          map[string]string
	}
	cases := map[string]struct {
		content string
		want    []repo
		wantErr string
	}{
		"documents and lists, namespace defaulted": {
			content: repositoriesYAML,
			want: []repo{
				{"platform", "blueprints", false, nil},
				{"platform", "deploy", true, map[string]string{"env": "prod"}},
				{"default", "elsewhere", false, nil},
			},
		},
		"another kind is an error, not a silent skip": {
			content: "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repo\nmetadata:\n  name: x\n",
			wantErr: "document 1: config.porch.kpt.dev/v1alpha1 Repo is not a config.porch.kpt.dev/v1alpha1 Repository",
		},
		"an unknown field is an error": {
			content: "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nmetadata:\n  name: x\nspec:\n  deploymnet: true\n",
			wantErr: `unknown field "deploymnet"`,
		},
		"a Repository needs a name": {
			content: "apiVersion: config.porch.kpt.dev/v1alpha1\nkind: Repository\nspec: {}\n",
			wantErr: "without metadata.name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := writeFile(t, t.TempDir(), "repos.yaml", tc.content)
			got, err := readRepositories(path)
			if porchsimtest.WantErr(t, "readRepositories", err, tc.wantErr) {
				return
			}
			var repos []repo
			for _, r := range got {
				repos = append(repos, repo{r.Namespace, r.Name, r.Spec.Deployment, r.Labels})
			}
			if diff := cmp.Diff(tc.want, repos); diff != "" {
				t.Errorf("repositories (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAddPackages(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "v1/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")
	writeFile(t, dir, "v2/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")
	writeFile(t, dir, "v2/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n")
	flag := func(v string) input.PackageFlag {
		f, err := input.ParsePackageFlag(v)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}

	t.Run("revisions are added in order whatever the flag order", func(t *testing.T) {
		sim := porchsim.New()
		sim.AddRepository("ns", "blueprints", false, nil)
		err := addPackages(sim, "ns", []input.PackageFlag{
			flag("blueprints/app@2=" + filepath.Join(dir, "v2")),
			flag("blueprints/app=" + filepath.Join(dir, "v1")),
		})
		if err != nil {
			t.Fatalf("addPackages: %v", err)
		}
		var got []string
		for _, pr := range sim.PackageRevisions("ns") {
			got = append(got, pr.Name+" "+strconv.Itoa(pr.Spec.Revision)+" latest="+pr.Labels[porchv1alpha1.LatestPackageRevisionLabel])
		}
		want := []string{"blueprints.app.main -1 latest=", "blueprints.app.v1 1 latest=", "blueprints.app.v2 2 latest=true"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("revisions (-want +got):\n%s", diff)
		}
	})
	t.Run("a package needs its Repository", func(t *testing.T) {
		err := addPackages(porchsim.New(), "ns", []input.PackageFlag{flag("nowhere/app=" + filepath.Join(dir, "v1"))})
		if err == nil || !strings.Contains(err.Error(), "no Repository nowhere in namespace ns") {
			t.Errorf("error %v, want no Repository nowhere in namespace ns", err)
		}
	})
}

func TestFlagErrorsExitWithUsage(t *testing.T) {
	cases := map[string]struct {
		args    []string
		want    int
		wantErr string
	}{
		"help": {
			args: []string{"--help"},
			want: exitOK,
		},
		"an unknown flag": {
			args:    []string{"--nope"},
			want:    exitUsage,
			wantErr: "unknown flag: --nope",
		},
		"repositories from a file beside a cluster": {
			args:    []string{"--kubeconfig", "/dev/null", "--repositories-from", "repos.yaml"},
			want:    exitUsage,
			wantErr: "--repositories-from is for a run without a cluster",
		},
		"a malformed package": {
			args:    []string{"--standalone", "--package", "app"},
			want:    exitUsage,
			wantErr: "want REPO/PACKAGE[@REVISION]=DIR",
		},
		"arguments": {
			args:    []string{"--standalone", "extra"},
			want:    exitUsage,
			wantErr: "unexpected arguments",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if got := run(context.Background(), tc.args, &stdout, &stderr); got != tc.want {
				t.Errorf("exit %d, want %d; stderr:\n%s", got, tc.want, stderr.String())
			}
			if !strings.Contains(stderr.String(), tc.wantErr) {
				t.Errorf("stderr %q, want it to contain %q", stderr.String(), tc.wantErr)
			}
		})
	}
}

// TestStandaloneServesSeededPackages runs the program as the e2e starts it,
// minus the cluster: Repositories from a file, a package from a directory.
func TestStandaloneServesSeededPackages(t *testing.T) {
	dir := t.TempDir()
	repos := writeFile(t, dir, "repos.yaml", repositoriesYAML)
	writeFile(t, dir, "app/Kptfile", "apiVersion: kpt.dev/v1\nkind: Kptfile\nmetadata:\n  name: app\n")
	writeFile(t, dir, "app/deployment.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: app\n")
	port := freePort(t)

	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{
			"--standalone",
			"--secure-port", strconv.Itoa(port),
			"--cert-dir", filepath.Join(dir, "certs"),
			"--repositories-from", repos,
			"--package-namespace", "platform",
			"--package", "blueprints/app=" + filepath.Join(dir, "app"),
		}, &bytes.Buffer{}, &stderr)
	}()
	defer func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("exit %d after cancel; stderr:\n%s", code, stderr.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("did not stop within 30s of cancel")
		}
	}()

	rc := &rest.Config{Host: "https://127.0.0.1:" + strconv.Itoa(port), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	porchsimtest.WaitReady(t, rc, done)
	client := versioned.NewForConfigOrDie(rc)
	prs := client.PorchV1alpha1().PackageRevisions("platform")
	if _, err := prs.Get(ctx, "blueprints.app.v1", metav1.GetOptions{}); err != nil {
		t.Fatalf("the seeded package is not served: %v", err)
	}
	draft, err := prs.Create(ctx, porchsimtest.NewDraft("", "deploy", "app", "v1", porchsimtest.CloneTask("blueprints.app.v1")), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("clone into the deployment repository: %v", err)
	}
	if !draft.Status.Deployment {
		t.Errorf("the clone's status.deployment is false; deploy is a deployment repository in %s", repos)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
