package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2/ktesting"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

func deps(t *testing.T, ctx context.Context) (Dependencies, informers.SharedInformerFactory) {
	t.Helper()
	client := fake.NewSimpleClientset(&configv1alpha1.PackageVariant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "app"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	return Dependencies{Client: client, Informers: InformersOf(factory), Recorder: record.NewFakeRecorder(10)}, factory
}

func TestBuild(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	cases := map[string]struct {
		enabled []string
		want    []string
		wantErr string
	}{
		"All":     {want: Names},
		"OneOnly": {enabled: []string{packagevariantset.ControllerName}, want: []string{packagevariantset.ControllerName}},
		"InOrder": {enabled: []string{Names[1], Names[0]}, want: Names},
		"Unknown": {enabled: []string{"deployments"}, wantErr: `unknown controller "deployments": the controllers are [packagevariants packagevariantsets]`},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, _ := deps(t, ctx)
			built, err := Build(ctx, d, Options{Enabled: tc.enabled})
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("Build error = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			var got []string
			for _, b := range built {
				got = append(got, b.Name)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("built %v, want %v", got, tc.want)
			}
		})
	}
}

// TestTrackerSeesTheQueues: a Tracker given at construction counts the
// keys the controllers' informers queued (pkg/offline's idleness), and a
// Resync queues every variant again once they were synced.
func TestTrackerSeesTheQueues(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	d, factory := deps(t, ctx)
	tracker, resync := workloop.NewTracker(), &workloop.Resync{}
	built, err := Build(ctx, d, Options{Enabled: []string{Names[0]}, Tracker: tracker, Resync: resync})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return built[0].Controller.HasSynced() && tracker.Queued() == 1, nil
	})
	if err != nil {
		t.Fatalf("the variant's key never showed in Queued (%d): %v", tracker.Queued(), err)
	}
	go func() { _ = built[0].Controller.Run(ctx, 1) }()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return tracker.Syncs(Names[0]) >= 1 && tracker.Queued() == 0 && tracker.Idle(), nil
	})
	if err != nil {
		t.Fatalf("the variant was not synced: %v", err)
	}
	before := tracker.Syncs(Names[0])
	resync.Now()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return tracker.Syncs(Names[0]) > before, nil
	})
	if err != nil {
		t.Fatalf("Resync queued nothing: %v", err)
	}
}
