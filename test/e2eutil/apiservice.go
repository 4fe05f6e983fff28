package e2eutil

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
)

// The objects that make porch.kpt.dev/v1alpha1 an aggregated API of the local
// cluster, with the names Porch's own installation uses (and
// hack/e2e/porch-apiservice.yaml for make dev-up), so that switching them
// replaces the backend rather than adding a second registration.
const (
	PorchAPIServiceName   = "v1alpha1.porch.kpt.dev"
	PorchServiceNamespace = "porch-system"
	PorchServiceName      = "api"
	// porchManagedByKey/Value label the objects as made by the end-to-end
	// suite, whichever backend they point at last.
	porchManagedByKey   = "app.kubernetes.io/managed-by"
	porchManagedByValue = "variant-controller-e2e"
)

var apiServicesResource = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// DefaultSwitchTimeout bounds each wait of SwitchPorchAPIService. The
// aggregator's availability check of a live server takes well under a second;
// one that fails is retried with backoff, so a backend that comes up late
// can take longer.
const DefaultSwitchTimeout = 90 * time.Second

// APIServiceSwitch reports how a switch of the porch.kpt.dev APIService went.
type APIServiceSwitch struct {
	// Port is where the APIService points now.
	Port int
	// Unchanged: it pointed there already, Available, and answered; nothing
	// was changed.
	Unchanged bool
	// Refused is how long it took, after the APIService was pointed at a
	// port where nothing listens, until the aggregator refused requests
	// (Available=False and a 503 through it): the proof that the aggregator
	// has let go of the old backend.
	Refused time.Duration
	// Answered is how long it took, after the APIService was pointed at
	// Port, until it was Available again and `kubectl get packagerevisions
	// -A` answered through it.
	Answered time.Duration
}

// SwitchPorchAPIService points the APIService v1alpha1.porch.kpt.dev (and
// its ExternalName Service porch-system/api) at https://localhost:port, so
// that the cluster serves porch.kpt.dev from the server listening there: the
// real Porch (PORCH_PORT) or porchsim-apiserver. It creates the objects when
// missing. It returns once the APIService is Available and `kubectl get
// packagerevisions -A` answers through it.
//
// An answer alone would not prove which server gave it: the aggregator
// learns of a changed APIService through an informer and a work queue, and
// until then goes on proxying to the old port while the API already shows
// the new one, Available from the old server's check. So the switch makes a
// detour through a port where nothing listens: it waits until the
// aggregator refuses requests (503), which it does only once it has the
// detour's spec, and only then points the APIService at port. The
// aggregator serves the new spec only after its availability check of the
// new port passed; every answer after the refusal therefore comes from the
// server on port. The detour costs a second or two during which
// porch.kpt.dev is unavailable to everyone (controllers log discovery
// errors; namespace deletion waits).
//
// What a switch does not do: move watches that are open. The aggregator
// proxies each watch as a stream to the server it was opened on, and the
// stream stays with that server until it ends; an informer started before
// a switch keeps receiving the old server's events while its writes go to
// the new one. Start the controller after switching, or stop the old
// server.
func SwitchPorchAPIService(ctx context.Context, admin *rest.Config, kubectl Kubectl, port int, timeout time.Duration) (APIServiceSwitch, error) {
	result := APIServiceSwitch{Port: port}
	if timeout <= 0 {
		timeout = DefaultSwitchTimeout
	}
	kube, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return result, fmt.Errorf("create clientset: %w", err)
	}
	dyn, err := dynamic.NewForConfig(admin)
	if err != nil {
		return result, fmt.Errorf("create dynamic client: %w", err)
	}
	apiServices := dyn.Resource(apiServicesResource)

	if cur, err := apiServices.Get(ctx, PorchAPIServiceName, metav1.GetOptions{}); err == nil {
		if pointsAt(cur, port) && available(cur) == "True" && packageRevisionsAnswer(kubectl) == nil {
			result.Unchanged = true
			return result, nil
		}
	} else if !apierrors.IsNotFound(err) {
		return result, fmt.Errorf("get APIService %s: %w", PorchAPIServiceName, err)
	}

	if err := ensureNamespace(ctx, kube, PorchServiceNamespace); err != nil {
		return result, err
	}
	if result.Refused, err = detourToUnusedPort(ctx, kube, apiServices, timeout); err != nil {
		return result, err
	}
	if result.Answered, err = pointPorchAPIServiceAt(ctx, kube, apiServices, kubectl, port, timeout); err != nil {
		return result, err
	}
	return result, nil
}

// detourToUnusedPort points the APIService at a port where nothing
// listens and waits until the aggregator refuses requests through it;
// it returns how long that took.
func detourToUnusedPort(ctx context.Context, kube kubernetes.Interface, apiServices dynamic.NamespaceableResourceInterface, timeout time.Duration) (time.Duration, error) {
	// A port that was free a moment ago; checked again, since a listener
	// there would answer and spoil the proof.
	dead, err := FreePort()
	if err != nil {
		return 0, err
	}
	if Listening(fmt.Sprintf("127.0.0.1:%d", dead)) {
		return 0, fmt.Errorf("switch APIService %s: port %d, chosen as unused, is in use", PorchAPIServiceName, dead)
	}
	start := time.Now()
	if err := applyPorchAPIService(ctx, apiServices, dead); err != nil {
		return 0, err
	}
	last, err := waitForPorchAPIService(ctx, apiServices, timeout, func(ctx context.Context, cur *unstructured.Unstructured) string {
		if !pointsAt(cur, dead) || available(cur) != "False" {
			return fmt.Sprintf("Available=%q", available(cur))
		}
		err := kube.Discovery().RESTClient().Get().AbsPath("/apis/porch.kpt.dev/v1alpha1").Do(ctx).Error()
		var status apierrors.APIStatus
		if err == nil || !errors.As(err, &status) || status.Status().Code != 503 {
			return fmt.Sprintf("Available=False, but GET /apis/porch.kpt.dev/v1alpha1 through the aggregator: %v (want 503)", err)
		}
		return ""
	})
	if err != nil {
		return 0, fmt.Errorf("switch APIService %s: wait for the aggregator to refuse requests after pointing it at unused port %d: %w; last: %s",
			PorchAPIServiceName, dead, err, last)
	}
	return time.Since(start), nil
}

// pointPorchAPIServiceAt points the Service and the APIService at port and
// waits until the APIService is Available and answers; it returns how long
// that took.
func pointPorchAPIServiceAt(ctx context.Context, kube kubernetes.Interface, apiServices dynamic.NamespaceableResourceInterface, kubectl Kubectl, port int, timeout time.Duration) (time.Duration, error) {
	start := time.Now()
	if err := applyPorchService(ctx, kube, port); err != nil {
		return 0, err
	}
	if err := applyPorchAPIService(ctx, apiServices, port); err != nil {
		return 0, err
	}
	last, err := waitForPorchAPIService(ctx, apiServices, timeout, func(_ context.Context, cur *unstructured.Unstructured) string {
		if !pointsAt(cur, port) || available(cur) != "True" {
			return fmt.Sprintf("Available=%q: %s", available(cur), availableMessage(cur))
		}
		if err := packageRevisionsAnswer(kubectl); err != nil {
			return err.Error()
		}
		return ""
	})
	if err != nil {
		return 0, fmt.Errorf("switch APIService %s to port %d: wait until it is Available and answers: %w; last: %s",
			PorchAPIServiceName, port, err, last)
	}
	return time.Since(start), nil
}

// waitForPorchAPIService gets the APIService until pending, given it,
// says nothing is pending (""), or timeout passes; it returns what was
// pending last, for the error.
func waitForPorchAPIService(ctx context.Context, apiServices dynamic.NamespaceableResourceInterface, timeout time.Duration,
	pending func(context.Context, *unstructured.Unstructured) string) (string, error) {
	var last string
	err := wait.PollUntilContextTimeout(ctx, Poll, timeout, true, func(ctx context.Context) (bool, error) {
		cur, err := apiServices.Get(ctx, PorchAPIServiceName, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			return false, nil
		}
		last = pending(ctx, cur)
		return last == "", nil
	})
	return last, err
}

func packageRevisionsAnswer(kubectl Kubectl) error {
	_, err := kubectl.Run("get", "packagerevisions", "-A", "--request-timeout=10s")
	return err
}

func ensureNamespace(ctx context.Context, kube kubernetes.Interface, name string) error {
	_, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// PorchService is the ExternalName Service for a server on localhost:port.
// The aggregator reaches an ExternalName Service at the port of the
// APIService, not of the Service; the port is kept equal for people reading
// it.
func PorchService(port int) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: PorchServiceName, Namespace: PorchServiceNamespace,
			Labels: map[string]string{porchManagedByKey: porchManagedByValue},
		},
		Spec: corev1.ServiceSpec{
			Type:         corev1.ServiceTypeExternalName,
			ExternalName: "localhost",
			Ports:        []corev1.ServicePort{{Name: "api", Port: int32(port), Protocol: corev1.ProtocolTCP}},
		},
	}
}

// applyPorchService creates the Service or replaces its spec (an Update
// replaces the ports list; a client-side apply would merge it by port).
func applyPorchService(ctx context.Context, kube kubernetes.Interface, port int) error {
	want := PorchService(port)
	services := kube.CoreV1().Services(PorchServiceNamespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := services.Get(ctx, PorchServiceName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = services.Create(ctx, want, metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		if cur.Labels == nil {
			cur.Labels = map[string]string{}
		}
		cur.Labels[porchManagedByKey] = porchManagedByValue
		cur.Spec.Type = want.Spec.Type
		cur.Spec.ExternalName = want.Spec.ExternalName
		cur.Spec.Ports = want.Spec.Ports
		_, err = services.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("point Service %s/%s at port %d: %w", PorchServiceNamespace, PorchServiceName, port, err)
	}
	return nil
}

// PorchAPIService is the APIService for the Service of PorchService on
// port: the servers' certificates are self-signed, and the priorities are
// Porch's own (its deployments/porch/3-porch-server.yaml).
func PorchAPIService(port int) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata": map[string]interface{}{
			"name":   PorchAPIServiceName,
			"labels": map[string]interface{}{porchManagedByKey: porchManagedByValue},
		},
		"spec": porchAPIServiceSpec(port),
	}}
}

func porchAPIServiceSpec(port int) map[string]interface{} {
	return map[string]interface{}{
		"group":   "porch.kpt.dev",
		"version": "v1alpha1",
		"service": map[string]interface{}{
			"name":      PorchServiceName,
			"namespace": PorchServiceNamespace,
			"port":      int64(port),
		},
		"insecureSkipTLSVerify": true,
		"groupPriorityMinimum":  int64(1000),
		"versionPriority":       int64(15),
	}
}

// applyPorchAPIService creates the APIService or replaces its spec.
func applyPorchAPIService(ctx context.Context, apiServices dynamic.NamespaceableResourceInterface, port int) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := apiServices.Get(ctx, PorchAPIServiceName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = apiServices.Create(ctx, PorchAPIService(port), metav1.CreateOptions{})
			return err
		}
		if err != nil {
			return err
		}
		cur = cur.DeepCopy()
		labels := cur.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels[porchManagedByKey] = porchManagedByValue
		cur.SetLabels(labels)
		cur.Object["spec"] = porchAPIServiceSpec(port)
		_, err = apiServices.Update(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("point APIService %s at port %d: %w", PorchAPIServiceName, port, err)
	}
	return nil
}

// pointsAt reports whether the APIService sends porch.kpt.dev to the
// Service of PorchService at port.
func pointsAt(apiService *unstructured.Unstructured, port int) bool {
	name, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "name")
	namespace, _, _ := unstructured.NestedString(apiService.Object, "spec", "service", "namespace")
	p, _, _ := unstructured.NestedInt64(apiService.Object, "spec", "service", "port")
	return name == PorchServiceName && namespace == PorchServiceNamespace && p == int64(port)
}

// available is the status of the APIService's Available condition ("" when
// it has none yet).
func available(apiService *unstructured.Unstructured) string {
	status, _ := availableCondition(apiService)
	return status
}

func availableMessage(apiService *unstructured.Unstructured) string {
	_, message := availableCondition(apiService)
	return message
}

func availableCondition(apiService *unstructured.Unstructured) (status, message string) {
	conditions, _, _ := unstructured.NestedSlice(apiService.Object, "status", "conditions")
	for _, c := range conditions {
		m, ok := c.(map[string]interface{})
		if !ok || m["type"] != "Available" {
			continue
		}
		status, _ = m["status"].(string)
		message, _ = m["message"].(string)
		return status, message
	}
	return "", ""
}
