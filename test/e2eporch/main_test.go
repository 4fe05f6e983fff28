//go:build e2e_porch

// Package e2eporch runs variant-controller against the real Porch server
// (built from source by hack/porch.sh) and, in the same run, against
// porchsim-apiserver, to hold the imitation against the real thing. Both
// serve porch.kpt.dev through the same APIService; a test switches it with
// e2eutil.SwitchPorchAPIService. The kube-apiserver writes an audit log, so
// a test can count every request the controller made (e2eutil.AuditLog), and
// the figures go into a report file that `make e2e-porch` prints.
//
// Run it with `make e2e-porch` (hack/e2e-porch.sh), which prepares the
// environment:
//
//	KUBECONFIG        the cluster admin's kubeconfig
//	KUBECTL           kubectl (default: kubectl on PATH)
//	E2E_BIN           directory of variant-controller, porchsim-apiserver and
//	                  variantctl
//	PORCH_BIN         directory of Porch's binaries
//	PORCH_GIT_URL     Porch's test git server: a Repository's spec.git.repo
//	                  is $PORCH_GIT_URL/<name>
//	PORCH_PORT        the Porch server's port on 127.0.0.1
//	KUBE_AUDIT_LOG    the kube-apiserver's audit log
//	E2E_PORCH_REPORT  the report file
//	E2E_PORCH_WORK_DIR  where the tests' processes write (logs, certificates);
//	                  default a new temporary directory, removed at the end
//	E2E_KEEP          non-empty: keep the work directory (logs of the
//	                  processes the tests start)
//
// Ports: the Porch server holds :8080 (and Porch's repository controller,
// when started, :8081), which are variant-controller's default metrics and
// health addresses; startController always passes free ports instead.
package e2eporch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
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
	// the Porch server and porchsim-apiserver use the admin's identity too,
	// and only the user agent tells them apart in the audit log.
	testUserAgent = "variant-controller-e2e-porch"
	timeout       = 2 * time.Minute
	poll          = e2eutil.Poll
)

// environment is what TestMain set up, shared by the tests.
type environment struct {
	root string // repository root
	// From the environment (see the package comment).
	kubeconfig  string
	kubectl     e2eutil.Kubectl
	bin         string
	porchBin    string
	porchGitURL string
	porchPort   int
	auditPath   string
	reportPath  string
	// workDir holds what the tests' processes write: logs, certificates,
	// the ServiceAccount's kubeconfig.
	workDir string
	// ownWorkDir: workDir was made here (not given), and goes at the end.
	ownWorkDir bool

	adminConfig *rest.Config
	kube        kubernetes.Interface
	admin       versioned.Interface
	audit       *e2eutil.AuditLog
	// saKubeconfig authenticates as the controller's ServiceAccount.
	saKubeconfig string
}

var env environment

func TestMain(m *testing.M) {
	if err := setup(); err != nil {
		fmt.Fprintf(os.Stderr, "e2e-porch setup: %v\n", err)
		teardown()
		os.Exit(1)
	}
	code := m.Run()
	teardown()
	os.Exit(code)
}

// readEnvironment fills env from the variables hack/e2e-porch.sh sets,
// naming every one that is missing at once.
func readEnvironment() error {
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
	env.porchBin = get("PORCH_BIN")
	env.porchGitURL = strings.TrimSuffix(get("PORCH_GIT_URL"), "/")
	port := get("PORCH_PORT")
	env.auditPath = get("KUBE_AUDIT_LOG")
	env.reportPath = get("E2E_PORCH_REPORT")
	env.kubectl = e2eutil.Kubectl{Path: os.Getenv("KUBECTL"), Kubeconfig: env.kubeconfig}
	if len(missing) > 0 {
		return fmt.Errorf("%s not set; run `make e2e-porch` (hack/e2e-porch.sh sets them)", strings.Join(missing, ", "))
	}
	var err error
	if env.porchPort, err = strconv.Atoi(port); err != nil {
		return fmt.Errorf("PORCH_PORT=%q: %w", port, err)
	}
	return nil
}

func setup() error {
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	env.root = root
	if err := readEnvironment(); err != nil {
		return err
	}
	// hack/e2e-porch.sh puts it in the cluster's state directory: kept with
	// the cluster's logs (E2E_KEEP), removed with them, and not left behind
	// when a test panics (go test -timeout), which skips teardown.
	if env.workDir = os.Getenv("E2E_PORCH_WORK_DIR"); env.workDir != "" {
		if err := os.MkdirAll(env.workDir, 0o755); err != nil {
			return fmt.Errorf("create work directory: %w", err)
		}
	} else {
		if env.workDir, err = os.MkdirTemp("", "variant-e2e-porch-"); err != nil {
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

	// Porch's CRDs (Repository among them) are installed by hack/porch.sh
	// up; ours are deploy/, as a user installs it. No kubelet runs here, so
	// the Deployment's pods never start; the binary runs as a process, with
	// the ServiceAccount's token, so its RBAC is what is tested.
	if _, err := env.kubectl.Run("apply", "-k", filepath.Join(root, "deploy")); err != nil {
		return err
	}
	for _, crd := range []string{"packagevariants.config.porch.kpt.dev", "packagevariantsets.config.porch.kpt.dev"} {
		if _, err := env.kubectl.Run("wait", "--for=condition=Established", "--timeout=60s", "crd/"+crd); err != nil {
			return err
		}
	}
	env.saKubeconfig = filepath.Join(env.workDir, "sa.kubeconfig")
	if err := e2eutil.ServiceAccountKubeconfig(ctx, env.kube, env.adminConfig, controllerNS, controllerSA, 2*time.Hour, env.saKubeconfig); err != nil {
		return err
	}
	reportf(nil, "cluster %s, Porch on 127.0.0.1:%d, git %s, audit log %s", env.adminConfig.Host, env.porchPort, env.porchGitURL, env.auditPath)
	return nil
}

func teardown() {
	if env.workDir == "" {
		return
	}
	if os.Getenv("E2E_KEEP") != "" || !env.ownWorkDir {
		fmt.Fprintf(os.Stderr, "e2e-porch: the tests' work directory (process logs) stays: %s\n", env.workDir)
		return
	}
	os.RemoveAll(env.workDir)
}

var reportMu sync.Mutex

// reportf appends a line (or several) to the report file, each prefixed with
// the test's name (none for a nil t): the figures a person compares across
// runs and between Porch and porchsim. A failure to write fails the test: a
// report with holes would be read as complete.
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
			fmt.Fprintf(os.Stderr, "e2e-porch: write report %s: %v\n", env.reportPath, err)
		}
	}
}

// controller is a variant-controller process and where it serves.
type controller struct {
	*e2eutil.Process
	// MetricsURL is its Prometheus endpoint (http://127.0.0.1:<port>/metrics).
	MetricsURL string
	// ReadyzURL answers 200 once every informer cache has synced.
	ReadyzURL string
}

// startController runs variant-controller as its ServiceAccount, with both
// control loops, no leader election and free ports for metrics and health
// (never the defaults :8080 and :8081, which Porch holds). args come last
// and override any of these (pflag: the last value wins). It is stopped
// when the test ends; its output is in the work directory and, when the
// test failed, in the test log.
func startController(t *testing.T, name string, args ...string) *controller {
	t.Helper()
	metricsPort, err := e2eutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	healthPort, err := e2eutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	full := append([]string{
		"--kubeconfig", env.saKubeconfig,
		"--reconcilers", "*",
		"--leader-elect=false",
		"--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", metricsPort),
		"--health-probe-bind-address", fmt.Sprintf("127.0.0.1:%d", healthPort),
		"--shutdown-grace-period", "5s",
	}, args...)
	p, err := e2eutil.StartWith(e2eutil.ProcessOptions{LogFile: filepath.Join(env.workDir, name+".log")},
		name, filepath.Join(env.bin, "variant-controller"), full...)
	if err != nil {
		t.Fatal(err)
	}
	c := &controller{
		Process:    p,
		MetricsURL: fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort),
		ReadyzURL:  fmt.Sprintf("http://127.0.0.1:%d/readyz", healthPort),
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop %s: %v", name, err)
		}
		if t.Failed() {
			t.Log(p.Tail())
		}
	})
	return c
}

// waitReady waits until the controller's informer caches have synced.
func (c *controller) waitReady(t *testing.T) {
	t.Helper()
	client := &http.Client{Timeout: 2 * time.Second}
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), poll, timeout, true, func(context.Context) (bool, error) {
		if c.Exited() {
			return false, fmt.Errorf("%s exited", c.Name)
		}
		resp, err := client.Get(c.ReadyzURL)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		t.Fatalf("wait for %s to be ready (%s): %v; last: %s\n%s", c.Name, c.ReadyzURL, err, last, c.Tail())
	}
}

// switchTo points porch.kpt.dev at the server on port (Porch's: env.porchPort)
// and reports how long the aggregator took.
func switchTo(t *testing.T, what string, port int) {
	t.Helper()
	sw, err := e2eutil.SwitchPorchAPIService(context.Background(), env.adminConfig, env.kubectl, port, 0)
	if err != nil {
		t.Fatal(err)
	}
	if sw.Unchanged {
		reportf(t, "porch.kpt.dev served by %s (port %d): unchanged", what, port)
		return
	}
	reportf(t, "porch.kpt.dev switched to %s (port %d): aggregator let go of the old server in %s, answered from the new one %s later",
		what, port, sw.Refused.Round(time.Millisecond), sw.Answered.Round(time.Millisecond))
}

// servePorchsim starts porchsim-apiserver on a free port (state under
// env.workDir/dir) and points porch.kpt.dev at it. Cleanup points it back at
// Porch before stopping porchsim (cleanups run last first), so the tests
// after this one find Porch serving whatever happens here; a failed test
// gets porchsim's last log lines.
func servePorchsim(ctx context.Context, t *testing.T, dir string) (*e2eutil.Process, int) {
	t.Helper()
	port, err := e2eutil.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	sim, err := e2eutil.StartPorchsim(ctx, e2eutil.PorchsimOptions{
		Binary: filepath.Join(env.bin, "porchsim-apiserver"), Kubeconfig: env.kubeconfig,
		Port: port, WorkDir: filepath.Join(env.workDir, dir),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := sim.Stop(); err != nil {
			t.Errorf("stop porchsim-apiserver: %v", err)
		}
		if t.Failed() {
			t.Log(sim.Tail())
		}
	})
	t.Cleanup(func() { switchTo(t, "Porch", env.porchPort) })
	switchTo(t, "porchsim", port)
	return sim, port
}
