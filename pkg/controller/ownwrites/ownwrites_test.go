package ownwrites

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cm(rv, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{UID: "u", ResourceVersion: rv}, Data: map[string]string{"v": data}}
}

// TestLatest: the own write wins while the cache shows the version it
// replaced; once the cache shows anything else, the cache wins and the
// entry is dropped.
func TestLatest(t *testing.T) {
	var o Objects[*corev1.ConfigMap]
	if got := o.Latest(cm("1", "cached")); got.Data["v"] != "cached" {
		t.Errorf("nothing recorded: got %v, want the cached object", got.Data)
	}
	o.Record("1", cm("2", "written"))
	if got := o.Latest(cm("1", "cached")); got.ResourceVersion != "2" {
		t.Errorf("cache behind the write: got rv %s, want the write's 2", got.ResourceVersion)
	}
	if got := o.Latest(cm("2", "cached")); got.Data["v"] != "cached" {
		t.Errorf("cache caught up: got %v, want the cached object", got.Data)
	}
	// Caught up once: the entry is gone even if an old version shows again.
	if got := o.Latest(cm("1", "old")); got.Data["v"] != "old" {
		t.Errorf("after the cache caught up: got %v, want the cached object", got.Data)
	}
	o.Record("3", cm("4", "written"))
	if got := o.Latest(cm("5", "someone else")); got.ResourceVersion != "5" {
		t.Errorf("cache past the write: got rv %s, want 5", got.ResourceVersion)
	}
	o.Record("6", cm("7", "written"))
	o.Forget("u")
	if got := o.Latest(cm("6", "cached")); got.ResourceVersion != "6" {
		t.Errorf("after Forget: got rv %s, want the cached 6", got.ResourceVersion)
	}
}
