package apiserver

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned/fake"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

func clusterRepository(name string, deployment bool, labels map[string]string) *configv1alpha1.Repository {
	return &configv1alpha1.Repository{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec:       configv1alpha1.RepositorySpec{Type: configv1alpha1.RepositoryTypeGit, Deployment: deployment},
	}
}

// TestRepositoriesAreMirroredFromTheCluster serves a Sim that starts with
// no Repository at all: what the server can do in a Repository follows the
// cluster's Repositories, from before the first request to their deletion.
func TestRepositoriesAreMirroredFromTheCluster(t *testing.T) {
	ctx := context.Background()
	sim := porchsim.New()
	cluster := fake.NewSimpleClientset(
		clusterRepository("blueprints", false, nil),
		clusterRepository("deploy", false, map[string]string{"env": "prod"}),
	)
	s := startServer(t, sim, cluster)
	simRepos := sim.Clientset().ConfigV1alpha1().Repositories(ns)
	clusterRepos := cluster.ConfigV1alpha1().Repositories(ns)

	// Before the first request: a package can be published into the
	// cluster's blueprints repository right after start.
	if _, err := sim.AddPublished(ns, "blueprints", "app", 1, map[string]string{"Kptfile": blueprintKptfile}); err != nil {
		t.Fatalf("the Sim lacks the cluster's Repository at start: %v", err)
	}
	if r, err := simRepos.Get(ctx, "deploy", metav1.GetOptions{}); err != nil || r.Labels["env"] != "prod" {
		t.Fatalf("the Sim's deploy Repository = %v, %v; want it with label env=prod", r, err)
	}

	// A change of the deployment flag changes what a clone makes.
	cur, err := clusterRepos.Get(ctx, "deploy", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Deployment = true
	cur.Labels = map[string]string{"env": "staging"}
	if _, err := clusterRepos.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		r, err := simRepos.Get(ctx, "deploy", metav1.GetOptions{})
		return err == nil && r.Spec.Deployment && r.Labels["env"] == "staging"
	}, "the Sim's deploy Repository to become a deployment repository labelled env=staging")
	draft := s.cloneDraft(t, "app", "v1")
	if !draft.Status.Deployment {
		t.Errorf("a clone into the (now) deployment repository has status.deployment false")
	}

	// A new Repository can hold revisions once it is mirrored.
	if _, err := clusterRepos.Create(ctx, clusterRepository("late", false, nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := simRepos.Get(ctx, "late", metav1.GetOptions{})
		return err == nil
	}, "the Sim to hold the Repository created late")

	// A deleted Repository takes no new revision; its revisions stay.
	if err := clusterRepos.Delete(ctx, "deploy", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool {
		_, err := simRepos.Get(ctx, "deploy", metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	}, "the Sim to drop the deleted Repository")
	_, err = s.client.PorchV1alpha1().PackageRevisions(ns).Create(ctx,
		newDraft("deploy", "other", "v1", cloneTask(upstreamV1)), metav1.CreateOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("create in the deleted Repository: %v, want NotFound", err)
	}
	if _, err := s.client.PorchV1alpha1().PackageRevisions(ns).Get(ctx, draft.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the revision of the deleted Repository: %v, want it kept", err)
	}
}
