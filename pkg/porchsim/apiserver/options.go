package apiserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authentication/request/anonymous"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	genericapiserver "k8s.io/apiserver/pkg/server"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	"k8s.io/client-go/tools/clientcmd"
	netutils "k8s.io/utils/net"

	porchv1alpha1 "github.com/porch-variants/variant-controller/pkg/apis/porch/v1alpha1"
	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/pkg/generated/openapi"
	"github.com/porch-variants/variant-controller/pkg/porchsim"
)

// DefaultSecurePort is the port the server listens on unless told
// otherwise; the APIService's Service points at it.
const DefaultSecurePort = 9443

// Options are the command-line settings of the server.
type Options struct {
	// SecureServing is the HTTPS listener; without a certificate a
	// self-signed one is written to its certificate directory.
	SecureServing *genericoptions.SecureServingOptionsWithLoopback
	// Authentication and Authorization delegate to the kube-apiserver
	// (TokenReview, the front-proxy's request headers, SubjectAccessReview),
	// as every aggregated API server does. Unused when Standalone.
	Authentication *genericoptions.DelegatingAuthenticationOptions
	Authorization  *genericoptions.DelegatingAuthorizationOptions
	// Kubeconfig reaches the cluster whose Repositories are mirrored into
	// the Sim; it is also the default of the authentication and
	// authorization kubeconfigs. Empty: the in-cluster configuration
	// (when not Standalone).
	Kubeconfig string
	// Standalone serves without delegation: every request is anonymous and
	// allowed. There is a cluster to mirror Repositories from only when
	// Kubeconfig is given; otherwise the Sim's Repositories are the
	// caller's to add.
	Standalone bool
}

// NewOptions returns the defaults: 127.0.0.1:9443, a self-signed
// certificate in a directory under the system's temporary directory.
func NewOptions() *Options {
	sso := genericoptions.NewSecureServingOptions()
	sso.BindAddress = netutils.ParseIPSloppy("127.0.0.1")
	sso.BindPort = DefaultSecurePort
	sso.ServerCert.CertDirectory = filepath.Join(os.TempDir(), "porchsim-apiserver")
	sso.ServerCert.PairName = "porchsim-apiserver"
	// The aggregator multiplexes every client's requests, watches
	// included, over a few HTTP/2 connections.
	sso.HTTP2MaxStreamsPerConnection = 1000
	return &Options{
		SecureServing:  sso.WithLoopback(),
		Authentication: genericoptions.NewDelegatingAuthenticationOptions(),
		Authorization:  genericoptions.NewDelegatingAuthorizationOptions(),
	}
}

// AddFlags adds the flags of the options to fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig,
		"Kubeconfig of the cluster whose Repositories are served from (and whose authentication and authorization are delegated to, "+
			"unless --authentication-kubeconfig or --authorization-kubeconfig say otherwise). Empty: the in-cluster configuration.")
	fs.BoolVar(&o.Standalone, "standalone", o.Standalone,
		"Serve without a cluster's authentication and authorization: every request is anonymous and allowed. "+
			"Repositories then come from --kubeconfig if given, else from --repositories-from. For tests and local use only.")
}

// Validate checks the options.
func (o *Options) Validate() error {
	errs := o.SecureServing.Validate()
	if !o.Standalone {
		errs = append(errs, o.Authentication.Validate()...)
		errs = append(errs, o.Authorization.Validate()...)
	}
	return errors.Join(errs...)
}

// HasCluster reports whether the options name a cluster to mirror
// Repositories from.
func (o *Options) HasCluster() bool {
	return !o.Standalone || o.Kubeconfig != ""
}

// Config builds the configuration of a server that serves sim. It creates
// the listener (and the self-signed certificate when none is given).
func (o *Options) Config(sim *porchsim.Sim) (*Config, error) {
	// The names the aggregator may check the certificate for: the
	// Service of hack/e2e/porch-apiservice.yaml (as Porch's own).
	alternateDNS := []string{"api.porch-system.svc", "api.porch-system.svc.cluster.local"}
	if err := o.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", alternateDNS,
		[]net.IP{netutils.ParseIPSloppy("127.0.0.1")}); err != nil {
		return nil, fmt.Errorf("create self-signed certificate: %w", err)
	}

	generic := genericapiserver.NewRecommendedConfig(Codecs)
	generic.EffectiveVersion = utilcompatibility.DefaultBuildEffectiveVersion()
	// The generic API server needs OpenAPI models for server-side apply;
	// kubectl uses them for explain and client-side validation. The
	// internal version is not published.
	namer := openapinamer.NewDefinitionNamer(publishedScheme())
	generic.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(openapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIConfig.Info.Title = "porchsim"
	generic.OpenAPIConfig.Info.Version = porchv1alpha1.SchemeGroupVersion.Version
	generic.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(openapi.GetOpenAPIDefinitions, namer)
	generic.OpenAPIV3Config.Info.Title = "porchsim"
	generic.OpenAPIV3Config.Info.Version = porchv1alpha1.SchemeGroupVersion.Version

	if err := o.SecureServing.ApplyTo(&generic.SecureServing, &generic.LoopbackClientConfig); err != nil {
		return nil, fmt.Errorf("secure serving: %w", err)
	}
	if o.Standalone {
		generic.Authentication.Authenticator = anonymous.NewAuthenticator(nil)
		generic.Authorization.Authorizer = authorizerfactory.NewAlwaysAllowAuthorizer()
	} else {
		if o.Authentication.RemoteKubeConfigFile == "" {
			o.Authentication.RemoteKubeConfigFile = o.Kubeconfig
		}
		if o.Authorization.RemoteKubeConfigFile == "" {
			o.Authorization.RemoteKubeConfigFile = o.Kubeconfig
		}
		if err := o.Authentication.ApplyTo(&generic.Authentication, generic.SecureServing, generic.OpenAPIConfig); err != nil {
			return nil, fmt.Errorf("delegated authentication: %w", err)
		}
		if err := o.Authorization.ApplyTo(&generic.Authorization); err != nil {
			return nil, fmt.Errorf("delegated authorization: %w", err)
		}
	}

	cfg := &Config{Generic: generic, Sim: sim}
	if o.HasCluster() {
		rc, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
		if err != nil {
			return nil, fmt.Errorf("load kubeconfig: %w", err)
		}
		if cfg.Cluster, err = versioned.NewForConfig(rc); err != nil {
			return nil, fmt.Errorf("create cluster client: %w", err)
		}
	}
	return cfg, nil
}

// publishedScheme knows the served types in their published version only,
// so that the OpenAPI definitions name no internal version.
func publishedScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := porchv1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}
