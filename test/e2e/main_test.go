//go:build e2e

// Package e2e proves the shipped pieces on a real control plane: a
// kube-apiserver with RBAC, the aggregation layer and the audit log on,
// kube-controller-manager (garbage collection), deploy/ installed with
// kubectl, and the variant-controller and variantctl binaries running as
// ServiceAccounts. Porch's API is served by one or two backends, each test
// that touches it running once per backend (forEachBackend):
//
//   - porchsim: porchsim-apiserver, always;
//   - porch: a Porch API server the user brings (PORCH_BIN, with its CRDs
//     and FunctionConfigs in PORCH_MANIFESTS), its git repositories on
//     e2eutil.GitServer. With both, TestScenario compares them step by step
//     (differential_test.go).
//
// Both serve porch.kpt.dev through the same APIService, switched to a
// test's backend before it starts. The kube-apiserver's audit log lets a
// test count every request (e2eutil.AuditLog); the figures go into a report
// file that `make e2e` prints.
//
// Run it with `make e2e` (hack/e2e.sh), which prepares the environment:
//
//	KUBECONFIG        the cluster admin's kubeconfig
//	KUBECTL           kubectl (default: kubectl on PATH)
//	E2E_BIN           directory of variant-controller, porchsim-apiserver and
//	                  variantctl
//	KUBE_AUDIT_LOG    the kube-apiserver's audit log
//	E2E_REPORT        the report file
//	E2E_WORK_DIR      where the tests' processes write (logs, certificates,
//	                  git repositories); default a new temporary directory,
//	                  removed at the end
//	PORCH_BIN         optional: Porch's API server binary
//	PORCH_MANIFESTS   optional, with PORCH_BIN: the directory of Porch's CRDs
//	                  and FunctionConfigs (e2eutil.ReadPorchManifests)
//	E2E_BACKENDS      optional: the backends to run, comma-separated
//	                  (porchsim, porch); default every one available
//	E2E_KEEP          non-empty: keep the work directory
//
// Ports: the Porch server holds :8080; startController passes free ports for
// the controller's metrics and health probes.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// testUserAgent marks the requests this test binary makes as the admin:
	// the backends use the admin's identity too, and only the user agent
	// tells them apart in the audit log.
	testUserAgent = "variant-controller-e2e"
	timeout       = 2 * time.Minute
	poll          = e2eutil.Poll
)

// env is what TestMain set up, shared by the tests.
var env struct {
	root       string // repository root
	kubeconfig string
	kubectl    e2eutil.Kubectl
	bin        string
	auditPath  string
	reportPath string
	// workDir holds what the tests' processes write: logs, certificates,
	// git repositories, kubeconfigs.
	workDir string
	// ownWorkDir: workDir was made here (not given), and goes at the end.
	ownWorkDir bool

	adminConfig *rest.Config
	kube        kubernetes.Interface
	admin       versioned.Interface
	audit       *e2eutil.AuditLog
	// saKubeconfig authenticates as the controller's ServiceAccount.
	saKubeconfig string
	// metrics is how the tests scrape the controllers' /metrics.
	metrics *metricsAccess
	// git serves the git repositories of every Repository the tests make.
	git *e2eutil.GitServer
	// backends serve porch.kpt.dev, in the order the tests run them.
	backends []*backend
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

// porchGiven is what the user brought for the Porch backend ("" when not).
type porchGiven struct{ bin, manifests string }

// readEnvironment fills env from the variables hack/e2e.sh sets, naming
// every one that is missing at once.
func readEnvironment() (porchGiven, error) {
	var missing []string
	get := func(name string) string {
		v := os.Getenv(name)
		if v == "" {
			missing = append(missing, name)
		}
		return v
	}
	env.kubeconfig = get("KUBECONFIG")
	env.bin = get("E2E_BIN")
	env.auditPath = get("KUBE_AUDIT_LOG")
	env.reportPath = get("E2E_REPORT")
	env.kubectl = e2eutil.Kubectl{Path: os.Getenv("KUBECTL"), Kubeconfig: env.kubeconfig}
	if len(missing) > 0 {
		return porchGiven{}, fmt.Errorf("%s not set; run `make e2e` (hack/e2e.sh sets them)", strings.Join(missing, ", "))
	}
	p := porchGiven{bin: os.Getenv("PORCH_BIN"), manifests: os.Getenv("PORCH_MANIFESTS")}
	if (p.bin == "") != (p.manifests == "") {
		return p, fmt.Errorf("PORCH_BIN and PORCH_MANIFESTS go together: the Porch backend needs the server binary and the directory of its CRDs and FunctionConfigs")
	}
	return p, nil
}

// wantedBackends are the backends E2E_BACKENDS names (default: porchsim,
// and porch when given).
func wantedBackends(porch porchGiven) ([]string, error) {
	available := []string{backendPorchsim}
	if porch.bin != "" {
		available = append(available, backendPorch)
	}
	list := os.Getenv("E2E_BACKENDS")
	if list == "" {
		return available, nil
	}
	var out []string
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		switch {
		case name == backendPorch && porch.bin == "":
			return nil, fmt.Errorf("E2E_BACKENDS names porch, but PORCH_BIN and PORCH_MANIFESTS are not set")
		case !slices.Contains(available, name):
			return nil, fmt.Errorf("E2E_BACKENDS: unknown backend %q (porchsim, porch)", name)
		case !slices.Contains(out, name):
			out = append(out, name)
		}
	}
	return out, nil
}

func setup() error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	env.root = root
	porch, err := readEnvironment()
	if err != nil {
		return err
	}
	names, err := wantedBackends(porch)
	if err != nil {
		return err
	}
	var manifests e2eutil.PorchManifests
	if slices.Contains(names, backendPorch) {
		// Before anything slow: a directory that lacks what Porch needs.
		if manifests, err = e2eutil.ReadPorchManifests(porch.manifests); err != nil {
			return err
		}
	}
	// hack/e2e.sh puts it in the cluster's state directory: kept with the
	// cluster's logs (E2E_KEEP), removed with them, and not left behind
	// when a test panics (go test -timeout), which skips teardown.
	if env.workDir = os.Getenv("E2E_WORK_DIR"); env.workDir != "" {
		if err := os.MkdirAll(env.workDir, 0o755); err != nil {
			return fmt.Errorf("create work directory: %w", err)
		}
	} else {
		if env.workDir, err = os.MkdirTemp("", "variant-e2e-"); err != nil {
			return fmt.Errorf("create work directory: %w", err)
		}
		env.ownWorkDir = true
	}
	if env.adminConfig, err = clientcmd.BuildConfigFromFlags("", env.kubeconfig); err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	env.adminConfig.UserAgent = testUserAgent
	// client-go's default of 5 requests a second would pace the tests' polls
	// (and Flush's markers), not the servers.
	env.adminConfig.QPS, env.adminConfig.Burst = 100, 200
	if env.kube, err = kubernetes.NewForConfig(env.adminConfig); err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	if env.admin, err = versioned.NewForConfig(env.adminConfig); err != nil {
		return fmt.Errorf("create clientset: %w", err)
	}
	env.audit = e2eutil.NewAuditLog(env.auditPath, env.kube)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	if env.git, err = e2eutil.StartGitServer(filepath.Join(env.workDir, "git")); err != nil {
		return err
	}
	// Porch's CRDs, the Repository's among them, from the user's Porch;
	// without one, the copy of the Repository CRD porchsim serves with.
	if slices.Contains(names, backendPorch) {
		if err := e2eutil.InstallPorchManifests(env.kubectl, manifests, env.workDir); err != nil {
			return err
		}
	} else {
		if _, err := env.kubectl.Run("apply", "-f", filepath.Join(root, "hack/crd")); err != nil {
			return err
		}
		if err := waitEstablished("repositories.config.porch.kpt.dev", time.Minute); err != nil {
			return err
		}
	}
	for _, name := range names {
		b, err := startBackend(ctx, name, porch.bin, manifests)
		if err != nil {
			return err
		}
		env.backends = append(env.backends, b)
	}

	// Ours: deploy/ as a user installs it. No kubelet runs here, so the
	// Deployment's pods never start; the binary runs as a process instead,
	// with the ServiceAccount's token, so its RBAC is what is tested.
	if _, err := env.kubectl.Run("apply", "-k", filepath.Join(root, "deploy")); err != nil {
		return err
	}
	for _, crd := range []string{"packagevariants.config.porch.kpt.dev", "packagevariantsets.config.porch.kpt.dev"} {
		if err := waitEstablished(crd, time.Minute); err != nil {
			return err
		}
	}
	env.saKubeconfig = filepath.Join(env.workDir, "sa.kubeconfig")
	if err := e2eutil.ServiceAccountKubeconfig(ctx, env.kube, env.adminConfig, controllerNS, controllerSA, 2*time.Hour, env.saKubeconfig); err != nil {
		return err
	}
	if env.metrics, err = setupMetricsAccess(ctx); err != nil {
		return err
	}
	var served []string
	for _, b := range env.backends {
		served = append(served, fmt.Sprintf("%s on 127.0.0.1:%d", b.name, b.port))
	}
	reportf(nil, "cluster %s; backends: %s; git %s; audit log %s", env.adminConfig.Host, strings.Join(served, ", "), env.git.URL, env.auditPath)
	return nil
}

func teardown() {
	for i := len(env.backends) - 1; i >= 0; i-- {
		if err := env.backends[i].proc.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop %s: %v\n", env.backends[i].name, err)
		}
	}
	if env.git != nil {
		if err := env.git.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stop the git server: %v\n", err)
		}
	}
	if env.workDir == "" {
		return
	}
	if os.Getenv("E2E_KEEP") != "" || !env.ownWorkDir {
		fmt.Fprintf(os.Stderr, "e2e: the tests' work directory (process logs) stays: %s\n", env.workDir)
		return
	}
	os.RemoveAll(env.workDir)
}

var reportMu sync.Mutex

// reportf appends a line (or several) to the report file, each prefixed with
// the test's name (none for a nil t): the figures a person compares across
// runs and between backends. A failure to write fails the test: a report
// with holes would be read as complete.
func reportf(t testing.TB, format string, args ...any) {
	prefix := ""
	if t != nil {
		t.Helper()
		prefix = t.Name() + ": "
	}
	var b strings.Builder
	for _, line := range strings.Split(strings.TrimRight(fmt.Sprintf(format, args...), "\n"), "\n") {
		b.WriteString(prefix + line + "\n")
	}
	reportMu.Lock()
	defer reportMu.Unlock()
	f, err := os.OpenFile(env.reportPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err == nil {
		_, err = f.WriteString(b.String())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		if t != nil {
			t.Errorf("write report %s: %v", env.reportPath, err)
		} else {
			fmt.Fprintf(os.Stderr, "e2e: write report %s: %v\n", env.reportPath, err)
		}
	}
}
