// Package live reads a live cluster for variantctl diff: kubectl's client
// flags turned into a client that cannot write, the fleet listed through
// it, and the in-cluster objects injectors and objectSelectors name, each
// kind listed on first need. pkg/offline never reaches a cluster itself:
// it is handed what this package read.
package live

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// ClusterError says why the cluster could not be read: which request,
// and what to do about it.
type ClusterError struct {
	What string // "list PackageVariants in namespace fleet"
	Err  error
}

func (e *ClusterError) Error() string {
	switch {
	case apierrors.IsForbidden(e.Err):
		return fmt.Sprintf("the cluster refused to %s: %v; variantctl diff needs get and list on repositories, packagevariants, packagevariantsets, packagerevisions and packagerevisionresources, and list on the kinds injectors and objectSelectors name",
			e.What, apierrors.ReasonForError(e.Err))
	case apierrors.IsUnauthorized(e.Err):
		return fmt.Sprintf("cannot %s: the cluster does not accept the kubeconfig's credentials (%v)", e.What, e.Err)
	case isUnreachable(e.Err):
		return fmt.Sprintf("cannot %s: the cluster cannot be reached (%v); check --kubeconfig and --context", e.What, e.Err)
	}
	return fmt.Sprintf("cannot %s: %v", e.What, e.Err)
}

func (e *ClusterError) Unwrap() error { return e.Err }

func isUnreachable(err error) bool {
	var netErr net.Error
	var urlErr *url.Error
	return errors.As(err, &netErr) || errors.As(err, &urlErr)
}

// ReadFleet reads the fleet of the given namespaces through client
// (built on ReadOnlyConfig): the Repositories, PackageVariants,
// PackageVariantSets and PackageRevisions, one list each per namespace,
// with uids, owner references, finalizers and status as the cluster holds
// them. No package files are read here: Input.FileSource gets those the
// run needs, one PackageRevisionResources at a time, because Porch serves
// each from git.
func ReadFleet(ctx context.Context, client versioned.Interface, namespaces []string) (*input.Input, error) {
	in := &input.Input{}
	for _, ns := range namespaces {
		src := input.Source{File: "cluster namespace " + ns}
		for _, k := range input.FleetKinds {
			objs, err := k.List(ctx, client, ns)
			if err != nil {
				return nil, &ClusterError{What: "list " + k.Plural + " in namespace " + ns, Err: err}
			}
			for _, obj := range objs {
				in.Hold(obj, src)
			}
		}
	}
	in.FileSource = func(ctx context.Context, namespace, name string) (map[string]string, error) {
		prr, err := client.PorchV1alpha1().PackageRevisionResources(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, &ClusterError{What: "get PackageRevisionResources " + namespace + "/" + name, Err: err}
		}
		if prr.Spec.Resources == nil {
			return map[string]string{}, nil
		}
		return prr.Spec.Resources, nil
	}
	return in, nil
}
