package apiserver

import (
	"context"
	"fmt"
	"maps"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	configv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha1"
	configinformers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha1"
	configlisters "github.com/porch-variants/variant-controller/pkg/generated/listers/config/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// RepositoryMirrorName names the mirror's queue and logs.
const RepositoryMirrorName = "repository-mirror"

// RepositoryMirror keeps the Sim's Repositories in step with a cluster's.
// The Repository CRD lives in the kube-apiserver, where people and the
// controllers create and read Repositories; Porch learns of them there and
// refuses revisions of a Repository it does not know. The Sim does the same,
// so it must hold every Repository the cluster holds, with the deployment
// flag (which decides whether a clone writes package-context.yaml) and the
// labels (which PackageVariantSets select on).
//
// A Repository deleted from the cluster is deleted from the Sim; its
// revisions stay, as the Sim holds them, and no new one can be made in it.
type RepositoryMirror struct {
	sim    *porchsim.Sim
	lister configlisters.RepositoryLister
	synced cache.InformerSynced
	loop   *workloop.Loop
}

// NewRepositoryMirror mirrors the Repositories of informer into sim.
func NewRepositoryMirror(sim *porchsim.Sim, informer configinformers.RepositoryInformer) (*RepositoryMirror, error) {
	m := &RepositoryMirror{
		sim:    sim,
		lister: informer.Lister(),
	}
	m.loop = &workloop.Loop{
		Name:  RepositoryMirrorName,
		Queue: workloop.NewQueue(RepositoryMirrorName, nil),
		Sync:  m.sync,
	}
	reg, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: m.enqueue,
		UpdateFunc: func(oldObj, newObj any) {
			// Only what the Sim keeps matters; resyncs and status
			// changes are skipped.
			o, ok1 := oldObj.(*configv1alpha1.Repository)
			n, ok2 := newObj.(*configv1alpha1.Repository)
			if ok1 && ok2 && o.Spec.Deployment == n.Spec.Deployment && maps.Equal(o.Labels, n.Labels) {
				return
			}
			m.enqueue(newObj)
		},
		DeleteFunc: m.enqueue,
	})
	if err != nil {
		return nil, fmt.Errorf("add repository event handler: %w", err)
	}
	m.synced = reg.HasSynced
	return m, nil
}

func (m *RepositoryMirror) enqueue(obj any) {
	key, err := cache.DeletionHandlingObjectToName(obj)
	if err != nil {
		klog.Background().Error(err, "Cannot queue Repository", "object", obj)
		return
	}
	m.loop.Queue.Add(key)
}

// HasSynced reports whether the informer has delivered the cluster's
// Repositories to the mirror's handler.
func (m *RepositoryMirror) HasSynced() bool {
	return m.synced()
}

// SyncAll copies every Repository of the informer's cache into the Sim now,
// so that a server can hold them all before it serves its first request.
// The informer must have synced.
func (m *RepositoryMirror) SyncAll(ctx context.Context) error {
	repos, err := m.lister.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("list repositories: %w", err)
	}
	for _, r := range repos {
		if err := m.sync(ctx, cache.MetaObjectToName(r)); err != nil {
			return err
		}
	}
	return nil
}

// Run waits for the informer to sync, then mirrors changes until ctx is
// cancelled.
func (m *RepositoryMirror) Run(ctx context.Context, workers int) error {
	if !cache.WaitForNamedCacheSyncWithContext(ctx, m.synced) {
		return fmt.Errorf("%s: caches did not sync", RepositoryMirrorName)
	}
	m.loop.Run(ctx, workers)
	return nil
}

// sync makes the Sim's Repository key what the cluster's is.
func (m *RepositoryMirror) sync(ctx context.Context, key cache.ObjectName) error {
	logger := klog.FromContext(ctx).WithValues("repository", key.String())
	repo, err := m.lister.Repositories(key.Namespace).Get(key.Name)
	if apierrors.IsNotFound(err) {
		err := m.sim.Clientset().ConfigV1alpha1().Repositories(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete repository from the sim: %w", err)
		}
		logger.V(2).Info("Repository gone from the cluster; removed from the sim")
		return nil
	}
	if err != nil {
		return err
	}
	m.sim.PutRepository(repo)
	logger.V(4).Info("Repository mirrored", "deployment", repo.Spec.Deployment)
	return nil
}
