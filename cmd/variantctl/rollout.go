package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	configv1alpha2 "github.com/porch-variants/variant-controller/pkg/apis/config/v1alpha2"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

const rolloutLong = `Approve, pause, resume, skip and look at the rollout of a PackageVariantSet
on a live cluster (spec.rollout), as its controller runs it.

The commands reach the cluster as kubectl does (--kubeconfig, --context, -n
and the rest of kubectl's client flags) and need these verbs: get on
packagevariantsets (status); patch on packagevariantsets (approve, pause,
resume, skip); get on packagevariants (skip); create on events (the record
of who did it; without it the change is still made, with a warning).`

const rolloutExample = `  # Where the rollout of set edge stands, wave by wave
  variantctl rollout status edge -n fleet

  # Approve the wave that waits for approval (or name it: approve edge prod)
  variantctl rollout approve edge -n fleet

  # Start nothing new until resumed; what is open stays open
  variantctl rollout pause edge -n fleet
  # Go on: unpause, and resume a wave that halted on its failures
  variantctl rollout resume edge -n fleet

  # Go on without a variant that failed
  variantctl rollout skip edge edge-edge-03-app -n fleet`

// rolloutClients are what the rollout commands talk to; tests give fakes.
type rolloutClients struct {
	config versioned.Interface
	kube   kubernetes.Interface
}

// rolloutFlags are every rollout command's: the cluster, as kubectl's
// flags reach it (-n included: the set's namespace), and the clients made
// from them in Complete.
type rolloutFlags struct {
	genericiooptions.IOStreams
	config    *genericclioptions.ConfigFlags
	set       string
	namespace string
	// newClients makes the clients (nil: from config).
	newClients func() (rolloutClients, error)
	clients    rolloutClients
}

func (f *rolloutFlags) add(cmd *cobra.Command) {
	f.config = genericclioptions.NewConfigFlags(false)
	f.config.CacheDir = nil
	f.config.AddFlags(cmd.Flags())
}

// complete reads the set's name and namespace (-n, else the kubeconfig
// context's).
func (f *rolloutFlags) complete(args []string) error {
	f.set = args[0]
	ns, _, err := f.config.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("read the namespace from the kubeconfig: %w", err)
	}
	f.namespace = ns
	return nil
}

// connect makes the clients, first thing in Run.
func (f *rolloutFlags) connect() error {
	newClients := f.newClients
	if newClients == nil {
		newClients = f.clientsFromConfig
	}
	var err error
	f.clients, err = newClients()
	return err
}

func (f *rolloutFlags) clientsFromConfig() (rolloutClients, error) {
	cfg, err := f.config.ToRESTConfig()
	if err != nil {
		return rolloutClients{}, fmt.Errorf("read the kubeconfig: %w", err)
	}
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		return rolloutClients{}, err
	}
	k, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return rolloutClients{}, err
	}
	return rolloutClients{config: c, kube: k}, nil
}

// Validate has nothing to refuse: the set and the wave are checked
// against the cluster in Run, with what it holds in the message.
func (f *rolloutFlags) Validate() error { return nil }

// describe names the set as the messages do.
func (f *rolloutFlags) describe() string {
	return fmt.Sprintf("packagevariantset %s/%s", f.namespace, f.set)
}

// setArgs accepts SET, and WAVE when maxArgs is 2.
func setArgs(maxArgs int) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return fmt.Errorf("name the PackageVariantSet")
		case len(args) > maxArgs:
			return fmt.Errorf("unexpected argument %q", args[maxArgs])
		}
		return nil
	}
}

// newRolloutCommand is variantctl rollout and its commands.
func newRolloutCommand(streams genericiooptions.IOStreams, execute executeFunc) *cobra.Command {
	cmd := groupCommand(&cobra.Command{
		Use:     "rollout",
		Short:   "Approve, pause, resume, skip and look at a set's rollout on a live cluster",
		Long:    rolloutLong,
		Example: rolloutExample,
	}, streams, "status, approve, pause, resume or skip")
	cmd.AddCommand(
		newCommand(&rolloutStatusOptions{rolloutFlags: rolloutFlags{IOStreams: streams}}, execute),
		newCommand(&rolloutApproveOptions{rolloutFlags: rolloutFlags{IOStreams: streams}}, execute),
		newCommand(&rolloutPauseOptions{rolloutFlags: rolloutFlags{IOStreams: streams}, pause: true}, execute),
		newCommand(&rolloutPauseOptions{rolloutFlags: rolloutFlags{IOStreams: streams}}, execute),
		newCommand(&rolloutSkipOptions{rolloutFlags: rolloutFlags{IOStreams: streams}}, execute),
	)
	return cmd
}

// getRollout reads the set, refusing one without spec.rollout.
func (f *rolloutFlags) getRollout(ctx context.Context) (*configv1alpha2.PackageVariantSet, error) {
	if f.clients.config == nil {
		if err := f.connect(); err != nil {
			return nil, err
		}
	}
	pvs, err := f.clients.config.ConfigV1alpha2().PackageVariantSets(f.namespace).Get(ctx, f.set, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", f.describe(), err)
	}
	if pvs.Spec.Rollout == nil {
		return nil, fmt.Errorf("%s has no spec.rollout: every change reaches its variants at once", f.describe())
	}
	return pvs, nil
}

// waveNames lists the waves of a rollout, for messages.
func waveNames(spec *configv1alpha2.Rollout) string {
	names := make([]string, 0, len(spec.Waves))
	for _, w := range spec.Waves {
		names = append(names, w.Name)
	}
	return strings.Join(names, ", ")
}

// waveIndex is the index of the named wave in spec (-1: none).
func waveIndex(spec *configv1alpha2.Rollout, name string) int {
	return slices.IndexFunc(spec.Waves, func(w configv1alpha2.Wave) bool { return w.Name == name })
}
