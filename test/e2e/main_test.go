//go:build e2e

// Package e2e proves the shipped pieces on a real control plane: a
// kube-apiserver with RBAC and the aggregation layer, kube-controller-manager
// (garbage collection), porchsim served as Porch's aggregated API, deploy/
// installed with kubectl, and the variant-controller binary running as its
// ServiceAccount. Run it with `make e2e`; it needs the environment that
// `hack/local-cluster.sh up` prepares:
//
//	KUBECONFIG   the cluster admin's kubeconfig
//	E2E_BIN      directory holding variant-controller and porchsim-apiserver
//	KUBECTL      kubectl (default: kubectl on PATH)
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
	"github.com/porch-variants/variant-controller/test/e2eutil"
)

const (
	controllerNS = "variant-controller-system"
	controllerSA = "variant-controller"
	// porchPort is where porchsim-apiserver listens; hack/e2e/porch-apiservice.yaml
	// points the APIService at it.
	porchPort = 9443
	timeout   = 60 * time.Second
	poll      = e2eutil.Poll
)

// env is what TestMain set up, shared by the tests.
var env struct {
	root        string // repository root
	bin         string
	kubectl     e2eutil.Kubectl
	adminConfig *rest.Config
	kube        kubernetes.Interface
	admin       versioned.Interface
	// saKubeconfig authenticates as the controller's ServiceAccount.
	saKubeconfig string
	workDir      string
}

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		teardown()
		os.Exit(1)
	}
	code := m.Run()
	teardown()
	os.Exit(code)
}

var background []*e2eutil.Process

func setup() error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	env.root = root
	env.bin = os.Getenv("E2E_BIN")
	if env.bin == "" {
		env.bin = filepath.Join(root, "bin")
	}
	env.kubectl = e2eutil.Kubectl{Path: os.Getenv("KUBECTL")}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		return fmt.Errorf("KUBECONFIG is not set; run `make e2e` (it starts hack/local-cluster.sh)")
	}
	if env.workDir, err = os.MkdirTemp("", "variant-e2e-"); err != nil {
		return err
	}
	if env.adminConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return err
	}
	env.kube = kubernetes.NewForConfigOrDie(env.adminConfig)
	env.admin = versioned.NewForConfigOrDie(env.adminConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Porch's side: the Repository CRD and porchsim behind an APIService.
	if _, err := kubectl("apply", "-f", filepath.Join(root, "hack/crd")); err != nil {
		return err
	}
	if _, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/repositories.config.porch.kpt.dev"); err != nil {
		return err
	}
	porch, err := e2eutil.StartPorchsim(ctx, e2eutil.PorchsimOptions{
		Binary: filepath.Join(env.bin, "porchsim-apiserver"), Kubeconfig: kubeconfig,
		Port: porchPort, WorkDir: filepath.Join(env.workDir, "porchsim"),
	})
	if err != nil {
		return err
	}
	background = append(background, porch)
	if _, err := kubectl("apply", "-f", filepath.Join(root, "hack/e2e/porch-apiservice.yaml")); err != nil {
		return err
	}
	if _, err := kubectl("wait", "--for=condition=Available", "--timeout=90s", "apiservice/v1alpha1.porch.kpt.dev"); err != nil {
		return fmt.Errorf("%w\n%s", err, porch.Tail())
	}

	// Ours: deploy/ as a user installs it. No kubelet runs here, so the
	// Deployment's pods never start; the binary runs as a process instead,
	// with the ServiceAccount's token, so its RBAC is what is tested.
	if _, err := kubectl("apply", "-k", filepath.Join(root, "deploy")); err != nil {
		return err
	}
	for _, crd := range []string{"packagevariants.config.porch.kpt.dev", "packagevariantsets.config.porch.kpt.dev"} {
		if _, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd); err != nil {
			return err
		}
	}
	env.saKubeconfig = filepath.Join(env.workDir, "sa.kubeconfig")
	return e2eutil.ServiceAccountKubeconfig(ctx, env.kube, env.adminConfig, controllerNS, controllerSA, time.Hour, env.saKubeconfig)
}

func teardown() {
	for i := len(background) - 1; i >= 0; i-- {
		_ = background[i].Stop()
	}
	if os.Getenv("E2E_KEEP") == "" && env.workDir != "" {
		os.RemoveAll(env.workDir)
	}
}

// kubectl runs kubectl as the admin; the error carries its output.
func kubectl(args ...string) (string, error) {
	return env.kubectl.Run(args...)
}
