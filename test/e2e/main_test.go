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
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/porch-variants/variant-controller/pkg/generated/clientset/versioned"
)

const (
	controllerNS = "variant-controller-system"
	controllerSA = "variant-controller"
	// porchPort is where porchsim-apiserver listens; hack/e2e/porch-apiservice.yaml
	// points the APIService at it.
	porchPort = "9443"
	timeout   = 60 * time.Second
	poll      = 250 * time.Millisecond
)

// env is what TestMain set up, shared by the tests.
var env struct {
	root        string // repository root
	bin         string
	kubectl     string
	adminConfig *rest.Config
	kube        kubernetes.Interface
	admin       versioned.Interface
	// saKubeconfig authenticates as the controller's ServiceAccount.
	saKubeconfig string
	workDir      string
}

func TestMain(m *testing.M) {
	code, err := setup()
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e setup: %v\n", err)
		os.Exit(1)
	}
	code = m.Run()
	teardown()
	os.Exit(code)
}

var background []*process

func setup() (int, error) {
	root, err := filepath.Abs("../..")
	if err != nil {
		return 0, err
	}
	env.root = root
	env.bin = os.Getenv("E2E_BIN")
	if env.bin == "" {
		env.bin = filepath.Join(root, "bin")
	}
	env.kubectl = os.Getenv("KUBECTL")
	if env.kubectl == "" {
		env.kubectl = "kubectl"
	}
	kubeconfig := os.Getenv("KUBECONFIG")
	if kubeconfig == "" {
		return 0, fmt.Errorf("KUBECONFIG is not set; run `make e2e` (it starts hack/local-cluster.sh)")
	}
	if env.workDir, err = os.MkdirTemp("", "variant-e2e-"); err != nil {
		return 0, err
	}
	if env.adminConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfig); err != nil {
		return 0, err
	}
	env.kube = kubernetes.NewForConfigOrDie(env.adminConfig)
	env.admin = versioned.NewForConfigOrDie(env.adminConfig)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	// Porch's side: the Repository CRD and porchsim behind an APIService.
	if _, err := kubectl("apply", "-f", filepath.Join(root, "hack/crd")); err != nil {
		return 0, err
	}
	if _, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/repositories.config.porch.kpt.dev"); err != nil {
		return 0, err
	}
	porch, err := start("porchsim-apiserver", filepath.Join(env.bin, "porchsim-apiserver"),
		"--kubeconfig", kubeconfig, "--secure-port", porchPort, "--bind-address", "127.0.0.1")
	if err != nil {
		return 0, err
	}
	background = append(background, porch)
	if err := waitTCP(ctx, "127.0.0.1:"+porchPort); err != nil {
		return 0, fmt.Errorf("porchsim-apiserver: %w\n%s", err, porch.tail())
	}
	if _, err := kubectl("apply", "-f", filepath.Join(root, "hack/e2e/porch-apiservice.yaml")); err != nil {
		return 0, err
	}
	if _, err := kubectl("wait", "--for=condition=Available", "--timeout=90s", "apiservice/v1alpha1.porch.kpt.dev"); err != nil {
		return 0, fmt.Errorf("%w\n%s", err, porch.tail())
	}

	// Ours: deploy/ as a user installs it. No kubelet runs here, so the
	// Deployment's pods never start; the binary runs as a process instead,
	// with the ServiceAccount's token, so its RBAC is what is tested.
	if _, err := kubectl("apply", "-k", filepath.Join(root, "deploy")); err != nil {
		return 0, err
	}
	for _, crd := range []string{"packagevariants.config.porch.kpt.dev", "packagevariantsets.config.porch.kpt.dev"} {
		if _, err := kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd); err != nil {
			return 0, err
		}
	}
	if env.saKubeconfig, err = serviceAccountKubeconfig(ctx); err != nil {
		return 0, err
	}
	return 0, nil
}

func teardown() {
	for i := len(background) - 1; i >= 0; i-- {
		background[i].stop()
	}
	if os.Getenv("E2E_KEEP") == "" {
		os.RemoveAll(env.workDir)
	}
}

// serviceAccountKubeconfig writes a kubeconfig that authenticates as the
// controller's ServiceAccount with a token from the TokenRequest API.
func serviceAccountKubeconfig(ctx context.Context) (string, error) {
	expiry := int64(3600)
	tr, err := env.kube.CoreV1().ServiceAccounts(controllerNS).CreateToken(ctx, controllerSA,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for %s/%s: %w", controllerNS, controllerSA, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{
		Server:                   env.adminConfig.Host,
		CertificateAuthorityData: env.adminConfig.CAData,
		CertificateAuthority:     env.adminConfig.CAFile,
	}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["sa"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "sa", Namespace: controllerNS}
	cfg.CurrentContext = "sa"
	path := filepath.Join(env.workDir, "sa.kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// kubectl runs kubectl as the admin; the error carries its output.
func kubectl(args ...string) (string, error) {
	cmd := exec.Command(env.kubectl, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

// process is a binary running in the background, its output kept.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

func start(name, path string, args ...string) (*process, error) {
	p := &process{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(path, args...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// stop sends SIGTERM and waits (bounded), then kills.
func (p *process) stop() {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// kill ends the process at once, as a node failure would.
func (p *process) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// tail is the end of the process's output, for failure messages.
func (p *process) tail() string {
	s := p.out.String()
	if len(s) > 4000 {
		s = s[len(s)-4000:]
	}
	return fmt.Sprintf("--- %s output (end) ---\n%s", p.name, s)
}

func waitTCP(ctx context.Context, addr string) error {
	return wait.PollUntilContextTimeout(ctx, poll, timeout, true, func(context.Context) (bool, error) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false, nil
		}
		c.Close()
		return true, nil
	})
}
