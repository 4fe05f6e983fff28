package main

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
	"github.com/porch-variants/variant-controller/pkg/porchsim/apiserver"
)

// options are the command-line settings.
type options struct {
	server *apiserver.Options
	// repositoriesFrom is a YAML file of Repositories for a run without a
	// cluster.
	repositoriesFrom string
	// packageFlags are the raw --package values; packages the parsed ones.
	packageFlags     []string
	packages         []input.PackageFlag
	packageNamespace string
}

func newOptions() *options {
	return &options{server: apiserver.NewOptions(), packageNamespace: "default"}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	o.server.AddFlags(fs)
	fs.StringVar(&o.repositoriesFrom, "repositories-from", "",
		"YAML or JSON file of config.porch.kpt.dev/v1alpha1 Repositories (several documents, or a List) to serve revisions in. "+
			"Only without a cluster (--standalone and no --kubeconfig): otherwise the cluster's Repositories are used.")
	fs.StringArrayVar(&o.packageFlags, "package", nil,
		"REPO/PACKAGE[@REVISION]=DIR: serve the kpt package in DIR as a Published revision (1 unless given) of PACKAGE in "+
			"Repository REPO, which must exist. Repeat for more packages or revisions; revisions of a package are added in order, from 1.")
	fs.StringVar(&o.packageNamespace, "package-namespace", o.packageNamespace, "Namespace of the --package revisions (and of their Repositories).")
}

func (o *options) validate() error {
	errs := []error{o.server.Validate()}
	if o.repositoriesFrom != "" && o.server.HasCluster() {
		errs = append(errs, errors.New("--repositories-from is for a run without a cluster (--standalone without --kubeconfig); "+
			"with a cluster the Sim serves the cluster's Repositories"))
	}
	for _, msg := range validation.IsDNS1123Label(o.packageNamespace) {
		errs = append(errs, fmt.Errorf("--package-namespace %q: %s", o.packageNamespace, msg))
	}
	o.packages = nil
	for _, v := range o.packageFlags {
		f, err := input.ParsePackageFlag(v)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.packages = append(o.packages, f)
	}
	return errors.Join(errs...)
}
