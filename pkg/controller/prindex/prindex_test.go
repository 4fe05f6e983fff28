package prindex

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/porch-variants/variant-controller/pkg/apis/porch/helper"
	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
)

func rev(ns, repo, pkg, ws string) *porchv1alpha1.PackageRevision {
	return &porchv1alpha1.PackageRevision{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: repo + "." + pkg + "." + ws},
		Spec:       porchv1alpha1.PackageRevisionSpec{RepositoryName: repo, PackageName: pkg, WorkspaceName: porchv1alpha1.WorkspaceName(ws)},
	}
}

// TestRegisterOnce: both controllers register the index on one informer;
// it is added once, and lists one package's revisions sorted by name.
func TestRegisterOnce(t *testing.T) {
	informer := cache.NewSharedIndexInformer(&cache.ListWatch{}, &porchv1alpha1.PackageRevision{}, 0, cache.Indexers{})
	for range 2 {
		if err := Register(informer); err != nil {
			t.Fatalf("Register: %v", err)
		}
	}
	if n := len(informer.GetIndexer().GetIndexers()); n != 1 {
		t.Errorf("%d indexers after two registrations, want 1", n)
	}
	store := informer.GetIndexer()
	for _, pr := range []*porchv1alpha1.PackageRevision{rev("ns", "deploy", "app", "v2"), rev("ns", "deploy", "app", "v1"), rev("ns", "deploy", "other", "v1"), rev("ns2", "deploy", "app", "v1")} {
		if err := store.Add(pr); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for _, pr := range Revisions(store, "ns", "deploy", "app") {
		got = append(got, pr.Name)
	}
	if diff := cmp.Diff([]string{"deploy.app.v1", "deploy.app.v2"}, got); diff != "" {
		t.Errorf("Revisions (-want +got):\n%s", diff)
	}
	if keys, _ := store.IndexKeys(ByPackage, helper.PackageKey("ns", "deploy", "app")); len(keys) != 2 {
		t.Errorf("index keys %v", keys)
	}
}
