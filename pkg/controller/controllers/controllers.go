// Package controllers builds the controllers from their dependencies and
// options: the one place the binary (cmd/variant-controller), pkg/offline
// (variantctl, the soak, benchmarks) and tests wire them.
package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/tools/record"

	"github.com/porch-variants/variant-controller/pkg/controller/access"
	"github.com/porch-variants/variant-controller/pkg/controller/ondemand"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariant"
	"github.com/porch-variants/variant-controller/pkg/controller/packagevariantset"
	versioned "github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions"
	configv1alpha1informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha1"
	configv1alpha2informers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/config/v1alpha2"
	porchinformers "github.com/porch-variants/variant-controller/pkg/generated/informers/externalversions/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/metrics"
	"github.com/porch-variants/variant-controller/pkg/workloop"
)

// Names are the controllers there are, in the order they are built.
var Names = []string{packagevariant.ControllerName, packagevariantset.ControllerName}

// Informers are the shared informers the controllers read.
type Informers struct {
	PackageVariants    configv1alpha1informers.PackageVariantInformer
	PackageVariantSets configv1alpha2informers.PackageVariantSetInformer
	Repositories       configv1alpha1informers.RepositoryInformer
	PackageRevisions   porchinformers.PackageRevisionInformer
}

// InformersOf takes the controllers' informers from a factory.
func InformersOf(f informers.SharedInformerFactory) Informers {
	return Informers{
		PackageVariants:    f.Config().V1alpha1().PackageVariants(),
		PackageVariantSets: f.Config().V1alpha2().PackageVariantSets(),
		Repositories:       f.Config().V1alpha1().Repositories(),
		PackageRevisions:   f.Porch().V1alpha1().PackageRevisions(),
	}
}

// Dependencies are what the controllers talk to.
type Dependencies struct {
	Client    versioned.Interface
	Informers Informers
	// Objects serves the kinds injectors and objectSelectors name; nil
	// turns both off (each reports that it cannot read).
	Objects *ondemand.Informers
	// Access, when set, lets each variant and set read only what its
	// ServiceAccount may get; nil reads with the controller's own
	// permissions.
	Access   *access.Checker
	Recorder record.EventRecorder
	// Metrics, when set, receives the controllers' metrics.
	Metrics *metrics.Metrics
}

// Options choose and tune the controllers.
type Options struct {
	// Enabled names the controllers to build (see Names); empty builds
	// all of them.
	Enabled []string
	// Tracker, when set, follows every sync and queue (pkg/offline tells
	// from it when the controllers are idle).
	Tracker *workloop.Tracker
	// Resync, when set, queues every PackageVariant when its Now is called.
	Resync *workloop.Resync
	// ReadinessDelay of the PackageVariantSet controller; nil means
	// packagevariantset.DefaultReadinessDelay.
	ReadinessDelay *time.Duration
}

// Controller is a built controller.
type Controller interface {
	// Run waits for the caches, then syncs on workers until ctx ends.
	Run(ctx context.Context, workers int) error
	// HasSynced reports whether the informers feeding it have synced.
	HasSynced() bool
}

// Built is one controller and its name.
type Built struct {
	Name       string
	Controller Controller
}

// Build creates the enabled controllers, in the order of Names. Event
// handlers are registered at once: keys queue up from the moment the
// informers start.
func Build(ctx context.Context, deps Dependencies, opts Options) ([]Built, error) {
	enabled := opts.Enabled
	if len(enabled) == 0 {
		enabled = Names
	}
	for _, name := range enabled {
		if !slices.Contains(Names, name) {
			return nil, fmt.Errorf("unknown controller %q: the controllers are %v", name, Names)
		}
	}
	var out []Built
	for _, name := range Names {
		if !slices.Contains(enabled, name) {
			continue
		}
		var c Controller
		var err error
		switch name {
		case packagevariant.ControllerName:
			c, err = packagevariant.New(ctx, deps.Client, deps.Informers.PackageVariants, deps.Informers.PackageRevisions,
				deps.Objects, deps.Recorder, deps.Metrics, packagevariant.Options{Tracker: opts.Tracker, Resync: opts.Resync, Access: deps.Access, Sets: deps.Informers.PackageVariantSets})
		case packagevariantset.ControllerName:
			c, err = packagevariantset.New(ctx, deps.Client, deps.Informers.PackageVariantSets, deps.Informers.PackageVariants,
				deps.Informers.Repositories, deps.Informers.PackageRevisions, deps.Objects, deps.Recorder, deps.Metrics,
				packagevariantset.Options{Tracker: opts.Tracker, ReadinessDelay: opts.ReadinessDelay, Access: deps.Access})
		}
		if err != nil {
			return nil, fmt.Errorf("create the %s controller: %w", name, err)
		}
		out = append(out, Built{Name: name, Controller: c})
	}
	return out, nil
}
