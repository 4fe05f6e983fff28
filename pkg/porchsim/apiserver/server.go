// Package apiserver serves a porchsim.Sim as a Kubernetes aggregated API
// server: porch.kpt.dev/v1alpha1 packagerevisions and
// packagerevisionresources, as Porch's own server offers them, so that a
// kube-apiserver with an APIService for porch.kpt.dev serves them from the
// Sim.
//
// The server is built on k8s.io/apiserver (secure serving, delegated
// authentication and authorization, discovery, OpenAPI, tables) with REST
// storages that hold no state and apply no rule of their own: every request
// becomes requests to the Sim's clientset, which enforces Porch's rules and
// answers with Porch's errors. The Repository CRD stays in the cluster; the
// server mirrors the cluster's Repositories into the Sim.
package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/tools/cache"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// Config is the configuration of a Server.
type Config struct {
	// Generic configures the generic API server: serving, authentication,
	// authorization, OpenAPI.
	Generic *genericapiserver.RecommendedConfig
	// Sim serves every request.
	Sim *porchsim.Sim
	// Cluster, when set, is a client of the cluster whose Repositories are
	// mirrored into the Sim.
	Cluster versioned.Interface
}

// Server is an aggregated API server for porch.kpt.dev backed by a Sim.
type Server struct {
	// GenericAPIServer serves the requests.
	GenericAPIServer *genericapiserver.GenericAPIServer

	sim       *porchsim.Sim
	informers informers.SharedInformerFactory
	mirror    *RepositoryMirror

	syncOnce sync.Once
	syncErr  error
}

// New builds a server from the configuration. It does not serve until Run.
func (c *Config) New() (*Server, error) {
	if c.Sim == nil {
		return nil, errors.New("no Sim to serve")
	}
	gs, err := c.Generic.Complete().New("porchsim-apiserver", genericapiserver.NewEmptyDelegate())
	if err != nil {
		return nil, fmt.Errorf("create generic API server: %w", err)
	}
	s := &Server{GenericAPIServer: gs, sim: c.Sim}

	group := genericapiserver.NewDefaultAPIGroupInfo(porchv1alpha1.GroupName, Scheme, parameterCodec, Codecs)
	porch := c.Sim.Clientset().PorchV1alpha1()
	group.VersionedResourcesStorageMap[porchv1alpha1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"packagerevisions":          newPackageRevisions(porch),
		"packagerevisions/approval": &approval{client: porch, sim: c.Sim.Clientset().(invoker)},
		"packagerevisionresources":  newPackageRevisionResources(porch),
	}
	if err := gs.InstallAPIGroup(&group); err != nil {
		return nil, fmt.Errorf("install %s: %w", porchv1alpha1.GroupName, err)
	}

	if c.Cluster != nil {
		// No resync: the mirror acts on changes only, and a missed
		// change is repaired by the informer's relist.
		s.informers = informers.NewSharedInformerFactory(c.Cluster, 0)
		s.mirror, err = NewRepositoryMirror(c.Sim, s.informers.Config().V1alpha1().Repositories())
		if err != nil {
			return nil, err
		}
		// Until the Sim holds the cluster's Repositories, creates in them
		// would be refused: the server is not ready.
		if err := gs.AddReadyzChecks(healthz.NamedCheck("repository-mirror", func(*http.Request) error {
			if !s.mirror.HasSynced() {
				return errors.New("repositories not mirrored yet")
			}
			return nil
		})); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SyncRepositories starts mirroring the cluster's Repositories into the Sim
// and returns once the Sim holds every one of them; the mirror keeps
// following changes until ctx is cancelled. Without a cluster it does
// nothing. Run calls it; a caller that wants to add packages to mirrored
// Repositories before the first request calls it first.
func (s *Server) SyncRepositories(ctx context.Context) error {
	if s.mirror == nil {
		return nil
	}
	s.syncOnce.Do(func() {
		s.informers.Start(ctx.Done())
		if !cache.WaitForNamedCacheSyncWithContext(ctx, s.mirror.HasSynced) {
			s.syncErr = errors.New("repositories: informer did not sync")
			return
		}
		if s.syncErr = s.mirror.SyncAll(ctx); s.syncErr != nil {
			return
		}
		go func() {
			// Run returns an error only if the cache did not sync,
			// and it has.
			_ = s.mirror.Run(ctx, 1)
		}()
	})
	return s.syncErr
}

// Run mirrors Repositories (see SyncRepositories) and serves until ctx is
// cancelled.
func (s *Server) Run(ctx context.Context) error {
	if err := s.SyncRepositories(ctx); err != nil {
		return err
	}
	return s.GenericAPIServer.PrepareRun().RunWithContext(ctx)
}
