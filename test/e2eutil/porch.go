package e2eutil

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/porch-variants/variant-controller/pkg/offline/input"
)

// What the end-to-end suite needs of a Porch a user brings (PORCH_BIN and
// PORCH_MANIFESTS): the server binary and, in one directory, the CRDs it
// needs and its FunctionConfigs. Nothing here builds Porch.

// PorchCRDs are the CustomResourceDefinitions the Porch server needs in the
// cluster: Repository, FunctionConfig (the functions it runs built in) and
// PackageRev (its internal store of package revision metadata).
var PorchCRDs = []string{
	"repositories.config.porch.kpt.dev",
	"functionconfigs.config.porch.kpt.dev",
	"packagerevs.config.porch.kpt.dev",
}

// PorchPort8080 is the port the Porch server binds without a flag to move it
// (the metrics of its FunctionConfig manager): when it is taken, the server
// still answers but never loads its FunctionConfigs, so no function runs
// built in.
const PorchPort8080 = "127.0.0.1:8080"

// PorchManifests are the objects of a PORCH_MANIFESTS directory the suite
// installs: the CRDs first, then the FunctionConfigs in their namespaces.
type PorchManifests struct {
	CRDs            []*unstructured.Unstructured
	FunctionConfigs []*unstructured.Unstructured
	// Skipped names the objects of other kinds found in the directory
	// (kind namespace/name, and the file): a copy of Porch's deployment
	// directory holds its Deployment and APIService, which must not be
	// applied here (the suite registers the server itself).
	Skipped []string
}

// Namespaces are the namespaces the FunctionConfigs live in, sorted.
func (m PorchManifests) Namespaces() []string {
	seen := map[string]bool{}
	var out []string
	for _, fc := range m.FunctionConfigs {
		if ns := fc.GetNamespace(); ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out
}

// ReadPorchManifests reads every .yaml, .yml and .json file directly in dir
// (not below it) and keeps Porch's CRDs and FunctionConfigs. It fails,
// naming what to copy, when a CRD of PorchCRDs or every FunctionConfig is
// missing: without them the server does not start, or renders nothing.
func ReadPorchManifests(dir string) (PorchManifests, error) {
	var m PorchManifests
	entries, err := os.ReadDir(dir)
	if err != nil {
		return m, fmt.Errorf("PORCH_MANIFESTS=%s: %w", dir, err)
	}
	crds := map[string]bool{}
	for _, e := range entries {
		ext := strings.ToLower(filepath.Ext(e.Name()))
		if e.IsDir() || ext != ".yaml" && ext != ".yml" && ext != ".json" {
			continue
		}
		path := filepath.Join(dir, e.Name())
		objs, err := readObjects(path)
		if err != nil {
			return m, err
		}
		for _, o := range objs {
			switch {
			case o.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(o.GetAPIVersion(), "apiextensions.k8s.io/"):
				if crds[o.GetName()] {
					return m, fmt.Errorf("PORCH_MANIFESTS=%s: the CRD %s is there twice (the second in %s)", dir, o.GetName(), e.Name())
				}
				crds[o.GetName()] = true
				m.CRDs = append(m.CRDs, o)
			case o.GetKind() == "FunctionConfig" && strings.HasPrefix(o.GetAPIVersion(), "config.porch.kpt.dev/"):
				if o.GetNamespace() == "" {
					return m, fmt.Errorf("%s: FunctionConfig %s has no namespace (Porch reads them from porch-fn-system)", path, o.GetName())
				}
				m.FunctionConfigs = append(m.FunctionConfigs, o)
			default:
				m.Skipped = append(m.Skipped, fmt.Sprintf("%s %s (%s)", o.GetKind(), objectName(o), e.Name()))
			}
		}
	}
	var missing []string
	for _, name := range PorchCRDs {
		if !crds[name] {
			missing = append(missing, name)
		}
	}
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("the CRDs %s are missing (from Porch's api/porchconfig/v1alpha1/ and internal/api/porchinternal/v1alpha1/, or its release's CRD manifests)",
			strings.Join(missing, ", ")))
	}
	if len(m.FunctionConfigs) == 0 {
		problems = append(problems, "no FunctionConfig is there (Porch's deployments/porch/ has them, in porch-fn-system): without them Porch runs no function built in and every render fails")
	}
	if len(problems) > 0 {
		return m, fmt.Errorf("PORCH_MANIFESTS=%s: %s", dir, strings.Join(problems, "; "))
	}
	return m, nil
}

func objectName(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}

// readObjects decodes every document of a YAML or JSON file (a List's
// items each on their own).
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	err = input.EachDocument(data, func(obj map[string]any) error {
		u := &unstructured.Unstructured{Object: obj}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return errors.New("no apiVersion or kind")
		}
		if !u.IsList() {
			out = append(out, u)
			return nil
		}
		list, err := u.ToList()
		if err != nil {
			return err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// InstallPorchManifests applies the CRDs, waits until they are Established,
// creates the FunctionConfigs' namespaces and applies the FunctionConfigs,
// with kubectl as the admin.
func InstallPorchManifests(k Kubectl, m PorchManifests, dir string) error {
	write := func(name string, objs []*unstructured.Unstructured) (string, error) {
		var b bytes.Buffer
		for _, o := range objs {
			y, err := yaml.Marshal(o.Object)
			if err != nil {
				return "", err
			}
			b.WriteString("---\n")
			b.Write(y)
		}
		p := filepath.Join(dir, name)
		return p, os.WriteFile(p, b.Bytes(), 0o644)
	}
	crds, err := write("porch-crds.yaml", m.CRDs)
	if err != nil {
		return fmt.Errorf("install Porch's CRDs: %w", err)
	}
	if _, err := k.Run("apply", "--server-side", "--force-conflicts", "-f", crds); err != nil {
		return fmt.Errorf("install Porch's CRDs: %w", err)
	}
	args := []string{"wait", "--for=condition=Established", "--timeout=60s"}
	for _, c := range m.CRDs {
		args = append(args, "crd/"+c.GetName())
	}
	if _, err := k.Run(args...); err != nil {
		return fmt.Errorf("install Porch's CRDs: %w", err)
	}
	for _, ns := range m.Namespaces() {
		yamlNS := fmt.Sprintf("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: %s\n", ns)
		if _, err := k.RunInput(yamlNS, "apply", "-f", "-"); err != nil {
			return fmt.Errorf("create namespace %s for Porch's FunctionConfigs: %w", ns, err)
		}
	}
	fcs, err := write("porch-functionconfigs.yaml", m.FunctionConfigs)
	if err != nil {
		return fmt.Errorf("install Porch's FunctionConfigs: %w", err)
	}
	if _, err := k.Run("apply", "-f", fcs); err != nil {
		return fmt.Errorf("install Porch's FunctionConfigs: %w", err)
	}
	return nil
}

// PorchOptions say how StartPorch runs the Porch API server.
type PorchOptions struct {
	// Binary is Porch's API server (porch-server, built from Porch's
	// cmd/porch).
	Binary string
	// Kubeconfig is the admin's: Porch uses it as its client and for
	// delegated authentication and authorization.
	Kubeconfig string
	// Port is the port on 127.0.0.1 to serve on.
	Port int
	// WorkDir receives the server's certificates (certs/), its cache
	// (cache/) and its log (porch-server.log).
	WorkDir string
	// Timeout bounds the wait for the port (default 60s).
	Timeout time.Duration
}

// StartPorch starts the Porch API server out of cluster and waits until it
// accepts connections. It runs only the functions its FunctionConfigs build
// in: --function-runner names a port where nothing listens, so any other
// image fails the render (as porchsim-apiserver does).
//
// The environment is cleaned of what would make Porch take itself for
// in-cluster (KUBERNETES_SERVICE_*) or register a validating webhook the
// kube-apiserver cannot reach (CERT_STORAGE_DIR); OpenTelemetry's exporters
// are off unless set, or Porch pushes OTLP to localhost:4318 and logs a
// connection error every few seconds.
func StartPorch(ctx context.Context, o PorchOptions) (*Process, error) {
	if o.Binary == "" || o.Kubeconfig == "" || o.Port == 0 || o.WorkDir == "" {
		return nil, fmt.Errorf("start Porch: Binary, Kubeconfig, Port and WorkDir are required")
	}
	if Listening(PorchPort8080) {
		return nil, fmt.Errorf("start Porch: port 8080 is in use on this machine; the Porch server binds its FunctionConfig manager's metrics to :8080 (not configurable) and without it runs no built-in function; free the port (another Porch, or a process serving metrics there?)")
	}
	addr := fmt.Sprintf("127.0.0.1:%d", o.Port)
	if Listening(addr) {
		return nil, fmt.Errorf("start Porch: %s is in use already", addr)
	}
	runnerPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	for _, d := range []string{"certs", "cache"} {
		if err := os.MkdirAll(filepath.Join(o.WorkDir, d), 0o700); err != nil {
			return nil, fmt.Errorf("start Porch: %w", err)
		}
	}
	env := []string{}
	for _, v := range os.Environ() {
		name, _, _ := strings.Cut(v, "=")
		if name == "KUBERNETES_SERVICE_HOST" || name == "KUBERNETES_SERVICE_PORT" || name == "CERT_STORAGE_DIR" {
			continue
		}
		env = append(env, v)
	}
	for _, name := range []string{"OTEL_TRACES_EXPORTER", "OTEL_METRICS_EXPORTER", "OTEL_LOGS_EXPORTER"} {
		if os.Getenv(name) == "" {
			env = append(env, name+"=none")
		}
	}
	p, err := StartWith(ProcessOptions{LogFile: filepath.Join(o.WorkDir, "porch-server.log"), ReplaceEnv: env, StopGrace: 15 * time.Second},
		"porch-server", o.Binary,
		"--secure-port", fmt.Sprint(o.Port),
		"--bind-address", "127.0.0.1",
		"--kubeconfig", o.Kubeconfig,
		"--authentication-kubeconfig", o.Kubeconfig,
		"--authorization-kubeconfig", o.Kubeconfig,
		"--cert-dir", filepath.Join(o.WorkDir, "certs"),
		"--cache-directory", filepath.Join(o.WorkDir, "cache"),
		"--function-runner", fmt.Sprintf("127.0.0.1:%d", runnerPort),
	)
	if err != nil {
		return nil, err
	}
	if err := waitListening(ctx, p, addr, o.Timeout); err != nil {
		return nil, err
	}
	return p, nil
}

// PorchLoadedFunctionConfigs reports whether the Porch server's log shows
// that it reconciled every FunctionConfig of m: its built-in functions are
// known only from then on. Porch 74d82d5 logs `FunctionConfig "<ns>/<name>"
// changed`; another version may word it otherwise, which costs the caller a
// wait and a warning, nothing more.
func PorchLoadedFunctionConfigs(log string, m PorchManifests) bool {
	for _, fc := range m.FunctionConfigs {
		if !strings.Contains(log, fmt.Sprintf("FunctionConfig %q changed", fc.GetNamespace()+"/"+fc.GetName())) {
			return false
		}
	}
	return true
}

// waitListening waits until p listens on addr, at most timeout (default
// 60s); p is killed when it does not.
func waitListening(ctx context.Context, p *Process, addr string, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	deadline := time.Now().Add(timeout)
	for !Listening(addr) {
		if p.Exited() {
			return fmt.Errorf("%s exited before listening on %s\n%s", p.Name, addr, p.Tail())
		}
		if time.Now().After(deadline) {
			p.Kill()
			return fmt.Errorf("%s is not listening on %s after %s\n%s", p.Name, addr, timeout, p.Tail())
		}
		select {
		case <-ctx.Done():
			p.Kill()
			return fmt.Errorf("start %s: %w", p.Name, ctx.Err())
		case <-time.After(Poll):
		}
	}
	return nil
}
