package e2eutil

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestPorchAPIServiceObjects: the objects have the names and settings of
// Porch's own registration, so that switching them replaces it, and the
// suite's label.
func TestPorchAPIServiceObjects(t *testing.T) {
	svc := PorchService(9444)
	if svc.Namespace != "porch-system" || svc.Name != "api" || svc.Spec.Type != corev1.ServiceTypeExternalName ||
		svc.Spec.ExternalName != "localhost" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9444 {
		t.Errorf("Service: %+v", svc)
	}
	if svc.Labels["app.kubernetes.io/managed-by"] != "variant-controller-e2e" {
		t.Errorf("Service labels %v lack the suite's", svc.Labels)
	}
	as := PorchAPIService(9444)
	if as.GetName() != "v1alpha1.porch.kpt.dev" || as.GetLabels()["app.kubernetes.io/managed-by"] != "variant-controller-e2e" {
		t.Errorf("APIService metadata: %v %v", as.GetName(), as.GetLabels())
	}
	for _, f := range []struct {
		path []string
		want interface{}
	}{
		{[]string{"spec", "group"}, "porch.kpt.dev"},
		{[]string{"spec", "version"}, "v1alpha1"},
		{[]string{"spec", "insecureSkipTLSVerify"}, true},
		{[]string{"spec", "groupPriorityMinimum"}, int64(1000)},
		{[]string{"spec", "versionPriority"}, int64(15)},
	} {
		got, _, _ := unstructured.NestedFieldNoCopy(as.Object, f.path...)
		if got != f.want {
			t.Errorf("%v = %v, want %v", f.path, got, f.want)
		}
	}
	if !pointsAt(as, 9444) || pointsAt(as, 9443) {
		t.Error("pointsAt does not read the APIService's port")
	}
}

func TestAvailable(t *testing.T) {
	cases := map[string]struct {
		status      map[string]interface{}
		want, wantM string
	}{
		"no status yet": {},
		"available": {
			status: map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"type": "Available", "status": "True", "message": "all checks passed"},
			}},
			want: "True", wantM: "all checks passed",
		},
		"unavailable, among other conditions": {
			status: map[string]interface{}{"conditions": []interface{}{
				map[string]interface{}{"type": "Other", "status": "True"},
				map[string]interface{}{"type": "Available", "status": "False", "message": "failing or missing response"},
			}},
			want: "False", wantM: "failing or missing response",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			as := PorchAPIService(1)
			if tc.status != nil {
				as.Object["status"] = tc.status
			}
			if got := available(as); got != tc.want {
				t.Errorf("available = %q, want %q", got, tc.want)
			}
			if got := availableMessage(as); got != tc.wantM {
				t.Errorf("message = %q, want %q", got, tc.wantM)
			}
		})
	}
}
