package helper

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPaused(t *testing.T) {
	cases := map[string]struct {
		annotations map[string]string
		want        bool
	}{
		"no annotations":          {},
		"paused":                  {annotations: map[string]string{"config.porch.kpt.dev/paused": "true"}, want: true},
		"any other value is not":  {annotations: map[string]string{"config.porch.kpt.dev/paused": "yes"}},
		"another annotation only": {annotations: map[string]string{"config.porch.kpt.dev/replacing": "true"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Paused(&metav1.ObjectMeta{Annotations: tc.annotations}); got != tc.want {
				t.Errorf("Paused = %v, want %v", got, tc.want)
			}
		})
	}
}
