package apiserver

import (
	"context"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/pkg/porchsim/porchsimtest"
)

const ns = "ns"

// upstreamV1 is revision 1 of the blueprint "app".
const upstreamV1 = "blueprints.app.v1"

const blueprintKptfile = `apiVersion: kpt.dev/v1
kind: Kptfile
metadata:
  name: app
info:
  description: the app blueprint
`

const blueprintDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: app # the app
spec:
  replicas: 1
`

// newFleet is a Sim with a blueprints repository holding revision 1 of
// package "app" and a deployment repository "deploy".
func newFleet(t *testing.T) *porchsim.Sim {
	t.Helper()
	sim := porchsim.New()
	sim.AddRepository(ns, "blueprints", false, nil)
	sim.AddRepository(ns, "deploy", true, map[string]string{"env": "prod"})
	if _, err := sim.AddPublished(ns, "blueprints", "app", 1, map[string]string{
		"Kptfile":         blueprintKptfile,
		"deployment.yaml": blueprintDeployment,
	}); err != nil {
		t.Fatalf("AddPublished: %v", err)
	}
	return sim
}

// testServer is a running standalone server.
type testServer struct {
	sim    *porchsim.Sim
	config *rest.Config
	client versioned.Interface
}

// startServer serves sim on a free loopback port until the test ends.
// cluster, when set, is the cluster whose Repositories are mirrored.
func startServer(t *testing.T, sim *porchsim.Sim, cluster versioned.Interface) *testServer {
	t.Helper()
	o := NewOptions()
	o.Standalone = true
	o.SecureServing.ServerCert.CertDirectory = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	o.SecureServing.Listener = ln
	o.SecureServing.BindPort = ln.Addr().(*net.TCPAddr).Port
	if err := o.Validate(); err != nil {
		t.Fatalf("options: %v", err)
	}
	cfg, err := o.Config(sim)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	cfg.Cluster = cluster
	srv, err := cfg.New()
	if err != nil {
		t.Fatalf("new server: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("server did not stop")
		}
	})

	rc := &rest.Config{
		Host:            "https://" + ln.Addr().String(),
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		QPS:             -1, // no client-side rate limit
	}
	porchsimtest.WaitReady(t, rc, done)
	return &testServer{sim: sim, config: rc, client: versioned.NewForConfigOrDie(rc)}
}

// newDraft is a new revision of repo/pkg in workspace ws, made by task.
func newDraft(repo, pkg, ws string, task porchv1alpha1.Task) *porchv1alpha1.PackageRevision {
	return porchsimtest.NewDraft(ns, repo, pkg, ws, task)
}

// cloneTask is a clone of the revision named upstream.
var cloneTask = porchsimtest.CloneTask

// cloneDraft creates deploy.<pkg>.<ws>, a clone of the blueprint.
func (s *testServer) cloneDraft(t *testing.T, pkg, ws string) *porchv1alpha1.PackageRevision {
	t.Helper()
	pr, err := s.client.PorchV1alpha1().PackageRevisions(ns).Create(context.Background(),
		newDraft("deploy", pkg, ws, cloneTask(upstreamV1)), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create clone: %v", err)
	}
	return pr
}
