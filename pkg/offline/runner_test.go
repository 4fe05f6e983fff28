package offline

import (
	"context"
	"strings"
	"testing"
	"time"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// TestWaitIdleAfterADeletionBeforeStart: controllers started after the
// newest change of a resource was a deletion never hear of it (their list
// does not hold the object); they are idle all the same. A restart of the
// controllers on a world where someone just deleted something waited for
// that deletion for ever.
func TestWaitIdleAfterADeletionBeforeStart(t *testing.T) {
	ctx := context.Background()
	sim := porchsim.New()
	sim.AddRepository("ns", "kept", true, nil)
	sim.AddRepository("ns", "removed", true, nil)
	// The deletion is the newest change of Repositories, and the
	// controllers write none.
	if err := sim.Clientset().ConfigV1alpha1().Repositories("ns").Delete(ctx, "removed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r, err := Start(klog.NewContext(ctx, discardLogger), sim, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if err := r.WaitIdle(ctx, 30*time.Second); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}
}

// TestRunnerReachesItsControllers: Controller names the controllers that
// run; a change of an in-cluster object whose kind nothing watches is not
// made (it would never reach the controllers), and no request for such
// objects is sent; stopping is no error.
func TestRunnerReachesItsControllers(t *testing.T) {
	ctx := klog.NewContext(context.Background(), discardLogger)
	cm := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]interface{}{"name": "eu-west", "namespace": "ns"},
		"data":     map[string]interface{}{"region": "eu-west-1"},
	}}
	r, err := Start(ctx, porchsim.New(), Options{SetsOnly: true, Objects: []*unstructured.Unstructured{cm}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()
	if _, ok := r.Controller(packagevariantset.ControllerName).(*packagevariantset.Controller); !ok {
		t.Errorf("Controller(%q) = %T, want the running set controller", packagevariantset.ControllerName, r.Controller(packagevariantset.ControllerName))
	}
	if c := r.Controller(packagevariant.ControllerName); c != nil {
		t.Errorf("Controller(%q) = %T, want nil: it does not run", packagevariant.ControllerName, c)
	}
	if err := r.WaitIdle(ctx, 30*time.Second); err != nil {
		t.Fatalf("WaitIdle: %v", err)
	}

	changed := cm.DeepCopy()
	changed.Object["data"] = map[string]interface{}{"region": "eu-west-2"}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := r.UpdateObject(done, changed); err == nil || !strings.Contains(err.Error(), "do not watch configmaps") {
		t.Errorf("UpdateObject of an unwatched kind: %v, want an error saying nothing watches it", err)
	}
	if reqs := r.ObjectRequests(); len(reqs) != 0 {
		t.Errorf("requests for in-cluster objects %v, want none: nothing reads them", reqs)
	}
	r.Stop()
	if err := r.Err(); err != nil {
		t.Errorf("Err after Stop: %v", err)
	}
}

// TestWaitIdleJudgesOnlyTheControllersWrites: overlapping writes into one
// repository fail WaitIdle when the controllers' client made them, never
// when someone else's did (the soak's two people once wrote at the same
// moment through one client, and the controllers were blamed).
func TestWaitIdleJudgesOnlyTheControllersWrites(t *testing.T) {
	ctx := klog.NewContext(context.Background(), discardLogger)
	sim := porchsim.New()
	sim.AddRepository("ns", "deploy", true, nil)
	r, err := Start(ctx, sim, Options{User: "controllers-1"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Stop()

	// overlap makes two writes of user's client into repository deploy,
	// the first held until the second arrived.
	overlap := func(user string) {
		t.Helper()
		client := sim.ClientsetAs(user)
		firstIn, secondIn := make(chan struct{}), make(chan struct{})
		sim.OnWrite(func(_, _, what string) {
			if strings.Contains(what, "deploy.first") {
				close(firstIn)
				<-secondIn
				return
			}
			close(secondIn)
		})
		defer sim.OnWrite(nil)
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = client.PorchV1alpha1().PackageRevisions("ns").Create(ctx, draftIn("deploy", "first"), metav1.CreateOptions{})
		}()
		select {
		case <-firstIn:
		case <-time.After(30 * time.Second):
			t.Fatal("the first write never reached the Sim")
		}
		_, _ = client.PorchV1alpha1().PackageRevisions("ns").Create(ctx, draftIn("deploy", "second"), metav1.CreateOptions{})
		<-done
	}

	overlap("person")
	if got := len(sim.OverlapsOf("person")); got != 1 {
		t.Fatalf("the person's overlapping writes: %d overlaps recorded, want 1", got)
	}
	if err := r.WaitIdle(ctx, 30*time.Second); err != nil {
		t.Errorf("a person's overlapping writes failed WaitIdle: %v", err)
	}
	overlap("controllers-1")
	err = r.WaitIdle(ctx, 30*time.Second)
	if err == nil || !strings.Contains(err.Error(), "client controllers-1's writes into repository ns/deploy overlapped") {
		t.Errorf("the controllers' overlapping writes: WaitIdle = %v, want the overlap named", err)
	}
}

// draftIn is a new draft of package pkg in repository repo.
func draftIn(repo, pkg string) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns"},
		Spec: porchv1alpha1.PackageRevisionSpec{
			RepositoryName: repo, PackageName: pkg, WorkspaceName: "ws",
			Lifecycle: porchv1alpha1.PackageRevisionLifecycleDraft,
			Tasks:     []porchv1alpha1.Task{{Type: porchv1alpha1.TaskTypeInit, Init: &porchv1alpha1.PackageInitTaskSpec{}}},
		},
	}
}
