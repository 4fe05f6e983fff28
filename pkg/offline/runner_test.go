package offline

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

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
